"""Metric functions against hand-computed values, GSO's formulas, and their edge cases."""
from __future__ import annotations

import math

import pytest

from harness import metrics as m


def test_speedups_gm_hm_by_hand() -> None:
    assert m.speedups([2.0, 9.0], [1.0, 3.0]) == [2.0, 3.0]
    assert m.gm([2.0, 8.0]) == pytest.approx(4.0)
    assert m.hm([2.0, 3.0]) == pytest.approx(2.4)  # 2 / (1/2 + 1/3)
    assert m.hm([1.0, 4.0, 4.0]) == pytest.approx(2.0)  # 3 / (1 + 1/4 + 1/4)


@pytest.mark.parametrize("bad", [[0.0, 1.0], [-1.0], [float("nan")], [float("inf")], []])
def test_non_positive_or_missing_times_are_rejected(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        m.speedups(bad, [1.0] * len(bad))


def test_mismatched_lengths_rejected() -> None:
    with pytest.raises(ValueError, match="2 'before' times but 1 'after'"):
        m.speedups([1.0, 2.0], [1.0])


# (base, patch, commit, opt_base, opt_commit) — computed by hand with GSO's rules:
# opt_base = mean(base) > mean(patch) and round(gm(base/patch), 1) >= 1.2
# opt_commit = opt_base and hm(commit/patch) > 0.95
GSO_CASES = [
    # 2x faster on both tests, expert 2x too: hm(commit/patch) = 1.0 > 0.95
    ([1.0, 2.0], [0.5, 1.0], [0.5, 1.0], True, True),
    # gm = 1.16 rounds to 1.2 (GSO's one-decimal rounding): opt_base holds, but the expert is 2x faster
    ([1.16], [1.0], [0.5], True, False),
    # gm = 1.14 rounds to 1.1: not opt_base although faster
    ([1.14], [1.0], [1.0], False, False),
    # 1.15 is stored as 1.1499999...: Python's round(x, 1) gives 1.1, but GSO's gm is a numpy float and numpy
    # rounds 1.15 * 10 = 11.5 half to even, to 1.2: opt_base (the paper's threshold), as in GSO
    ([1.15], [1.0], [1.0], True, True),
    ([2.0], [1.0], [0.9501], True, True),
    # gm over base is 2.0 but mean time is worse (one huge regression dominates the mean)
    ([1.0, 1.0, 10.0], [0.125, 0.125, 20.0], [1.0, 1.0, 10.0], False, False),
    # slower patch
    ([1.0], [2.0], [0.5], False, False),
]


@pytest.mark.parametrize(("base", "patch", "commit", "want_base", "want_commit"), GSO_CASES)
def test_gso_verdicts(base: list[float], patch: list[float], commit: list[float], want_base: bool,
                      want_commit: bool) -> None:
    assert m.opt_base(base, patch) is want_base
    assert m.opt_p(base, patch, commit, 0.95) is want_commit


def test_opt_p_is_strict_and_takes_any_p() -> None:
    base, patch, commit = [4.0], [2.0], [1.0]  # hm(commit/patch) is exactly 0.5
    assert m.opt_p(base, patch, commit, 0.4)
    assert not m.opt_p(base, patch, commit, 0.5)  # GSO's '>' : reaching p is not enough


def test_opt_stats_block() -> None:
    stats = m.opt_stats([4.0, 9.0], [2.0, 3.0], [1.0, 3.0])
    assert stats.per_test_speedups == [2.0, 3.0]
    assert stats.gm_speedup_patch_base == pytest.approx(math.sqrt(6))
    assert stats.hm_speedup_patch_commit == pytest.approx(2 / (2 + 1))  # commit/patch = [0.5, 1.0]
    assert stats.gm_speedup_commit_base == pytest.approx(math.sqrt(4 * 3))
    assert stats.base_mean == 6.5 and stats.patch_mean == 2.5


def test_verdicts_from_given_speedups() -> None:
    # Times say gm 2.0 over base; the speedups measured round by round say 1.1: those decide.
    base, patch, commit = [4.0, 4.0], [2.0, 2.0], [2.0, 2.0]
    assert m.opt_base(base, patch) and not m.opt_base_from([1.1, 1.1], base, patch)
    assert m.opt_p_from([1.3, 1.3], [0.96, 0.96], base, patch)
    assert not m.opt_p_from([1.3, 1.3], [0.9, 0.9], base, patch)
    assert not m.opt_base_from([3.0], [1.0], [2.0])  # GSO's mean-time condition still applies
    stats = m.opt_stats_from([2.0, 8.0], [1.0, 0.5], [2.0, 16.0], base, patch, commit)
    assert stats.gm_speedup_patch_base == pytest.approx(4.0) and stats.hm_speedup_patch_commit == pytest.approx(2 / 3)
    assert stats.per_test_speedups == [2.0, 8.0] and stats.base_mean == 4.0
    assert m.opt_stats_from(*(m.speedups(*pair) for pair in ((base, patch), (commit, patch), (base, commit))),
                            base, patch, commit) == m.opt_stats(base, patch, commit)


def test_log_stretch_score() -> None:
    assert m.log_stretch_score(4.0, 4.0) == pytest.approx(0.5)  # matches the expert
    assert m.log_stretch_score(2.0, 4.0) == pytest.approx(0.25)
    assert m.log_stretch_score(16.0, 4.0) == pytest.approx(1.0)  # 2 * expert in log space
    assert m.log_stretch_score(100.0, 4.0) == 1.0  # capped
    assert m.log_stretch_score(1.0, 4.0) == 0.0 and m.log_stretch_score(0.5, 4.0) == 0.0  # gate
    with pytest.raises(ValueError, match="expert faster than base"):
        m.log_stretch_score(2.0, 1.0)


def test_opt_at_k_unbiased_by_hand() -> None:
    assert m.opt_at_k(5, 0, 1) == 0.0
    assert m.opt_at_k(5, 2, 1) == pytest.approx(0.4)
    assert m.opt_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    assert m.opt_at_k(4, 3, 2) == 1.0  # any pair contains a success
    with pytest.raises(ValueError, match="at least k=3 rollouts"):
        m.opt_at_k(2, 1, 3)
    with pytest.raises(ValueError, match="no rollouts"):
        m.opt_at_k(0, 0, 1)


def test_opt_at_k_first_and_suite() -> None:
    assert m.opt_at_k_first([False, True, False], 1) == 0.0
    assert m.opt_at_k_first([False, True, False], 2) == 1.0
    per_task = {"a": [False, True], "b": [False, False], "c": [True, True]}
    assert m.suite_opt_at_k(per_task, 1) == pytest.approx((0.5 + 0 + 1) / 3)
    assert m.suite_opt_at_k(per_task, 2) == pytest.approx(2 / 3)
    assert m.suite_opt_at_k(per_task, 1, mode="first") == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="unknown mode"):
        m.suite_opt_at_k(per_task, 1, mode="best")


