"""Grading one rollout: a patch for a task, timed against the base code and the expert's change.

Each code state (base, expert, patch) gets its own fresh container from the task image; the agent
never touched any of them. The base stores reference results, expert and patch are checked against
them (these correctness runs double as the discarded warm-up), then R timing rounds follow:

- `interleaved` (default): in every round each (test, state) runs once as a fresh process, states
  in rotated order, one process at a time, all containers pinned to the same CPU;
- `gso`: GSO's order and statistic for comparison: all base runs, then all patch runs, then all
  expert runs, no pinning, mean of the runs.

Verdicts use GSO's definitions (harness.metrics); bootstrap intervals over rounds flag a verdict as
uncertain when its interval straddles the threshold. The report keeps GSO's keys and adds ours.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import numpy as np

from harness import metrics
from harness.perfrun import CodeState, StepFailed, copy_references, prepare_state, run_test_script
from harness.sandbox import DockerSandbox, SandboxLimits
from harness.tasks import Task

GRADER_VERSION = "1.0"
MODES = ("interleaved", "gso")
STATS = ("mean", "median")
# round(gm, 1) >= 1.2 holds from gm = 1.15 on: the value an interval is compared with.
OPT_BASE_EDGE = metrics.MIN_OPT_SPEEDUP - 0.05
SPEEDUP_KEYS = ("gm_speedup_patch_base", "hm_speedup_patch_base", "gm_speedup_patch_commit",
                "hm_speedup_patch_commit", "gm_speedup_commit_base", "hm_speedup_commit_base")

Log = Callable[[str], None]


@dataclass(frozen=True)
class GradeConfig:
    rounds: int = 5
    mode: str = "interleaved"
    stat: str = "mean"  # per-test statistic over rounds
    p: float = metrics.DEFAULT_P
    bootstrap: int = 2000
    seed: int = 0
    memory: str = "4g"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"timing mode must be one of {MODES}, got {self.mode!r}")
        if self.stat not in STATS:
            raise ValueError(f"statistic must be one of {STATS}, got {self.stat!r}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {self.rounds}")

    def limits(self) -> SandboxLimits:
        cpus = os.cpu_count() or 1
        if self.mode == "gso":  # GSO: no pinning, no CPU cap
            return SandboxLimits(cpus=float(cpus), memory=self.memory)
        return SandboxLimits(cpus=1.0, memory=self.memory, cpuset=str(cpus - 1))


class _Stop(Exception):
    """Ends a grading early with a GSO status and the reason."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def _reason(err: StepFailed, who: str) -> str:
    tail = "\n".join(err.output.strip().splitlines()[-12:])
    return f"{who}: {err.step} failed\n{tail}"


def grade(task: Task, patch: str | None, image: str, config: GradeConfig = GradeConfig(),
          instance_id: str | None = None, log: Log = lambda _msg: None) -> dict[str, Any]:
    """Grade one patch; always returns a report (failures are statuses, not exceptions)."""
    started = time.monotonic()
    report: dict[str, Any] = {
        "instance_id": instance_id or task.id, "patch_is_None": patch is None,
        "patch_exists": bool(patch and patch.strip()), "base_successfully_run": False,
        "patch_successfully_applied": False, "test_passed": False, "opt_base": False, "opt_commit": False,
        "base_times": [], "patch_times": [], "commit_times": [], "opt_stats": {}, "score": 0.0,
        "patch_sha256": patch_sha256(patch), **config_fields(config),
    }
    boxes: list[DockerSandbox] = []
    try:
        if not report["patch_exists"]:
            raise _Stop("empty_patch", "the patch is empty")
        states = _prepare(task, patch or "", image, config, report, boxes, log)
        times = _time_rounds(task, states, config, log)
        _verdicts(report, [s.name for s in states], times, states[0].tests, config)
        report["status"], report["reason"] = "passed", ""
    except _Stop as stop:
        report["status"], report["reason"] = stop.status, stop.reason
    except docker.errors.DockerException as err:  # infrastructure, not the patch: say so, grade the rest
        report["status"], report["reason"] = "error", f"docker: {str(err).splitlines()[0][:300]}"
    finally:
        for box in boxes:
            box.close()
    report["wall_time_s"] = round(time.monotonic() - started, 2)
    return report


def patch_sha256(patch: str | None) -> str | None:
    return hashlib.sha256(patch.encode()).hexdigest() if patch is not None else None


def config_fields(config: GradeConfig) -> dict[str, Any]:
    """What a stored report must match to be reused instead of re-graded."""
    return {"timing_mode": config.mode, "rounds": config.rounds, "stat": config.stat, "p": config.p,
            "grader_version": GRADER_VERSION}


def _prepare(task: Task, patch: str, image: str, config: GradeConfig, report: dict[str, Any],
             boxes: list[DockerSandbox], log: Log) -> list[CodeState]:
    limits = config.limits()

    def start(name: str, code: str | None) -> CodeState:
        box = DockerSandbox.start(image, limits, labels={"optrunner.role": f"grade-{name}"})
        boxes.append(box)
        return prepare_state(name, box, task, code)

    log(f"[{task.id}] base: reference run")
    try:
        base = start("base", None)
        for test in base.tests:
            run_test_script(base.sandbox, test, "reference", task.test_timeout)
    except StepFailed as err:
        raise _Stop("base_failed", _reason(err, "base")) from None
    report["base_successfully_run"] = True
    log(f"[{task.id}] expert: apply, build, equivalence")
    try:
        expert = start("commit", task.expert_patch)
        _eqcheck(base, expert, task)
    except StepFailed as err:  # the task itself is broken on this machine, not the rollout
        raise _Stop("error", _reason(err, "expert")) from None
    log(f"[{task.id}] patch: apply, build, equivalence")
    try:
        patched = start("patch", patch)
    except StepFailed as err:
        raise _Stop("patch_failed", _reason(err, "patch")) from None
    report["patch_successfully_applied"] = True
    try:
        _eqcheck(base, patched, task)
    except StepFailed as err:
        raise _Stop("test_failed", _reason(err, "patch")) from None
    return [base, patched, expert]


