"""Bootstrap intervals for suite-level numbers (Opt@K, Avg@k, Best@k) and paired comparisons of systems.

Numbers in, numbers out: numpy arrays and a seeded `np.random.default_rng`, no I/O.

One resample draws T task indices with replacement (T = the suite's size) and, in the two-level scheme,
for each drawn task n rollout indices with replacement from that task's n rollouts. The statistic of a
resample is the metric itself (aggregates.py) on the resampled table, so the statistic at the identity
resample is the number the reports show. The interval is the percentile interval of the statistic over
the resamples (numpy's default linear interpolation between order statistics).

Every system is resampled on the same task indices (one generator, seeded with `seed`), so the
difference between two systems' statistics in one resample is a paired draw: tasks that are easy for
both move both. Rollout indices come from a generator of their own per system (seeded with `seed` and
the system's name), since different systems' rollouts are independent; a system's interval does not
depend on which other systems it was aggregated with.

Tasks only is the default (`Settings.rollouts=False`). A task's number from its n rollouts already carries
the rollouts' noise, so resampling tasks captures it; drawing the rollouts again with replacement adds that
noise a second time, and it biases the metrics that fall when a resample holds fewer distinct rollouts:
Opt@K at K = n (a task with 1 success in 8 keeps one in only 66% of resamples) and Best@k. On simulated
suites of 400 tasks x 8 rollouts the two-level Opt@8 interval missed its own point estimate in most trials;
the tasks-only interval held it in every one. The two-level scheme stays available for those who want it.

The core functions take the index arrays explicitly, so a test can feed its own and recompute the same
resamples by hand.
"""
from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np

from harness.metrics.aggregates import avg_at_k, best_at_k, expected_max_of_k, opt_at_k, suite_opt_at_k

METRICS = ("opt_at_K", "avg_at_k", "best_at_k")  # the row keys (runner.aggregate) that get intervals
TWO_LEVEL = "percentile bootstrap, tasks then rollouts within task"
ONE_LEVEL = "percentile bootstrap over tasks"
TIE = 1e-12  # two statistics this close count as a tie: equal sums in another order differ in the last bit


@dataclass(frozen=True)
class Settings:
    """How the intervals are drawn; recorded beside them (`to_dict`) so a reader can redo them."""
    resamples: int = 2000
    level: float = 0.95
    seed: int = 0
    rollouts: bool = False  # True: two levels, rollouts within each drawn task too (see above)

    def __post_init__(self) -> None:
        if self.resamples < 1:
            raise ValueError(f"bootstrap: resamples must be at least 1, got {self.resamples}")
        if not 0 < self.level < 1:
            raise ValueError(f"bootstrap: level must be between 0 and 1 (e.g. 0.95), got {self.level}")

    @property
    def method(self) -> str:
        return TWO_LEVEL if self.rollouts else ONE_LEVEL

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "resamples": self.resamples, "level": self.level, "seed": self.seed}


@dataclass(frozen=True)
class Outcomes:
    """One system's rollouts on the suite: row t is task t (in an order shared by every system compared),
    column i is rollout i; a missing or failed rollout is False / 0.0, as the reports count it."""
    successes: np.ndarray  # (tasks, n) bool: GSO's Opt (opt_commit)
    scores: np.ndarray  # (tasks, n) float: AutoLab's score

    def __post_init__(self) -> None:
        if self.successes.ndim != 2 or self.successes.shape != self.scores.shape or 0 in self.successes.shape:
            raise ValueError(f"bootstrap: successes {self.successes.shape} and scores {self.scores.shape} must be "
                             "the same non-empty tasks x rollouts table")

    @classmethod
    def of(cls, successes: Mapping[str, Sequence[bool]], scores: Mapping[str, Sequence[float]],
           tasks: Sequence[str]) -> Outcomes:
        """From the per-task lists the study code keeps (runner.study), rows in the order of `tasks`."""
        lengths = {len(successes[t]) for t in tasks} | {len(scores[t]) for t in tasks}
        if len(lengths) != 1:
            raise ValueError("bootstrap: every task needs the same number of rollouts")
        return cls(np.array([[bool(v) for v in successes[t]] for t in tasks], dtype=bool),
                   np.array([[float(v) for v in scores[t]] for t in tasks], dtype=float))

    @property
    def n(self) -> int:
        return int(self.successes.shape[1])

    @property
    def tasks(self) -> int:
        return int(self.successes.shape[0])

    def points(self, k: int) -> dict[str, float]:
        """The three metrics on the data as they are, from aggregates.py's own functions (K = n, k <= n)."""
        success = {str(t): [bool(v) for v in row] for t, row in enumerate(self.successes)}
        score = {str(t): [float(v) for v in row] for t, row in enumerate(self.scores)}
        return {"opt_at_K": suite_opt_at_k(success, self.n), "avg_at_k": avg_at_k(score, k),
                "best_at_k": best_at_k(score, k)}


