"""SIGTERM, SIGHUP and a second signal on the commands besides the runner (the runner's and `harness grade`'s
own are in test_runner and test_grade_cli): `runner.judge`, `runner.grade` and `harness validate` stop as
Ctrl-C does. What finished is kept, reports are written, no container is left, the exit code is 128 plus
the signal's number; a second signal exits at once."""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_server import OpenAIServer, Received, Reply, completion
from tests.test_runner import ROOT, containers_of, signal_when, wait_for

pytestmark = pytest.mark.docker

FIXTURE = Path(__file__).parent / "fixtures" / "run_a718ad9"  # a graded run of the smoke tasks


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "run")
    return tmp_path / "run"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_runner_judge_stops_on_a_signal_and_keeps_what_it_judged(run: Path, signum: int) -> None:
    verdict = json.dumps({"hack": False, "kinds": [], "description": "a real change"})

    def slow(_received: Received) -> Reply:  # a judge slow enough to be caught in the middle
        return Reply(body=completion(verdict), delay_s=0.3)

    with OpenAIServer(policy=slow) as server:
        proc = start("runner.judge", str(run), "judge=local", f"judge.api_base={server.base_url}",
                     "judge.name=openai/judge-model", "judge.price.input=1", "judge.price.output=1", "judge.votes=2",
                     "judge.parallel=1", "judge.structured=false")
        ready = lambda: wait_for(lambda: any((run / "judging").rglob("*.json")), 120, "a first judgement")  # noqa: E731
        output, _ = signal_when(proc, ready, signum)
    assert proc.returncode == 128 + signum and "Traceback" not in output, output[-2000:]
    assert "the judgements made so far are kept" in output
    kept = list((run / "judging").rglob("*.json"))
    assert kept and all(json.loads(p.read_text()) for p in kept)  # each one whole
    assert len(kept) < len(list((run / "rollouts").rglob("*.json")))  # it was stopped before the end


def test_runner_grade_stops_on_sigterm_writes_the_reports_and_removes_its_containers(run: Path) -> None:
    report = run / "report.md"
    before = report.stat().st_mtime
    proc = start("runner.grade", str(run), "--force", "--rounds", "2")
    output, _ = signal_when(proc, lambda: wait_for(lambda: bool(containers_of(proc.pid)), 300, "grading containers"),
                            signal.SIGTERM)
    assert proc.returncode == 143 and "Traceback" not in output, output[-2000:]
    assert "the gradings finished so far are kept" in output
    assert not containers_of(proc.pid)
    assert report.stat().st_mtime > before  # the reports were rewritten on the way out


def bwrap_sandboxes_of(pid: int) -> list[Path]:
    """bwrap sandboxes started by process `pid` (their records name it as their owner)."""
    from harness.sandbox.bwrap.registry import STATE, read_meta
    return [d for d in STATE.glob("sbx-*") if str(read_meta(d).get("owner", "")).endswith(f":{pid}")]


@pytest.mark.parametrize("sandboxes", ["docker", "bwrap"])
def test_a_second_signal_ends_harness_validate_at_once_and_removes_its_sandboxes(tmp_path: Path,
                                                                                 sandboxes: str) -> None:
    mine = containers_of if sandboxes == "docker" else bwrap_sandboxes_of
    proc = start("harness", "validate", "--tasks", "smoke", "--rounds", "2", "--out", str(tmp_path / "out"),
                 "--provider", sandboxes)
    # (bwrap's orderly stop takes moments: the second signal comes at once, while the first is handled)
    output, took = signal_when(proc, lambda: wait_for(lambda: bool(mine(proc.pid)), 300, "sandboxes"),
                               signal.SIGHUP, signal.SIGTERM, gap=0.1 if sandboxes == "docker" else 0.0)
    assert proc.returncode == 129 and "second signal (SIGTERM)" in output, output[-2000:]
    # Not waiting for the validation's grading or builds (minutes); under make test's three workers on two
    # cores the removal of a bwrap sandbox's tree took 19.8 s once (0.7 s alone), hence the margin.
    assert took < 60
    assert not mine(proc.pid)
