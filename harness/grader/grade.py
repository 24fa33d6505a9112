"""Grading one rollout: a patch for a task, timed against the base code and the expert's change.

Each code state (base, expert, patch) gets its own fresh sandbox from the task image; the agent never
touched any of them. They are started, patched and built in parallel; the base stores reference
results, expert and patch are checked against them (these correctness runs double as the discarded
warm-up), then the timing rounds follow (`timing.py`).

Verdicts use GSO's definitions (harness.metrics); bootstrap intervals over rounds flag a verdict as
uncertain when its interval straddles the threshold. The report keeps GSO's keys and adds ours.
"""
from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from harness import metrics
from harness.grader.config import GradeConfig
from harness.grader.states import CodeState, StepFailed, Stop, copy_references, prepare_state, reason_of, \
    run_test_script
from harness.grader.timing import RATIOS, Log, bootstrap, estimates, straddles, time_rounds
from harness.sandbox.interface import Sandbox, SandboxError, pin_if_possible
from harness.sandbox.providers import SandboxProvider, provider
from harness.tasks.task import Task

# round(gm, 1) >= 1.2 holds from gm = 1.15 on (1.1 from 1.05): the value an interval is compared with.
EDGE_BELOW_THRESHOLD = 0.05


def grade(task: Task, patch: str | None, image: str, config: GradeConfig | None = None,
          instance_id: str | None = None, log: Log = lambda _msg: None,
          sandboxes: SandboxProvider | None = None) -> dict[str, Any]:
    """Grade one patch; always returns a report (failures are statuses, not exceptions)."""
    config = config or GradeConfig()
    sandboxes = sandboxes or provider("docker")
    if task.reward_check is not None:  # a verifier that writes a reward (Harbor), not timed tests
        from harness.grader.reward import grade_reward
        return grade_reward(task, patch, image, config, sandboxes, instance_id, log)
    started = time.monotonic()
    report = config.new_report(instance_id or task.id, patch, base_times=[], patch_times=[], commit_times=[],
                               opt_stats={}, score=0.0)
    boxes: list[Sandbox] = []
    try:
        if not report["patch_exists"]:
            raise Stop("empty_patch", "the patch is empty")
        states = _prepare(task, patch or "", image, config, report, boxes, log, sandboxes)
        times = time_rounds(task, states, config, log)
        verdicts(report, [s.name for s in states], times, states[0].tests, config)
        report["status"], report["reason"] = "passed", ""
    except Stop as stop:
        report["status"], report["reason"] = stop.status, stop.reason
    except SandboxError as err:  # infrastructure, not the patch: say so, grade the rest
        report["status"], report["reason"] = "error", str(err)
    finally:
        for box in boxes:
            try:
                box.close()
            except SandboxError:
                pass  # already gone; the provider's exit hooks and cleanup cover the rest
    report["wall_time_s"] = round(time.monotonic() - started, 2)
    return report