# ---------------------------------------------------------------- resample indices
def task_draws(rng: np.random.Generator, resamples: int, tasks: int) -> np.ndarray:
    """(resamples, tasks): row b lists the tasks of resample b, drawn with replacement."""
    return rng.integers(0, tasks, size=(resamples, tasks))


def rollout_draws(rng: np.random.Generator, resamples: int, tasks: int, n: int) -> np.ndarray:
    """(resamples, tasks, n): [b, j] lists the rollouts kept of the j-th drawn task of resample b."""
    return rng.integers(0, n, size=(resamples, tasks, n))


def system_rng(seed: int, name: str) -> np.random.Generator:
    """A system's own generator for its rollout draws: fixed by the seed and its name (crc32, stable across
    processes, unlike hash())."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _gather(table: np.ndarray, tasks: np.ndarray, rollouts: np.ndarray | None) -> np.ndarray:
    """The resampled tables, (resamples, tasks, n): task tasks[b, j] with its rollouts rollouts[b, j]."""
    picked = table[tasks]
    return picked if rollouts is None else np.take_along_axis(picked, rollouts, axis=2)


def _check_k(n: int, k: int, what: str) -> None:
    if not 1 <= k <= n:
        raise ValueError(f"{what}: k must be between 1 and the {n} rollouts per task, got {k}")


# ---------------------------------------------------------------- the statistic over resamples
def opt_at_k_draws(successes: np.ndarray, k: int, tasks: np.ndarray, rollouts: np.ndarray | None = None
                   ) -> np.ndarray:
    """Opt@k (unbiased) of each resample, (resamples,)."""
    counts = _gather(successes, tasks, rollouts).sum(axis=2)
    return _opt_from_counts(counts, successes.shape[1], k)


def _opt_from_counts(counts: np.ndarray, n: int, k: int) -> np.ndarray:
    _check_k(n, k, "Opt@K")
    # A task's Opt@k depends only on its count of successes: aggregates.opt_at_k for each possible count.
    by_count = np.array([opt_at_k(n, c, k) for c in range(n + 1)])
    return by_count[counts].mean(axis=1)


def avg_at_k_draws(scores: np.ndarray, k: int, tasks: np.ndarray, rollouts: np.ndarray | None = None
                   ) -> np.ndarray:
    """Avg@k of each resample, (resamples,): the mean over tasks of the mean of n rollouts (k only checked,
    as aggregates.avg_at_k does: the expected mean of k rollouts is the mean of all n)."""
    _check_k(scores.shape[1], k, "Avg@k")
    return _gather(scores, tasks, rollouts).mean(axis=(1, 2))


def _max_weights(n: int, k: int) -> np.ndarray:
    """aggregates.expected_max_of_k is a fixed weighted sum of the sorted scores; its weights are read off the
    function itself (scores that are 1 from sorted position i on sum the weights from i on), so the two
    cannot drift apart."""
    tails = [expected_max_of_k([0.0] * i + [1.0] * (n - i), k) for i in range(n)] + [0.0]
    return np.array([tails[i] - tails[i + 1] for i in range(n)])


def best_at_k_draws(scores: np.ndarray, k: int, tasks: np.ndarray, rollouts: np.ndarray | None = None
                    ) -> np.ndarray:
    """Best@k of each resample, (resamples,): the mean over tasks of the expected max of k of n rollouts."""
    n = scores.shape[1]
    _check_k(n, k, "Best@k")
    return (np.sort(_gather(scores, tasks, rollouts), axis=2) @ _max_weights(n, k)).mean(axis=1)


def percentile_interval(draws: np.ndarray, level: float) -> tuple[float, float]:
    """The central `level` share of the draws: their (1-level)/2 and (1+level)/2 quantiles."""
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def opt_interval(successes: np.ndarray, k: int, settings: Settings, name: str) -> tuple[float, float]:
    """Opt@k's interval for one success table of system `name` (a point of GSO's threshold curve, say), on
    the resamples `suite_intervals` draws with the same settings: the same task indices, the same rollouts."""
    tasks = task_draws(np.random.default_rng(settings.seed), settings.resamples, successes.shape[0])
    rollouts = (rollout_draws(system_rng(settings.seed, name), settings.resamples, *successes.shape)
                if settings.rollouts else None)
    return percentile_interval(opt_at_k_draws(successes, k, tasks, rollouts), settings.level)


# ---------------------------------------------------------------- paired comparisons
@dataclass(frozen=True)
class Comparison:
    """System a against system b on one metric, over the same resampled tasks."""
    a: str
    b: str
    metric: str
    difference: float  # a's metric minus b's, on the data as they are
    ci: tuple[float, float]  # percentile interval of the resampled differences
    a_better: float  # share of resamples where a's statistic is above b's
    tie: float  # share where they are equal (within TIE)
    b_better: float

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "metric": self.metric, "difference": self.difference,
                "ci": list(self.ci), "a_better": self.a_better, "tie": self.tie, "b_better": self.b_better}


def compare(a: str, b: str, metric: str, a_draws: np.ndarray, b_draws: np.ndarray, difference: float,
            level: float) -> Comparison:
    """Paired bootstrap of a - b: both draw arrays must come from the same task indices, resample by resample."""
    if a_draws.shape != b_draws.shape:
        raise ValueError(f"bootstrap: {a} and {b} were resampled differently ({a_draws.shape} vs {b_draws.shape})")
    diff = a_draws - b_draws
    tie = float(np.mean(np.abs(diff) <= TIE))
    a_better = float(np.mean(diff > TIE))
    return Comparison(a, b, metric, difference, percentile_interval(diff, level), a_better, tie,
                      1.0 - a_better - tie)


# ---------------------------------------------------------------- a suite of systems
@dataclass
class SuiteIntervals:
    """Intervals for each system's metrics (Opt@K at K = its n, Avg@k and Best@k at min(k, n)), for its Opt@k
    curve at every k up to n, and the paired comparisons of every two systems."""
    settings: Settings
    points: dict[str, dict[str, float]] = field(default_factory=dict)  # system -> metric -> value
    ci: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)  # system -> metric -> (lo, hi)
    curve: dict[str, list[tuple[int, float, float]]] = field(default_factory=dict)  # system -> [(k, lo, hi)]
    comparisons: list[Comparison] = field(default_factory=list)


def suite_intervals(systems: Mapping[str, Outcomes], k: int, settings: Settings | None = None) -> SuiteIntervals:
    """Bootstrap every system on the same resampled tasks; compare every pair (in the mapping's order)."""
    settings = settings or Settings()
    if not systems:
        raise ValueError("bootstrap: no systems")
    sizes = {o.tasks for o in systems.values()}
    if len(sizes) != 1:
        raise ValueError(f"bootstrap: the systems cover different numbers of tasks ({sorted(sizes)})")
    (n_tasks,) = sizes
    tasks = task_draws(np.random.default_rng(settings.seed), settings.resamples, n_tasks)
    result = SuiteIntervals(settings)
    draws: dict[str, dict[str, np.ndarray]] = {}
    for name, o in systems.items():
        rollouts = (rollout_draws(system_rng(settings.seed, name), settings.resamples, n_tasks, o.n)
                    if settings.rollouts else None)
        kk = min(k, o.n)
        counts = _gather(o.successes, tasks, rollouts).sum(axis=2)
        draws[name] = {"opt_at_K": _opt_from_counts(counts, o.n, o.n),
                       "avg_at_k": avg_at_k_draws(o.scores, kk, tasks, rollouts),
                       "best_at_k": best_at_k_draws(o.scores, kk, tasks, rollouts)}
        result.points[name] = o.points(kk)
        result.ci[name] = {m: percentile_interval(d, settings.level) for m, d in draws[name].items()}
        result.curve[name] = [(j, *percentile_interval(_opt_from_counts(counts, o.n, j), settings.level))
                              for j in range(1, o.n + 1)]
    for a, b in combinations(systems, 2):
        result.comparisons += [compare(a, b, m, draws[a][m], draws[b][m],
                                       result.points[a][m] - result.points[b][m], settings.level) for m in METRICS]
    return result


def geomean_interval(values: Sequence[float], settings: Settings, name: str) -> tuple[float, float] | None:
    """The bootstrap interval of the geometric mean of positive `values` (one per rollout: the overfitting
    gaps), resampling them; None for fewer than two."""
    if len(values) < 2:
        return None
    logs = np.log(np.asarray(values, dtype=float))
    picks = system_rng(settings.seed, f"{name}:geomean").integers(0, len(logs), size=(settings.resamples, len(logs)))
    return percentile_interval(np.exp(logs[picks].mean(axis=1)), settings.level)
