"""The GSO test protocol helper: timing lines appended, references stored and checked."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_task

PERFKIT = Path(__file__).resolve().parents[1] / "harness" / "grader" / "perfkit.py"


def _run(task: Path, work: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=f"{task / 'repo'}")
    return subprocess.run([sys.executable, "test_sum.py", str(work / "times.txt"), *flags,
                           "--file_prefix", str(work / "ref")], cwd=work, env=env, capture_output=True, text=True)


def test_reference_then_eqcheck(tmp_path: Path) -> None:
    task = write_task(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "test_sum.py").write_text((task / "tests" / "test_sum.py").read_text())
    (work / "perfkit.py").write_text(PERFKIT.read_text())
    assert _run(task, work, "--reference").returncode == 0
    assert (work / "ref_result.pkl").exists()
    assert _run(task, work, "--eqcheck").returncode == 0
    lines = (work / "times.txt").read_text().splitlines()
    assert len(lines) == 2 and all(line.startswith("Execution time: ") and line.endswith("s") for line in lines)
    # A changed result must fail the equivalence check.
    (task / "repo" / "tiny" / "__init__.py").write_text("def total(xs):\n    return sum(xs) + 1\n")
    failed = _run(task, work, "--eqcheck")
    assert failed.returncode != 0 and "AssertionError" in failed.stderr
