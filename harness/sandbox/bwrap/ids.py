"""Whose ids a bubblewrap sandbox's are: never the host's own.

Run by another user, a sandbox maps that one user only (root inside), as before. Run by root, a sandbox's
ids 0..IDS-1 are the host's BASE.. (a subordinate range, as rootless Docker and podman use): its root is
host uid BASE, which owns nothing of the host's, so a root-only host file stays closed to it, a file it
makes (a setuid copy of bash among them) is BASE's on the host, and the device nodes it is shown are not
its to chmod. bwrap cannot make such a sandbox itself (it runs its set-up as the caller, host uid 0, which
the range leaves unmapped), so root starts it through a helper (launch.c), which takes the user namespace,
has it mapped, and runs bwrap as its root.

What a sandbox sees of the host's files it is shown through views the helper mounts read-only in a mount
namespace of the sandbox's own (they go with it):
- a folder the host made (an exported image, the host's /usr under `sandbox.rootfs=host`, the made /etc)
  through an idmapped mount: its ids 0.. seen as BASE.., so the image's root-owned files are the sandbox
  root's, as in Docker (its writes go to its own layer, never there);
- a folder a sandbox made (a task's layer, a checkpoint: its files are in the range already) as it is;
- the host's folders named in OPTRUNNER_BWRAP_HOST_DIRS as they are: root's files there stay root's.
The sandbox's writable layers and its other files live under the bwrap state folder, which uid BASE must
be able to pass through (root's default is /var/lib/optrunner/bwrap, not root's closed home).

A kernel or file system that cannot make idmapped mounts (gVisor, kernels before 5.19) would leave an
image's files nobody's: there, probed once per process, root's sandboxes map ids 0-65535 to the host's
own, as before, and the run says so once.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox.interface import SandboxUnavailable

# Fixed, not drawn per host: a checkpoint or a task layer made on one machine means the same on another.
# 0x70000000 is above the ranges useradd hands out (/etc/subuid, at most 600100000 by default) and
# systemd's container ranges (up to 0x6FFFFFFF), below 2^31 for tools that keep ids signed.
BASE = int(os.environ.get("OPTRUNNER_BWRAP_ID_BASE", str(0x70000000)), 0)
IDS = 65536  # ids mapped: 0-65535, as Docker images use


_probed: list[bool] = []
_probing = threading.Lock()


def shifted() -> bool:
    """Whether sandboxes map the range: we are root, and this machine makes idmapped views (probed once)."""
    if os.geteuid() != 0:
        return False
    with _probing:
        if not _probed:
            _probed.append(_views_work())
        return _probed[0]


def _views_work() -> bool:
    """Whether the launch helper shows a folder through an idmapped view here; if not, says so once."""
    from harness.sandbox.bwrap import hardening

    with tempfile.TemporaryDirectory(prefix="optrunner-ids-") as tmp:
        (Path(tmp) / "views").mkdir()
        (Path(tmp) / "source").mkdir()
        argv = [*hardening.launch(f"{tmp}/views", BASE, IDS, [f"i:{tmp}/source"]), "true"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as err:
            said = str(err)
        else:
            if done.returncode == 0:
                return True
            said = (done.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"bwrap: this machine cannot give root's sandboxes ids of their own ({said[:200]}); they map the "
          "host's own ids 0-65535, so root inside is host root for every file a sandbox is shown", file=sys.stderr)
    return False


def own(*paths: Path) -> None:
    """Folders a sandbox writes into (its writable layers, an empty layer's mounts) made its root's."""
    if shifted():
        for path in paths:
            os.chown(path, BASE, BASE)


def host_made(path: Path) -> bool:
    """Whether a folder's files carry the host's ids (made by root outside any sandbox) rather than ours."""
    return not BASE <= path.stat().st_uid < BASE + IDS


def reachable(folder: Path) -> None:
    """A folder uid BASE must pass through (the state folder): SandboxUnavailable, in one line, when one above
    it is closed to other users."""
    for part in (folder, *folder.parents):
        if part.exists() and not part.stat().st_mode & 0o001:
            raise SandboxUnavailable(
                f"bwrap: {part} is closed to other users (mode {part.stat().st_mode & 0o777:o}), but a sandbox's "
                f"root (host uid {BASE}) must pass through it to reach {folder}: `chmod o+x {part}`, or set "
                "OPTRUNNER_BWRAP_STATE to a folder under open ones")


@dataclass
class Views:
    """What a sandbox's bwrap reads of the host's files, each through a view at `folder`/<n>: `specs` for
    the launch helper (i:PATH idmapped, p:PATH as it is, both without the mounts under PATH: overlay layers;
    r:PATH as it is with them: a read-only bind) and, per path, where bwrap finds it."""
    folder: Path
    specs: list[str] = field(default_factory=list)
    at: dict[str, str] = field(default_factory=dict)

    def add(self, path: Path | str, kind: str) -> None:
        key = str(path)
        if key not in self.at:
            self.at[key] = str(self.folder / str(len(self.specs)))
            self.specs.append(f"{kind}:{key}")

    def of(self, path: Path | str) -> str:
        return self.at.get(str(path), str(path))


def views(folder: Path, lowers: Iterable[Path], binds: Iterable[str]) -> Views:
    """The views of a sandbox's lower layers and read-only binds (none when we are not root: it reads them
    as the caller, whose they are)."""
    found = Views(folder)
    if shifted():
        for lower in lowers:
            found.add(lower, "i" if host_made(lower) else "p")
        for source in binds:
            found.add(source, "r")
    return found


def map_caller(pid: int) -> None:
    """Map the user namespace of bwrap's child `pid` when the range is not used: run by another user, to the
    caller alone (root inside); run by root where idmapped views cannot be made, ids 0-65535 to the host's."""
    uid, gid = os.geteuid(), os.getegid()
    try:
        if uid == 0:
            Path(f"/proc/{pid}/uid_map").write_text(f"0 0 {IDS}\n")
            Path(f"/proc/{pid}/gid_map").write_text(f"0 0 {IDS}\n")
            return
        Path(f"/proc/{pid}/setgroups").write_text("deny\n")
        Path(f"/proc/{pid}/uid_map").write_text(f"0 {uid} 1\n")
        Path(f"/proc/{pid}/gid_map").write_text(f"0 {gid} 1\n")
    except OSError as err:
        raise SandboxUnavailable(f"bwrap: cannot map the sandbox's user ids ({err.strerror})") from None
