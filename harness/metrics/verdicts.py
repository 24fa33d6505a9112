"""Per-rollout numbers: speedups, GSO's verdicts (opt_base, Opt_p) and AutoLab's log-stretch score.

Pure functions with GSO's and AutoLab's exact definitions; bad input raises ValueError saying what is
wrong. The geometric mean and the mean of times are numpy's, as in GSO (its gm is a numpy float, so
`round(gm, 1)` is numpy's rounding, and numpy's log and summation order can differ from the standard
library's in the last bit, which decides a verdict at its threshold). numpy is imported on first use,
so importing this module stays cheap.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

# GSO: round(gm speedup over base, 1) must reach this; the paper (gsobench 0.1.7) and the leaderboard
# (gsobench 0.1.9) differ only here.
GSO_MIN_SPEEDUP = {"paper": 1.2, "leaderboard": 1.1}
MIN_OPT_SPEEDUP = GSO_MIN_SPEEDUP["paper"]
DEFAULT_P = 0.95  # GSO's Opt: hm speedup over the expert must exceed this


# ---------------------------------------------------------------- speedups

def _positive(times: Sequence[float], what: str) -> list[float]:
    values = [float(t) for t in times]
    if not values:
        raise ValueError(f"{what}: no times given")
    bad = [t for t in values if not (t > 0 and math.isfinite(t))]
    if bad:
        raise ValueError(f"{what}: times must be positive and finite, got {bad[0]!r}")
    return values


def speedups(before: Sequence[float], after: Sequence[float]) -> list[float]:
    """Per-test speedup s_i = T_before_i / T_after_i (> 1 means `after` is faster)."""
    b, a = _positive(before, "before"), _positive(after, "after")
    if len(b) != len(a):
        raise ValueError(f"speedups: {len(b)} 'before' times but {len(a)} 'after' times")
    return [x / y for x, y in zip(b, a)]


def gm(values: Sequence[float]) -> float:
    """Geometric mean, computed as GSO computes it: exp(mean(log)) in numpy."""
    import numpy as np

    xs = _positive(values, "geometric mean")
    return float(np.exp(np.mean(np.log(xs))))


def hm(values: Sequence[float]) -> float:
    """Harmonic mean."""
    xs = _positive(values, "harmonic mean")
    return len(xs) / sum(1 / x for x in xs)


def mean(values: Sequence[float]) -> float:
    """The mean, in numpy's summation order (GSO's base_mean > patch_mean compares these)."""
    import numpy as np

    xs = _positive(values, "mean")
    return float(np.mean(xs))


def gso_round(value: float, digits: int = 1) -> float:
    """numpy's rounding, as GSO's `round(gm, 1)` on a numpy float does it: scale, round half to even,
    unscale. 1.15 (stored as 1.1499999...) gives 1.2 here and 1.1 with Python's `round(x, 1)`."""
    scale = 10.0 ** digits
    return round(value * scale) / scale


# ---------------------------------------------------------------- GSO verdicts

@dataclass(frozen=True)
class OptStats:
    """GSO's opt_stats block: speedups of patch over base, patch over expert (commit), expert over base."""
    gm_speedup_patch_base: float
    hm_speedup_patch_base: float
    gm_speedup_patch_commit: float
    hm_speedup_patch_commit: float
    gm_speedup_commit_base: float
    hm_speedup_commit_base: float
    per_test_speedups: list[float]  # patch over base, per test
    base_mean: float
    patch_mean: float
    commit_mean: float

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def opt_stats(base: Sequence[float], patch: Sequence[float], commit: Sequence[float]) -> OptStats:
    """From per-test times of the three code states (commit = the expert's optimization)."""
    return opt_stats_from(speedups(base, patch), speedups(commit, patch), speedups(base, commit), base, patch, commit)


def opt_stats_from(pb: Sequence[float], pc: Sequence[float], cb: Sequence[float], base: Sequence[float],
                   patch: Sequence[float], commit: Sequence[float]) -> OptStats:
    """The same block from per-test speedups measured some other way (patch over base, patch over
    commit, commit over base) and the per-test times they go with."""
    pb, pc, cb = list(pb), list(pc), list(cb)
    return OptStats(gm(pb), hm(pb), gm(pc), hm(pc), gm(cb), hm(cb), pb, mean(base), mean(patch), mean(commit))


def opt_base(base: Sequence[float], patch: Sequence[float], min_speedup: float = MIN_OPT_SPEEDUP) -> bool:
    """GSO: the patch is faster on average and its gm speedup, rounded to one decimal (numpy's rounding),
    reaches `min_speedup` (1.2 in the paper, 1.1 on the leaderboard)."""
    return opt_base_from(speedups(base, patch), base, patch, min_speedup)


def opt_base_from(pb: Sequence[float], base: Sequence[float], patch: Sequence[float],
                  min_speedup: float = MIN_OPT_SPEEDUP) -> bool:
    """opt_base with the per-test speedups `pb` (patch over base) given."""
    return mean(base) > mean(patch) and gso_round(gm(pb), 1) >= min_speedup


def opt_p(base: Sequence[float], patch: Sequence[float], commit: Sequence[float], p: float = DEFAULT_P,
          min_speedup: float = MIN_OPT_SPEEDUP) -> bool:
    """GSO's Opt_p: opt_base and the hm speedup over the expert strictly above p (Opt = Opt_0.95)."""
    return opt_p_from(speedups(base, patch), speedups(commit, patch), base, patch, p, min_speedup)


def opt_p_from(pb: Sequence[float], pc: Sequence[float], base: Sequence[float], patch: Sequence[float],
               p: float = DEFAULT_P, min_speedup: float = MIN_OPT_SPEEDUP) -> bool:
    """Opt_p with the per-test speedups given: `pb` patch over base, `pc` patch over commit."""
    return opt_base_from(pb, base, patch, min_speedup) and hm(pc) > p


# ---------------------------------------------------------------- AutoLab score

def log_stretch_score(patch_speedup: float, expert_speedup: float) -> float:
    """Continuous score anchored at base = 0 and expert = 0.5, capped at 1.

    Speedups are over base (T_base / T_x). Gate: a patch no faster than base scores 0.
    score = min(1, 0.5 * log(T_base/T_patch) / log(T_base/T_expert)).
    """
    patch_speedup, expert_speedup = _positive([patch_speedup], "patch speedup")[0], \
        _positive([expert_speedup], "expert speedup")[0]
    if expert_speedup <= 1:
        raise ValueError(f"log-stretch score needs an expert faster than base, got speedup {expert_speedup:g}")
    if patch_speedup <= 1:
        return 0.0
    return min(1.0, 0.5 * math.log(patch_speedup) / math.log(expert_speedup))


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation (sample stdev / mean); 0 for fewer than two values."""
    xs = [float(v) for v in values]
    if len(xs) < 2:
        return 0.0
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) / m
