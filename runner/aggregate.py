"""`python -m runner.aggregate DIR ... [--out OUT] [--k 3] [--truncate-steps 25,50,100] [--resamples 2000]
[--level 0.95] [--seed 0] [--bootstrap tasks|tasks+rollouts]`

Reads run directories from disk (a sweep folder, run folders, or any folder holding them), never from
Hydra's in-memory state: a sweep whose job failed still aggregates. Writes `aggregate.json`
(with each run's provenance under `runs`, and the bootstrap's settings under `intervals`), `aggregate.md`
(one line when the runs came from different tool revisions or machines), the tables (runner.tables:
systems.csv, systems.tex, rollouts.csv and .parquet) and the plots (runner.plots: PNG, PDF and SVG) into OUT
(default: `<first DIR>/aggregate`).

Opt@K, Avg@k and Best@k carry percentile bootstrap intervals, and every two systems are compared by a paired
bootstrap over the same resampled tasks (harness.metrics.bootstrap).

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from harness import metrics
from harness.atomic import write_json, write_text
from harness.metrics.bootstrap import Settings, opt_interval
from harness.sandbox.interface import SandboxError
from runner import provenance, tables
from runner.config import ConfigError
from runner.store import RunStore
from runner.study import Run, bootstrap_arguments, check_comparable, load_runs, successes_of


def system_row(run: Run, k: int) -> dict[str, Any]:
    """One system's row: the summary numbers (harness.metrics.summary) at k = 1, k and N (runner.tables)."""
    return tables.system_row(run.label, run.conf, run.slots(), run.path, k, run.approximate, _judges(run))


def _judges(run: Run) -> dict[str, Any]:
    """Per judge of this run (runner.judging): Opt@K with judged hacks not credited, and ISO-Bench's soft
    metrics; none for a truncation, which no judge has seen."""
    from runner.judging import summaries

    if run.approximate:
        return {}
    return summaries(RunStore(run.path), run.slots(), sorted({1, run.n}))


def aggregate(runs: list[Run], k: int = tables.DEFAULT_K, settings: Settings | None = None) -> dict[str, Any]:
    """The study: a row per system with its bootstrap intervals (`ci`), Dominance, the curves (Opt@k with
    its interval at each k), the paired comparisons of every two systems, and each run's provenance."""
    settings = settings or Settings()
    rows = [system_row(run, k) for run in runs]
    dom: Mapping[str, float | None]
    if len(rows) >= 2:
        dom = metrics.dominance({row["system"]: {t: v["avg_at_k"] for t, v in row["per_task"].items()}
                                 for row in rows})
    else:
        dom = {row["system"]: None for row in rows}
    for row in rows:
        row["dominance"] = dom[row["system"]]
    order = runs[0].task_ids  # every run covers the same tasks (check_comparable); one order for the bootstrap
    intervals = tables.add_intervals(rows, {run.label: tables.outcomes(run.slots(), order) for run in runs}, k,
                                     settings)
    thresholds = [i / 20 for i in range(21)]
    curves = {run.label: {"opt_p_at_1": [(p, metrics.suite_opt_at_k(successes_of(run, p), 1)) for p in thresholds],
                          "opt_p_at_1_ci": [[p, *_threshold_interval(run, p, order, settings)] for p in thresholds],
                          "opt_at_k": [(kk, metrics.suite_opt_at_k(successes_of(run), kk))
                                       for kk in range(1, run.n + 1)],
                          "opt_at_k_ci": [list(point) for point in intervals.curve[run.label]]}
              for run in runs}
    return {"k": k, "tasks": runs[0].task_ids, "intervals": settings.to_dict(), "systems": rows, "curves": curves,
            "comparisons": [c.to_dict() for c in intervals.comparisons], "runs": run_provenance(runs)}


def _threshold_interval(run: Run, p: float, order: list[str], settings: Settings) -> tuple[float, float]:
    """Opt_p@1's interval at threshold p, on the same resamples as the run's other intervals."""
    success = successes_of(run, p)
    return opt_interval(np.array([success[t] for t in order], dtype=bool), 1, settings, run.label)


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


def _ci(row: dict[str, Any], metric: str) -> str:
    bounds = (row.get("ci") or {}).get(metric)
    return _f(row.get(metric)) + (f" [{bounds[0]:.3f}, {bounds[1]:.3f}]" if bounds else "")


def _intervals_line(settings: dict[str, Any] | None) -> str:
    if not settings:
        return ""
    return (f" [lo, hi]: {settings['level'] * 100:g}% {settings['method']} ({settings['resamples']} resamples, "
            f"seed {settings['seed']}).")


