"""The bootstrap intervals (harness.metrics.bootstrap) against hand computations.

The same resamples are redone in plain Python loops with aggregates.py's functions; small suites are
enumerated exactly (every ordered resample, equally likely); and the properties a reader relies on are
checked: the interval holds the number it belongs to, collapses when every task is the same, a paired
comparison is won on every resample when one system wins every task, and a seed gives the same numbers.
No Docker: a unit test.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from harness.metrics import avg_at_k, best_at_k, suite_opt_at_k
from harness.metrics.bootstrap import (ONE_LEVEL, TWO_LEVEL, Outcomes, Settings, avg_at_k_draws, best_at_k_draws,
                                       opt_at_k_draws, opt_interval, percentile_interval, rollout_draws,
                                       suite_intervals, system_rng, task_draws)

SUCCESSES = [[True, False, False], [True, True, True], [False, False, False], [False, True, False]]
SCORES = [[0.6, 0.1, 0.0], [0.9, 0.8, 0.7], [0.0, 0.05, 0.0], [0.2, 0.5, 0.3]]


def _outcomes(successes: list[list[bool]] = SUCCESSES, scores: list[list[float]] = SCORES) -> Outcomes:
    return Outcomes(np.array(successes, dtype=bool), np.array(scores, dtype=float))


def _table(rows: list[list]) -> dict[str, list]:
    """Rows as aggregates.py takes them; a task drawn twice is two entries."""
    return {str(i): list(row) for i, row in enumerate(rows)}


def _percentile(values: list[float], q: float) -> float:
    """numpy's default ('linear') quantile, by hand: interpolate between the order statistics around (N-1)q."""
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    low = math.floor(h)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (h - low) * (ordered[high] - ordered[low])


def _by_hand(tasks: np.ndarray, rollouts: np.ndarray | None, k: int) -> dict[str, list[float]]:
    """Each resample's Opt@K (K = n), Avg@k and Best@k from aggregates.py, one Python loop per level."""
    n = len(SCORES[0])
    out: dict[str, list[float]] = {"opt_at_K": [], "avg_at_k": [], "best_at_k": []}
    for b in range(tasks.shape[0]):
        succ, score = [], []
        for j in range(tasks.shape[1]):
            t = int(tasks[b, j])
            picks = [int(i) for i in rollouts[b, j]] if rollouts is not None else list(range(n))
            succ.append([SUCCESSES[t][i] for i in picks])
            score.append([SCORES[t][i] for i in picks])
        out["opt_at_K"].append(suite_opt_at_k(_table(succ), n))
        out["avg_at_k"].append(avg_at_k(_table(score), k))
        out["best_at_k"].append(best_at_k(_table(score), k))
    return out


def test_the_identity_resample_is_the_reported_metric() -> None:
    o = _outcomes()
    tasks = np.arange(o.tasks)[None, :]
    rollouts = np.broadcast_to(np.arange(o.n), (1, o.tasks, o.n))
    for k in range(1, o.n + 1):
        assert opt_at_k_draws(o.successes, k, tasks, rollouts)[0] == pytest.approx(
            suite_opt_at_k(_table(SUCCESSES), k), abs=1e-12)
        assert avg_at_k_draws(o.scores, k, tasks, rollouts)[0] == pytest.approx(avg_at_k(_table(SCORES), k), abs=1e-12)
        assert best_at_k_draws(o.scores, k, tasks)[0] == pytest.approx(best_at_k(_table(SCORES), k), abs=1e-12)
    assert o.points(2) == pytest.approx({"opt_at_K": 0.75, "avg_at_k": avg_at_k(_table(SCORES), 2),
                                         "best_at_k": best_at_k(_table(SCORES), 2)})


@pytest.mark.parametrize("two_level", [True, False])
def test_intervals_match_a_bootstrap_done_by_hand(two_level: bool) -> None:
    settings = Settings(resamples=300, level=0.9, seed=7, rollouts=two_level)
    o = _outcomes()
    found = suite_intervals({"sys": o}, 2, settings)
    # The same draws suite_intervals makes: one generator for the tasks, the system's own for its rollouts.
    tasks = task_draws(np.random.default_rng(7), 300, o.tasks)
    rollouts = rollout_draws(system_rng(7, "sys"), 300, o.tasks, o.n) if two_level else None
    hand = _by_hand(tasks, rollouts, 2)
    assert opt_at_k_draws(o.successes, o.n, tasks, rollouts) == pytest.approx(hand["opt_at_K"], abs=1e-12)
    assert avg_at_k_draws(o.scores, 2, tasks, rollouts) == pytest.approx(hand["avg_at_k"], abs=1e-12)
    assert best_at_k_draws(o.scores, 2, tasks, rollouts) == pytest.approx(hand["best_at_k"], abs=1e-12)
    for metric, values in hand.items():
        assert found.ci["sys"][metric] == pytest.approx((_percentile(values, 0.05), _percentile(values, 0.95)),
                                                        abs=1e-12), metric
    assert settings.to_dict() == {"method": TWO_LEVEL if two_level else ONE_LEVEL, "resamples": 300, "level": 0.9,
                                  "seed": 7}
    if two_level:  # the resampled rollouts matter: a task-only bootstrap of the same tasks differs
        assert hand["best_at_k"] != _by_hand(tasks, None, 2)["best_at_k"]


