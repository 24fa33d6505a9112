"""The one summary function (harness.metrics.summary) against a table computed by hand."""
from __future__ import annotations

import pytest

from harness.metrics.summary import RolloutMetrics, summarize

# Three rollouts per task. t1: solved in rollouts 1 and 2; t2: never; t3: solved in rollout 0 only, and its
# rollout 2 never finished (a failure with score 0, no cost).
TABLE = {
    "t1": [RolloutMetrics(False, 0.0, 0.10, {"input": 100, "output": 10}, steps=4, wall_time_s=10),
           RolloutMetrics(True, 0.6, 0.20, {"input": 200, "output": 20}, steps=6, wall_time_s=20),
           RolloutMetrics(True, 0.8, 0.30, {"input": 300, "output": 30, "cached": 50}, steps=8, wall_time_s=30)],
    "t2": [RolloutMetrics(False, 0.1, 0.05, {"input": 10}, steps=2, wall_time_s=5),
           RolloutMetrics(False, 0.0, 0.05, {"input": 10}, steps=2, wall_time_s=5),
           RolloutMetrics(False, 0.2, 0.05, {"input": 10}, steps=2, wall_time_s=5)],
    "t3": [RolloutMetrics(True, 0.5, 0.15, {"input": 50}, steps=3, wall_time_s=15),
           RolloutMetrics(False, 0.0, 0.15, {"input": 50}, steps=3, wall_time_s=15),
           None],
}


def test_every_number_matches_the_hand_computation() -> None:
    s = summarize(TABLE)
    assert (s.n_tasks, s.n_rollouts, s.n_planned, s.n_missing) == (3, 8, 9, 1)
    # Unbiased Opt@k = mean over tasks of 1 - C(n-c, k)/C(n, k), n = 3:
    #   k=1: t1 2/3, t2 0, t3 1/3            -> 1/3
    #   k=2: t1 1 - 0/3 = 1, t3 1 - C(2,2)/C(3,2) = 2/3  -> (1 + 0 + 2/3)/3 = 5/9
    #   k=3: t1 1, t3 1                      -> 2/3
    assert s.opt_at_k == pytest.approx({"1": 1 / 3, "2": 5 / 9, "3": 2 / 3})
    # GSO's first-K: t1's first success is rollout 1, t3's is rollout 0.
    #   k=1: t3 only -> 1/3; k=2: t1 and t3 -> 2/3; k=3: 2/3
    assert s.opt_at_k_first == pytest.approx({"1": 1 / 3, "2": 2 / 3, "3": 2 / 3})
    # Avg@k = mean over tasks of the mean score: t1 1.4/3, t2 0.3/3, t3 0.5/3 -> 2.2/9
    assert s.avg_at_k is not None and all(v == pytest.approx(2.2 / 9) for v in s.avg_at_k.values())
    # Best@k (expected max of k of 3): sorted t1 (0, .6, .8), t2 (0, .1, .2), t3 (0, 0, .5)
    #   k=2: t1 (0*0 + .6*1 + .8*2)/3 = 2.2/3, t2 (.1 + .4)/3 = .5/3, t3 (0 + 0 + 1.0)/3 = 1/3  -> 3.7/9
    #   k=3: the max: .8, .2, .5 -> 1.5/3
    assert s.best_at_k is not None
    assert s.best_at_k["1"] == pytest.approx(2.2 / 9)
    assert s.best_at_k["2"] == pytest.approx(3.7 / 9) and s.best_at_k["3"] == pytest.approx(0.5)
    assert s.solved_tasks == 2
    assert s.cost_usd == pytest.approx(1.05) and s.cost_known
    assert s.cost_per_rollout == pytest.approx(1.05 / 8) and s.cost_per_solved_task == pytest.approx(1.05 / 2)
    assert s.tokens == {"input": 730, "cached": 50, "cache_write": 0, "output": 60, "reasoning": 0}
    assert s.mean_steps == pytest.approx(30 / 8) and s.wall_time_s == pytest.approx(105)


def test_an_unknown_price_is_unknown_not_zero() -> None:
    s = summarize({"t": [RolloutMetrics(True, 1.0, 0.5), RolloutMetrics(False, 0.0, None)]})
    assert not s.cost_known and s.cost_usd == pytest.approx(0.5)  # what is known, flagged as partial
    only_unknown = summarize({"t": [RolloutMetrics(True, 1.0, None)]})
    assert only_unknown.cost_usd is None and only_unknown.cost_per_rollout is None


