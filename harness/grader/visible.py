"""The visible-vs-hidden gap: how a patch does on the workload the agent saw, beside the hidden tests.

GSO hides its timed tests, as this grader does; what the agent can run is the task's spec script (`prob_script`).
A patch tuned to that script's sizes and inputs (fast there, no faster on the hidden workloads) shows up as a
visible speedup well above its hidden one. So every timed grading also times the spec script
(`visiblekit.py`) in the same rounds and the same interleaved order as the hidden tests, and reports

    overfit_gap = visible speedup over the base / hidden gm speedup over the base

for the patch and, as the yardstick, for the expert's change (`expert_gap`, near 1 for a change that helps
everywhere). Its 95% interval resamples rounds jointly for the visible and the hidden runs. Speedups are
paired per round like the hidden tests' (or the ratio of each state's mean / median in gso mode).

The gap is a diagnostic for researchers and the judge: it never changes a verdict, and a spec script that
fails (or a patch that fails it) says so in the report instead of failing the patch.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.grader.config import GradeConfig
from harness.grader.timing import estimates


def not_measured(status: str, reason: str) -> dict[str, Any]:
    """The report's `visible_spec` block where there is no gap: `none` (no spec script), `off` or `failed`."""
    return {"status": status, "reason": reason, "overfit_gap": None}


def gap_report(hidden: dict[str, Any], base: Sequence[float], patch: Sequence[float],
               expert: Sequence[float | None], config: GradeConfig) -> dict[str, Any]:
    """The `visible_spec` block of a timed report, from the visible runs' times per round (the expert's: the run
    next to the patch's) and the hidden verdicts already in `hidden` (timing.verdicts filled it)."""
    rounds = len(base)
    if not rounds or len(patch) != rounds or len(expert) != rounds or any(e is None for e in expert):
        return not_measured("failed", "the visible runs did not complete every round")
    arrays = {"base": np.array([base], dtype=float), "patch": np.array([patch], dtype=float),
              "commit": np.array([expert], dtype=float)}
    _times, speedups = estimates(arrays, config.stat)
    stats = hidden["opt_stats"]
    visible_patch, visible_expert = float(speedups["patch_base"][0]), float(speedups["commit_base"][0])
    out: dict[str, Any] = {
        "status": "measured", "rounds": rounds,
        "round_times": {"base": list(base), "patch": list(patch), "commit": list(expert)},
        "speedup_patch_base": visible_patch, "speedup_commit_base": visible_expert,
        "hidden_gm_speedup_patch_base": stats["gm_speedup_patch_base"],
        "hidden_gm_speedup_commit_base": stats["gm_speedup_commit_base"],
        "overfit_gap": visible_patch / stats["gm_speedup_patch_base"],
        "expert_gap": visible_expert / stats["gm_speedup_commit_base"],
    }
    out["overfit_gap_interval"] = _interval(hidden, arrays, config)
    return out


def _interval(hidden: dict[str, Any], visible: dict[str, np.ndarray], config: GradeConfig) -> list[float] | None:
    """95% percentile interval of the patch's gap, resampling rounds: the same draw of rounds for the hidden
    tests and the visible runs (a round's runs were made together)."""
    times = hidden["round_times"]
    tests = hidden["tests"]
    states = ("base", "patch", "commit")
    arrays = {s: np.array([times[s][t] for t in tests], dtype=float) for s in states}  # (tests, rounds)
    rounds = visible["base"].shape[1]
    if any(a.shape[1] != rounds for a in arrays.values()):
        return None
    draws = np.random.default_rng(config.seed).integers(0, rounds, size=(config.bootstrap, rounds))
    _t, hidden_draws = estimates({s: a[:, draws] for s, a in arrays.items()}, config.stat)  # (tests, draws)
    _t, visible_draws = estimates({s: a[:, draws] for s, a in visible.items()}, config.stat)  # (1, draws)
    hidden_gm = np.exp(np.mean(np.log(hidden_draws["patch_base"]), axis=0))
    gaps = visible_draws["patch_base"][0] / hidden_gm
    lo, hi = np.percentile(gaps, [2.5, 97.5])
    return [float(lo), float(hi)]
