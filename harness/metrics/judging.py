"""LLM-judge metrics: ISO-Bench's hard and soft categories, GSO's hack vote, hack-adjusted Opt@K, agreement.

- `hard_category`: what the grader measured, against the expert (beats / similar / worse / failed);
- soft labels a judge gives (bottleneck targeting, implementation approach), the quadrant that joins
  intent (targeting) to result (hard category), and `soft_summary` over a set of rollouts;
- `hack_verdict`: GSO's rule over several judge votes; `adjusted_solved` and `adjusted_opt_at_k`: Opt@K
  with judged hacks not credited, withheld whenever a verdict it needs is missing;
- `unanimous_share`, `cohens_kappa`: how far judges (or runs of one judge) agree.

Pure functions; the judge itself lives elsewhere. Bad input raises ValueError saying what is wrong.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from harness.metrics.aggregates import opt_at_k

HARD = ("beats", "similar", "worse", "failed")
TARGETING = ("same", "related", "different", "none")  # vs the expert's bottleneck; none: no optimization
APPROACH = ("similar", "alternative", "partial", "ineffective")  # vs the expert's implementation
QUADRANTS = ("Q1", "Q2", "Q3", "Q4")  # true success, good intent bad execution, lucky win, complete failure

# ISO-Bench: within 5% of the expert (hm speedup of patch over expert) is "similar", edges included.
SIMILAR_LOW = 0.95
SIMILAR_HIGH = 1.05

_GOOD_INTENT = ("same", "related")
_GOOD_RESULT = ("beats", "similar")


def _check_label(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"{what}: unknown label {value!r} (allowed: {', '.join(allowed)})")


# ---------------------------------------------------------------- hard and soft categories

def hard_category(status: str | None, hm_vs_expert: float | None) -> str:
    """ISO-Bench's hard category of one rollout from its grading status and hm speedup over the expert.

    Only "passed" is measured: any other status (hack_suspect too: a flagged patch earns no credit), or a
    missing or non-finite hm, is "failed".
    """
    if status != "passed" or hm_vs_expert is None or not math.isfinite(hm_vs_expert):
        return "failed"
    if hm_vs_expert <= 0:
        # a speedup is a ratio of positive times: this is a grader bug, not a slow patch
        raise ValueError(f"hard category: hm speedup over the expert must be positive, got {hm_vs_expert!r}")
    if hm_vs_expert > SIMILAR_HIGH:
        return "beats"
    if hm_vs_expert < SIMILAR_LOW:
        return "worse"
    return "similar"


def quadrant(targeting: str, hard: str) -> str:
    """Intent (targeting same or related) against result (hard beats or similar): Q1 both, Q2 intent
    only, Q3 result only (a lucky win), Q4 neither."""
    _check_label(targeting, TARGETING, "targeting")
    _check_label(hard, HARD, "hard category")
    intent, result = targeting in _GOOD_INTENT, hard in _GOOD_RESULT
    if intent:
        return "Q1" if result else "Q2"
    return "Q3" if result else "Q4"


@dataclass(frozen=True)
class SoftRow:
    """One judged rollout: the judge's two soft labels and the grader's hard category."""
    targeting: str
    approach: str
    hard: str

    def __post_init__(self) -> None:
        _check_label(self.targeting, TARGETING, "targeting")
        _check_label(self.approach, APPROACH, "approach")
        _check_label(self.hard, HARD, "hard category")


@dataclass(frozen=True)
class SoftSummary:
    """Soft metrics of a set of rollouts. Rates and shares are None when there are no rollouts."""
    n: int
    quadrants: dict[str, int]  # every key of QUADRANTS
    hard_success: float | None  # (Q1 + Q3) / n: what the timings alone credit
    true_success: float | None  # Q1 / n: credited and aimed at the right bottleneck
    gap: float | None  # hard_success - true_success = Q3 / n: lucky wins
    approaches: dict[str, int]  # every key of APPROACH
    approach_shares: dict[str, float | None]  # every key of APPROACH

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def soft_summary(rows: Sequence[SoftRow]) -> SoftSummary:
    """Quadrant counts, hard and true success, their gap, and the approach mix over `rows`."""
    n = len(rows)
    found = Counter(quadrant(r.targeting, r.hard) for r in rows)
    quads = {q: found[q] for q in QUADRANTS}
    used = Counter(r.approach for r in rows)
    approaches = {a: used[a] for a in APPROACH}
    if n == 0:
        return SoftSummary(0, quads, None, None, None, approaches, {a: None for a in APPROACH})
    hard_success = (quads["Q1"] + quads["Q3"]) / n
    true_success = quads["Q1"] / n
    return SoftSummary(n, quads, hard_success, true_success, hard_success - true_success, approaches,
                       {a: c / n for a, c in approaches.items()})


# ---------------------------------------------------------------- hack votes and adjusted Opt@K

@dataclass(frozen=True)
class HackVerdict:
    """GSO's verdict over several judge votes; hack is None when withheld (a vote failed or is missing)."""
    hack: bool | None
    yes: int
    no: int
    failed: int  # votes with no parseable answer
    reason: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def hack_verdict(votes: Sequence[bool | None], expected: int) -> HackVerdict:
    """A hack iff more than half of the `expected` votes say so (5 of 10 is not, 6 of 10 is).

    Every vote must succeed: one failed (None) or missing vote withholds the verdict, since the votes not
    cast could have tipped it either way.
    """
    if expected < 1:
        raise ValueError(f"hack verdict: expected votes must be at least 1, got {expected}")
    if len(votes) > expected:
        raise ValueError(f"hack verdict: {len(votes)} votes given but only {expected} expected")
    bad = [v for v in votes if v is not True and v is not False and v is not None]
    if bad:
        raise ValueError(f"hack verdict: a vote must be True, False or None, got {bad[0]!r}")
    yes = sum(v is True for v in votes)
    no = sum(v is False for v in votes)
    failed = sum(v is None for v in votes)
    missing = expected - len(votes)
    if failed or missing:
        parts = [f"{failed} failed"] if failed else []
        parts += [f"{missing} missing"] if missing else []
        return HackVerdict(None, yes, no, failed, f"withheld: {' and '.join(parts)} of {expected} votes")
    hack = 2 * yes > expected  # strict majority of all expected votes
    return HackVerdict(hack, yes, no, 0, f"{yes} of {expected} votes say hack: {'hack' if hack else 'not a hack'}")


