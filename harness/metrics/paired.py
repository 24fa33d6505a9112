"""Paired comparison of two runs (A, then B) on the tasks both ran: is B better than A, per task, with
significance. Numbers in, numbers out (numpy and the standard library, no I/O); `runner.compare` reads the
runs and prints what this computes.

- Per task: Opt@1 (the unbiased estimate from the task's rollouts, aggregates.opt_at_k with k = 1: the share
  of its rollouts solved) and the mean score (Avg@1), for A and for B, and their differences B - A.
- Over tasks: the mean of each, and a percentile bootstrap interval (bootstrap.py's helpers, tasks only):
  one resample draws T task indices with replacement, and A and B are read on the same indices, so the
  interval of B - A is paired (a task easy for both moves both).
- Win / tie / loss: the tasks where B's number is above A's, equal (within bootstrap.TIE), below.
- McNemar's exact test on the binary verdicts, pairing rollout i of A with rollout i of B within a task,
  over the indices both runs planned. The index itself carries no meaning (rollouts of a task are
  exchangeable); what the pairing keeps is the task. Under the null hypothesis (each task's success
  probability is the same under A and B) a pair is (solved, not) as often as (not, solved), whatever the
  task's difficulty, so the discordant counts b and c are a fair coin's: p = min(1, 2 P(X <= min(b, c))),
  X ~ Binomial(b + c, 1/2), exactly (math.comb on integers, no scipy).
- Cost of each side (total and per finished rollout) and the difference; one rollout with an unknown price
  makes its side's cost unknown, never $0.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.metrics.aggregates import opt_at_k
from harness.metrics.bootstrap import TIE, Settings, percentile_interval, task_draws

PAIRING = "rollout i of A with rollout i of B within each task, over the indices both runs planned"


# ---------------------------------------------------------------- McNemar's exact test
def binomial_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2): an integer sum over 2**n, divided once (Python's int division
    rounds correctly however large the integers)."""
    if n < 0 or k < 0:
        raise ValueError(f"binomial: n and k must be 0 or more, got n={n}, k={k}")
    return sum(math.comb(n, i) for i in range(min(k, n) + 1)) / 2 ** n


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact two-sided p-value from the discordant counts: 1 when there are none."""
    if b < 0 or c < 0:
        raise ValueError(f"McNemar: counts must be 0 or more, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    return min(1.0, 2 * binomial_cdf_half(min(b, c), b + c))


@dataclass(frozen=True)
class McNemar:
    pairs: int  # (task, rollout index) pairs compared
    both: int  # solved by both
    b: int  # A solved, B not
    c: int  # B solved, A not
    neither: int
    p: float  # exact two-sided

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "pairing": PAIRING}


def mcnemar(a: Sequence[Sequence[bool]], b: Sequence[Sequence[bool]]) -> McNemar:
    """The paired verdicts of A and B, row t being task t's rollouts in index order (see PAIRING)."""
    if len(a) != len(b):
        raise ValueError(f"McNemar: A has {len(a)} tasks and B {len(b)}; rows must be the same tasks")
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for row_a, row_b in zip(a, b):
        for x, y in zip(row_a, row_b):  # zip stops at the shorter row: the indices both planned
            counts[bool(x), bool(y)] += 1
    disc_b, disc_c = counts[True, False], counts[False, True]
    return McNemar(sum(counts.values()), counts[True, True], disc_b, disc_c, counts[False, False],
                   mcnemar_exact(disc_b, disc_c))


# ---------------------------------------------------------------- per-task numbers and their means
def opt_at_1(solved: Sequence[Sequence[bool]]) -> np.ndarray:
    """Each task's Opt@1 from its rollouts, as the reports compute it (aggregates.opt_at_k)."""
    return np.array([opt_at_k(len(row), sum(map(bool, row)), 1) for row in solved], dtype=float)


def mean_score(scores: Sequence[Sequence[float]]) -> np.ndarray:
    """Each task's mean score over its rollouts (Avg@1 of the task)."""
    if any(len(row) == 0 for row in scores):
        raise ValueError("paired: a task has no rollouts")
    return np.array([sum(map(float, row)) / len(row) for row in scores], dtype=float)


@dataclass(frozen=True)
class WinTieLoss:
    """Tasks where B's number is above A's, equal (within TIE), below."""
    b_better: int
    tie: int
    a_better: int


def win_tie_loss(a: np.ndarray, b: np.ndarray) -> WinTieLoss:
    diff = b - a
    tie = int(np.sum(np.abs(diff) <= TIE))
    b_better = int(np.sum(diff > TIE))
    return WinTieLoss(b_better, tie, len(diff) - tie - b_better)


