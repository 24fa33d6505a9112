"""The run's typed records, as they are stored on disk:

- `RolloutRecord`  rollouts/<task>/<i>.json: one finished rollout (ids, system, exit, usage, cost, patch);
- `GradingSummary` the `grading` block of a results.jsonl line: the verdict of its grading report;
- `ResultRecord`   one results.jsonl line: the rollout, its grading summary and its score.

`to_dict` writes exactly the JSON earlier versions wrote (same keys, same order); `from_dict` reads
them back, filling defaults for keys an older record lacks and keeping keys it does not know in
`extra`, so records round-trip. Only the run store reads and writes them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.grader.config import MEASURED
from harness.metrics.summary import RolloutMetrics, Summary
from harness.models.records import Usage
from scaffolds.exits import ExitReason

R = TypeVar("R", bound="_Record")
# Rollouts whose run ended in an error of the infrastructure, the provider or the tool (not the agent's own
# end): the summary counts them as failures, as GSO does, and lists them apart (`errored`).
ERRORED = frozenset({ExitReason.INFRA_ERROR, ExitReason.PROVIDER_ERROR, ExitReason.MODEL_ERROR, ExitReason.ERROR})


@dataclass
class _Record:
    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)  # keys this version does not know

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        return cls(**cls._convert(known), extra={k: v for k, v in data.items() if k not in names})

    @classmethod
    def _convert(cls, known: dict[str, Any]) -> dict[str, Any]:
        return known

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {**out, **self.extra}


@dataclass
class System(_Record):
    model: str = ""
    scaffold: str = ""
    budget: str = ""

    def label(self) -> str:
        return f"{self.model} x {self.scaffold} x {self.budget}"


@dataclass
class RolloutRecord(_Record):
    instance_id: str
    rollout: int
    system: System = field(default_factory=System)
    model_name: str = ""
    exit_reason: ExitReason = ExitReason.ERROR
    exit_message: str = ""
    steps: int = 0
    wall_time_s: float = 0.0
    started_at: float = 0.0
    finished_at: float = 0.0
    attempts: int = 1
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None  # None: a price was unknown
    patch: str = ""
    patch_sha256: str | None = None
    trajectory: str | None = None  # run-relative path of its trajectory file
    infra_errors: list[str] = field(default_factory=list)
    # Added later; written only when set, so older records read back as the same JSON.
    actions: int = 0  # actions executed (steps counts model calls)
    details: dict[str, Any] = field(default_factory=dict)  # the scaffold's: mode, condensations, patch_source
    attempt_usage: list[Usage] = field(default_factory=list)  # per attempt when retried; `usage` is their sum
    attempt_trajectories: list[str] = field(default_factory=list)  # run-relative paths: the discarded attempts'

    OPTIONAL = ("actions", "details", "attempt_usage", "attempt_trajectories")

    @classmethod
    def _convert(cls, known: dict[str, Any]) -> dict[str, Any]:
        out = dict(known)
        out["rollout"] = int(out["rollout"])
        if isinstance(out.get("system"), dict):
            out["system"] = System.from_dict(out["system"])
        if "exit_reason" in out:
            out["exit_reason"] = ExitReason(out["exit_reason"])
        out["attempt_usage"] = [_usage(u) for u in out.get("attempt_usage") or []]
        if isinstance(out.get("usage"), dict):
            out["usage"] = _usage(out["usage"])
        return out

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["system"] = self.system.to_dict()
        out["usage"] = self.usage.to_dict()
        out["exit_reason"] = str(self.exit_reason)
        out["attempt_usage"] = [u.to_dict() for u in self.attempt_usage]
        for key in self.OPTIONAL:
            if not out[key]:
                del out[key]
        return out

    @property
    def key(self) -> tuple[str, int]:
        return self.instance_id, self.rollout


def _usage(data: dict[str, Any] | Usage) -> Usage:
    if isinstance(data, Usage):
        return data
    return Usage(**{k: v for k, v in data.items() if k in {f.name for f in dataclasses.fields(Usage)}})


GRADING_KEYS = ("status", "reason", "opt_base", "opt_commit", "score", "uncertain", "wall_time_s", "timing_mode",
                "rounds", "stat", "p")


@dataclass
class GradingSummary(_Record):
    status: str | None = None
    reason: str | None = None
    opt_base: bool | None = None
    opt_commit: bool | None = None
    score: float | None = None
    uncertain: dict[str, bool] | None = None
    wall_time_s: float | None = None
    timing_mode: str | None = None
    rounds: int | None = None
    stat: str | None = None
    p: float | None = None
    opt_stats: dict[str, float] = field(default_factory=dict)  # GSO's speedups (per-test lists left out)
    report: str = ""  # run-relative path of the full grading report
    reused_from: int | None = None  # the rollout whose identical patch's grading this shares
    hack_reasons: list[str] | None = None  # why the grader flagged it (status hack_suspect; grader.guards)
    # Added later, written only when set: where the score came from (timed: the log-stretch of the timed
    # speedups; reward: the task's own; calibrated; serving) and the visible-vs-hidden gap (grader.visible)
    score_source: str | None = None
    overfit_gap: float | None = None
    expert_gap: float | None = None  # the expert's change's gap on the same task: the yardstick

    @classmethod
    def from_report(cls, report: dict[str, Any], path: str) -> "GradingSummary":
        hack = report.get("hack") or {}
        graded: dict[str, Any] = {k: report.get(k) for k in GRADING_KEYS}
        source = report.get("score_source") or ("timed" if report.get("opt_stats") else None)
        return cls(**graded,
                   opt_stats={k: v for k, v in (report.get("opt_stats") or {}).items() if k != "per_test_speedups"},
                   report=path, reused_from=report.get("reused_from"),
                   hack_reasons=list(hack["reasons"]) if hack.get("suspect") else None,
                   score_source=source, overfit_gap=(report.get("visible_spec") or {}).get("overfit_gap"),
                   expert_gap=(report.get("visible_spec") or {}).get("expert_gap"))

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        for key in ("reused_from", "hack_reasons", "score_source", "overfit_gap", "expert_gap"):
            if out[key] is None:
                del out[key]  # written only when it applies, as before
        return out

    @property
    def solved(self) -> bool:
        """GSO's Opt (opt_commit), raw: a passed grading or a hack suspect's measured one."""
        return bool(self.opt_commit) and self.status in (*MEASURED, None)


@dataclass
class ResultRecord(RolloutRecord):
    grading: GradingSummary | None = None  # None: not graded (grade=none)
    score: float | None = None

    @classmethod
    def graded(cls, rollout: RolloutRecord, report: dict[str, Any] | None, report_path: str = "") -> "ResultRecord":
        """The results.jsonl record of a rollout and (unless grade=none) its grading report."""
        base = {f.name: getattr(rollout, f.name) for f in dataclasses.fields(RolloutRecord)}
        if report is None:
            return cls(**base, grading=None, score=None)
        return cls(**base, grading=GradingSummary.from_report(report, report_path),
                   score=float(report.get("score") or 0.0))

    @classmethod
    def _convert(cls, known: dict[str, Any]) -> dict[str, Any]:
        out = super()._convert(known)
        if isinstance(out.get("grading"), dict):
            out["grading"] = GradingSummary.from_dict(out["grading"])
        return out

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["grading"] = self.grading.to_dict() if self.grading else None
        # grading and score come last, after any unknown keys of the rollout, as earlier versions wrote them
        out["grading"] = out.pop("grading")
        out["score"] = out.pop("score")
        return out

    def rollout_record(self) -> RolloutRecord:
        return RolloutRecord(**{f.name: getattr(self, f.name) for f in dataclasses.fields(RolloutRecord)})

    def metrics(self) -> RolloutMetrics:
        """What the summary (harness.metrics.summary) needs of this rollout."""
        u = self.usage
        grading = self.grading
        return RolloutMetrics(solved=bool(grading and grading.solved), score=float(self.score or 0.0),
                              suspect=bool(grading and grading.status == "hack_suspect"),
                              errored=self.exit_reason in ERRORED,
                              unscored=grading is None or grading.status in (None, "error"),
                              overfit_gap=grading.overfit_gap if grading else None,
                              expert_gap=grading.expert_gap if grading else None,
                              cost_usd=self.cost_usd, steps=self.steps, wall_time_s=self.wall_time_s,
                              tokens={"input": u.input_tokens, "cached": u.cached_read_tokens,
                                      "cache_write": u.cache_write_tokens, "output": u.output_tokens,
                                      "reasoning": u.reasoning_tokens})


@dataclass
class RunSummary:
    """report.json's `summary`: the run's system, the summary numbers (harness.metrics.summary) and counts
    of exit reasons and grading statuses."""
    system: dict[str, Any]  # model, model_name, scaffold, scaffold_options, budget
    graded: bool
    numbers: Summary
    exit_reasons: dict[str, int]
    statuses: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        numbers = self.numbers.to_dict()
        head = {k: numbers.pop(k) for k in ("n_tasks", "n_rollouts", "n_planned", "n_missing")}
        return {"system": self.system, **head, "graded": self.graded, **numbers,
                "exit_reasons": self.exit_reasons, "statuses": self.statuses}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunSummary":
        names = {f.name for f in dataclasses.fields(Summary)}
        return cls(system=data["system"], graded=data["graded"],
                   numbers=Summary(**{k: v for k, v in data.items() if k in names}),
                   exit_reasons=data.get("exit_reasons", {}), statuses=data.get("statuses", {}))