def test_one_level_matches_exact_enumeration() -> None:
    """Three tasks: all 27 ordered resamples are equally likely; their Avg@k and Best@k give the exact
    bootstrap distribution, which 40000 random resamples must reproduce."""
    scores = np.array([[0.1, 0.3], [0.4, 0.4], [0.9, 0.5]])
    successes = scores > 0.35
    exact = {"avg_at_k": [], "best_at_k": []}
    for pick in itertools.product(range(3), repeat=3):
        rows = [list(scores[t]) for t in pick]
        exact["avg_at_k"].append(avg_at_k(_table(rows), 2))
        exact["best_at_k"].append(best_at_k(_table(rows), 2))
    tasks = task_draws(np.random.default_rng(1), 40_000, 3)
    drawn = {"avg_at_k": avg_at_k_draws(scores, 2, tasks), "best_at_k": best_at_k_draws(scores, 2, tasks)}
    for metric, values in exact.items():
        mean, sd = float(np.mean(values)), float(np.std(values))
        assert float(np.mean(drawn[metric])) == pytest.approx(mean, abs=4 * sd / math.sqrt(40_000))
        assert float(np.std(drawn[metric])) == pytest.approx(sd, rel=0.03)
        # A quantile that falls inside one atom of the exact distribution (not at a step of its CDF) is that
        # atom's value exactly.
        ordered = sorted(values)
        for q in (0.1, 0.3, 0.5, 0.7, 0.9):
            position = q * 27
            if abs(position - round(position)) > 0.3:
                assert float(np.quantile(drawn[metric], q)) == pytest.approx(ordered[int(position)], abs=1e-12)
    # The mean over resamples of a mean is the mean: the one-level bootstrap is centred on the point estimate.
    assert float(np.mean(exact["avg_at_k"])) == pytest.approx(avg_at_k(_table(scores.tolist()), 2))
    assert opt_at_k_draws(successes, 2, tasks).mean() == pytest.approx(2 / 3, abs=0.01)


