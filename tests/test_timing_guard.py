"""The suite's guard on long tests (tests/timing_guard.py), run on a suite of two tests written here: over the
limit without `@pytest.mark.long("why")` fails the run and names the test; with it, passes; the time by file
is printed either way."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ("import time\nimport pytest\n\n"
         "def test_quick():\n    pass\n\n"
         "{marker}def test_slow():\n    time.sleep(0.4)\n")


def _run(folder: Path, marker: str) -> subprocess.CompletedProcess[str]:
    folder.mkdir()
    (folder / "test_here.py").write_text(SUITE.format(marker=marker))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPTRUNNER_TEST_LIMIT": "0.2"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.timing_guard", "-p", "no:cacheprovider",
                           "test_here.py"], cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_a_long_test_without_a_reason_fails_the_run_and_one_with_a_reason_passes(tmp_path: Path) -> None:
    unmarked = _run(tmp_path / "unmarked", "")
    assert unmarked.returncode == 1, unmarked.stdout
    assert "TOO LONG test_here.py::test_slow" in unmarked.stdout and unmarked.stdout.count("TOO LONG") == 1
    assert "2 passed" in unmarked.stdout and "time by file" in unmarked.stdout
    marked = _run(tmp_path / "marked", '@pytest.mark.long("sleeps on purpose")\n')
    assert marked.returncode == 0, marked.stdout
    assert "TOO LONG" not in marked.stdout and "test_here.py" in marked.stdout.split("time by file")[1]
