"""`.ci/run`'s own logic: its exit status is the suite's and the type check's, and a signal stops both.

The script runs as CI runs it, with `make` on PATH replaced by a small script that plays the targets (the
suite and the type check are tested elsewhere; here what is under test is how the script combines them).
Session 27's CI failed with every test and the type check passing: the EXIT trap's `kill` of a check that had
ended failed under `set -e` and set the script's status to 1.
"""
from __future__ import annotations

import contextlib
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
  test)
    if [ -n "$TEST_SLEEP" ]; then
      sleep "$TEST_SLEEP" & echo $! > "$SUITE_CHILD"
      trap 'echo interrupted > "$SUITE_TOLD"; kill $!; exit 130' INT
      wait
    fi
    exit "${TEST_RC:-0}" ;;
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
           "CHECK_CHILD": str(tmp_path / "child"), "SUITE_CHILD": str(tmp_path / "suite_child"),
           "SUITE_TOLD": str(tmp_path / "suite_told"), "TMPDIR": str(tmp_path)}
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


def _pid(path: Path) -> int:
    deadline = time.monotonic() + 20
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return int(path.read_text())


def _gone(pid: int, within: float = 10) -> bool:
    """Whether process `pid` ends within `within` seconds (a zombie no one has reaped yet has ended); if not,
    it is killed."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    return False


def _interrupt_ignored() -> None:  # (as `cmd &` or nohup in a script leaves it, and CI's own runner may)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# (a script started with INT ignored cannot act on an INT: bash may not trap what it inherited ignored)
@pytest.mark.parametrize("sig, status, started", [(signal.SIGTERM, 143, "as from a terminal"),
                                                  (signal.SIGINT, 130, "as from a terminal"),
                                                  (signal.SIGTERM, 143, "with INT ignored")])
def test_a_signal_interrupts_the_suite_stops_the_type_check_and_waits(tmp_path: Path, sig: signal.Signals,
                                                                     status: int, started: str) -> None:
    script, env = _checkout(tmp_path)
    env.update(TEST_SLEEP="60", CHECK_WAITS="1")
    # (INT as it would be in each case: pytest's own may differ where make test starts it)
    preexec = _interrupt_ignored if started == "with INT ignored" else \
        (lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    ci = subprocess.Popen(["bash", str(script)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True, preexec_fn=preexec)
    try:
        check_child, suite_child = _pid(tmp_path / "child"), _pid(tmp_path / "suite_child")
        os.kill(check_child, 0)  # both run
        os.kill(suite_child, 0)
        ci.send_signal(sig)  # (to the script alone, as a CI runner's time limit sends it)
        assert ci.wait(timeout=20) == status
        # the suite was told as Ctrl-C tells it (pytest then removes its sandboxes), and had ended by then
        assert (tmp_path / "suite_told").read_text().strip() == "interrupted"
        assert _gone(suite_child, within=1), "the suite's child outlived .ci/run"
        assert _gone(check_child), "the type check's child outlived .ci/run"
    finally:
        with contextlib.suppress(ProcessLookupError):  # (whatever is left of its group, should it fail)
            os.killpg(ci.pid, signal.SIGKILL)
