"""Timing code states: the schedule of rounds, per-test estimates from round times, bootstrap intervals.

- `interleaved` (default): in every round each (test, state) runs once as a fresh process, the patch
  and the expert back to back, states in rotated order, one process at a time, all containers pinned
  to the same CPU. Per-test speedups are paired: the median over rounds of each round's ratio, so the
  machine's slow spells cancel out of it;
- `gso`: GSO's order and statistic for comparison: all base runs, then all patch runs, then all
  expert runs, no pinning, ratios of the mean times.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from harness.grader.config import GradeConfig
from harness.grader.states import CodeState, StepFailed, Stop, reason_of, run_test_script
from harness.tasks.task import Task

Log = Callable[[str], None]


def time_rounds(task: Task, states: list[CodeState], config: GradeConfig,
                 log: Log) -> dict[str, dict[str, list[float]]]:
    """times[state][test] = one value per round."""
    tests = states[0].tests
    rounds = min(config.rounds, task.runs_per_test or config.rounds)  # a task may cap them (GSO's slow repos)
    times: dict[str, dict[str, list[float]]] = {s.name: {t: [] for t in tests} for s in states}
    if config.mode == "interleaved":
        # The machine's speed drifts over seconds, so the patch and the expert, whose ratio decides
        # opt_commit, always run back to back. Cycling through the 4 orders that keep them together
        # puts each state first and last, and before and after each other state, equally often
        # (a run is slowed by what ran just before it).
        orders = [o for o in itertools.permutations(states) if abs(o.index(states[1]) - o.index(states[2])) == 1]
        schedule = [(r, test, state) for r in range(rounds) for i, test in enumerate(tests)
                    for state in orders[(r * len(tests) + i) % len(orders)]]
    else:  # GSO: all base runs, then all patch runs, then all expert runs
        schedule = [(r, test, state) for state in states for test in tests for r in range(rounds)]
    log(f"[{task.id}] timing: {len(schedule)} runs ({config.mode})")
    for _r, test, state in schedule:
        try:
            times[state.name][test].append(run_test_script(state, test, None, task.test_timeout))
        except StepFailed as err:
            status = {"base": "base_failed", "patch": "test_failed"}.get(state.name, "error")
            raise Stop(status, reason_of(err, state.name)) from None
    return times


# The speedups of the report: (numerator state, denominator state) of each ratio of times.
RATIOS = {"patch_base": ("base", "patch"), "patch_commit": ("commit", "patch"), "commit_base": ("base", "commit")}


def estimates(arrays: dict[str, np.ndarray], stat: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per-test times and per-test speedups from round times; arrays are (tests, ..., rounds).

    mean/median: the statistic of each state's times, speedups are their ratios (GSO: mean).
    paired: each round's ratio of two runs made close together, then the median over rounds, so
    drift in the machine's speed cancels out of the ratio; per-test times are medians.
    """
    reduce = np.mean if stat == "mean" else np.median
    times = {name: reduce(values, axis=-1) for name, values in arrays.items()}
    if stat == "paired":
        speedups = {key: np.median(arrays[a] / arrays[b], axis=-1) for key, (a, b) in RATIOS.items()}
    else:
        speedups = {key: times[a] / times[b] for key, (a, b) in RATIOS.items()}
    return times, speedups


def straddles(interval: list[float], edge: float) -> bool:
    return interval[0] < edge <= interval[1]


def bootstrap(arrays: dict[str, np.ndarray], config: GradeConfig) -> dict[str, list[float]]:
    """95% percentile intervals of every speedup, resampling rounds (jointly when interleaved)."""
    rng = np.random.default_rng(config.seed)
    rounds = arrays["base"].shape[1]
    joint = rng.integers(0, rounds, size=(config.bootstrap, rounds))

    def draw() -> np.ndarray:  # GSO's states were timed apart, so each is resampled on its own
        return joint if config.mode == "interleaved" else rng.integers(0, rounds, size=(config.bootstrap, rounds))

    resampled = {name: values[:, draw()] for name, values in arrays.items()}  # (tests, bootstrap, rounds)
    _times, speedups = estimates(resampled, config.stat)
    out = {}
    for key, ratio in speedups.items():  # (tests, bootstrap)
        gm = np.exp(np.mean(np.log(ratio), axis=0))
        hm = ratio.shape[0] / np.sum(1.0 / ratio, axis=0)
        for kind, values in (("gm", gm), ("hm", hm)):
            lo, hi = np.percentile(values, [2.5, 97.5])
            out[f"{kind}_speedup_{key}"] = [float(lo), float(hi)]
    return out
