"""Aggregates over rollouts and tasks: Opt@K (unbiased and GSO's first-K), Avg@k, Best@k, Dominance.

Pure functions; bad input (no rollouts, n < k) raises ValueError saying what is wrong.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


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
