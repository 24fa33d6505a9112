"""A GPU machine's interpreter and CUDA reach the sandboxes over its system (hostextras.py).

The layout of the GPU host this project borrows, made here: `python3` a venv outside /usr holding what the
tasks import (here a module of the test's own: no torch is needed to tell which interpreter ran), and a
CUDA folder with nvcc at a prefix no fixed PATH names (an nvcc that prints what it was asked). Without the
host's interpreter wrapped in, a sandbox's python3 is /usr/bin/python3, which has neither; without the
CUDA variables, nvcc is not found.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness.grader import isolation
from harness.sandbox import hostextras
from harness.sandbox.hostextras import VARIABLE, extras
from harness.sandbox.interface import ImageBuildError
from harness.sandbox.providers import provider
from harness.tasks.folder import load_task
from tests.conftest import write_task
from tests.docker_support import bwrap_here

MARKER = "import hostmarker; import sys; print(hostmarker.WHERE, sys.prefix)"


def _venv(root: Path, module: str = "hostmarker") -> Path:
    """A venv of /usr/bin/python3 outside /usr, with `module` in its site-packages; its python3."""
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(root)], check=True)
    (site,) = root.glob("lib/python3*/site-packages")
    package = site / module
    package.mkdir()
    (package / "__init__.py").write_text(f"WHERE = {str(root)!r}\n")
    return root / "bin" / "python3"


def _cuda(root: Path) -> Path:
    """A CUDA folder at a prefix of its own: bin/nvcc and include/cuda_runtime.h."""
    (root / "bin").mkdir(parents=True)
    (root / "include").mkdir()
    (root / "include" / "cuda_runtime.h").write_text("/* a toolkit's header */\n")
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text('#!/bin/sh\necho "nvcc of the test: $*"\n')
    nvcc.chmod(0o755)
    return root


def test_auto_takes_the_first_python3_on_path_with_torch_for_gpu_tasks_only(tmp_path: Path) -> None:
    plain = _venv(tmp_path / "plain")
    with_torch = _venv(tmp_path / "torchy", module="torch")  # what `auto` looks for: it imports torch
    path = f"{plain.parent}:{with_torch.parent}:/usr/bin:/bin"
    found = extras(needs_gpu=True, environ={"PATH": path})
    assert found.python == str(with_torch) and str(tmp_path / "torchy") in found.binds
    assert extras(needs_gpu=False, environ={"PATH": path}).python == ""  # a CPU task: the system's
    chosen = extras(needs_gpu=False, environ={"PATH": path, VARIABLE: str(plain)})
    assert chosen.python == str(plain) and chosen.adapted() == [f"python3 is {plain} (sandbox.host_python)"]
    assert extras(needs_gpu=True, environ={"PATH": path, VARIABLE: "system"}).python == ""
    with pytest.raises(ImageBuildError, match="is not a Python interpreter"):
        extras(needs_gpu=False, environ={VARIABLE: str(tmp_path / "none")})


def test_cuda_is_found_from_nvcc_on_path_or_cuda_home_and_only_for_gpu_tasks(tmp_path: Path) -> None:
    cuda = _cuda(tmp_path / "toolkits" / "cuda-x")
    libs = f"{cuda}/lib64:/usr/lib/x86_64-linux-gnu:/home/someone/private"
    found = extras(needs_gpu=True, environ={"PATH": f"/usr/bin:{cuda}/bin", "LD_LIBRARY_PATH": libs})
    assert found.cuda == str(cuda) and found.binds == (str(cuda),)
    assert found.env == {"CUDA_HOME": str(cuda), "PATH+": f"{cuda}/bin",
                         "LD_LIBRARY_PATH": f"{cuda}/lib64:/usr/lib/x86_64-linux-gnu"}  # (not the home folder)
    assert found.apply({"PATH": "/usr/bin:/bin"})["PATH"] == f"{cuda}/bin:/usr/bin:/bin"
    assert extras(needs_gpu=True, environ={"PATH": "/usr/bin", "CUDA_HOME": str(cuda)}).cuda == str(cuda)
    assert extras(needs_gpu=False, environ={"PATH": f"{cuda}/bin"}).cuda == ""
    wrapper = tmp_path / "wrappers"  # an nvcc wrapper script in a system-like folder is not a toolkit's folder
    wrapper.mkdir()
    (wrapper / "nvcc").write_text("#!/bin/sh\n")
    (wrapper / "nvcc").chmod(0o755)
    assert extras(needs_gpu=True, environ={"PATH": str(wrapper)}).cuda in ("", "/usr/local/cuda")


@pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")
def test_a_layer_over_the_host_runs_the_hosts_python3_and_finds_its_nvcc(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    python, cuda = _venv(tmp_path / "opt-torch"), _cuda(tmp_path / "cuda-12")
    # a GPU task (it needs no GPU to be built); its install step runs the interpreter the layer wraps in
    task = load_task(write_task(tmp_path / "tasks", "gpuhost", gpus=1,
                                install_commands=["python3 -c 'import hostmarker' && nvcc --version"]))
    monkeypatch.setenv(VARIABLE, str(python))
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:{cuda}/bin")
    sandboxes = provider("bwrap")
    images = sandboxes.ensure_images([task], progress=lambda _m: None, rootfs_from="host")
    assert images["gpuhost"].adapted == (f"python3 is {python} (sandbox.host_python)",
                                         f"CUDA from {cuda} ({cuda}/bin on PATH, CUDA_HOME)")
    with sandboxes.start(images["gpuhost"].agent) as box:
        ran = box.exec(f"python3 -c '{MARKER}' && python -c '{MARKER}' && nvcc -V && echo $CUDA_HOME", timeout=60)
        assert ran.exit_code == 0, ran.output
        lines = ran.output.split("\n")
        assert lines[:2] == [f"{tmp_path / 'opt-torch'} {tmp_path / 'opt-torch'}"] * 2  # the venv, as a venv
        assert lines[2:4] == ["nvcc of the test: -V", str(cuda)]
        assert box.exec(f"touch {python.parent}/x", timeout=30).exit_code != 0  # bound read-only
        # Its owner is not mapped, so the sandbox shows it as nobody, the fenced user's name: still it is no
        # place that user can write, nor anything a fenced run left behind (a walk of it cost seconds a run).
        fenced = isolation.fence(box, ("/testbed",))
        listed = box.exec(f"cat {isolation.WRITABLE_LIST}", timeout=30).output.split()
        assert "/dev/shm" in listed and not [p for p in listed if p.startswith(str(tmp_path))], listed
        _, outside = isolation.parse(box.exec(isolation.wrap(fenced, f"python3 -c '{MARKER}'"), timeout=60).output)
        assert outside is not None and outside.left == (), outside
    # the same task for a CPU run: the system's python3, no CUDA, another layer
    monkeypatch.delenv(VARIABLE)
    plain = load_task(write_task(tmp_path / "cpu", "gpuhost", install_commands=["true"]))
    other = sandboxes.ensure_images([plain], progress=lambda _m: None, rootfs_from="host")["gpuhost"]
    assert other.adapted == ()
    with sandboxes.start(other.agent) as box:
        ran = box.exec("command -v python3; echo cuda=$CUDA_HOME; command -v nvcc || true", timeout=60)
        assert ran.output.split("\n")[:2] == ["/usr/bin/python3", "cuda="] and str(cuda) not in ran.output, \
            ran.output


def test_the_check_s_probe_line_names_the_interpreter_and_nvcc(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv")
    monkeypatch.setenv(VARIABLE, str(python))
    line = hostextras.describe_for_check()
    assert line.startswith(f"python3 {python}, nvcc ") and str(tmp_path / "venv") in line


@pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")
def test_a_run_s_host_python_that_is_no_interpreter_is_refused_in_one_line(tmp_path: Path) -> None:
    from tests.test_runner import runner

    write_task(tmp_path / "tasks", "hosted")
    done = runner("sandbox.provider=bwrap", "sandbox.rootfs=host", f"sandbox.host_python={tmp_path}/nothing",
                  f"tasks.selector={tmp_path / 'tasks'}", "model=noop", "grade=none", out=tmp_path / "out",
                  env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"}, timeout=300)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"sandbox.host_python: {tmp_path}/nothing is not a Python interpreter of this machine" in done.stderr
