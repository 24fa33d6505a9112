"""`python -m runner.aggregate DIR ... [--out OUT] [--k 3] [--truncate-steps 25,50,100]`

Reads run directories from disk (a sweep folder, run folders, or any folder holding them), never from
Hydra's in-memory state: a sweep whose job failed still aggregates. Writes `aggregate.json`
(with each run's provenance under `runs`), `aggregate.md` (one line when the runs came from different tool
revisions or machines) and PNG plots into OUT (default: `<first DIR>/aggregate`).

One row per system (model x scaffold x budget; the scaffold id names its prompt variant). Runs over
different task sets, ungraded runs, or two runs of the same system are refused with one line: numbers
from different experiments are never averaged together silently.

`--truncate-steps S,...` grades each rollout as it stood after S steps (from the diff snapshots stored
every `budget.snapshot_every` steps) and adds those as extra systems, labelled as an approximation: an
agent that knows its budget is smaller behaves differently.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness import metrics
from harness.atomic import write_json, write_text
from harness.metrics.summary import Summary, summarize
from harness.sandbox.interface import SandboxError
from runner import provenance
from runner.config import ConfigError
from runner.store import RunStore
from runner.study import Run, check_comparable, find_runs, load_run, scores_of, successes_of


def system_row(run: Run, k: int) -> dict[str, Any]:
    """One system's row: the summary numbers (harness.metrics.summary) at k = 1, k and N."""
    n = run.n
    kk = min(k, n)
    by_task = run.slots()
    s = summarize({t: [r.metrics() if r else None for r in rows] for t, rows in by_task.items()}, ks=sorted({1, kk, n}))
    assert s.opt_at_k is not None and s.avg_at_k is not None and s.best_at_k is not None
    success = successes_of(run)
    solved_any = {t for t, v in success.items() if any(v)}
    finished = [r for rows in by_task.values() for r in rows if r is not None]
    known = [r.cost_usd for r in finished if r.cost_usd is not None]
    wasted = sum(r.cost_usd for r in finished if r.cost_usd is not None and r.instance_id not in solved_any)
    scores = scores_of(run)
    return {
        "system": run.label, "model": run.conf.model.id, "scaffold": run.conf.scaffold.id,
        "budget": run.conf.budget.id, "max_steps": run.conf.budget.max_steps, "approximate": run.approximate,
        "run": str(run.path), "tasks": len(run.task_ids), "rollouts": n, "finished": s.n_rollouts, "k": kk,
        "opt_at_1": s.opt_at_k["1"], f"opt_at_{n}": s.opt_at_k[str(n)], "opt_at_K": s.opt_at_k[str(n)],
        "opt_at_K_first": s.opt_at_k_first[str(n)] if s.opt_at_k_first else None,
        "avg_at_k": s.avg_at_k[str(kk)], "best_at_k": s.best_at_k[str(kk)],
        "mean_steps": s.mean_steps, "wall_time_s": s.wall_time_s,
        "tokens": {"input": s.tokens["input"], "cached": s.tokens["cached"], "output": s.tokens["output"]},
        "cost_usd": s.cost_usd if known else None, "cost_known": s.cost_known,
        "cost_per_rollout": s.cost_per_rollout, "solved_tasks": s.solved_tasks,
        "cost_per_solved_task": s.cost_per_solved_task,
        "cost_share_unsolved": wasted / sum(known) if known and sum(known) > 0 else None,
        "per_task": {t: {"avg_at_k": sum(scores[t]) / n, "opt_at_K": metrics.opt_at_k(n, sum(success[t]), n)}
                     for t in run.task_ids},
        **_credited(s, kk, n),
        **_judged(run, n),
    }


def _judged(run: Run, n: int) -> dict[str, Any]:
    """Per judge of this run (runner.judging): Opt@K with judged hacks not credited, and ISO-Bench's
    soft metrics; only when the run was judged."""
    from runner.judging import summaries

    if run.approximate:
        return {}
    found = summaries(RunStore(run.path), run.slots(), sorted({1, n}))
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


