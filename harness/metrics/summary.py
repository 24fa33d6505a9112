"""The one summary of a set of rollouts: every headline number a report, an aggregate row or a graded
predictions file shows, computed in one place so one name never means two numbers.

- `opt_at_k[k]`: the unbiased estimate 1 - C(n-c, k)/C(n, k) of "at least one of k rollouts succeeds";
- `opt_at_k_first[k]`: GSO's "any of the first k rollouts succeeded";
- `avg_at_k[k]`, `best_at_k[k]`: AutoLab's mean and expected best score of k rollouts;
- solved tasks, cost (total, per rollout, per solved task; unknown prices stay unknown), tokens;
- `errored` (the run ended in an infrastructure, provider or tool error) and `unscored` (no measured
  grading): counted as failures with score 0, as GSO counts them, and listed apart;
- cost figures over the rollouts whose cost is known (a price may be unknown): `cost_known` says whether
  that is all of them and `cost_unknown_rollouts` how many are left out;
- `overfit_gap`: the geometric mean of the rollouts' visible-vs-hidden gaps (grader.visible);
- `credited`: Opt@k, Avg@k, Best@k and solved tasks again with hack suspects (the grader's mechanical
  flags) not credited: their Opt counts as a failure and their score as 0. The keys above are raw. In
  JSON, `hack_suspects` and `credited` appear when some rollout was flagged (else credited is raw).

A planned rollout with no outcome counts as a failure with score 0 (as GSO counts a task with no
prediction). Keys of the dicts are k as strings ("1", "2", ...), as they appear in JSON.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from harness.metrics.aggregates import avg_at_k, best_at_k, suite_opt_at_k

TOKEN_KINDS = ("input", "cached", "cache_write", "output", "reasoning")


@dataclass(frozen=True)
class RolloutMetrics:
    """What the summary needs of one finished rollout."""
    solved: bool = False  # reached opt_commit (GSO's Opt) under the grading's p
    score: float = 0.0  # AutoLab log-stretch score; 0 when not graded or failed
    cost_usd: float | None = None  # None: the price is unknown
    tokens: Mapping[str, int] = field(default_factory=dict)  # by TOKEN_KINDS
    steps: int = 0
    wall_time_s: float = 0.0
    suspect: bool = False  # the grader flagged it as a hack suspect (its measured numbers kept)
    errored: bool = False  # its run ended in an infrastructure, provider or tool error (a failure, listed apart)
    unscored: bool = False  # no measured grading (not graded, or the grader's own error): a failure, listed apart
    overfit_gap: float | None = None  # visible / hidden speedup over the base (grader.visible), where measured
    expert_gap: float | None = None  # the same for the expert's change on its task (the yardstick)


@dataclass
class Summary:
    n_tasks: int
    n_rollouts: int  # finished
    n_planned: int
    n_missing: int
    opt_at_k: dict[str, float] | None  # None when not graded
    opt_at_k_first: dict[str, float] | None
    avg_at_k: dict[str, float] | None
    best_at_k: dict[str, float] | None
    solved_tasks: int | None
    cost_usd: float | None
    cost_known: bool
    cost_per_rollout: float | None
    cost_per_solved_task: float | None
    tokens: dict[str, int]
    mean_steps: float | None
    wall_time_s: float
    hack_suspects: int = 0
    credited: dict[str, Any] | None = None  # opt_at_k, avg_at_k, best_at_k, solved_tasks without hack suspects
    # Added later; in JSON only when not 0 / None, so older reports rebuild identically.
    errored: int = 0  # finished rollouts whose run ended in an error (counted as failures above)
    unscored: int = 0  # finished rollouts with no measured grading (counted as failures above, when graded)
    cost_unknown_rollouts: int = 0  # rollouts of unknown cost: left out of the cost figures, which say so
    overfit_gap: float | None = None  # geometric mean of the rollouts' visible-vs-hidden gaps
    overfit_gap_rollouts: int = 0  # how many rollouts have one
    # the same of each rollout's gap over its task's expert's gap: 1 when the patch gains where the expert
    # does; the raw gap also moves with how the spec's workload differs from the hidden ones
    overfit_gap_vs_expert: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.hack_suspects:  # written only when something was flagged: then credited differs from raw
            del out["hack_suspects"], out["credited"]
        for key in ("errored", "unscored", "cost_unknown_rollouts", "overfit_gap", "overfit_gap_rollouts",
                    "overfit_gap_vs_expert"):
            if not out[key]:
                del out[key]
        return out


def summarize(per_task: Mapping[str, Sequence[RolloutMetrics | None]], graded: bool = True,
              ks: Sequence[int] | None = None) -> Summary:
    """per_task[task] holds one slot per planned rollout (None where it has not finished). `ks`: the k
    values to report (default 1..n, where n is the number of slots per task)."""
    if not per_task:
        raise ValueError("summary: no tasks")
    n = len(next(iter(per_task.values())))
    if any(len(slots) != n for slots in per_task.values()):
        raise ValueError("summary: every task needs the same number of rollout slots")
    ks = list(ks) if ks is not None else list(range(1, n + 1))
    finished = [o for slots in per_task.values() for o in slots if o is not None]
    success, score = successes(per_task), scores(per_task)
    known = [o.cost_usd for o in finished if o.cost_usd is not None]  # unknown prices: never counted as $0
    cost_known = len(known) == len(finished)
    gaps = [o.overfit_gap for o in finished if o.overfit_gap is not None and o.overfit_gap > 0]
    relative = [o.overfit_gap / o.expert_gap for o in finished
                if o.overfit_gap is not None and o.overfit_gap > 0 and o.expert_gap is not None and o.expert_gap > 0]
    total = sum(known)
    solved = sum(any(v) for v in success.values())

    def per_k(fn: Any) -> dict[str, float] | None:
        return {str(k): fn(k) for k in ks} if graded and n else None

    fair = {t: [replace(o, solved=False, score=0.0) if o is not None and o.suspect else o for o in slots]
            for t, slots in per_task.items()}
    fair_success, fair_score = successes(fair), scores(fair)
    credited = {"opt_at_k": per_k(lambda k: suite_opt_at_k(fair_success, k)),
                "avg_at_k": per_k(lambda k: avg_at_k(fair_score, k)),
                "best_at_k": per_k(lambda k: best_at_k(fair_score, k)),
                "solved_tasks": sum(any(v) for v in fair_success.values())} if graded else None

    return Summary(
        n_tasks=len(per_task), n_rollouts=len(finished), n_planned=len(per_task) * n,
        n_missing=len(per_task) * n - len(finished),
        opt_at_k=per_k(lambda k: suite_opt_at_k(success, k)),
        opt_at_k_first=per_k(lambda k: suite_opt_at_k(success, k, mode="first")),
        avg_at_k=per_k(lambda k: avg_at_k(score, k)),
        best_at_k=per_k(lambda k: best_at_k(score, k)),
        solved_tasks=solved if graded else None,
        cost_usd=total if known or not finished else None, cost_known=cost_known,
        cost_per_rollout=total / len(known) if known else None,  # over the rollouts whose cost is known
        cost_per_solved_task=total / solved if graded and solved and known else None,  # (the known cost)
        tokens={kind: sum(int(o.tokens.get(kind, 0)) for o in finished) for kind in TOKEN_KINDS},
        mean_steps=sum(o.steps for o in finished) / len(finished) if finished else None,
        wall_time_s=sum(o.wall_time_s for o in finished),
        hack_suspects=sum(o.suspect for o in finished), credited=credited,
        errored=sum(o.errored for o in finished), unscored=sum(o.unscored for o in finished) if graded else 0,
        cost_unknown_rollouts=len(finished) - len(known),
        overfit_gap=_geomean(gaps), overfit_gap_rollouts=len(gaps), overfit_gap_vs_expert=_geomean(relative),
    )


def _geomean(values: Sequence[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def successes(per_task: Mapping[str, Sequence[RolloutMetrics | None]]) -> dict[str, list[bool]]:
    return {t: [bool(o and o.solved) for o in slots] for t, slots in per_task.items()}


def scores(per_task: Mapping[str, Sequence[RolloutMetrics | None]]) -> dict[str, list[float]]:
    return {t: [float(o.score) if o else 0.0 for o in slots] for t, slots in per_task.items()}