def test_ungraded_runs_have_no_scores_and_chosen_ks() -> None:
    s = summarize(TABLE, graded=False)
    assert s.opt_at_k is s.avg_at_k is s.best_at_k is s.solved_tasks is None
    assert s.cost_usd == pytest.approx(1.05)
    assert list(summarize(TABLE, ks=[1, 3]).opt_at_k or {}) == ["1", "3"]


def test_bad_tables_are_refused() -> None:
    with pytest.raises(ValueError, match="no tasks"):
        summarize({})
    with pytest.raises(ValueError, match="same number of rollout slots"):
        summarize({"a": [None], "b": [None, None]})


def test_hack_suspects_are_reported_raw_and_not_credited() -> None:
    # t1's rollout 2 (solved, score 0.8) flagged: raw numbers as before; credited ones without it.
    flagged = {**TABLE, "t1": [*TABLE["t1"][:2], RolloutMetrics(True, 0.8, 0.30, suspect=True)]}
    s = summarize(flagged)
    assert s.opt_at_k == pytest.approx({"1": 1 / 3, "2": 5 / 9, "3": 2 / 3}) and s.hack_suspects == 1
    assert s.credited is not None
    # Credited: t1 solved once of 3 (1/3, k=2: 1 - C(2,2)/C(3,2) = 2/3, k=3: 1), t3 as before.
    assert s.credited["opt_at_k"] == pytest.approx({"1": 2 / 9, "2": (2 / 3 + 2 / 3) / 3, "3": 2 / 3})
    # Avg@k: t1's scores become 0, 0.6, 0 -> (0.6 + 0.3 + 0.5) / 9
    assert all(v == pytest.approx(1.4 / 9) for v in s.credited["avg_at_k"].values())
    assert s.credited["solved_tasks"] == 2
    assert "credited" in s.to_dict() and "credited" not in summarize(TABLE).to_dict()


def test_errored_unscored_and_unknown_cost_are_counted_apart_by_hand() -> None:
    # t1: a solved rollout ($0.30), an infra error (unknown cost, no grading); t2: a rollout the grader could
    # not measure ($0.10, graded "error"), one that failed ($0.20). Opt@1: t1 1/2, t2 0 -> 1/4.
    table = {"t1": [RolloutMetrics(True, 0.5, 0.30), RolloutMetrics(False, 0.0, None, errored=True, unscored=True)],
             "t2": [RolloutMetrics(False, 0.0, 0.10, unscored=True), RolloutMetrics(False, 0.0, 0.20)]}
    s = summarize(table)
    assert s.opt_at_k is not None and s.opt_at_k["1"] == pytest.approx(0.25)  # failures, as GSO counts them
    assert (s.errored, s.unscored, s.cost_unknown_rollouts) == (1, 2, 1)
    # the known cost only: $0.60 over the 3 rollouts that have one, $0.60 for the 1 solved task; never $0
    assert not s.cost_known and s.cost_usd == pytest.approx(0.60)
    assert s.cost_per_rollout == pytest.approx(0.20) and s.cost_per_solved_task == pytest.approx(0.60)
    out = s.to_dict()
    assert (out["errored"], out["unscored"], out["cost_unknown_rollouts"]) == (1, 2, 1)
    assert "errored" not in summarize(TABLE).to_dict()  # written only when some are (old reports stay)


def test_the_overfit_gap_is_the_geometric_mean_of_the_rollouts() -> None:
    # gaps 2 and 8 -> sqrt(16) = 4; a rollout without one is left out
    # over the expert's gap on the same task (2 and 2): 1 and 4 -> 2
    table = {"t1": [RolloutMetrics(True, 0.5, 0.1, overfit_gap=2.0, expert_gap=2.0),
                    RolloutMetrics(True, 0.5, 0.1, overfit_gap=8.0, expert_gap=2.0)],
             "t2": [RolloutMetrics(False, 0.0, 0.1), RolloutMetrics(False, 0.0, 0.1)]}
    s = summarize(table)
    assert s.overfit_gap == pytest.approx(4.0) and s.overfit_gap_rollouts == 2
    assert s.overfit_gap_vs_expert == pytest.approx(2.0)