def _credited(s: Summary, kk: int, n: int) -> dict[str, Any]:
    """The row's numbers with hack suspects not credited; only when some rollout was flagged."""
    if not s.hack_suspects or s.credited is None:
        return {}
    c = s.credited
    return {"hack_suspects": s.hack_suspects,
            "credited": {"opt_at_1": c["opt_at_k"]["1"], "opt_at_K": c["opt_at_k"][str(n)],
                         "avg_at_k": c["avg_at_k"][str(kk)], "best_at_k": c["best_at_k"][str(kk)],
                         "solved_tasks": c["solved_tasks"]}}


def aggregate(runs: list[Run], k: int = 3) -> dict[str, Any]:
    rows = [system_row(run, k) for run in runs]
    if len(rows) >= 2:
        dom = metrics.dominance({row["system"]: {t: v["avg_at_k"] for t, v in row["per_task"].items()}
                                 for row in rows})
    else:
        dom = {row["system"]: None for row in rows}
    for row in rows:
        row["dominance"] = dom[row["system"]]
    curves = {run.label: {"opt_p_at_1": [(p, metrics.suite_opt_at_k(successes_of(run, p), 1))
                                         for p in [i / 20 for i in range(21)]],
                          "opt_at_k": [(kk, metrics.suite_opt_at_k(successes_of(run), kk))
                                       for kk in range(1, run.n + 1)]}
              for run in runs}
    return {"k": k, "tasks": runs[0].task_ids, "systems": rows, "curves": curves, "runs": run_provenance(runs)}


def run_provenance(runs: list[Run]) -> list[dict[str, Any]]:
    """Each run's provenance (where it started, where its report was written); a truncation is its run's."""
    return [{"system": run.label, "path": str(run.path), "provenance": provenance.of_run(RunStore(run.path))}
            for run in runs if not run.approximate]


# ---------------------------------------------------------------- output
def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _usd(value: float | None, known: bool = True) -> str:
    return "unknown" if value is None else f"${value:.4f}" + ("" if known else "+?")