def test_avg_and_best_at_k_by_hand() -> None:
    per_task = {"a": [0.0, 0.5, 1.0], "b": [0.2, 0.2, 0.2]}
    assert m.avg_at_k(per_task, 2) == pytest.approx((0.5 + 0.2) / 2)
    # E[max of 2 of {0, .5, 1}]: pairs (0,.5)->.5, (0,1)->1, (.5,1)->1 => 2.5/3
    assert m.expected_max_of_k([0.0, 0.5, 1.0], 2) == pytest.approx(2.5 / 3)
    assert m.expected_max_of_k([0.0, 0.5, 1.0], 3) == 1.0
    assert m.expected_max_of_k([0.0, 0.5, 1.0], 1) == pytest.approx(0.5)  # k=1 is the mean
    assert m.best_at_k(per_task, 2) == pytest.approx((2.5 / 3 + 0.2) / 2)
    assert m.avg_at_k({"a": [0.0, 0.0]}, 1) == 0.0  # all failures
    with pytest.raises(ValueError, match="at least k=4"):
        m.best_at_k(per_task, 4)
    with pytest.raises(ValueError, match="no tasks"):
        m.avg_at_k({}, 1)


def test_dominance_with_ties_by_hand() -> None:
    scores = {"A": {"t1": 0.5, "t2": 0.1}, "B": {"t1": 0.5, "t2": 0.3}, "C": {"t1": 0.0, "t2": 0.3}}
    got = m.dominance(scores)
    # A: t1 ties B (.5), beats C (1); t2 loses to B and C  => 1.5 / (2 tasks * 2 others)
    assert got["A"] == pytest.approx(1.5 / 4)
    # B: t1 ties A, beats C; t2 beats A, ties C => 3 / 4
    assert got["B"] == pytest.approx(3 / 4)
    # C: t1 loses both; t2 beats A, ties B => 1.5 / 4
    assert got["C"] == pytest.approx(1.5 / 4)
    assert sum(got.values()) == pytest.approx(3 * 0.5)  # pairwise results sum to half the pairs
    with pytest.raises(ValueError, match="at least two systems"):
        m.dominance({"A": {"t": 1.0}})
    with pytest.raises(ValueError, match="differs from the others on task 't2'"):
        m.dominance({"A": {"t1": 1.0, "t2": 0.0}, "B": {"t1": 1.0}})


@pytest.mark.parametrize("value, rounded", [(1.15, 1.2), (1.25, 1.2), (1.05, 1.0), (1.149999, 1.1), (1.35, 1.4),
                                            (2.0, 2.0)])
def test_gso_round_is_numpys_rounding(value: float, rounded: float) -> None:
    import numpy as np

    assert m.gso_round(value) == rounded == float(np.round(np.float64(value), 1))


def test_leaderboard_threshold_is_one_point_one() -> None:
    # gm 1.12 rounds to 1.1: the leaderboard's opt_base, not the paper's
    assert m.opt_base([1.12], [1.0], m.GSO_MIN_SPEEDUP["leaderboard"])
    assert not m.opt_base([1.12], [1.0], m.GSO_MIN_SPEEDUP["paper"])
    assert m.opt_p([1.12], [1.0], [1.0], 0.95, m.GSO_MIN_SPEEDUP["leaderboard"])