def mean_draws(values: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """The mean over tasks of each resample, (resamples,): `tasks` as bootstrap.task_draws gives them."""
    return values[tasks].mean(axis=1)


@dataclass(frozen=True)
class Delta:
    """One metric, A against B: per task, and its mean over tasks with percentile intervals."""
    a: list[float]  # per task
    b: list[float]
    a_mean: float
    b_mean: float
    delta: float  # b_mean - a_mean = the mean of the per-task differences
    a_ci: tuple[float, float]
    b_ci: tuple[float, float]
    ci: tuple[float, float]  # of B - A, paired
    wins: WinTieLoss

    @property
    def per_task(self) -> list[float]:
        return [y - x for x, y in zip(self.a, self.b)]

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a_mean, "b": self.b_mean, "delta": self.delta, "a_ci": list(self.a_ci),
                "b_ci": list(self.b_ci), "ci": list(self.ci), "wins": asdict(self.wins),
                "per_task": {"a": self.a, "b": self.b, "delta": self.per_task}}


def paired_delta(a: np.ndarray, b: np.ndarray, tasks: np.ndarray, level: float) -> Delta:
    """A metric's per-task values for A and B (the same task order), resampled on the rows of `tasks`."""
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"paired: per-task values of A {a.shape} and B {b.shape} must be the same non-empty tasks")
    a_draws, b_draws = mean_draws(a, tasks), mean_draws(b, tasks)
    return Delta([float(v) for v in a], [float(v) for v in b], float(a.mean()), float(b.mean()),
                 float((b - a).mean()), percentile_interval(a_draws, level), percentile_interval(b_draws, level),
                 percentile_interval(b_draws - a_draws, level), win_tie_loss(a, b))


# ---------------------------------------------------------------- cost
@dataclass(frozen=True)
class Cost:
    rollouts: int  # finished rollouts counted
    total: float | None  # None: some rollout's price is unknown
    per_rollout: float | None


def cost_of(costs: Sequence[float | None]) -> Cost:
    """One side's cost from its finished rollouts' costs: unknown as soon as one is (a sum that leaves a
    rollout out would read as that rollout costing $0)."""
    if any(c is None for c in costs):
        return Cost(len(costs), None, None)
    total = float(sum(c for c in costs if c is not None))
    return Cost(len(costs), total, total / len(costs) if costs else None)


@dataclass(frozen=True)
class CostDifference:
    a: Cost
    b: Cost
    total: float | None  # B - A; None when either side is unknown
    per_rollout: float | None


def cost_difference(a: Sequence[float | None], b: Sequence[float | None]) -> CostDifference:
    ca, cb = cost_of(a), cost_of(b)
    total = cb.total - ca.total if ca.total is not None and cb.total is not None else None
    per = cb.per_rollout - ca.per_rollout if ca.per_rollout is not None and cb.per_rollout is not None else None
    return CostDifference(ca, cb, total, per)


# ---------------------------------------------------------------- the comparison
@dataclass(frozen=True)
class Side:
    """One run on the paired tasks, row t being task t (one task order for both sides) with one entry per
    planned rollout: a missing, errored or failed rollout is False / 0.0, as the reports count it."""
    solved: Sequence[Sequence[bool]]
    scores: Sequence[Sequence[float]]
    costs: Sequence[float | None] = ()  # each finished rollout's cost on these tasks; None: price unknown


@dataclass(frozen=True)
class Paired:
    tasks: int
    opt: Delta  # Opt@1
    score: Delta  # mean score (Avg@1)
    mcnemar: McNemar
    cost: CostDifference
    settings: Settings

    def to_dict(self) -> dict[str, Any]:
        return {"n_tasks": self.tasks, "opt_at_1": self.opt.to_dict(), "score": self.score.to_dict(),
                "mcnemar": self.mcnemar.to_dict(), "cost": asdict(self.cost), "intervals": self.settings.to_dict()}


def compare_runs(a: Side, b: Side, settings: Settings | None = None) -> Paired:
    """B against A on the same tasks: both metrics resampled on one draw of task indices."""
    settings = settings or Settings()
    if settings.rollouts:  # per-task means already carry the rollouts' noise (bootstrap.py's docstring)
        raise ValueError("paired: the comparison resamples tasks only")
    n_tasks = len(a.solved)
    if not n_tasks or len(b.solved) != n_tasks or len(a.scores) != n_tasks or len(b.scores) != n_tasks:
        raise ValueError("paired: A and B need the same non-empty list of tasks")
    tasks = task_draws(np.random.default_rng(settings.seed), settings.resamples, n_tasks)
    return Paired(n_tasks,
                  paired_delta(opt_at_1(a.solved), opt_at_1(b.solved), tasks, settings.level),
                  paired_delta(mean_score(a.scores), mean_score(b.scores), tasks, settings.level),
                  mcnemar(a.solved, b.solved), cost_difference(a.costs, b.costs), settings)
