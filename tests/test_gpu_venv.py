"""tools/gpu_venv.sh, the GPU check's venv, on a host laid out as the GPU host we borrow: its python3 a venv
holding what the checks need, no package index (the project comes from a folder of wheels)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness.sandbox.bwrap.rootfs import empty_layer, host_rootfs
from harness.sandbox.bwrap.sandbox import BwrapSandbox
from tests.docker_support import bwrap_here

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.skipif(not Path(SYSTEM_PYTHON).is_file(), reason="needs the system's python3")


def _purelib(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout
    return Path(out.strip())


def _host_venv(path: Path) -> Path:
    """A venv standing for the host's /opt/torch/.venv: a module only it has (the host's torch)."""
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(path)], check=True)
    (_purelib(path / "bin" / "python3") / "hostonly_marker.py").write_text("WHERE = 'the host venv'\n")
    return path / "bin" / "python3"


def _wheel(folder: Path) -> Path:
    """A wheel standing for the project's (built by hand: nothing is fetched)."""
    folder.mkdir(parents=True)
    wheel = folder / "probe_pkg-1.0-py3-none-any.whl"
    info = "probe_pkg-1.0.dist-info"
    files = {"probe_pkg/__init__.py": "VERSION = '1.0'\n",
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: probe-pkg\nVersion: 1.0\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return folder


def _gpu_venv(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "tools" / "gpu_venv.sh"), *args], capture_output=True, text=True,
                          env=env or dict(os.environ), timeout=300)


def test_the_checks_venv_sees_the_packages_of_a_host_interpreter_that_is_a_venv(tmp_path: Path) -> None:
    host = _host_venv(tmp_path / "opt-torch-venv")
    # What the check did before: a venv made from a venv sees the base interpreter's packages, not the venv's.
    subprocess.run([str(host), "-m", "venv", "--without-pip", "--system-site-packages", str(tmp_path / "old")],
                   check=True)
    old = subprocess.run([str(tmp_path / "old" / "bin" / "python"), "-c", "import hostonly_marker"],
                         capture_output=True, text=True)
    assert old.returncode != 0 and "hostonly_marker" in old.stderr
    done = _gpu_venv("--python", str(host), "--wheels", str(_wheel(tmp_path / "wheels")),
                     "--dir", str(tmp_path / "check"))
    assert done.returncode == 0, done.stderr[-2000:]
    python = Path(done.stdout.strip().splitlines()[-1])
    assert python == tmp_path / "check" / "bin" / "python"
    seen = subprocess.run([str(python), "-c", "import hostonly_marker, probe_pkg; print(hostonly_marker.WHERE, "
                           "probe_pkg.VERSION)"], capture_output=True, text=True)
    assert seen.stdout.strip() == "the host venv 1.0", seen.stderr


def test_without_python_the_interpreter_that_imports_torch_is_chosen(tmp_path: Path) -> None:
    """The first python3 on PATH that imports torch (here the project's venv, with CPU torch from make
    cputorch), not the first python3 (the system's, without torch)."""
    venv_bin = Path(sys.executable).parent
    if subprocess.run([str(venv_bin / "python3"), "-c", "import torch"], capture_output=True).returncode != 0:
        pytest.skip("no torch in the project's venv (make cputorch)")
    env = {**os.environ, "PATH": f"/usr/bin:{venv_bin}:/bin"}
    done = _gpu_venv("--wheels", str(_wheel(tmp_path / "wheels")), "--dir", str(tmp_path / "check"), env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = subprocess.run([str(tmp_path / "check" / "bin" / "python"), "-c", "import torch, probe_pkg"],
                          capture_output=True, text=True)
    assert seen.returncode == 0, seen.stderr[-1000:]


@pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")
def test_a_host_python_without_ensurepip_gets_its_venv_all_the_same(tmp_path: Path) -> None:
    """Ubuntu's python3 without python3-venv: `python3 -m venv` fails for want of ensurepip. Shown in a
    sandbox over this host whose layer hides the stdlib's ensurepip (an overlay whiteout)."""
    stdlib = subprocess.run([SYSTEM_PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    layer = empty_layer(tmp_path / "layer")
    hidden = layer / "usr" / Path(stdlib).relative_to("/usr") / "ensurepip"
    hidden.parent.mkdir(parents=True)
    os.mknod(hidden, stat.S_IFCHR, os.makedev(0, 0))  # (overlayfs's whiteout: no such file above it)
    wheels = _wheel(tmp_path / "wheels")
    box = BwrapSandbox.start(host_rootfs("no-ensurepip", (layer,), {"binds": [str(ROOT), str(wheels)]}))
    try:
        assert box.exec(f"{SYSTEM_PYTHON} -m venv /tmp/plain", timeout=120).exit_code != 0  # as such a host
        done = box.exec(f"bash {ROOT}/tools/gpu_venv.sh --python {SYSTEM_PYTHON} --wheels {wheels} --dir /tmp/check",
                        timeout=300)
        assert done.exit_code == 0, done.output[-2000:]
        assert "making it without pip" in done.output and done.output.strip().endswith("/tmp/check/bin/python")
        seen = box.exec("/tmp/check/bin/python -c 'import probe_pkg; print(probe_pkg.VERSION)'", timeout=60)
        assert seen.output.strip() == "1.0", seen.output
    finally:
        box.close()
