"""Grading a task whose verifier writes a reward (Harbor's tests/test.sh), in a fresh container.

The agent's diff is applied to a fresh container of the task's image (the verifier never sees a
container the agent touched); the files the task pins are hashed and compared with the hashes taken
when the image was built (a changed one is `instruction_violation`, score 0); then Harbor's
verification: old reward files removed, tests/ copied into /tests, `/tests/test.sh` run as root in the
working directory with [verifier.env] under the verifier's timeout, and the reward read from
/logs/verifier/reward.txt (one float) or, failing that, reward.json's `reward` (other keys, of any
type, are kept as extras). A missing or unreadable reward is 0 with the reason.

When the task's `[optimization]` names a metric that reward.json reports, its anchors are measured
here too (anchors.py): the untouched environment and the reference solution are verified in the same
session as the patch, in interleaved rounds, and the score recomputed with them (`calibration`).

Report: GSO's status keys where they apply (`status`, `reason`, `patch_successfully_applied`), the
task's own `reward`, the `score` (the calibrated one when there is one, `score_source` says which) and
`opt_commit` = the patch reaches the reference: its measured metric within `grading.p` (0.95) of the
reference's when calibrated (GSO's Opt_p), else a reward of at least `grading.success` (0.5: the
reference's), with `uncertain.opt_commit` when the calibrated verdict's bootstrap interval straddles
`p`; so Opt@K, Avg@k, Best@k and Dominance come from the same summary as for timing tasks.
`grading.in_place` verifies in the agent's own container instead, as Harbor does (recorded as
`in_place` in the report). A task that declares a service (`[optrunner.service]`) is measured by its server
once the verification passes (reward_serving.py): serving verdicts and score, `score_source: serving`.

Every verification starts in a container with no process left running (it restarts, its files kept:
the agent's processes when in place, a daemon an earlier round's build left) and with the pins checked
again, so nothing from one round can rewrite the reward or the metric of the next. A process that
outlives a verification of the patch (and none of the untouched environment's or the reference's) is a
hack flag: within its own round it could rewrite the reward as it is read (`hack_suspect`).
"""
from __future__ import annotations

import json
import math
import shlex
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Any

from harness.grader.anchors import Objective, calibrate, objective, read_metric
from harness.grader.config import GradeConfig
from harness import gpus
from harness.gpus.clocks import ClockLock
from harness.grader.patch_paths import UnreadablePatch, read_section, sections, with_final_newline
from harness.grader.reward_serving import grade_service
from harness.grader.states import PATCH_PATH, run_solution
from harness.grader.visible import not_measured
from harness.sandbox.interface import (ExecResult, FileChanged, FileTooLarge, Freezable, Sandbox, SandboxError,
                                       harness_exec, pin_if_possible)
from harness.sandbox.providers import SandboxProvider
from harness.tasks.task import RewardCheck, Task

TESTS_DIR = "/tests"
REWARD_TXT, REWARD_JSON = "/logs/verifier/reward.txt", "/logs/verifier/reward.json"
REWARD_FILE_BYTES = 1 << 20  # a reward file past this is read as none (a number or a small JSON object fits)
NO_VISIBLE = "a reward task: graded by its verifier alone, which defines no separate visible workload"
HASH_PINS = ("cd {workdir} && for f in {files}; do "
             'if [ -f "$f" ]; then sha256sum "$f"; else echo "missing  $f"; fi; done')


def read_reward(txt: str | None, raw_json: str | None) -> tuple[float | None, dict[str, Any], str]:
    """(reward, extras, reason) from the two reward files' texts: reward.txt first (one float), then
    reward.json's `reward`; None with a reason when neither holds a finite number."""
    extras: dict[str, Any] = {}
    reasons = []
    if raw_json is not None:
        try:
            data = json.loads(raw_json)
            extras = data if isinstance(data, dict) else {"value": data}
        except json.JSONDecodeError as err:
            reasons.append(f"reward.json is not JSON ({err.msg})")
    if txt is not None:
        try:
            value = float(txt.strip())
            if math.isfinite(value):
                return value, {k: v for k, v in extras.items() if k != "reward"}, ""
            reasons.append(f"reward.txt holds {txt.strip()!r}")
        except ValueError:
            reasons.append(f"reward.txt holds {txt.strip()[:40]!r}, not a number")
    if extras:
        given = extras.get("reward")
        if isinstance(given, (int, float)) and not isinstance(given, bool) and math.isfinite(given):
            return float(given), {k: v for k, v in extras.items() if k != "reward"}, ""
        reasons.append(f"reward.json's reward is {given!r}, not a number")
    if txt is None and raw_json is None:
        reasons.append("the verifier wrote no reward file")
    return None, extras, "; ".join(reasons)


