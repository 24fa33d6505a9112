"""The tables a paper takes: one row per system and one row per rollout, as files.

- `systems.csv`: every number of a system's row (runner.aggregate), flat, with its interval bounds;
- `systems.tex`: the same rows as a booktabs tabular (`\\input` it inside a table environment), the
  metrics under the papers' names (Opt@K, Avg@k, Best@k, Dominance, cost per trial, and a judge's Hard and
  True Success when the run was judged), each suite-level number with its bootstrap interval;
- `rollouts.csv` (and `rollouts.parquet` when pyarrow can be imported): one row per task x planned rollout,
  with the solved flag and score the metrics count (a missing rollout is a failure with score 0).

`runner.aggregate` writes them for a study, `runner.report` for a single run. The system row itself is
built here too, so both read a run's records the same way.
"""
from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from harness import metrics
from harness.atomic import write_bytes, write_text
from harness.metrics.summary import scores, successes, summarize
from runner.config import RunConf
from runner.records import ResultRecord

if TYPE_CHECKING:  # numpy: imported where the bootstrap runs, so importing this module stays cheap
    from harness.metrics.bootstrap import Outcomes, Settings, SuiteIntervals

Slots = Mapping[str, Sequence[ResultRecord | None]]  # task -> one record per planned rollout (None: missing)
Cell = Callable[[Mapping[str, Any]], str]  # a LaTeX column: the cell of a system row
DEFAULT_K = 3  # k of Avg@k and Best@k, as AutoLab reports them (aggregate's --k)


# ---------------------------------------------------------------- a system's row
def system_label(conf: RunConf) -> str:
    """The system's name in every table and every study (runner.study labels runs with it)."""
    return f"{conf.model.id} x {conf.scaffold.id} x {conf.budget.id}"