def render_markdown(result: dict[str, Any]) -> str:
    k = result["k"]
    lines = ["# Aggregate", "", f"{len(result['tasks'])} tasks: {', '.join(result['tasks'])}. "
             f"Avg@k and Best@k with k = {k} (or N when a system has fewer rollouts); Dominance over Avg@k."
             + _intervals_line(result.get("intervals")), ""]
    if mixed := provenance.mixed_line([run["provenance"] for run in result.get("runs") or []]):
        lines += [mixed, ""]
    if any(row["approximate"] for row in result["systems"]):
        lines += ["Rows marked * are post-hoc truncations of longer rollouts: an approximation, since an agent "
                  "that knows its budget is smaller behaves differently.", ""]
    lines += ["Errored: rollouts whose run ended in an infrastructure, provider or tool error; unscored: no measured "
              "grading. Both count as failures with score 0 in Opt, Avg and Best (as GSO counts them). Costs are "
              "over the rollouts whose cost is known (+?: some were unknown and are left out). Gap: the speedup on "
              "the spec script the agent saw over the hidden tests' (geometric mean over rollouts).", "",
              "| system | tasks | rollouts | Opt@1 | Opt@K | Avg@k | Best@k | Dominance | errored / unscored | gap | "
              "mean steps | wall s | tokens in/cached/out | $/rollout | $/solved task | unsolved cost share |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["systems"]:
        tokens = row["tokens"]
        lines.append(
            f"| {row['system']}{' *' if row['approximate'] else ''} | {row['tasks']} | {row['rollouts']} | "
            f"{_f(row['opt_at_1'])} | {_ci(row, 'opt_at_K')} (K={row['rollouts']}) | {_ci(row, 'avg_at_k')} | "
            f"{_ci(row, 'best_at_k')} | {_f(row['dominance'])} | {row.get('errored', 0)} / {row.get('unscored', 0)} | "
            f"{_ci({**row, 'ci': {'overfit_gap': row.get('overfit_gap_ci')}}, 'overfit_gap')} | "
            f"{_f(row['mean_steps'], 1)} | "
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
    lines += _judged_lines(result)
    lines += _comparison_lines(result)
    if result.get("tables"):
        lines += ["", "## Tables", "", "For a paper: `systems.tex` (booktabs; `\\input` it), `systems.csv`, and "
                  "one row per rollout in `rollouts.csv` (and `rollouts.parquet` with pyarrow).", ""]
        lines += [f"- `{name}`" for name in result["tables"]]
    if result.get("plots"):
        lines += ["", "## Plots", "", "Each also as PDF and SVG, one paper column wide.", ""]
        lines += [f"- `{name}`" for name in result["plots"]]
    return "\n".join(lines) + "\n"


def _judged_lines(result: dict[str, Any]) -> list[str]:
    """Each system's judged figures, per judge (none: no judge ran)."""
    lines: list[str] = []
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
    return lines


NAMES = {"opt_at_K": "Opt@K", "avg_at_k": "Avg@k", "best_at_k": "Best@k"}


def _comparison_lines(result: dict[str, Any]) -> list[str]:
    """Every two systems on each metric: paired over the same resampled tasks."""
    found = result.get("comparisons") or []
    if not found:
        return []
    level = result["intervals"]["level"] * 100
    lines = ["", "## Paired comparisons", "",
             f"A - B on the same resampled tasks: the difference, its {level:g}% interval, and the share of "
             "resamples where A is above B, where they tie, and where B is above A.", "",
             "| A | B | metric | A - B | interval | A above | tie | B above |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {c['a']} | {c['b']} | {NAMES[c['metric']]} | {c['difference']:+.3f} | "
              f"[{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}] | {c['a_better']:.3f} | {c['tie']:.3f} | {c['b_better']:.3f} |"
              for c in found]
    return lines


DESCRIPTION = "Compare runs: one row per system (model x scaffold x budget), plots, aggregate.html."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", type=Path, help="run directories, sweep directories, or folders of them")
    parser.add_argument("--out", type=Path, help="output folder (default: <first dir>/aggregate)")
    parser.add_argument("--k", type=int, default=tables.DEFAULT_K, help="k of Avg@k and Best@k (AutoLab: 3)")
    parser.add_argument("--truncate-steps", default="", help="e.g. 25,50,100: grade rollouts as of those steps")
    bootstrap_arguments(parser)
    parser.add_argument("--bootstrap", choices=("tasks", "tasks+rollouts"), default="tasks",
                        help="resample tasks (default), or tasks and then rollouts within each drawn task")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.aggregate", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    try:
        if args.k < 1:
            raise ConfigError(f"--k must be at least 1, got {args.k}")
        settings = Settings(args.resamples, args.level, args.seed, rollouts=args.bootstrap == "tasks+rollouts")
        steps = [int(s) for s in args.truncate_steps.split(",") if s.strip()] if args.truncate_steps else []
        runs = load_runs(args.dirs)
        check_comparable(runs)
        if steps:
            from runner.truncate import truncated_runs

            runs += truncated_runs(runs, steps)
        result = aggregate(runs, args.k, settings)
        out = args.out or (args.dirs[0] / "aggregate")
        from runner.plots import write_plots  # matplotlib: only once there is something to draw

        result["tables"] = tables.write_tables(out, result["systems"], [
            row for run in runs for row in tables.rollout_rows(run.label, run.conf, run.slots(), run.approximate)],
            result["intervals"])
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

