"""Root in a sandbox is nobody on the host (issue 45). Run by root, a bwrap sandbox's ids are a range no one
else has (harness.sandbox.bwrap.ids), so:
- a setuid-root copy of bash made inside and kept in a checkpoint is host uid BASE's on the host, and gives
  no one root inside either (every command runs with no_new_privs), on both providers;
- a root-only host file the sandbox is shown (OPTRUNNER_BWRAP_HOST_DIRS) stays closed to it, and what it
  writes is the range's on the host;
- a `chmod 000 /dev/null` inside leaves the host's node as it was (Docker: the container's own node;
  bwrap: the host's, refused);
- both launch helpers (launch.c, and launch.py where there is no C compiler) map the range;
- a state folder the range's root cannot pass through is refused in one line, before anything is made.
Before, root's sandboxes mapped ids 0-65535 to the host's own: each case failed.
"""
from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

from harness.sandbox.interface import Checkpointable, SandboxUnavailable
from harness.sandbox.providers import provider
from tests.docker_support import bwrap_here, providers_here
from tests.test_hostile_sandbox import start

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="the range is root's: another user maps itself alone")
BWRAP = pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")
# Run as nobody: the kept copy of bash asked to keep its setuid powers (-p).
AS_NOBODY = "setpriv --reuid 65534 --regid 65534 --clear-groups /opt/sbash -p -c 'id -u'"


@pytest.mark.docker
@pytest.mark.parametrize("name", providers_here())
def test_a_setuid_bash_kept_in_a_checkpoint_gives_no_one_root(name: str) -> None:
    from harness.sandbox.bwrap import ids, rootfs

    kept = f"optrunner/checkpoint:setuid-{name}-{uuid.uuid4().hex[:8]}"
    box = start(name)
    try:
        made = box.exec("cp /bin/bash /opt/sbash && chmod 4755 /opt/sbash && stat -c '%u %a' /opt/sbash")
        assert made.output.split() == ["0", "4755"], made.output
        assert isinstance(box, Checkpointable)
        box.checkpoint(kept)
    finally:
        box.close()
    try:
        with provider(name).start(kept) as again:
            assert again.exec("stat -c '%u %a' /opt/sbash").output.split() == ["0", "4755"]
            assert again.exec(AS_NOBODY).output.strip() == "65534"
        if name == "bwrap" and ids.shifted():  # on the host, the copy is the range's root's, not root's
            (copy,) = [p for p in (rootfs.ROOTFS / rootfs.ident_of(kept)).rglob("sbash")]
            assert copy.stat().st_uid == ids.BASE and copy.stat().st_mode & 0o4000
    finally:
        provider(name).remove_image(kept)


@pytest.mark.docker
@pytest.mark.parametrize("name", providers_here())
def test_a_chmod_of_a_device_node_inside_leaves_the_hosts_as_it_was(name: str) -> None:
    before = os.stat("/dev/null")
    box = start(name)
    try:
        box.exec("chmod 000 /dev/null /dev/zero; chown 65534 /dev/null", timeout=30)
        inside = box.exec("stat -c %a /dev/null", timeout=30).output.strip()
    finally:
        box.close()
    after = os.stat("/dev/null")
    assert (after.st_mode, after.st_uid, after.st_rdev) == (before.st_mode, before.st_uid, before.st_rdev)
    if name == "bwrap":  # the host's node, which no sandbox owns: the chmod was refused
        assert inside == f"{before.st_mode & 0o777:o}", inside


