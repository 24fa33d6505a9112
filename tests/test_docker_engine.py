"""The engine bootstrap: where it cannot start Docker it says so in one line, without a traceback."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not shutil.which("setpriv"), reason="needs setpriv to drop root")
@pytest.mark.parametrize("argv, hint", [(["-m", "harness.sandbox.docker.engine"], "start Docker"),
                                        (["-m", "harness", "cleanup"], "run 'optrunner setup'"),
                                        (["-m", "runner.cli", "cleanup"], "run 'optrunner setup'")])
def test_unprivileged_user_without_docker_gets_one_line(argv: list[str], hint: str) -> None:
    # As 'nobody' the engine's socket is off limits and installing is not allowed; a command other than setup
    # never tries to install or start one, and says what to run instead.
    python = str(ROOT / ".venv" / "bin" / "python")
    done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, *argv],
                          cwd=ROOT, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach a Docker engine" in lines[0] and hint in lines[0], done.stderr
    if "setup" in hint:  # the commands that need an engine also say how to do without one
        assert "--provider bwrap --rootfs host" in lines[0]
