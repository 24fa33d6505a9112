"""tools/gpu_check.sh on a machine laid out as the GPU host this project borrows, made here on the CPU.

That host has no Docker and no package index; its `python3` first on PATH is a venv outside /usr holding
torch (here the project's own .venv, which `make cputorch` gave the CPU torch wheel of /opt/wheels), while
/usr/bin/python3 has no torch; its nvcc sits under a prefix no fixed PATH names (here a folder of the
test's); the project comes as a folder of wheels (here its own wheel: the venv has what it depends on).
The check rehearses on the CPU twins of the GPU family (harness.gpus.twins): its venv is made and sees
torch, the probe names what a sandbox over the host runs, and the hack fixtures are graded in one session
beside the gold and weaker patches, in bubblewrap sandboxes over the host's own system.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docker_support import bwrap_here
from tests.wheel_check import build_wheel

ROOT = Path(__file__).resolve().parent.parent
VENV_PYTHON = Path(sys.executable).parent / "python3"


def _has_torch(python: Path) -> bool:
    return subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode == 0


pytestmark = [pytest.mark.timing_cpu,
              pytest.mark.skipif(not bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine"),
              pytest.mark.skipif(not _has_torch(VENV_PYTHON), reason="no torch in the project's venv (make cputorch)"),
              pytest.mark.skipif(_has_torch(Path("/usr/bin/python3")), reason="the system's python3 has torch")]


def _twin_graded(lines: list[str]) -> dict[str, str]:
    """The no-op run's and softmax_fused's twin's verdicts as every rehearsal must read them; its lines by name."""
    text = "\n".join(lines)
    assert "gpu-noop: Opt@1 0.000, Avg@1 0.000 (statuses: empty_patch)" in lines, text
    graded = {line.split(":")[0]: line for line in lines if line.startswith("softmax_fused ")}
    assert graded["softmax_fused gold"].startswith("softmax_fused gold: passed"), text
    assert graded["softmax_fused weaker"].startswith("softmax_fused weaker: passed"), text
    for hack in ("alias_rebound", "timer_rebound", "memo_reps"):
        assert "test_failed, credited no" in graded[f"softmax_fused {hack}"], text
    return graded


def _check(tmp_path: Path, env: dict[str, str], *args: str) -> list[str]:
    done = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh"), "--cpu", "--provider", "bwrap",
                           "--out", str(tmp_path / "out"), "--venv", str(tmp_path / "venv"),
                           "--wheels", str(tmp_path / "wheels"), *args],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return done.stdout.splitlines()


@pytest.mark.long("the GPU check's install, probe, no-op run and a hacks session of eight code states, each run "
                  "of torch fenced in a sandbox over the host: ~85 s")
def test_the_gpu_check_rehearses_on_a_host_laid_out_as_the_gpu_host(tmp_path: Path) -> None:
    cuda = tmp_path / "toolkits" / "cuda-12.8"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "include").mkdir()
    (cuda / "include" / "cuda_runtime.h").write_text("/* a toolkit's header */\n")
    (cuda / "bin" / "nvcc").write_text("#!/bin/sh\necho nvcc\n")
    (cuda / "bin" / "nvcc").chmod(0o755)
    built = build_wheel(tmp_path / "wheels", "--no-build-isolation")
    assert built.returncode == 0, built.stderr[-3000:]
    env = {**os.environ, "PATH": f"{cuda}/bin:/usr/bin:/bin:{VENV_PYTHON.parent}",  # python3 with torch: the venv
           "DOCKER_HOST": "unix:///nonexistent/docker.sock", "PIP_NO_INDEX": "1"}  # no engine, no index
    env.pop("VIRTUAL_ENV", None)
    # (two rounds: with one, the outside clock's allowance is nothing but its floor, and one slow spell in
    # the only run of an honest patch reads as time spent outside its report)
    lines = _check(tmp_path, env, "--parts", "install,probe,noop,hacks", "--tasks", "softmax_fused",
                   "--rounds", "2")
    text = "\n".join(lines)
    assert f"install: {tmp_path / 'venv'} from {VENV_PYTHON}, wheels of {tmp_path / 'wheels'}" in lines, text
    assert any(line.startswith("probe: torch ") and "sees no GPU here: a rehearsal on the CPU twins" in line
               for line in lines), text
    assert f"probe: over the host, python3 {VENV_PYTHON}, nvcc {cuda}/bin/nvcc, binds " in text
    assert any(line.startswith("probe: a sandbox over this host starts; its python3 has torch ")
               and line.endswith(" and sees no GPU") for line in lines), text
    graded = _twin_graded(lines)
    # (side_stream is the base code on a CPU: not graded, and said so)
    assert graded["softmax_fused side_stream"].endswith("left out on the CPU twin (the base code on a CPU)"), text
    assert "clock rebound" in graded["softmax_fused timer_rebound"], text
    for part in ("install", "probe", "noop", "hacks"):
        assert any(line.startswith(f"{part}: done in ") for line in lines), (part, text)
    # Run again: what is done is kept, line for line; asked --again, it is done anew.
    again = _check(tmp_path, env, "--parts", "probe,noop", "--tasks", "softmax_fused")
    kept = [line.removesuffix(" (kept from before)") for line in again if line.endswith(" (kept from before)")]
    assert kept == [line for line in lines if line.startswith(("probe: ", "gpu-noop: ", "noop: "))], again
    fresh = _check(tmp_path, env, "--parts", "probe", "--tasks", "softmax_fused", "--again")  # (the cheap part)
    assert [line for line in fresh if line.startswith("probe: torch ")] == \
        [line for line in lines if line.startswith("probe: torch ")], fresh
    assert not any(line.endswith("(kept from before)") for line in fresh), fresh


