"""The sandbox's own death is the agent's outcome (issue 44, class 5).

Killing a sandbox's keep-alive from inside (`pkill -KILL -x sleep`, `kill -9 -1`) ends the sandbox as an
engine failure would; it used to be recorded `infra_error` and retried in a fresh sandbox, again on every
resume: an agent could trade a bad attempt for a fresh one, a selection the metrics did not see, each
discarded attempt paid for. Now such a sandbox raises `SandboxKilledFromInside` (both providers), the rollout
is recorded `sandbox_killed` with its trajectory and spend and graded as the empty patch it left, never
retried; a sandbox ended from outside (the container killed or removed from the host, a cleanup) is still
infrastructure, retried, up to `rollout_attempts` attempts in all across resumes, every attempt's spend
counted and its trajectory kept.
"""
from __future__ import annotations

import json
import secrets
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.models.records import Usage
from harness.sandbox.docker.deaths import verdict
from harness.sandbox.interface import SandboxError, SandboxKilledFromInside, SandboxLimits
from harness.sandbox.providers import provider
from harness.tasks.folder import load_task
from runner.config import RunConf
from runner.rollout import Live, RolloutJob, RolloutRunner
from scaffolds.exits import ExitReason
from tests.conftest import write_task
from tests.test_runner import containers_of, results, run_dir, runner, start_runner, tasks_dir  # noqa: F401
from tests.test_sandbox_conformance import image_for, name  # noqa: F401

KILLS = ["pkill -KILL -x sleep", "kill -9 -1"]


def _script(*commands: str) -> str:
    return "model.steps=[" + "".join(f"{{bash: '{c}'}}, " for c in commands) + "{finish: done}]"


# ---------------------------------------------------------------- without an engine


def test_the_engines_events_tell_whose_doing_a_stop_was() -> None:
    die = ("die", {"exitCode": "137"})
    assert "killed its keep-alive" in (verdict([("start", {}), die]) or "")
    assert "ran out of memory" in (verdict([("start", {}), ("oom", {}), die]) or "")
    for outside in ("kill", "stop", "restart"):  # docker kill / stop / restart / rm -f, a cleanup, a daemon stopping
        assert verdict([("start", {}), (outside, {"signal": "9"}), die]) is None
    assert verdict([("start", {})]) is None  # still running
    # only the last run counts: a restart (the grader's freeze) was ours, the death after it was not
    assert verdict([("start", {}), ("kill", {}), ("die", {}), ("start", {}), die]) is not None


class EngineAway:
    """A provider whose every start fails as an engine that went away would."""
    name = "fake"

    def __init__(self) -> None:
        self.starts = 0

    def start(self, *_args: object, **_kwargs: object) -> None:
        self.starts += 1
        raise SandboxError("docker: connection refused")


def test_a_resumed_rollout_gets_only_the_attempts_it_has_left(tmp_path: Path) -> None:
    conf = RunConf()
    conf.infra_retries, conf.rollout_attempts = 5, 3
    task = load_task(write_task(tmp_path, "tiny"))
    before = RolloutJob(task, 0, "no-image", spent_before=[Usage(calls=1, cost_usd=0.25)] * 2, attempts_before=2,
                        errors_before=["SandboxError: one", "SandboxError: two"],
                        trajectories_before=["trajectories/tiny/0.attempt1.json"])
    engine = EngineAway()
    record = RolloutRunner(conf, "run", engine).run(before, Live(task.id, 0)).record  # type: ignore[arg-type]
    assert engine.starts == 1  # five retries allowed here, but one attempt left in all
    assert record.exit_reason == ExitReason.INFRA_ERROR and record.attempts == 3
    assert record.infra_errors == ["SandboxError: one", "SandboxError: two", "SandboxError: docker: connection refused"]
    assert record.cost_usd == pytest.approx(0.5) and len(record.attempt_usage) == 3  # (one per attempt)
    assert record.attempt_trajectories == ["trajectories/tiny/0.attempt1.json"]


# ---------------------------------------------------------------- each provider (as the conformance suite runs them)


@pytest.mark.docker
@pytest.mark.parametrize("command, outside", [(KILLS[0], "kill"), (KILLS[1], "remove")])
def test_a_sandbox_its_processes_ended_is_told_from_one_ended_from_outside(name: str, command: str,  # noqa: F811
                                                                           outside: str) -> None:
    box = provider(name).start(image_for(name), SandboxLimits())
    try:
        with pytest.raises(SandboxKilledFromInside, match="killed its keep-alive"):
            box.exec(command, timeout=30)
            for _ in range(100):  # (the command may end before the sandbox has gone: the next one fails)
                box.exec("true", timeout=30)
                time.sleep(0.05)
        with pytest.raises(SandboxKilledFromInside):  # and so does taking its diff
            box.diff()
    finally:
        box.close()
    _ended_from_outside(name, outside)


def _ended_from_outside(name: str, how: str) -> None:  # noqa: F811
    """A sandbox ended from the host while a command runs in it: infrastructure, not the subclass."""
    mark = {"optrunner.test": secrets.token_hex(6)}
    box = provider(name).start(image_for(name), SandboxLimits(), labels=mark)

    def end() -> None:
        time.sleep(1.5)
        container = getattr(box, "container", None)
        if container is None and how == "kill":  # bwrap: a kill of ours (the backstop of a wedged exec)
            box.stop()  # type: ignore[attr-defined]
        elif container is None:  # bwrap: a cleanup (`optrunner cleanup`, another run's, the exit hooks)
            from harness.sandbox.bwrap import registry
            registry.remove_sandboxes("mine", labels=mark)
        elif how == "kill":  # `docker kill`, a daemon stopping it
            container.kill()
        else:  # `docker rm -f`, a cleanup by label
            container.remove(force=True)

    ender = threading.Thread(target=end)
    ender.start()
    try:
        with pytest.raises(SandboxError) as raised:
            box.exec("sleep 30", timeout=60)
            box.exec("true", timeout=30)
        assert not isinstance(raised.value, SandboxKilledFromInside), raised.value
    finally:
        ender.join()
        box.close()