def test_two_level_matches_exact_enumeration_and_leans_low_for_opt_at_n() -> None:
    """Two tasks of two rollouts: 4 task draws x 4 x 4 rollout draws, 64 equally likely resamples."""
    successes = np.array([[True, False], [True, True]])
    exact = []
    for pick in itertools.product(range(2), repeat=2):
        for first, second in itertools.product(itertools.product(range(2), repeat=2), repeat=2):
            rows = [[bool(successes[pick[0]][i]) for i in first], [bool(successes[pick[1]][i]) for i in second]]
            exact.append(suite_opt_at_k(_table(rows), 2))
    rng = np.random.default_rng(3)
    tasks = task_draws(rng, 50_000, 2)
    drawn = opt_at_k_draws(successes, 2, tasks, rollout_draws(rng, 50_000, 2, 2))
    assert float(drawn.mean()) == pytest.approx(float(np.mean(exact)), abs=0.01)
    # Task 0 (1 of 2 solved) keeps a success in only 3 of 4 rollout draws: the draws' mean, 7/8, falls below
    # the point estimate 1 (why tasks only is the default).
    assert float(np.mean(exact)) == pytest.approx(7 / 8) and suite_opt_at_k(_table(successes.tolist()), 2) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_the_interval_holds_its_point_estimate(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    o = Outcomes(rng.random((12, 4)) < rng.random((12, 1)), rng.random((12, 4)) * rng.random((12, 1)))
    for two_level, metrics in ((False, ("opt_at_K", "avg_at_k", "best_at_k")), (True, ("avg_at_k",))):
        found = suite_intervals({"s": o}, 3, Settings(resamples=500, seed=seed, rollouts=two_level))
        for metric in metrics:
            low, high = found.ci["s"][metric]
            assert low <= found.points["s"][metric] <= high and low < high, (two_level, metric)
        for k, low, high in found.curve["s"]:
            if not two_level:
                assert low <= suite_opt_at_k(_table(o.successes.tolist()), k) <= high


def test_equal_tasks_give_a_degenerate_interval() -> None:
    same = Outcomes(np.array([[True, False, True]] * 5), np.array([[0.2, 0.5, 0.8]] * 5))
    found = suite_intervals({"s": same}, 2, Settings(resamples=200))
    for metric, (low, high) in found.ci["s"].items():
        assert low == pytest.approx(high, abs=1e-12) and low == pytest.approx(found.points["s"][metric]), metric
    flat = Outcomes(np.full((4, 3), True), np.full((4, 3), 0.4))  # two levels: rollouts alike too
    found = suite_intervals({"s": flat}, 2, Settings(resamples=200, rollouts=True))
    for metric, value in (("opt_at_K", 1.0), ("avg_at_k", 0.4), ("best_at_k", 0.4)):
        assert found.ci["s"][metric] == pytest.approx((value, value), abs=1e-12), metric


@pytest.mark.parametrize("two_level", [True, False])
def test_paired_comparison_of_a_system_that_wins_every_task(two_level: bool) -> None:
    """a beats b on every task by a little, but b's best task is far above a's worst: only resampling
    both on the same tasks gives a the win in every resample."""
    b_scores = np.array([[0.80, 0.82], [0.10, 0.12], [0.50, 0.50], [0.30, 0.31]])
    a = Outcomes(np.array([[True, True]] * 4), b_scores + 0.05)
    b = Outcomes(np.array([[False, False]] * 4), b_scores)
    found = suite_intervals({"a": a, "b": b}, 2, Settings(resamples=500, rollouts=two_level))
    by_metric = {c.metric: c for c in found.comparisons}
    assert set(by_metric) == {"opt_at_K", "avg_at_k", "best_at_k"} and {(c.a, c.b) for c in found.comparisons} == \
        {("a", "b")}
    for metric, c in by_metric.items():
        assert (c.a_better, c.tie, c.b_better) == (1.0, 0.0, 0.0), metric
        assert c.ci[0] > 0 and c.difference == pytest.approx(found.points["a"][metric] - found.points["b"][metric])
    assert by_metric["avg_at_k"].difference == pytest.approx(0.05)
    # Unpaired draws would not agree: a's resample of its worst tasks falls below b's of its best.
    a_alone = avg_at_k_draws(a.scores, 2, task_draws(np.random.default_rng(1), 500, 4))
    b_alone = avg_at_k_draws(b.scores, 2, task_draws(np.random.default_rng(2), 500, 4))
    assert float(np.mean(a_alone > b_alone)) < 1.0


def test_identical_systems_tie_on_every_resample() -> None:
    o = _outcomes()
    found = suite_intervals({"x": o, "y": o}, 2, Settings(resamples=300))
    for c in found.comparisons:
        assert (c.a_better, c.tie, c.b_better, c.difference, c.ci) == (0.0, 1.0, 0.0, 0.0, (0.0, 0.0))


def test_the_same_seed_gives_the_same_numbers() -> None:
    systems = {"x": _outcomes(), "y": _outcomes(scores=[[v / 2 for v in row] for row in SCORES])}
    for two_level in (False, True):
        first = suite_intervals(systems, 2, Settings(resamples=400, seed=3, rollouts=two_level))
        again = suite_intervals(systems, 2, Settings(resamples=400, seed=3, rollouts=two_level))
        other = suite_intervals(systems, 2, Settings(resamples=400, seed=4, rollouts=two_level))
        assert (first.ci, first.curve, first.comparisons) == (again.ci, again.curve, again.comparisons)
        assert first.ci != other.ci
        # A system's interval does not depend on which others it was bootstrapped with.
        alone = suite_intervals({"y": systems["y"]}, 2, Settings(resamples=400, seed=3, rollouts=two_level))
        assert alone.ci["y"] == first.ci["y"]


@pytest.mark.parametrize("two_level", [False, True])
def test_a_curve_point_alone_is_drawn_on_the_suites_resamples(two_level: bool) -> None:
    # (how the threshold curve gets its band: one success table at a time, the same draws as the rest)
    settings = Settings(resamples=300, seed=5, rollouts=two_level)
    suite = suite_intervals({"x": _outcomes()}, 2, settings)
    for k, low, high in suite.curve["x"]:
        assert opt_interval(np.array(SUCCESSES, dtype=bool), k, settings, "x") == (low, high)


def test_percentile_interval_is_numpys_linear_quantile() -> None:
    draws = np.array([5.0, 1.0, 4.0, 2.0, 3.0])
    assert percentile_interval(draws, 0.5) == (_percentile(list(draws), 0.25), _percentile(list(draws), 0.75))
    assert percentile_interval(draws, 0.5) == (2.0, 4.0)


@pytest.mark.parametrize("make, message", [
    (lambda: Settings(resamples=0), "resamples must be at least 1"),
    (lambda: Settings(level=1.0), "level must be between 0 and 1"),
    (lambda: Outcomes(np.zeros((2, 3), dtype=bool), np.zeros((2, 2))), "must be the same non-empty"),
    (lambda: suite_intervals({"a": _outcomes(), "b": _outcomes(SUCCESSES[:2], SCORES[:2])}, 2),
     "different numbers of tasks"),
    (lambda: suite_intervals({}, 2), "no systems"),
    (lambda: opt_at_k_draws(np.zeros((2, 3), dtype=bool), 4, np.zeros((1, 2), dtype=int)), "between 1 and the 3"),
    (lambda: Outcomes.of({"t": [True]}, {"t": [0.1, 0.2]}, ["t"]), "same number of rollouts"),
])
def test_bad_input_is_one_clear_error(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()