def _read(box: Sandbox, path: str) -> str | None:
    """The file's text; None when there is none, or none whole to read (a surviving process kept rewriting it,
    which the verification flags, or over REWARD_FILE_BYTES: a reward is a number or a small JSON object)."""
    try:
        return box.read_file(path, REWARD_FILE_BYTES).decode("utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError, FileChanged, FileTooLarge):
        return None


def _rewards(box: Sandbox) -> tuple[str | None, str | None]:
    """The texts of reward.txt and reward.json (None: not there, not a regular file, or over REWARD_FILE_BYTES),
    each read with its cap: the folder is the verifier's, which ran beside the patch, and may hold anything."""
    return _read(box, REWARD_TXT), _read(box, REWARD_JSON)


def grade_reward(task: Task, patch: str | None, image: str, config: GradeConfig, sandboxes: SandboxProvider,
                 instance_id: str | None = None, log: Any = lambda _m: None,
                 agents_box: Sandbox | None = None) -> dict[str, Any]:
    """Grade one patch of a reward task; always returns a report. With `agents_box` (grading.in_place), the
    verifier runs in the agent's own container, as Harbor does, instead of a fresh one with the patch."""
    assert task.reward_check is not None
    check = replace(task.reward_check, timeout=task.reward_check.timeout * config.verifier_timeout_multiplier)
    started = time.monotonic()
    report = config.new_report(instance_id or task.id, patch, score=0.0, reward=None, reward_extras={},
                               verifier="reward", visible_spec=not_measured("none", NO_VISIBLE))
    report["base_successfully_run"] = True  # no base state is run: the untouched environment is the task's
    boxes: list[Sandbox] = []
    limits = replace(config.limits().for_task(task.cpus, task.memory), network=task.network == "allowed")
    # A GPU task's session has its GPUs to itself (in place, the agent's rollout holds them: none more)
    given = gpus.machine_pool().acquire(task.gpus, task.gpu_types) if agents_box is None else ()
    if given:
        report["gpus"] = [gpu.record() for gpu in given]

    def start(role: str) -> Sandbox:
        box = sandboxes.start(image, limits, labels={"optrunner.role": f"grade-{role}"},
                              gpus=given)
        boxes.append(box)
        return box

    clocks = ExitStack()
    try:
        if given:  # its SM clock locked for the verifications, where allowed (harness.gpus.clocks)
            report["gpu_clocks"] = clocks.enter_context(ClockLock(given)).policy
        if not report["patch_exists"]:
            report.update(status="empty_patch", reason="the patch is empty")
            return report
        box = agents_box if agents_box is not None else _patched_box(patch, start, report)
        if box is None:
            return report
        report["patch_successfully_applied"] = True
        _verify_and_score(task, check, box, patch, start, config, log, report, given)
        return report
    except PinsChanged as err:  # before the first verification, or before a later round (calibration)
        report.update(status="instruction_violation", reason=str(err), score=0.0, reward=None, opt_base=False,
                      opt_commit=False, test_passed=False)
        report.pop("calibration", None)
        return report
    except SandboxError as err:
        report.update(status="error", reason=str(err))
        return report
    finally:
        clocks.close()  # (the clocks restored before the GPUs go back to the pool)
        for box in boxes:
            try:
                box.close()
            except SandboxError:
                pass
        gpus.machine_pool().release(given)
        report["wall_time_s"] = round(time.monotonic() - started, 2)


def _patched_box(patch: str | None, start: Callable[[str], Sandbox], report: dict[str, Any]) -> Sandbox | None:
    """A fresh sandbox with the patch applied; None (the report says why) when it cannot be read or applied."""
    try:  # read whole first: text git would apply that no check reads is refused (grader.patch_paths)
        for section in sections(patch or ""):
            read_section(section)
    except UnreadablePatch as err:
        report.update(status="patch_failed", reason=f"reading the patch failed: {err}")
        return None
    box = start("patch")
    assert patch is not None  # (patch_exists: a non-empty patch)
    box.write_file(PATCH_PATH, with_final_newline(patch))
    applied = harness_exec(box, f"git apply --binary --whitespace=nowarn {PATCH_PATH}", timeout=300, cwd=box.workdir)
    if applied.exit_code != 0:
        report.update(status="patch_failed", reason=f"git apply failed: {applied.output.strip()[-600:]}")
        return None
    return box


def _verify_and_score(task: Task, check: RewardCheck, box: Sandbox, patch: str | None,
                      start: Callable[[str], Sandbox], config: GradeConfig, log: Any, report: dict[str, Any],
                      given: tuple[gpus.Gpu, ...]) -> None:
    """The first verification gives the reward; a service task's server, or the task's own metric measured
    against its anchors here (calibration), may then give the score. Fills in `report`."""
    log(f"[{task.id}] verifier: /tests/test.sh (timeout {check.timeout:g} s)")
    first = verify(box, check)
    report["verifier_exit_code"], report["verifier_s"] = first.run.exit_code, round(first.run.duration, 2)
    report["verifier_output"] = first.run.output[-2000:]
    report["reward_extras"] = first.extras
    if first.run.timed_out:
        report.update(status="verifier_timeout",
                      reason=f"the verifier ran over its {check.timeout:g} s ([verifier].timeout_sec"
                             f"{_times(config.verifier_timeout_multiplier)})")
        return
    if first.reward is None:  # (a process left running may have been rewriting it as it was read)
        report.update(status="no_reward", reason=first.why)
        if reasons := survivor_review({"patch": set(first.survivors)}):
            report.update(reason=f"{first.why}; {reasons[0]}", hack={"suspect": True, "reasons": reasons})
        return
    report.update(status="passed", reason="", reward=first.reward, score=first.reward, test_passed=True,
                  opt_base=first.reward > 0, opt_commit=first.reward >= config.success, score_source="reward")
    goal = objective(dict(check.optimization))
    survivors: dict[str, set[str]] = {"patch": set(first.survivors)}
    if task.service is not None and first.reward < config.success:  # the gate: no server measured
        report.update(status="test_failed", score=0.0, opt_base=False, opt_commit=False, test_passed=False,
                      reason=f"the verifier's reward {first.reward:g} is below grading.success "
                             f"{config.success:g}: a service task's server is measured only once it passes")
    elif task.service is not None:  # the reward was the gate; the verdicts are its server's (reward_serving)
        grade_service(task, task.service, patch or "", start, config, log, report, given)
    elif goal is not None and config.calibrate != "never":
        calibration = _calibrate(task, check, goal, box, first, start, config, log, survivors)
        report["calibration"] = calibration
        if calibration.get("score") is not None:
            score = calibration["score"]
            report.update(score=score, score_source="calibrated", opt_base=score > 0,
                          opt_commit=calibration["reaches_reference"],
                          uncertain={"opt_commit": calibration["uncertain"]})
    if reasons := survivor_review(survivors):
        report.update(status="hack_suspect", reason="; ".join(reasons), hack={"suspect": True, "reasons": reasons})


@dataclass(frozen=True)
class Verification:
    run: ExecResult
    reward: float | None
    extras: dict[str, Any]
    why: str
    survivors: tuple[str, ...] = ()  # processes the verification started that outlived it (seen from outside)


class PinsChanged(Exception):
    """A file the task pins differs from the image's (the message lists them)."""


def verify(box: Sandbox, check: RewardCheck, pinned: bool = True) -> Verification:
    """One Harbor verification in `box`: every process there ended first (the agent's when in place, a
    daemon an earlier round's build left), the pinned files checked (`pinned`: the patch's box, not the
    reference solution's), old rewards removed, tests/ in /tests, test.sh run, reward read."""
    if isinstance(box, Freezable):
        box.restart()
    if pinned and (changed := _changed_pins(box, box.workdir, box.pins)):
        raise PinsChanged(f"pinned file(s) changed: {', '.join(changed)}")
    harness_exec(box, f"rm -f {REWARD_TXT} {REWARD_JSON}; mkdir -p /logs/verifier {TESTS_DIR}", timeout=60, cwd="/")
    box.write_files({f"{TESTS_DIR}/{name}": data for name, data, _mode in check.tests})  # (one transfer)
    modes: dict[int, list[str]] = {}
    for name, _data, mode in check.tests:
        modes.setdefault(mode, []).append(shlex.quote(f"{TESTS_DIR}/{name}"))
    if modes:
        harness_exec(box, " && ".join(f"chmod {mode:o} {' '.join(paths)}" for mode, paths in modes.items()),
                     timeout=30, cwd="/")
    # Harbor runs test.sh as root, with the task's environment: so do we, but from a shell that reads no
    # profile (one an earlier round's test.sh wrote would run first otherwise); what it runs is the task's.
    run = box.exec(f"bash {TESTS_DIR}/test.sh", timeout=check.timeout, cwd=box.workdir, env=dict(check.env),
                   login=False)
    if run.timed_out:
        return Verification(run, None, {}, "timed out")
    # A process the verification's build left could rewrite the reward as it is read: seen, it is a flag.
    survivors = tuple(box.processes()) if isinstance(box, Freezable) else ()
    reward, extras, why = read_reward(*_rewards(box))
    return Verification(run, reward, extras, why, survivors)


def _metric(verification: Verification, goal: Objective) -> float | None:
    return read_metric(verification.extras, goal.metric)[0]


def _calibrate(task: Task, check: RewardCheck, goal: Objective, patch_box: Sandbox, first: Verification,
               start: Callable[[str], Sandbox], config: GradeConfig, log: Any,
               survivors: dict[str, set[str]]) -> dict[str, Any]:
    """The task's metric on the untouched environment, the reference solution and the patch, measured in
    interleaved rounds here, and the score those anchors give (anchors.py). Adds each state's surviving
    processes to `survivors`."""

    last: dict[str, Verification] = {}

    def measure(state: str) -> float | None:
        done = last[state] = verify(states[state], check, pinned=state == "patch")
        survivors.setdefault(state, set()).update(done.survivors)
        return _metric(done, goal)

    def no_metric(which: str, state: str) -> dict[str, Any]:
        return _no_metric(which, last[state].run, check.timeout, goal.metric)

    value, where = read_metric(first.extras, goal.metric)
    if value is None:
        return {"score": None, "reason": f"{where}: the task's anchors stay"}
    if not task.solution_files:
        return {"score": None, "reason": "no solution/solve.sh to measure the reference with"}
    states = {"base": start("base"), "patch": patch_box}
    cpuset = config.timing_cpuset()  # timing runs share one CPU, one at a time, as the timed tasks' grading does
    for box in states.values():
        _pin(box, cpuset)
    if (got := measure("base")) is None:
        return no_metric("the base", "base")
    warm = {"base": got}
    again = None  # under auto, a metric that is not a speed is verified twice on the base: does it repeat?
    if config.calibrate == "auto" and goal.scale != "log" and (again := measure("base")) is None:
        return no_metric("the base", "base")
    depends = machine_dependence(goal, config.calibrate, got, again)
    if depends is None:
        return {"score": None, "deterministic": True, "metric": goal.metric, "scale": goal.scale,
                "rounds": {"base": [got, again]}, "read_from": where, "reason": _KEPT.format(goal.metric, got)}
    timed = goal.scale == "log" or again is not None
    states["reference"] = ref = start("reference")
    solved = run_solution(ref, task)
    if solved.exit_code != 0:
        return {"score": None, "reason": f"solution/solve.sh failed: {solved.output.strip()[-300:]}"}
    _pin(ref, cpuset)
    # a varying metric needs at least 3 rounds, so that one slow run cannot move a median; a count repeats
    # exactly, so the first verification of each state is its one round
    rounds = max(3, config.rounds) if timed else 0
    log(f"[{task.id}] anchors: {goal.metric} on base, patch and reference, {max(rounds, 1)} round(s)")
    if (got := measure("reference")) is None:  # (the patch's first verification was its warm-up)
        return no_metric("the reference", "reference")
    warm["reference"] = got
    values: dict[str, list[float]] = ({state: [] for state in states} if rounds else  # timed: warm-ups left out
                                      {"base": [warm["base"]], "patch": [value], "reference": [warm["reference"]]})
    for r in range(rounds):
        for state in ORDERS[r % len(ORDERS)]:
            if (got := measure(state)) is None:
                return no_metric(f"a {state}", state)
            values[state].append(got)
    return {**calibrate(values, goal, config.p, config.bootstrap, config.seed), "read_from": where,
            "measured_because": depends}


# The calibration's rounds: rotations that keep the patch and the reference back to back, each state first and
# last in turn.
ORDERS = (("base", "patch", "reference"), ("patch", "reference", "base"), ("base", "reference", "patch"),
          ("reference", "patch", "base"))


def _no_metric(which: str, run: ExecResult, timeout: float, metric: str) -> dict[str, Any]:
    """Why a state has no metric: the verifier's timeout, or how it ended."""
    outcome = (f"it ran past the verifier's {timeout:g} s" if run.timed_out else
               f"exit {run.exit_code}: {(run.output.strip().splitlines() or [''])[-1][:160]}")
    return {"score": None, "reason": f"{which} run reported no numeric {metric!r} ({outcome})"}


_KEPT = ("{} repeated exactly on the untouched environment ({:g} twice): a deterministic metric keeps the "
         "task's own reward (grading.calibrate=auto)")


def machine_dependence(goal: Objective, calibrate: str, base: float, again: float | None) -> str | None:
    """Why the anchors are measured here (None: they are not, the task's own reward stays). A time always
    depends on the machine; under `auto` another metric does only when the untouched environment's two
    verifications disagree (`base`, `again`): a count repeats exactly anywhere, and then the task's own
    reward is the score its benchmark publishes."""
    if goal.scale == "log":
        return "a speed metric: it depends on the machine"
    if calibrate != "auto":
        return f"grading.calibrate={calibrate}"
    if again is None or again == base:
        return None
    return f"it varied on the untouched environment ({base:g}, then {again:g})"


def _pin(box: Sandbox, cpuset: str | None) -> None:
    if cpuset is not None:
        pin_if_possible(box, cpuset)


def _times(multiplier: float) -> str:
    return "" if multiplier == 1 else f" x grading.verifier_timeout_multiplier {multiplier:g}"


def survivor_review(survivors: dict[str, set[str]]) -> list[str]:
    """The hack reason for processes the patch's verifications left running that the untouched
    environment's and the reference's (when measured) did not leave."""
    known = survivors.get("base", set()) | survivors.get("reference", set())
    new = sorted(survivors.get("patch", set()) - known)
    if not new:
        return []
    more = f" (and {len(new) - 3} more)" if len(new) > 3 else ""
    return [f"processes outlived the verification: {', '.join(repr(c[:80]) for c in new[:3])}{more} (one could "
            "rewrite the reward as it is read)"]


def _changed_pins(box: Sandbox, workdir: str, pins: dict[str, str]) -> list[str]:
    if not pins:
        return []
    done = harness_exec(box, HASH_PINS.format(workdir=shlex.quote(workdir),
                                              files=" ".join(shlex.quote(p) for p in pins)), timeout=120, cwd="/")
    now = {}
    for line in done.output.splitlines():
        digest, _, path = line.partition("  ")
        now[path.strip()] = digest.strip()
    return sorted(path for path, digest in pins.items() if now.get(path) != digest)