# ---------------------------------------------------------------- the runner, end to end


@pytest.mark.docker
@pytest.mark.parametrize("command, sandboxes", [(KILLS[0], "docker"), (KILLS[1], "docker"),
                                                (KILLS[0], "bwrap")])
def test_an_agent_that_kills_its_sandbox_keeps_that_outcome_also_on_resume(tasks_dir: Path, tmp_path: Path,  # noqa: F811
                                                                          command: str, sandboxes: str) -> None:
    args = ("model=script", _script("echo started > notes.txt", command, "echo after"), "scaffold=mini_swe",
            f"tasks.selector={tasks_dir}", "tasks.ids=[alpha]", "infra_retries=2", "grading.rounds=2",
            f"sandbox.provider={sandboxes}")
    done = runner(*args, out=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    path = run_dir(tmp_path)
    (record,) = results(path)
    assert record["exit_reason"] == "sandbox_killed", (record["exit_reason"], record["exit_message"])
    assert "killed its keep-alive" in record["exit_message"] and "killed its keep-alive" in \
        record["details"]["sandbox_killed"]
    assert record["attempts"] == 1 and record["infra_errors"] == [] and "attempt_usage" not in record
    assert record["patch"] == "" and record["grading"]["status"] == "empty_patch"  # what it left: nothing
    assert record["cost_usd"] > 0 and record["usage"]["calls"] >= 2  # its spend is its own
    trajectory = json.loads((path / record["trajectory"]).read_text())
    assert command in json.dumps(trajectory["messages"])
    assert list((path / "trajectories" / "alpha").glob("*.attempt*.json")) == []

    again = runner(*args, out=tmp_path)  # the same command resumes: nothing to redo
    assert again.returncode == 0, again.stderr[-2000:]
    assert "1 rollouts already finished, 0 to run" in again.stdout, again.stdout
    assert [r["attempts"] for r in results(path)] == [1]


def _kill_commands_from_the_host(pid: int, stop: threading.Event, killed: list[str]) -> None:
    """Kill each container of runner `pid` from the host once its agent's command runs (an engine failure)."""
    while not stop.is_set():
        for container in containers_of(pid):
            if container.status != "running":
                continue
            try:
                rows = container.top(ps_args="-o pid,args").get("Processes") or []
            except Exception:  # noqa: BLE001 - gone meanwhile
                continue
            if any("sleep 120" in row[-1] for row in rows) and container.id not in killed:
                container.kill()
                killed.append(container.id)
        stop.wait(0.3)


def _run_with_host_kills(args: tuple[str, ...], out: Path) -> tuple[str, int]:
    proc = start_runner(*args, out=out)
    stop, killed = threading.Event(), []  # type: ignore[var-annotated]
    killer = threading.Thread(target=_kill_commands_from_the_host, args=(proc.pid, stop, killed), daemon=True)
    killer.start()
    try:
        output, _ = proc.communicate(timeout=600)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output[-3000:]
    return output, len(killed)


@pytest.mark.docker
def test_an_engine_failure_is_retried_up_to_the_cap_across_resumes_every_attempt_kept(tasks_dir: Path,  # noqa: F811
                                                                                       tmp_path: Path) -> None:
    args = ("model=script", _script("sleep 120"), "scaffold=mini_swe", f"tasks.selector={tasks_dir}",
            "tasks.ids=[alpha]", "infra_retries=1", "rollout_attempts=3", "grade=none")
    _output, kills = _run_with_host_kills(args, tmp_path)
    path = run_dir(tmp_path)
    (first,) = results(path)
    assert kills == 2 and first["exit_reason"] == "infra_error" and first["attempts"] == 2, first["exit_message"]
    assert all(e.startswith("SandboxError: ") for e in first["infra_errors"]) and len(first["infra_errors"]) == 2

    output, kills = _run_with_host_kills(args, tmp_path)  # resumed: one attempt left of three
    assert "1 of them infrastructure failures, run again" in output and kills == 1
    record: dict[str, Any] = {(r["instance_id"], r["rollout"]): r for r in results(path)}[("alpha", 0)]
    assert record["exit_reason"] == "infra_error" and record["attempts"] == 3 and len(record["infra_errors"]) == 3
    per_attempt = record["attempt_usage"]  # every attempt's spend, the first run's two included
    assert len(per_attempt) == 3 and all(u["calls"] == 1 and u["cost_usd"] > 0 for u in per_attempt)
    assert record["cost_usd"] == pytest.approx(sum(u["cost_usd"] for u in per_attempt))
    # and every attempt's trajectory, each with the command the host killed under it
    assert record["attempt_trajectories"] == [f"trajectories/alpha/0.attempt{n}.json" for n in (1, 2, 3)]
    for ref in record["attempt_trajectories"]:
        assert "sleep 120" in json.dumps(json.loads((path / ref).read_text())["messages"])

    output, kills = _run_with_host_kills(args, tmp_path)  # its attempts are used up: kept as it is
    assert kills == 0 and "1 infrastructure failures kept" in output, output[-2000:]
    last = {(r["instance_id"], r["rollout"]): r for r in results(path)}[("alpha", 0)]
    assert last["attempts"] == 3 and last["cost_usd"] == pytest.approx(record["cost_usd"])
    summary = json.loads((path / "report.json").read_text())["summary"]
    assert summary["cost_usd"] == pytest.approx(record["cost_usd"])
