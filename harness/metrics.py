"""Metrics as pure functions: numbers in, numbers out. No I/O, no Docker.

Definitions follow GSO (speedups, opt_base, Opt_p, Opt@K) and AutoLab (log-stretch score, Avg@k,
Best@k, Dominance) exactly, so numbers stay comparable with the papers. Bad input (no rollouts,
n < k, non-positive times) raises ValueError with a message saying what is wrong.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

MIN_OPT_SPEEDUP = 1.2  # GSO: round(gm speedup over base, 1) must reach this
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
    """Geometric mean."""
    xs = _positive(values, "geometric mean")
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def hm(values: Sequence[float]) -> float:
    """Harmonic mean."""
    xs = _positive(values, "harmonic mean")
    return len(xs) / sum(1 / x for x in xs)


def mean(values: Sequence[float]) -> float:
    xs = _positive(values, "mean")
    return sum(xs) / len(xs)


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
    """GSO: the patch is faster on average and its gm speedup, rounded to one decimal, reaches 1.2."""
    return opt_base_from(speedups(base, patch), base, patch, min_speedup)


def opt_base_from(pb: Sequence[float], base: Sequence[float], patch: Sequence[float],
                  min_speedup: float = MIN_OPT_SPEEDUP) -> bool:
    """opt_base with the per-test speedups `pb` (patch over base) given."""
    return mean(base) > mean(patch) and round(gm(pb), 1) >= min_speedup


def opt_p(base: Sequence[float], patch: Sequence[float], commit: Sequence[float], p: float = DEFAULT_P) -> bool:
    """GSO's Opt_p: opt_base and the hm speedup over the expert strictly above p (Opt = Opt_0.95)."""
    return opt_p_from(speedups(base, patch), speedups(commit, patch), base, patch, p)


def opt_p_from(pb: Sequence[float], pc: Sequence[float], base: Sequence[float], patch: Sequence[float],
               p: float = DEFAULT_P) -> bool:
    """Opt_p with the per-test speedups given: `pb` patch over base, `pc` patch over commit."""
    return opt_base_from(pb, base, patch) and hm(pc) > p


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


# ---------------------------------------------------------------- pass@k-style aggregates

def _check_nk(n: int, k: int, what: str) -> None:
    if n == 0:
        raise ValueError(f"{what}: no rollouts")
    if k < 1:
        raise ValueError(f"{what}: k must be at least 1, got {k}")
    if n < k:
        raise ValueError(f"{what}: needs at least k={k} rollouts per task, got {n}")


def opt_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of P(at least one of k rollouts succeeds) from n rollouts with c successes."""
    _check_nk(n, k, "Opt@K")
    if not 0 <= c <= n:
        raise ValueError(f"Opt@K: successes c={c} must be between 0 and n={n}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def opt_at_k_first(successes: Sequence[bool], k: int) -> float:
    """GSO's mode: 1 if any of the first k rollouts succeeded, else 0."""
    _check_nk(len(successes), k, "Opt@K (first K)")
    return 1.0 if any(successes[:k]) else 0.0


def suite_opt_at_k(per_task: Mapping[str, Sequence[bool]], k: int, mode: str = "unbiased") -> float:
    """Opt@K over the suite: mean over tasks (a failed rollout is a False)."""
    if not per_task:
        raise ValueError("Opt@K: no tasks")
    if mode == "unbiased":
        values = [opt_at_k(len(s), sum(map(bool, s)), k) for s in per_task.values()]
    elif mode == "first":
        values = [opt_at_k_first(s, k) for s in per_task.values()]
    else:
        raise ValueError(f"Opt@K: unknown mode {mode!r} (use 'unbiased' or 'first')")
    return sum(values) / len(values)


def expected_max_of_k(scores: Sequence[float], k: int) -> float:
    """E[max of k drawn without replacement from n scores] = sum_i s_(i) C(i-1, k-1) / C(n, k)."""
    _check_nk(len(scores), k, "Best@k")
    ordered = sorted(scores)
    total = math.comb(len(ordered), k)
    return sum(s * math.comb(i, k - 1) for i, s in enumerate(ordered)) / total


def avg_at_k(per_task: Mapping[str, Sequence[float]], k: int) -> float:
    """Avg@k: mean over tasks of the expected mean score of k rollouts (= the mean of all n >= k)."""
    if not per_task:
        raise ValueError("Avg@k: no tasks")
    for scores in per_task.values():
        _check_nk(len(scores), k, "Avg@k")
    return sum(sum(s) / len(s) for s in per_task.values()) / len(per_task)


def best_at_k(per_task: Mapping[str, Sequence[float]], k: int) -> float:
    """Best@k: mean over tasks of the expected max score of k rollouts out of n."""
    if not per_task:
        raise ValueError("Best@k: no tasks")
    return sum(expected_max_of_k(s, k) for s in per_task.values()) / len(per_task)


def dominance(scores: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Dominance of each system among all: share of (task, other system) pairs it beats, ties = 1/2.

    scores[system][task] is the system's per-task score (Avg@k). Every system must cover the same tasks.
    """
    if len(scores) < 2:
        raise ValueError("Dominance: needs at least two systems")
    tasks = set(next(iter(scores.values())))
    if not tasks:
        raise ValueError("Dominance: no tasks")
    for system, per_task in scores.items():
        if set(per_task) != tasks:
            missing = sorted(tasks ^ set(per_task))
            raise ValueError(f"Dominance: system {system!r} differs from the others on task {missing[0]!r}")
    result = {}
    for system, mine in scores.items():
        wins = 0.0
        for other, theirs in scores.items():
            if other == system:
                continue
            for task in tasks:
                wins += 1.0 if mine[task] > theirs[task] else 0.5 if mine[task] == theirs[task] else 0.0
        result[system] = wins / (len(tasks) * (len(scores) - 1))
    return result
