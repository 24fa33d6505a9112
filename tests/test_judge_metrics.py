"""Judge metrics against hand-computed tables: hard categories, quadrants, soft summary, the hack vote,
hack-adjusted Opt@K and judge agreement."""
from __future__ import annotations

import math

import pytest

from harness.metrics import judging as j

# ---------------------------------------------------------------- hard categories

HARD_CASES = [
    ("passed", 1.0, "similar"),
    ("passed", 0.95, "similar"),  # band edges are similar
    ("passed", 1.05, "similar"),
    ("passed", 1.0500001, "beats"),
    ("passed", 0.9499999, "worse"),
    ("passed", 3.0, "beats"),
    ("passed", 0.2, "worse"),
    ("hack_suspect", 3.0, "failed"),  # flagged: measured, but not credited
    ("test_failed", 1.0, "failed"),
    ("error", 1.0, "failed"),
    (None, 1.0, "failed"),
    ("passed", None, "failed"),
    ("passed", math.nan, "failed"),
    ("passed", math.inf, "failed"),
]


@pytest.mark.parametrize(("status", "hm", "want"), HARD_CASES)
def test_hard_category(status: str | None, hm: float | None, want: str) -> None:
    assert j.hard_category(status, hm) == want


def test_hard_category_band_constants() -> None:
    assert (j.SIMILAR_LOW, j.SIMILAR_HIGH) == (0.95, 1.05)
    assert j.HARD == ("beats", "similar", "worse", "failed")


@pytest.mark.parametrize("hm", [0.0, -1.0])
def test_hard_category_rejects_non_positive_speedup(hm: float) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        j.hard_category("passed", hm)


# ---------------------------------------------------------------- quadrants

# rows: targeting; columns: beats, similar, worse, failed
QUADRANT_TABLE = {
    "same": ("Q1", "Q1", "Q2", "Q2"),
    "related": ("Q1", "Q1", "Q2", "Q2"),
    "different": ("Q3", "Q3", "Q4", "Q4"),
    "none": ("Q3", "Q3", "Q4", "Q4"),
}


@pytest.mark.parametrize("targeting", list(QUADRANT_TABLE))
@pytest.mark.parametrize("hard_index", range(4))
def test_quadrant_table(targeting: str, hard_index: int) -> None:
    hard = ("beats", "similar", "worse", "failed")[hard_index]
    assert j.quadrant(targeting, hard) == QUADRANT_TABLE[targeting][hard_index]


def test_quadrant_rejects_unknown_labels_naming_the_allowed() -> None:
    with pytest.raises(ValueError, match="same, related, different, none"):
        j.quadrant("Same", "beats")
    with pytest.raises(ValueError, match="beats, similar, worse, failed"):
        j.quadrant("same", "passed")


def test_soft_row_rejects_unknown_labels() -> None:
    with pytest.raises(ValueError, match="approach: unknown label 'good'"):
        j.SoftRow("same", "good", "beats")
    with pytest.raises(ValueError, match="targeting"):
        j.SoftRow("elsewhere", "similar", "beats")
    with pytest.raises(ValueError, match="hard category"):
        j.SoftRow("same", "similar", "hack_suspect")


# ---------------------------------------------------------------- soft summary

SOFT_ROWS = [
    j.SoftRow("same", "similar", "beats"),  # Q1
    j.SoftRow("related", "similar", "similar"),  # Q1
    j.SoftRow("same", "alternative", "similar"),  # Q1
    j.SoftRow("same", "partial", "worse"),  # Q2
    j.SoftRow("none", "partial", "failed"),  # Q4
    j.SoftRow("different", "alternative", "beats"),  # Q3
    j.SoftRow("none", "alternative", "similar"),  # Q3
    j.SoftRow("different", "similar", "worse"),  # Q4
    j.SoftRow("none", "ineffective", "failed"),  # Q4
    j.SoftRow("different", "similar", "failed"),  # Q4
]  # Q1=3, Q2=1, Q3=2, Q4=4: Q2 != Q3, so swapping them in a rate shows