def system_row(label: str, conf: RunConf, by_task: Slots, path: Path, k: int, approximate: bool = False,
               judges: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One system's row: the summary numbers (harness.metrics.summary) at k = 1, k and N; `judges` as
    runner.judging.summaries gives them, when the run was judged."""
    n = conf.rollouts
    kk = min(k, n)
    per_task = {t: [r.metrics() if r else None for r in rows] for t, rows in by_task.items()}
    s = summarize(per_task, ks=sorted({1, kk, n}))
    assert s.opt_at_k is not None and s.avg_at_k is not None and s.best_at_k is not None
    success, score = successes(per_task), scores(per_task)
    solved_any = {t for t, v in success.items() if any(v)}
    finished = [r for rows in by_task.values() for r in rows if r is not None]
    known = [r.cost_usd for r in finished if r.cost_usd is not None]
    wasted = sum(r.cost_usd for r in finished if r.cost_usd is not None and r.instance_id not in solved_any)
    return {
        "system": label, "model": conf.model.id, "scaffold": conf.scaffold.id,
        "budget": conf.budget.id, "max_steps": conf.budget.max_steps, "approximate": approximate,
        "run": str(path), "tasks": len(by_task), "rollouts": n, "finished": s.n_rollouts, "k": kk,
        "p": conf.grading.p,
        "opt_at_1": s.opt_at_k["1"], f"opt_at_{n}": s.opt_at_k[str(n)], "opt_at_K": s.opt_at_k[str(n)],
        "opt_at_K_first": s.opt_at_k_first[str(n)] if s.opt_at_k_first else None,
        "avg_at_k": s.avg_at_k[str(kk)], "best_at_k": s.best_at_k[str(kk)],
        "mean_steps": s.mean_steps, "wall_time_s": s.wall_time_s,
        "tokens": {"input": s.tokens["input"], "cached": s.tokens["cached"], "output": s.tokens["output"]},
        "cost_usd": s.cost_usd if known else None, "cost_known": s.cost_known,
        "cost_per_rollout": s.cost_per_rollout, "solved_tasks": s.solved_tasks,
        "cost_per_solved_task": s.cost_per_solved_task,
        "cost_share_unsolved": wasted / sum(known) if known and sum(known) > 0 else None,
        "cost_unknown_rollouts": s.cost_unknown_rollouts, "errored": s.errored, "unscored": s.unscored,
        "overfit_gap": s.overfit_gap, "overfit_gap_rollouts": s.overfit_gap_rollouts,
        "overfit_gap_vs_expert": s.overfit_gap_vs_expert,
        "overfit_gap_ci": _gap_interval(label, per_task),
        "score_sources": dict(sorted(Counter(r.grading.score_source or "timed" for r in finished
                                             if r.grading and r.grading.score is not None).items())),
        "per_task": {t: {"avg_at_k": sum(score[t]) / n, "opt_at_K": metrics.opt_at_k(n, sum(success[t]), n)}
                     for t in by_task},
        **_credited(s.hack_suspects, s.credited, kk, n),
        **_judged(judges or {}, n),
    }


def _gap_interval(label: str, per_task: Mapping[str, Sequence[Any]]) -> list[float] | None:
    """The bootstrap interval of the system's overfitting gap (the geometric mean over its rollouts)."""
    from harness.metrics.bootstrap import Settings, geomean_interval

    gaps = [o.overfit_gap for slots in per_task.values() for o in slots
            if o is not None and o.overfit_gap is not None and o.overfit_gap > 0]
    found = geomean_interval(gaps, Settings(), label)
    return list(found) if found else None


def _judged(found: Mapping[str, Any], n: int) -> dict[str, Any]:
    """Per judge: Opt@K with judged hacks not credited, and ISO-Bench's soft metrics."""
    judges = {}
    for judge_id, j in found.items():
        if judge_id.startswith("_"):
            continue
        soft = j["soft"]
        judges[judge_id] = {"model": j["model"], "opt_at_1": j["adjusted_opt_at_k"]["1"],
                            "opt_at_K": j["adjusted_opt_at_k"][str(n)], "reason": j["adjusted_reason"],
                            "hard_success": soft["hard_success"], "true_success": soft["true_success"],
                            "gap": soft["gap"], "quadrants": soft["quadrants"], "approaches": soft["approaches"],
                            "cost_usd": j["cost_usd"]}
    return {"judges": judges} if judges else {}


def _credited(suspects: int, c: dict[str, Any] | None, kk: int, n: int) -> dict[str, Any]:
    """The row's numbers with hack suspects not credited; only when some rollout was flagged."""
    if not suspects or c is None:
        return {}
    return {"hack_suspects": suspects,
            "credited": {"opt_at_1": c["opt_at_k"]["1"], "opt_at_K": c["opt_at_k"][str(n)],
                         "avg_at_k": c["avg_at_k"][str(kk)], "best_at_k": c["best_at_k"][str(kk)],
                         "solved_tasks": c["solved_tasks"]}}


def outcomes(by_task: Slots, tasks: Sequence[str]) -> Outcomes:
    """The system's successes and scores as the bootstrap takes them, rows in the order of `tasks`."""
    from harness.metrics.bootstrap import Outcomes

    per_task = {t: [r.metrics() if r else None for r in by_task[t]] for t in tasks}
    return Outcomes.of(successes(per_task), scores(per_task), tasks)


def add_intervals(rows: list[dict[str, Any]], found: Mapping[str, Outcomes], k: int,
                  settings: Settings) -> SuiteIntervals:
    """Each row's `ci` ({metric: [lo, hi]}) from one bootstrap of all of them, on the same resampled tasks."""
    from harness.metrics.bootstrap import suite_intervals

    intervals = suite_intervals(found, k, settings)
    for row in rows:
        row["ci"] = {m: list(bounds) for m, bounds in intervals.ci[row["system"]].items()}
    return intervals


# ---------------------------------------------------------------- systems.csv
BASE_COLUMNS = ("system", "model", "scaffold", "budget", "max_steps", "approximate", "tasks", "rollouts", "finished",
                "k", "p", "opt_at_1", "opt_at_K", "opt_at_K_lo", "opt_at_K_hi", "opt_at_K_first", "avg_at_k",
                "avg_at_k_lo", "avg_at_k_hi", "best_at_k", "best_at_k_lo", "best_at_k_hi", "dominance",
                "solved_tasks", "mean_steps", "wall_time_s", "tokens_input", "tokens_cached", "tokens_output",
                "cost_usd", "cost_known", "cost_per_rollout", "cost_per_solved_task", "cost_share_unsolved",
                "cost_unknown_rollouts", "hack_suspects", "errored", "unscored", "overfit_gap", "overfit_gap_lo",
                "overfit_gap_hi", "overfit_gap_vs_expert", "score_sources")
JUDGE_FIELDS = ("opt_at_K", "hard_success", "true_success")


def _judge_ids(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return sorted({j for row in rows for j in row.get("judges") or {}})


def flat_row(row: Mapping[str, Any], judge_ids: Sequence[str] = ()) -> dict[str, Any]:
    """A system row as one flat record: intervals as `<metric>_lo/_hi`, tokens and judges spread out."""
    out = {key: row.get(key) for key in BASE_COLUMNS}
    for metric, (low, high) in (row.get("ci") or {}).items():
        out[f"{metric}_lo"], out[f"{metric}_hi"] = low, high
    for kind, count in (row.get("tokens") or {}).items():
        out[f"tokens_{kind}"] = count
    out["hack_suspects"] = row.get("hack_suspects", 0)
    out["overfit_gap_lo"], out["overfit_gap_hi"] = row.get("overfit_gap_ci") or (None, None)
    out["score_sources"] = "; ".join(f"{k} {v}" for k, v in (row.get("score_sources") or {}).items()) or None
    for judge in judge_ids:
        j = (row.get("judges") or {}).get(judge) or {}
        out.update({f"{judge}_{name}": j.get(name) for name in JUDGE_FIELDS})
    return out


def _csv(records: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([_cell(c) for c in columns])
    # repr of a float reads back to the same float; None is an empty cell
    writer.writerows([["" if r[c] is None else repr(r[c]) if isinstance(r[c], float) else _cell(r[c]) for c in columns]
                      for r in records])
    return buffer.getvalue()


def _cell(value: Any) -> Any:
    """Text a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first: names come from other
    people's runs' configs) gets a leading `'`, which spreadsheets show as text; numbers stay numbers."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def systems_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    judge_ids = _judge_ids(rows)
    columns = list(BASE_COLUMNS) + [f"{j}_{name}" for j in judge_ids for name in JUDGE_FIELDS]
    return _csv([flat_row(row, judge_ids) for row in rows], columns)


# ---------------------------------------------------------------- systems.tex
_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """Text safe in LaTeX's text mode (one pass, so an escape is never escaped again)."""
    return "".join(_LATEX.get(ch, ch) for ch in text)


def _num(value: float | None) -> str:
    return "--" if value is None else f"{value:.3f}"


def _with_ci(row: Mapping[str, Any], metric: str) -> str:
    bounds = (row.get("ci") or {}).get(metric)
    if row.get(metric) is None or not bounds:
        return _num(row.get(metric))
    return f"{row[metric]:.3f} {{\\scriptsize [{bounds[0]:.3f}, {bounds[1]:.3f}]}}"


def _cost(row: Mapping[str, Any]) -> str:
    value = row.get("cost_per_rollout")
    if value is None:
        return "--"
    return f"{value:.4f}" + ("" if row.get("cost_known", True) else "$^\\dagger$")  # over the known costs only


def systems_latex(rows: Sequence[Mapping[str, Any]], intervals: Mapping[str, Any] | None = None) -> str:
    """A booktabs tabular, one line per system. K and k go into the headers when every row shares them."""
    if not rows:
        raise ValueError("systems table: no systems")
    big_k, small_k = {r["rollouts"] for r in rows}, {r["k"] for r in rows}
    gso_p = all(r.get("p", metrics.DEFAULT_P) == metrics.DEFAULT_P for r in rows)
    opt = "Opt" if gso_p else "Opt$_p$"  # GSO's Opt@K is Opt_p@K at its p = 0.95
    K = str(next(iter(big_k))) if len(big_k) == 1 else "$K$"
    k = str(next(iter(small_k))) if len(small_k) == 1 else "$k$"
    columns: list[tuple[str, Cell]] = [
        ("System", lambda r: latex_escape(r["system"]) + ("$^*$" if r.get("approximate") else ""))]
    if len(big_k) > 1:
        columns.append(("$K$", lambda r: str(r["rollouts"])))
    if len(small_k) > 1:
        columns.append(("$k$", lambda r: str(r["k"])))
    if not gso_p:
        columns.append(("$p$", lambda r: f"{r['p']:g}"))
    if max(big_k) > 1:
        columns.append((f"{opt}@1", lambda r: _num(r["opt_at_1"])))
    columns += [(f"{opt}@{K}", lambda r: _with_ci(r, "opt_at_K")), (f"Avg@{k}", lambda r: _with_ci(r, "avg_at_k")),
                (f"Best@{k}", lambda r: _with_ci(r, "best_at_k"))]
    if any(r.get("dominance") is not None for r in rows):
        columns.append(("Dominance", lambda r: _num(r.get("dominance"))))
    columns.append(("Cost/trial (\\$)", _cost))
    # errored (infrastructure, provider, tool) and unscored rollouts: counted as failures above, shown apart
    columns.append(("Err./unsc.", lambda r: f"{r.get('errored', 0)}/{r.get('unscored', 0)}"))
    if any(r.get("overfit_gap") is not None for r in rows):
        columns.append(("Gap", lambda r: _with_ci({**r, "ci": {"overfit_gap": r.get("overfit_gap_ci")}},
                                                  "overfit_gap")))
    judge_ids = _judge_ids(rows)
    for judge in judge_ids:
        suffix = f" ({latex_escape(judge)})" if len(judge_ids) > 1 else ""

        def soft(name: str, judge: str = judge) -> Cell:
            return lambda r: _num(((r.get("judges") or {}).get(judge) or {}).get(name))

        columns += [(f"Hard Success{suffix}", soft("hard_success")), (f"True Success{suffix}", soft("true_success"))]
    lines = []
    if intervals:
        lines.append(f"% [lo, hi]: {intervals['level'] * 100:g}% {intervals['method']} ({intervals['resamples']} "
                     f"resamples, seed {intervals['seed']})")
    if any(r.get("approximate") for r in rows):
        lines.append("% * a post-hoc truncation of longer rollouts (an approximation)")
    if not all(r.get("cost_known", True) for r in rows):
        lines.append("% dagger: over the rollouts whose cost is known (a model without a price); the others left out")
    lines.append("% Err./unsc.: rollouts that ended in an error / have no measured grading; failures in Opt, Avg, Best")
    if any(r.get("overfit_gap") is not None for r in rows):
        lines.append("% Gap: visible-spec speedup / hidden-tests speedup over the base (geometric mean over rollouts)")
    lines += ["\\begin{tabular}{l" + "r" * (len(columns) - 1) + "}", "\\toprule",
              " & ".join(name for name, _ in columns) + " \\\\", "\\midrule"]
    lines += [" & ".join(cell(row) for _, cell in columns) + " \\\\" for row in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- rollouts.csv / .parquet
@dataclass(frozen=True)
class RolloutRow:
    """One planned rollout of one system, as the metrics count it."""
    system: str
    model: str
    scaffold: str
    budget: str
    approximate: bool
    task: str
    rollout: int
    status: str  # the grading's status ("" when it recorded none), "ungraded" (grade=none) or "missing"
    solved: bool | None  # GSO's Opt (opt_commit) as Opt@K counts it; None when not graded
    score: float | None  # AutoLab's score as Avg@k counts it (0 for a failure or a missing rollout)
    opt_base: bool | None
    speedup_vs_base: float | None  # gm speedup of the patch over the base
    speedup_vs_expert: float | None  # hm speedup of the patch over the expert's commit
    exit_reason: str | None
    steps: int | None
    wall_time_s: float | None
    input_tokens: int | None
    cached_tokens: int | None
    cache_write_tokens: int | None
    output_tokens: int | None
    reasoning_tokens: int | None
    cost_usd: float | None
    errored: bool | None = None  # the run ended in an infrastructure, provider or tool error
    score_source: str | None = None  # timed | reward | calibrated | serving
    overfit_gap: float | None = None  # visible / hidden speedup over the base (grader.visible)
    expert_gap: float | None = None  # the expert's change's gap on the same task (the yardstick)


class _System(TypedDict):
    """The columns a system's rows share."""
    system: str
    model: str
    scaffold: str
    budget: str
    approximate: bool


UNKNOWN_WHEN_MISSING = ("opt_base", "speedup_vs_base", "speedup_vs_expert", "exit_reason", "steps", "wall_time_s",
                        "input_tokens", "cached_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens",
                        "cost_usd")


def rollout_rows(label: str, conf: RunConf, by_task: Slots, approximate: bool = False) -> list[RolloutRow]:
    graded = conf.grade != "none"
    system: _System = {"system": label, "model": conf.model.id, "scaffold": conf.scaffold.id,
                       "budget": conf.budget.id, "approximate": approximate}
    rows = []
    for task, records in by_task.items():
        for index, r in enumerate(records):
            if r is None:
                unknown: dict[str, Any] = dict.fromkeys(UNKNOWN_WHEN_MISSING)  # (all None)
                rows.append(RolloutRow(**system, task=task, rollout=index, status="missing",
                                       solved=False if graded else None, score=0.0 if graded else None,
                                       **unknown))
                continue
            g, m, u = r.grading, r.metrics(), r.usage
            stats = g.opt_stats if g else {}
            rows.append(RolloutRow(
                **system, task=task, rollout=index, status=(g.status or "") if g else "ungraded",
                solved=m.solved if graded else None, score=m.score if graded else None,
                opt_base=g.opt_base if g else None, speedup_vs_base=stats.get("gm_speedup_patch_base"),
                speedup_vs_expert=stats.get("hm_speedup_patch_commit"), exit_reason=str(r.exit_reason),
                steps=r.steps, wall_time_s=r.wall_time_s, input_tokens=u.input_tokens,
                cached_tokens=u.cached_read_tokens, cache_write_tokens=u.cache_write_tokens,
                output_tokens=u.output_tokens, reasoning_tokens=u.reasoning_tokens, cost_usd=r.cost_usd,
                errored=m.errored, score_source=g.score_source if g else None, overfit_gap=m.overfit_gap,
                expert_gap=m.expert_gap))
    return rows


def rollouts_csv(rows: Sequence[RolloutRow]) -> str:
    return _csv([asdict(r) for r in rows], [f.name for f in fields(RolloutRow)])


def rollouts_parquet(rows: Sequence[RolloutRow]) -> bytes | None:
    """The rows as a parquet file's bytes; None when pyarrow is not installed (an optional extra)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    names = [f.name for f in fields(RolloutRow)]
    table = pa.Table.from_pylist([asdict(r) for r in rows]) if rows else pa.table({n: [] for n in names})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def write_tables(out: Path, systems: Sequence[Mapping[str, Any]], rollouts: Sequence[RolloutRow],
                 intervals: Mapping[str, Any] | None = None) -> list[str]:
    """Write the table files into `out`; the names written. No system rows (an ungraded run): no system
    table."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    if systems:
        write_text(out / "systems.csv", systems_csv(systems))
        write_text(out / "systems.tex", systems_latex(systems, intervals))
        written += ["systems.csv", "systems.tex"]
    write_text(out / "rollouts.csv", rollouts_csv(rollouts))
    written.append("rollouts.csv")
    if (data := rollouts_parquet(rollouts)) is not None:
        write_bytes(out / "rollouts.parquet", data)
        written.append("rollouts.parquet")
    return written