@pytest.fixture
def shared_torch() -> Iterator[Path]:
    """A venv of the system's python3 with the CPU torch wheel installed in it (from uv's cache, offline: hard
    links), in a folder every user can read: the unsandboxed provider's tests run as users of their own, to
    whom the project's venv (its interpreter under root's private home) is out of reach, as gpukit checks torch
    is installed in the interpreter's own site-packages (a .pth naming another folder is refused)."""
    wheels = sorted(Path("/opt/wheels").glob("torch-*+cpu-*.whl"))
    if os.geteuid() != 0 or not wheels:
        pytest.skip("needs root (the unsandboxed provider) and the CPU torch wheel of /opt/wheels")
    folder = Path(tempfile.mkdtemp(prefix="optrunner-torch-", dir="/var/tmp"))
    try:
        folder.chmod(0o755)
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
        done = subprocess.run([sys.executable, "-m", "uv", "pip", "install", "-q", "--offline", "--python",
                               str(folder / "venv" / "bin" / "python3"), str(wheels[-1])],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"torch could not be installed offline from uv's cache: {done.stderr.strip()[-200:]}")
        yield folder / "venv" / "bin" / "python3"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.timed  # (in the pass of its own: its timing runs and a first-pass test's on one CPU made both noise)
@pytest.mark.long("the GPU check's probe, no-op run and a hacks session of eight code states with no sandbox at all, "
                  "each run of torch a fenced process of the host: ~140 s")
def test_the_gpu_check_grades_unsandboxed_where_no_sandbox_can_start(tmp_path: Path, shared_torch: Path) -> None:
    env = {**os.environ, "PATH": f"/usr/bin:/bin:{VENV_PYTHON.parent}", "DOCKER_HOST": "unix:///nonexistent/docker.sock",
           "PIP_NO_INDEX": "1"}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(["bash", str(ROOT / "tools" / "gpu_check.sh"), "--cpu", "--provider", "unsandboxed",
                           "--out", str(tmp_path / "out"), "--venv", str(VENV_PYTHON.parent.parent),
                           "--python", str(shared_torch), "--parts", "probe,noop,hacks", "--tasks", "softmax_fused",
                           "--rounds", "2"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    text = "\n".join(lines)
    assert f"probe: no sandbox: each state runs as plain processes of this host, python3 {shared_torch}" in text
    _twin_graded(lines)
    assert "machine: no NVIDIA driver (nvidia-smi absent), provider unsandboxed" in lines, text
    # every report says so
    run = tmp_path / "out" / "runs" / "gpu-noop"
    said = (run / "report.md").read_text()
    assert "**Unsandboxed**: every sandbox of this run was plain processes of this host" in said
    made = json.loads((run / "report.json").read_text())["provenance"]
    assert made["isolated"] is False and made["engine"].startswith("none: plain processes of this host")
    assert made["adapted"]["softmax_fused"][0].startswith("no sandbox: ")
    # nothing of the check's is left (other tests' states may be alive beside it: theirs are not looked at)
    from harness.sandbox.unsandboxed import state
    for folder, record in state.records():
        assert state.owner_alive(str(record.get("owner", ""))), folder