@AS_ROOT
@BWRAP
def test_a_root_only_host_file_stays_closed_and_the_sandboxs_files_are_the_ranges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.sandbox.bwrap import ids, rootfs
    from harness.sandbox.bwrap.sandbox import BwrapSandbox

    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "open.txt").write_text("anyone\n")
    (shared / "secret.txt").write_text("root only\n")
    (shared / "secret.txt").chmod(0o600)
    monkeypatch.setattr(rootfs, "HOST_DIRS", (str(shared),))
    box = BwrapSandbox.start(rootfs.host_rootfs("t", (rootfs.empty_layer(tmp_path / "layer"),), {}))
    try:
        seen = box.exec(f"cat /proc/self/uid_map; cat {shared}/open.txt; cat {shared}/secret.txt; echo rc=$?; "
                        "stat -c %u /usr/bin/env; echo made > /tmp/made.txt", timeout=30)
        upper = box.upper
        made = next(upper.rglob("made.txt"))
        assert (made.stat().st_uid, made.stat().st_gid) == (ids.BASE, ids.BASE)
    finally:
        box.close()
    lines = seen.output.splitlines()
    assert lines[0].split() == ["0", str(ids.BASE), str(ids.IDS)], seen.output
    assert "anyone" in lines and "root only" not in seen.output and "rc=1" in lines, seen.output
    assert "0" in lines  # the host's /usr is the sandbox root's (an idmapped view), as an image's files are


@AS_ROOT
@BWRAP
def test_both_launch_helpers_map_the_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.sandbox.bwrap import hardening, ids, rootfs
    from harness.sandbox.bwrap.sandbox import BwrapSandbox

    compiled = hardening._helper("launch")
    assert compiled[0].endswith(tuple("0123456789abcdef")), compiled  # (this machine has a C compiler)
    found = hardening._found_helper
    monkeypatch.setattr(hardening, "_found_helper", lambda name: (sys.executable, "-I", "-S",
                                                                  str(hardening.HERE / "launch.py"))
                        if name == "launch" else found(name))
    box = BwrapSandbox.start(rootfs.host_rootfs("t", (rootfs.empty_layer(tmp_path / "layer"),), {}))
    try:
        assert "launch.py" in " ".join(box._keeper.args)  # type: ignore[union-attr]
        seen = box.exec("cat /proc/self/uid_map /proc/self/gid_map; id -u; stat -c %u /etc/passwd")
    finally:
        box.close()
    assert seen.output.split() == ["0", str(ids.BASE), str(ids.IDS)] * 2 + ["0", "0"], seen.output


@AS_ROOT
@BWRAP
def test_a_state_folder_closed_to_the_range_is_refused_in_one_line(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.sandbox.bwrap import registry, rootfs
    from harness.sandbox.bwrap.sandbox import BwrapSandbox

    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    monkeypatch.setattr(registry, "STATE", closed / "bwrap")
    with pytest.raises(SandboxUnavailable) as refused:
        BwrapSandbox.start(rootfs.host_rootfs("t", (rootfs.empty_layer(tmp_path / "layer"),), {}))
    said = str(refused.value)
    assert "\n" not in said and f"chmod o+x {closed}" in said and "OPTRUNNER_BWRAP_STATE" in said, said
    assert not (closed / "bwrap").exists()  # nothing made


@AS_ROOT
@BWRAP
def test_where_idmapped_views_fail_roots_sandboxes_say_so_once_and_keep_the_hosts_nodes_safe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A machine without idmapped mounts (gVisor, old kernels): the probe's launch fails, here through a range
    the kernel refuses to map. Root's sandboxes then map the host's ids, as before, the run says so in one
    line, and device nodes are the sandbox's own copies (a chmod inside changes the copy only)."""
    from harness.sandbox.bwrap import ids, rootfs
    from harness.sandbox.bwrap.sandbox import BwrapSandbox

    monkeypatch.setattr(ids, "_probed", [])
    monkeypatch.setattr(ids, "BASE", 2**32 - 16)
    assert not ids.shifted() and not ids.shifted()
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "cannot give root's sandboxes ids of their own" in said, said
    before = os.stat("/dev/null")
    box = BwrapSandbox.start(rootfs.host_rootfs("t", (rootfs.empty_layer(tmp_path / "layer"),), {}))
    try:
        seen = box.exec("cat /proc/self/uid_map; chmod 000 /dev/null; stat -c %a /dev/null", timeout=30)
    finally:
        box.close()
    assert seen.output.split() == ["0", "0", str(ids.IDS), "0"], seen.output
    after = os.stat("/dev/null")
    assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid)