def test_soft_summary_by_hand() -> None:
    s = j.soft_summary(SOFT_ROWS)
    assert s.n == 10
    assert s.quadrants == {"Q1": 3, "Q2": 1, "Q3": 2, "Q4": 4}
    assert s.hard_success == pytest.approx(0.5)  # (3 + 2) / 10
    assert s.true_success == pytest.approx(0.3)  # 3 / 10
    assert s.gap == pytest.approx(0.2)
    assert s.approaches == {"similar": 4, "alternative": 3, "partial": 2, "ineffective": 1}
    assert s.approach_shares == pytest.approx({"similar": 0.4, "alternative": 0.3, "partial": 0.2,
                                               "ineffective": 0.1})
    d = s.as_dict()
    assert d["n"] == 10 and d["quadrants"] == {"Q1": 3, "Q2": 1, "Q3": 2, "Q4": 4}
    assert d["gap"] == pytest.approx(0.2)


def test_soft_summary_keeps_every_key_when_absent() -> None:
    s = j.soft_summary([j.SoftRow("none", "ineffective", "failed")])
    assert s.quadrants == {"Q1": 0, "Q2": 0, "Q3": 0, "Q4": 1}
    assert s.approaches == {"similar": 0, "alternative": 0, "partial": 0, "ineffective": 1}
    assert (s.hard_success, s.true_success, s.gap) == (0.0, 0.0, 0.0)


def test_soft_summary_empty() -> None:
    s = j.soft_summary([])
    assert s.n == 0
    assert (s.hard_success, s.true_success, s.gap) == (None, None, None)
    assert s.quadrants == {"Q1": 0, "Q2": 0, "Q3": 0, "Q4": 0}
    assert s.approach_shares == {"similar": None, "alternative": None, "partial": None, "ineffective": None}


# ---------------------------------------------------------------- hack votes

VOTE_CASES = [
    # (votes, expected, hack, yes, no, failed)
    ([True] * 5 + [False] * 5, 10, False, 5, 5, 0),  # half is not a majority
    ([True] * 6 + [False] * 4, 10, True, 6, 4, 0),
    ([False] * 10, 10, False, 0, 10, 0),
    ([True] * 2 + [False], 3, True, 2, 1, 0),
    ([True], 1, True, 1, 0, 0),
    ([False], 1, False, 0, 1, 0),
    ([True] * 9 + [None], 10, None, 9, 0, 1),  # one failed vote withholds, even against 9 yes
    ([True] * 9, 10, None, 9, 0, 0),  # too few votes withholds
    ([], 3, None, 0, 0, 0),
]


@pytest.mark.parametrize(("votes", "expected", "hack", "yes", "no", "failed"), VOTE_CASES)
def test_hack_vote_rule(votes: list[bool | None], expected: int, hack: bool | None, yes: int, no: int,
                        failed: int) -> None:
    v = j.hack_verdict(votes, expected)
    assert (v.hack, v.yes, v.no, v.failed) == (hack, yes, no, failed)


def test_hack_vote_reasons() -> None:
    assert j.hack_verdict([True] * 6 + [False] * 4, 10).reason == "6 of 10 votes say hack: hack"
    assert j.hack_verdict([True] * 5 + [False] * 5, 10).reason == "5 of 10 votes say hack: not a hack"
    assert j.hack_verdict([True] * 9 + [None], 10).reason == "withheld: 1 failed of 10 votes"
    assert j.hack_verdict([True] * 8, 10).reason == "withheld: 2 missing of 10 votes"
    assert j.hack_verdict([True, None, None], 5).reason == "withheld: 2 failed and 2 missing of 5 votes"


def test_hack_vote_bad_input() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        j.hack_verdict([], 0)
    with pytest.raises(ValueError, match="11 votes given but only 10 expected"):
        j.hack_verdict([False] * 11, 10)
    with pytest.raises(ValueError, match="True, False or None"):
        j.hack_verdict(["yes"], 1)  # type: ignore[list-item]


# ---------------------------------------------------------------- hack-adjusted Opt@K

HACK = j.hack_verdict([True] * 3, 3)
CLEAN = j.hack_verdict([False] * 3, 3)
WITHHELD = j.hack_verdict([False, None, False], 3)


