"""`.ci/run`'s own logic: its exit status is the suite's and the type check's, and leaving stops the check.

The script runs as CI runs it, with `make` on PATH replaced by a small script that plays the targets (the
suite and the type check are tested elsewhere; here what is under test is how the script combines them).
Session 27's CI failed with every test and the type check passing: the EXIT trap's `kill` of a check that had
ended failed under `set -e` and set the script's status to 1.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FAKE_MAKE = """#!/bin/sh
echo "$1" >> "$CALLS"
case "$1" in
  test) [ -n "$TEST_SLEEP" ] && sleep "$TEST_SLEEP"; exit "${TEST_RC:-0}" ;;
  typecheck)
    sleep 300 & echo $! > "$CHECK_CHILD"
    [ -n "$CHECK_WAITS" ] && wait
    echo "the type check says ${TYPECHECK_RC:-0}"; kill $! 2>/dev/null; exit "${TYPECHECK_RC:-0}" ;;
  *) exit 0 ;;
esac
"""


def _checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    (tmp_path / "repo" / ".ci").mkdir(parents=True)
    script = tmp_path / "repo" / ".ci" / "run"
    script.write_text((ROOT / ".ci" / "run").read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "make").write_text(FAKE_MAKE)
    (bin_dir / "make").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls"),
           "CHECK_CHILD": str(tmp_path / "child"), "TMPDIR": str(tmp_path)}
    return script, env


@pytest.mark.parametrize(("test_rc", "check_rc", "expected"), [(0, 0, 0), (2, 0, 1), (0, 1, 1), (2, 1, 1)])
def test_the_exit_status_is_the_suites_and_the_type_checks(tmp_path: Path, test_rc: int, check_rc: int,
                                                          expected: int) -> None:
    script, env = _checkout(tmp_path)
    env.update(TEST_RC=str(test_rc), TYPECHECK_RC=str(check_rc))
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == expected, done.stdout + done.stderr
    assert (tmp_path / "calls").read_text().split().count("test") == 1
    # the check's output follows the suite's, and its log is removed
    assert done.stdout.rstrip().endswith(f"the type check says {check_rc}")
    assert not list(tmp_path.glob("tmp.*"))


def test_leaving_early_stops_the_type_check_and_its_children(tmp_path: Path) -> None:
    script, env = _checkout(tmp_path)
    env.update(TEST_SLEEP="60", CHECK_WAITS="1")
    ci = subprocess.Popen(["bash", str(script)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)
    child_file = tmp_path / "child"
    deadline = time.monotonic() + 20
    while not (child_file.exists() and child_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    child = int(child_file.read_text())
    os.kill(child, 0)  # the type check's child runs
    try:
        ci.send_signal(signal.SIGTERM)
        assert ci.wait(timeout=20) != 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        os.kill(child, signal.SIGKILL)
        pytest.fail("the type check's child outlived .ci/run")
    finally:
        os.killpg(ci.pid, signal.SIGKILL)  # the suite's stand-in, which a TERM to the script alone leaves