def render_markdown(result: dict[str, Any]) -> str:
    k = result["k"]
    lines = ["# Aggregate", "", f"{len(result['tasks'])} tasks: {', '.join(result['tasks'])}. "
             f"Avg@k and Best@k with k = {k} (or N when a system has fewer rollouts); Dominance over Avg@k.", ""]
    if mixed := provenance.mixed_line([run["provenance"] for run in result.get("runs") or []]):
        lines += [mixed, ""]
    if any(row["approximate"] for row in result["systems"]):
        lines += ["Rows marked * are post-hoc truncations of longer rollouts: an approximation, since an agent "
                  "that knows its budget is smaller behaves differently.", ""]
    lines += ["| system | tasks | rollouts | Opt@1 | Opt@K | Avg@k | Best@k | Dominance | mean steps | wall s | "
              "tokens in/cached/out | $/rollout | $/solved task | unsolved cost share |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["systems"]:
        tokens = row["tokens"]
        lines.append(
            f"| {row['system']}{' *' if row['approximate'] else ''} | {row['tasks']} | {row['rollouts']} | "
            f"{_f(row['opt_at_1'])} | {_f(row['opt_at_K'])} (K={row['rollouts']}) | {_f(row['avg_at_k'])} | "
            f"{_f(row['best_at_k'])} | {_f(row['dominance'])} | {_f(row['mean_steps'], 1)} | "
            f"{row['wall_time_s']:.0f} | {tokens['input']}/{tokens['cached']}/{tokens['output']} | "
            f"{_usd(row['cost_per_rollout'], row['cost_known'])} | "
            f"{_usd(row['cost_per_solved_task'], row['cost_known']) if row['solved_tasks'] else '-'} | "
            f"{_f(row['cost_share_unsolved'], 2)} |")
    lines += ["", "## Per task: Avg@k score / Opt@K", "", "| system | " + " | ".join(result["tasks"]) + " |",
              "|---|" + "---|" * len(result["tasks"])]
    for row in result["systems"]:
        cells = [f"{v['avg_at_k']:.3f} / {v['opt_at_K']:.2f}" for v in (row["per_task"][t] for t in result["tasks"])]
        lines.append(f"| {row['system']} | " + " | ".join(cells) + " |")
    flagged = [row for row in result["systems"] if row.get("credited")]
    if flagged:
        lines += ["", "## With hack suspects not credited", "",
                  "Rollouts the grader flagged (status hack_suspect) count as failures with score 0; the table "
                  "above is raw.", "", "| system | hack suspects | Opt@1 | Opt@K | Avg@k | Best@k | solved tasks |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {row['system']} | {row['hack_suspects']} | {_f(c['opt_at_1'])} | {_f(c['opt_at_K'])} | "
                  f"{_f(c['avg_at_k'])} | {_f(c['best_at_k'])} | {c['solved_tasks']} |"
                  for row in flagged for c in (row["credited"],)]
    judged = [(row, judge_id, j) for row in result["systems"] for judge_id, j in (row.get("judges") or {}).items()]
    if judged:
        lines += ["", "## Judged (an LLM judge's hack votes and ISO-Bench's soft metrics)", "",
                  "Opt@K judged: rollouts the judge called hacks not credited (- : a verdict was withheld). Hard "
                  "Success = Q1 + Q3, True Success = Q1 (Q1 true success, Q2 good intent bad execution, Q3 lucky "
                  "win, Q4 failure).", "",
                  "| system | judge | Opt@K raw | Opt@K judged | Hard Success | True Success | gap | Q1 / Q2 / Q3 / Q4 "
                  "| approach similar / alternative / partial / ineffective | judge cost |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {row['system']} | {judge_id} | {_f(row['opt_at_K'])} | {_f(j['opt_at_K'])} | "
                  f"{_f(j['hard_success'])} | {_f(j['true_success'])} | {_f(j['gap'])} | "
                  + " / ".join(str(j["quadrants"][q]) for q in ("Q1", "Q2", "Q3", "Q4")) + " | "
                  + " / ".join(str(c) for c in j["approaches"].values()) + f" | {_usd(j['cost_usd'])} |"
                  for row, judge_id, j in judged]
    if result.get("plots"):
        lines += ["", "## Plots", ""] + [f"- `{name}`" for name in result["plots"]]
    return "\n".join(lines) + "\n"


DESCRIPTION = "Compare runs: one row per system (model x scaffold x budget), plots, aggregate.html."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", type=Path, help="run directories, sweep directories, or folders of them")
    parser.add_argument("--out", type=Path, help="output folder (default: <first dir>/aggregate)")
    parser.add_argument("--k", type=int, default=3, help="k of Avg@k and Best@k (AutoLab: 3)")
    parser.add_argument("--truncate-steps", default="", help="e.g. 25,50,100: grade rollouts as of those steps")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.aggregate", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    try:
        if args.k < 1:
            raise ConfigError(f"--k must be at least 1, got {args.k}")
        steps = [int(s) for s in args.truncate_steps.split(",") if s.strip()] if args.truncate_steps else []
        runs = [load_run(p) for p in find_runs(args.dirs)]
        check_comparable(runs)
        if steps:
            from runner.truncate import truncated_runs

            runs += truncated_runs(runs, steps)
        result = aggregate(runs, args.k)
        out = args.out or (args.dirs[0] / "aggregate")
        from runner.plots import write_plots  # matplotlib: only once there is something to draw

        result["plots"] = write_plots(result, runs, out)
        write_json(out / "aggregate.json", result)
        write_text(out / "aggregate.md", render_markdown(result))
        from runner.pages import write_aggregate_page

        write_aggregate_page(out, result)
    except (ValueError, SandboxError) as err:  # ConfigError, bad numbers, no sandbox for truncation: one line
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"aggregate: {out / 'aggregate.md'} (and aggregate.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