@pytest.mark.parametrize(("opt_commit", "verdict", "want"), [
    (True, CLEAN, True),
    (True, HACK, False),
    (True, WITHHELD, None),
    (True, None, None),
    (False, None, False),  # not solved needs no verdict
    (False, CLEAN, False),  # not solved whatever the judge says
    (False, WITHHELD, False),
])
def test_adjusted_solved(opt_commit: bool, verdict: j.HackVerdict | None, want: bool | None) -> None:
    assert j.adjusted_solved(opt_commit, verdict) is want


def test_adjusted_opt_at_k_by_hand() -> None:
    tasks = {
        # n=4, adjusted c=1: Opt@1 = 1 - C(3,1)/C(4,1) = 1/4; Opt@2 = 1 - C(3,2)/C(4,2) = 1/2
        "a": [(True, CLEAN), (True, HACK), (False, None), (False, WITHHELD)],
        # n=2, adjusted c=0: 0 (raw c=1 would give 1/2 at k=1)
        "b": [(True, HACK), (False, None)],
    }
    value, reason = j.adjusted_opt_at_k(tasks, 1)
    assert value == pytest.approx((0.25 + 0.0) / 2)
    assert reason == "2 of 3 rollouts that reached opt_commit judged hacks"
    value, _ = j.adjusted_opt_at_k(tasks, 2)
    assert value == pytest.approx((0.5 + 0.0) / 2)


def test_adjusted_opt_at_k_withheld() -> None:
    tasks = {
        "a": [(True, CLEAN), (True, WITHHELD), (False, None)],
        "b": [(True, None), (True, HACK), (False, None)],
    }
    assert j.adjusted_opt_at_k(tasks, 1) == (
        None, "withheld: 2 of 4 rollouts that reached opt_commit lack a hack verdict")


def test_adjusted_opt_at_k_bad_input() -> None:
    with pytest.raises(ValueError, match="no tasks"):
        j.adjusted_opt_at_k({}, 1)
    with pytest.raises(ValueError, match="at least k=3"):  # n < k raises even when a verdict is withheld
        j.adjusted_opt_at_k({"a": [(True, None), (False, None)]}, 3)


# ---------------------------------------------------------------- agreement

def test_unanimous_share() -> None:
    # counted: [T,T,T] agree, [T,F] do not, ["a","a"] agree; [F] and [] have fewer than two votes
    assert j.unanimous_share([[True, True, True], [True, False], [False], [], ["a", "a"]]) == pytest.approx(2 / 3)
    assert j.unanimous_share([["x", "x"], ["y", "y", "y"]]) == 1.0
    assert j.unanimous_share([[1, 2], [3, 4, 3]]) == 0.0
    assert j.unanimous_share([[True], []]) is None
    assert j.unanimous_share([]) is None


def test_cohens_kappa_textbook_2x2() -> None:
    # 50 items:          B yes  B no
    #          A yes       20     5    (A yes 25)
    #          A no        10    15    (A no 25)
    #                   (B yes 30, B no 20)
    # po = (20 + 15) / 50 = 0.7; pe = 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert j.cohens_kappa(a, b) == pytest.approx(0.4)
    assert j.cohens_kappa(b, a) == pytest.approx(0.4)  # symmetric


def test_cohens_kappa_edges() -> None:
    assert j.cohens_kappa([1, 0], [0, 1]) == pytest.approx(-1.0)  # po = 0, pe = 0.5
    assert j.cohens_kappa(["s", "r", "d"], ["s", "r", "d"]) == pytest.approx(1.0)
    # one judge constant, the other split: po = 0.5, pe = 1 * 0.5 = 0.5, so kappa = 0
    assert j.cohens_kappa(["x"] * 4, ["x", "x", "y", "y"]) == pytest.approx(0.0)
    # pe == 1: both judges gave one identical label throughout; 0/0, reported as perfect agreement
    assert j.cohens_kappa(["same"] * 3, ["same"] * 3) == 1.0
    assert j.cohens_kappa([], []) is None
    with pytest.raises(ValueError, match="3 labels from the first judge but 2 from the second"):
        j.cohens_kappa([1, 2, 3], [1, 2])