def adjusted_solved(opt_commit: bool, verdict: HackVerdict | None) -> bool | None:
    """Solved once judged hacks are removed: False without opt_commit (no verdict needed), else True iff
    the verdict says not a hack; None when a needed verdict is missing or withheld."""
    if not opt_commit:
        return False
    if verdict is None or verdict.hack is None:
        return None
    return not verdict.hack


def adjusted_opt_at_k(tasks: Mapping[str, Sequence[tuple[bool, HackVerdict | None]]],
                      k: int) -> tuple[float | None, str]:
    """Unbiased Opt@K averaged over tasks, counting only adjusted-solved rollouts as successes.

    Each task holds its rollouts as (opt_commit, verdict). Returns (None, reason) when any rollout that
    reached opt_commit lacks a verdict: counting it either way would bias the number.
    """
    if not tasks:
        raise ValueError("adjusted Opt@K: no tasks")
    values: list[float] = []
    lacking = hacks = reached = 0
    for rollouts in tasks.values():
        solved = [adjusted_solved(bool(oc), v) for oc, v in rollouts]
        lacking += sum(s is None for s in solved)
        reached += sum(bool(oc) for oc, _ in rollouts)
        hacks += sum(bool(oc) and v is not None and v.hack is True for oc, v in rollouts)
        # computed even when withheld, so that a bad n or k raises whatever the verdicts
        values.append(opt_at_k(len(solved), sum(s is True for s in solved), k))
    if lacking:
        return None, f"withheld: {lacking} of {reached} rollouts that reached opt_commit lack a hack verdict"
    return sum(values) / len(values), f"{hacks} of {reached} rollouts that reached opt_commit judged hacks"


# ---------------------------------------------------------------- agreement

def unanimous_share(vote_sets: Sequence[Sequence[object]]) -> float | None:
    """Share of items whose votes all agree (==). Items with fewer than two votes say nothing about
    agreement and are skipped; None when no item has two. A failed vote (None) is compared like any
    label, so drop failed votes first if they should not count."""
    judged = [votes for votes in vote_sets if len(votes) >= 2]
    if not judged:
        return None
    return sum(all(v == votes[0] for v in votes) for votes in judged) / len(judged)


def cohens_kappa(a: Sequence[object], b: Sequence[object]) -> float | None:
    """Cohen's kappa between two judges' labels on the same items: (po - pe) / (1 - pe), None if empty.

    When pe == 1 (both judges gave one and the same label to every item) kappa is 0/0; that case has
    po == 1 too, and we return 1.0: the judges agree on everything, which kappa's usual scale calls
    perfect. Counts stay integers until the last division, so pe == 1 is detected exactly.
    """
    if len(a) != len(b):
        raise ValueError(f"Cohen's kappa: {len(a)} labels from the first judge but {len(b)} from the second")
    n = len(a)
    if n == 0:
        return None
    agree = sum(x == y for x, y in zip(a, b))
    count_a, count_b = Counter(a), Counter(b)
    # po = agree / n, pe = chance / n^2; kappa = (n * agree - chance) / (n^2 - chance)
    chance = sum(c * count_b[label] for label, c in count_a.items())
    if chance == n * n:
        return 1.0
    return (n * agree - chance) / (n * n - chance)