def _prepare(task: Task, patch: str, image: str, config: GradeConfig, report: dict[str, Any],
             boxes: list[Sandbox], log: Log, sandboxes: SandboxProvider) -> list[CodeState]:
    """Start, patch and build the three states in parallel; then check them in GSO's status order."""

    limits = replace(config.limits().for_task(None, task.memory), network=task.network == "allowed")

    def start(name: str, code: str | None) -> CodeState:
        box = sandboxes.start(image, limits, labels={"optrunner.role": f"grade-{name}"})
        boxes.append(box)
        # The expert's state: its commit checked out where the image has it (GSO), else its diff applied.
        expert_commit = task.opt_commit if name == "commit" else None
        state = prepare_state(name, box, task, None if expert_commit else code, commit=expert_commit)
        if name == "base":
            for test in state.tests:
                run_test_script(state, test, "reference", task.test_timeout)
        return state

    log(f"[{task.id}] base: reference run; expert and patch: apply, build, equivalence (in parallel)")
    with ThreadPoolExecutor(3, thread_name_prefix="grade-prepare") as pool:
        base_f = pool.submit(start, "base", None)
        expert_f, patch_f = (pool.submit(start, name, code) for name, code in
                             (("commit", task.expert_patch), ("patch", patch)))
        # The equivalence runs need the base's reference results; they double as the warm-up.
        expert_eq, patch_eq = (pool.submit(_eqcheck, base_f, state_f, task) for state_f in (expert_f, patch_f))
    cpuset = config.timing_cpuset()
    if cpuset is not None:  # timing runs share one CPU, where the provider can pin
        for box in boxes:
            pin_if_possible(box, cpuset)
    # Outcomes in GSO's status order.
    try:
        base = base_f.result()
    except StepFailed as err:
        raise Stop("base_failed", reason_of(err, "base")) from None
    report["base_successfully_run"] = True
    try:
        expert = expert_eq.result()
    except StepFailed as err:  # the task itself is broken on this machine, not the rollout
        raise Stop("error", reason_of(err, "expert")) from None
    try:
        patched = patch_f.result()
    except StepFailed as err:
        raise Stop("patch_failed", reason_of(err, "patch")) from None
    report["patch_successfully_applied"] = True
    try:
        patch_eq.result()
    except StepFailed as err:
        raise Stop("test_failed", reason_of(err, "patch")) from None
    return [base, patched, expert]


def _eqcheck(base_f: Future[CodeState], other_f: Future[CodeState], task: Task) -> CodeState:
    """Once both states are ready: check `other`'s results against the base's reference results."""
    other = other_f.result()
    try:
        base = base_f.result()
    except StepFailed:
        return other  # the base's failure is reported first, from its own future
    copy_references(base.sandbox, other.sandbox)
    for test in other.tests:
        run_test_script(other, test, "eqcheck", task.test_timeout)
    return other


def verdicts(report: dict[str, Any], names: list[str], times: dict[str, dict[str, list[float]]],
             tests: tuple[str, ...], config: GradeConfig) -> None:
    """Fill the report's times, speedups, GSO verdicts, score and intervals from the round times
    (times[state][test] = one value per round; states base, patch, commit)."""
    arrays = {name: np.array([times[name][t] for t in tests]) for name in names}  # (tests, rounds)
    per_test, speedups = estimates(arrays, config.stat)
    base, patch, commit = (per_test[n].tolist() for n in ("base", "patch", "commit"))
    pb, pc, cb = (speedups[k].tolist() for k in RATIOS)
    stats = metrics.opt_stats_from(pb, pc, cb, base, patch, commit)
    report.update(
        test_passed=True, tests=list(tests), base_times=base, patch_times=patch, commit_times=commit,
        round_times={n: {t: times[n][t] for t in tests} for n in names},
        opt_base=metrics.opt_base_from(pb, base, patch, config.min_speedup),
        opt_commit=metrics.opt_p_from(pb, pc, base, patch, config.p, config.min_speedup),
        opt_stats=stats.as_dict(), per_test_speedups={"patch_base": pb, "patch_commit": pc, "commit_base": cb},
    )
    report["score"] = (metrics.log_stretch_score(stats.gm_speedup_patch_base, stats.gm_speedup_commit_base)
                       if stats.gm_speedup_commit_base > 1 else None)
    intervals = bootstrap(arrays, config)
    report["intervals"] = intervals
    report["uncertain"] = {
        "opt_base": straddles(intervals["gm_speedup_patch_base"], config.min_speedup - EDGE_BELOW_THRESHOLD),
        "opt_commit": straddles(intervals["hm_speedup_patch_commit"], config.p),
    }


def opt_p_of(report: dict[str, Any], p: float) -> bool:
    """Opt_p for any p, from a stored report (GSO's opt_commit is p = 0.95), under its own GSO version."""
    if report.get("status") != "passed":
        return False
    return bool(report["opt_base"]) and report["opt_stats"]["hm_speedup_patch_commit"] > p
