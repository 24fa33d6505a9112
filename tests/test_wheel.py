"""The package as a user gets it, checked in make test's first pass: tests/wheel_check.py builds the wheel,
installs it into a fresh venv and, from a folder outside the checkout, runs every command's `--help`, a docs
page and the offline oracle on one smoke task (what it checks is its docstring's). It ran in .ci/run before
the suite, alone for ~50 s while the CPUs were half idle; among the suite's files it shares them."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.docker
@pytest.mark.long("builds the wheel, installs it in a fresh venv and runs the oracle on one smoke task: ~50 s")
def test_the_wheel_in_a_fresh_venv_answers_every_command_and_runs_the_oracle_outside_the_checkout() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "wheel_check.py")], capture_output=True, text=True,
                          timeout=800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert any(line.startswith("wheel-check: optrunner ") and "(built from git " in line for line in lines), lines
    assert any(" over 1 task(s)" in line for line in lines), lines  # (the run's report was read and checked)