def _eqcheck(base: CodeState, other: CodeState, task: Task) -> None:
    copy_references(base.sandbox, other.sandbox)
    for test in other.tests:
        run_test_script(other.sandbox, test, "eqcheck", task.test_timeout)


def _time_rounds(task: Task, states: list[CodeState], config: GradeConfig,
                 log: Log) -> dict[str, dict[str, list[float]]]:
    """times[state][test] = one value per round."""
    tests = states[0].tests
    times: dict[str, dict[str, list[float]]] = {s.name: {t: [] for t in tests} for s in states}
    if config.mode == "interleaved":
        # Cycle through all 6 orders of the 3 states, so each state runs first, last, and right
        # after each other state equally often: a run is slowed by what ran just before it (a
        # plain rotation always put the patch right after the base).
        orders = list(itertools.permutations(states))
        schedule = [(r, test, state) for r in range(config.rounds) for i, test in enumerate(tests)
                    for state in orders[(r * len(tests) + i) % len(orders)]]
    else:  # GSO: all base runs, then all patch runs, then all expert runs
        schedule = [(r, test, state) for state in states for test in tests for r in range(config.rounds)]
    log(f"[{task.id}] timing: {len(schedule)} runs ({config.mode})")
    for _r, test, state in schedule:
        try:
            times[state.name][test].append(run_test_script(state.sandbox, test, None, task.test_timeout))
        except StepFailed as err:
            status = {"base": "base_failed", "patch": "test_failed"}.get(state.name, "error")
            raise _Stop(status, _reason(err, state.name)) from None
    return times


def _per_test(values: np.ndarray, stat: str) -> np.ndarray:
    return np.median(values, axis=-1) if stat == "median" else np.mean(values, axis=-1)


def _verdicts(report: dict[str, Any], names: list[str], times: dict[str, dict[str, list[float]]],
              tests: tuple[str, ...], config: GradeConfig) -> None:
    arrays = {name: np.array([times[name][t] for t in tests]) for name in names}  # (tests, rounds)
    base, patch, commit = (_per_test(arrays[n], config.stat).tolist() for n in ("base", "patch", "commit"))
    stats = metrics.opt_stats(base, patch, commit)
    report.update(
        test_passed=True, tests=list(tests), base_times=base, patch_times=patch, commit_times=commit,
        round_times={n: {t: times[n][t] for t in tests} for n in names},
        opt_base=metrics.opt_base(base, patch), opt_commit=metrics.opt_p(base, patch, commit, config.p),
        opt_stats=stats.as_dict(),
    )
    report["score"] = (metrics.log_stretch_score(stats.gm_speedup_patch_base, stats.gm_speedup_commit_base)
                       if stats.gm_speedup_commit_base > 1 else None)
    intervals = _bootstrap(arrays, config)
    report["intervals"] = intervals
    report["uncertain"] = {
        "opt_base": _straddles(intervals["gm_speedup_patch_base"], OPT_BASE_EDGE),
        "opt_commit": _straddles(intervals["hm_speedup_patch_commit"], config.p),
    }


def _straddles(interval: list[float], edge: float) -> bool:
    return interval[0] < edge <= interval[1]


def _bootstrap(arrays: dict[str, np.ndarray], config: GradeConfig) -> dict[str, list[float]]:
    """95% percentile intervals of every speedup, resampling rounds (jointly when interleaved)."""
    rng = np.random.default_rng(config.seed)
    rounds = arrays["base"].shape[1]
    joint = rng.integers(0, rounds, size=(config.bootstrap, rounds))

    def resampled(name: str) -> np.ndarray:  # (tests, bootstrap)
        idx = joint if config.mode == "interleaved" else rng.integers(0, rounds, size=(config.bootstrap, rounds))
        return _per_test(arrays[name][:, idx], config.stat)

    base, patch, commit = resampled("base"), resampled("patch"), resampled("commit")
    ratios = {"patch_base": base / patch, "patch_commit": commit / patch, "commit_base": base / commit}
    out = {}
    for key, ratio in ratios.items():
        gm = np.exp(np.mean(np.log(ratio), axis=0))
        hm = ratio.shape[0] / np.sum(1.0 / ratio, axis=0)
        for kind, values in (("gm", gm), ("hm", hm)):
            lo, hi = np.percentile(values, [2.5, 97.5])
            out[f"{kind}_speedup_{key}"] = [float(lo), float(hi)]
    return out


def opt_p_of(report: dict[str, Any], p: float) -> bool:
    """Opt_p for any p, from a stored report (GSO's opt_commit is p = 0.95)."""
    if report.get("status") != "passed":
        return False
    return bool(report["opt_base"]) and report["opt_stats"]["hm_speedup_patch_commit"] > p


def write_json(path: Path, data: object) -> None:
    """Atomic write: a reader never sees half a file, and an existing file is only ever replaced whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=float))
    tmp.replace(path)


def cv(values: list[float]) -> float:
    """Coefficient of variation (sample stdev / mean)."""
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0
