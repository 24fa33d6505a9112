"""tools/test_timed_pass.sh, make test's second pass, run with a stand-in for the interpreter: a script that
says where and how it runs, instead of the test suite. What the pass does to the suite is the suite's own
run; this checks its plumbing: where the tests beside the timed ones run, what either failing does, and
that a stop reaches both at once."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "test_timed_pass.sh"
# The stand-in: which pass it is (the `-m` expression), its CPUs, nice level and engine, then it waits
# WAIT_S and exits with the code asked for that pass.
FAKE = """#!/bin/bash
case "$*" in *"-m timed and not slow"*) which=timed;; *) which=beside;; esac
echo "$which pid $$"
echo "$which cpus $(taskset -cp $$ | sed 's/.*: //') nice $(nice) docker ${DOCKER_HOST:-none}"
echo $$ >> "$PIDS"
sleep "${WAIT_S:-0}" & wait $!
echo "$which done"
[ "$which" = timed ] && exit "${TIMED_RC:-0}" || exit "${BESIDE_RC:-0}"
"""

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: the passes run one after the other")


@pytest.fixture()
def fake(tmp_path: Path) -> Path:
    path = tmp_path / "fakepy"
    path.write_text(FAKE)
    path.chmod(0o755)
    return path


CALLERS_ENGINE = "unix:///run/the-callers/docker.sock"
# What the script is started at, as make starts it: every CPU, the normal priority where this test may set it
# (make test runs this file itself beside the timed tests, on CPU 0 at nice 19: there `nproc` says 1).
NICE = 0 if os.geteuid() == 0 else os.nice(0)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PIDS": str(tmp_path / "pids"), "TMPDIR": str(tmp_path), "DOCKER_HOST": CALLERS_ENGINE,
            **extra}


def _as_make_starts_it() -> None:
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
    if os.geteuid() == 0:
        os.setpriority(os.PRIO_PROCESS, 0, NICE)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # (as a terminal's Ctrl-C finds it, not pytest's ignore)


def test_the_tests_beside_run_on_cpu_0_at_nice_19_with_no_engine_and_print_after_the_timed(
        fake: Path, tmp_path: Path) -> None:
    done = subprocess.run([str(SCRIPT), str(fake)], capture_output=True, text=True, env=_env(tmp_path), timeout=60,
                          preexec_fn=_as_make_starts_it)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    beside = next(line for line in lines if line.startswith("beside cpus "))
    assert beside == "beside cpus 0 nice 19 docker unix:///nonexistent/docker.sock", lines
    timed = next(line for line in lines if line.startswith("timed cpus "))
    cpus = timed.split()[2]  # (taskset's list: "0,1", "0-15")
    assert cpus != "0" and timed.endswith(f" nice {NICE} docker {CALLERS_ENGINE}"), lines
    # the timed pass's own lines first (live), then the header and the lines of the tests beside
    header = next(i for i, line in enumerate(lines) if line.startswith("--- beside the timed tests"))
    assert lines.index("timed done") < header < lines.index("beside done"), lines
    assert not list(tmp_path.glob("optrunner-beside.*"))


@pytest.mark.parametrize(("timed_rc", "beside_rc", "expected"), [("0", "1", 1), ("1", "0", 1), ("1", "1", 1)])
def test_either_pass_failing_fails_it_after_both_ran(fake: Path, tmp_path: Path, timed_rc: str, beside_rc: str,
                                                      expected: int) -> None:
    done = subprocess.run([str(SCRIPT), str(fake)], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path, TIMED_RC=timed_rc, BESIDE_RC=beside_rc), preexec_fn=_as_make_starts_it)
    assert done.returncode == expected, done.stdout
    assert "timed done" in done.stdout and "beside done" in done.stdout


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_ends_both_passes_at_once(fake: Path, tmp_path: Path, signum: int) -> None:
    proc = subprocess.Popen([str(SCRIPT), str(fake)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=_env(tmp_path, WAIT_S="60"), start_new_session=True, preexec_fn=_as_make_starts_it)
    pids = tmp_path / "pids"
    deadline = time.monotonic() + 30
    while len(pids.read_text().split() if pids.exists() else []) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 2
    # Ctrl-C reaches the terminal's process group (the script's); a TERM comes to the script alone
    os.killpg(proc.pid, signum) if signum == signal.SIGINT else proc.send_signal(signum)
    output, _ = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signum, output
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not list(tmp_path.glob("optrunner-beside.*"))
