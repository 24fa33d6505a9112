"""A run's report: `report.json` for programs and `report.md` for people, from results.jsonl alone.

The numbers come from the one summary function (harness.metrics.summary): a planned rollout that has
no record counts as a failure with score 0 (as GSO counts a task with no prediction), and the report
says how many are missing. Unknown prices are flagged, never shown as $0.
"""
from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness import signals
from harness.atomic import check_writable, write_problem
from harness.metrics import opt_at_k
from harness.metrics.summary import summarize
from harness.sandbox.interface import TaskImages
from harness.sandbox.providers import SandboxProvider, provider
from runner import judging, provenance, tables
from runner.config import RunConf
from runner.pages import write_run_pages
from runner.records import ResultRecord, RunSummary
from runner.store import RunStore


def _money(value: float | None, known: bool = True) -> str:
    if value is None:
        return "unknown"
    return f"${value:.4f}" + ("" if known else " (+ unknown)")


def slots(records: list[ResultRecord], task_ids: list[str], n: int) -> dict[str, list[ResultRecord | None]]:
    """task -> one slot per planned rollout index, None where that rollout has no record."""
    table: dict[str, list[ResultRecord | None]] = {tid: [None] * n for tid in task_ids}
    for record in records:
        if record.instance_id in table and record.rollout < n:
            table[record.instance_id][record.rollout] = record
    return table


def build_report(records: list[ResultRecord], conf: RunConf, task_ids: list[str]) -> dict[str, Any]:
    n = conf.rollouts
    graded = conf.grade != "none"
    by_task = slots(records, task_ids, n)
    finished = [r for rows in by_task.values() for r in rows if r is not None]
    numbers = summarize({t: [r.metrics() if r else None for r in rows] for t, rows in by_task.items()}, graded)
    summary = RunSummary(
        system={"model": conf.model.id, "model_name": conf.model.name, "scaffold": conf.scaffold.id,
                "scaffold_options": dict(conf.scaffold.options), "budget": conf.budget.id},
        graded=graded, numbers=numbers,
        exit_reasons=dict(Counter(str(r.exit_reason) for r in finished)),
        statuses=dict(Counter((r.grading.status if r.grading else None) or "ungraded" for r in finished)))
    per_task = {}
    for tid, rows in by_task.items():
        solved = sum(bool(r and r.grading and r.grading.solved) for r in rows)
        per_task[tid] = {
            "opt_at_1": opt_at_k(n, solved, 1) if graded else None,
            "avg_score": sum(float(r.score or 0.0) for r in rows if r) / n if graded else None,
            "rollouts": [_row(r) for r in rows if r is not None],
        }
    return {"summary": summary.to_dict(), "tasks": per_task}


def _row(record: ResultRecord) -> dict[str, Any]:
    grading = record.grading
    stats = grading.opt_stats if grading else {}
    return {"rollout": record.rollout, "status": grading.status if grading else None,
            "exit_reason": str(record.exit_reason), "steps": record.steps, "wall_time_s": record.wall_time_s,
            "cost_usd": record.cost_usd, "opt_base": grading.opt_base if grading else None,
            "opt_commit": grading.opt_commit if grading else None, "score": record.score,
            "uncertain": grading.uncertain if grading else None,
            "hm_speedup_patch_commit": stats.get("hm_speedup_patch_commit"),
            "gm_speedup_patch_base": stats.get("gm_speedup_patch_base"),
            # Added later, only when recorded: old runs' reports rebuild identically.
            **({"actions": record.actions} if record.actions else {}),
            **({"details": record.details} if record.details else {}),
            **({"hack_reasons": grading.hack_reasons} if grading and grading.hack_reasons else {}),
            **({"score_source": grading.score_source} if grading and grading.score_source else {}),
            **({"overfit_gap": grading.overfit_gap} if grading and grading.overfit_gap is not None else {}),
            **({"expert_gap": grading.expert_gap} if grading and grading.expert_gap is not None else {})}


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


LABELS = {"opt_at_k": "Opt@k", "opt_at_k_first": "Opt@k (any of the first k, GSO)", "avg_at_k": "Avg@k",
          "best_at_k": "Best@k"}


def _scaffold_lines(report: dict[str, Any]) -> list[str]:
    """How the scaffold ran: actions per rollout, codeact's resolved action format, condensations, where
    patches came from (only what the rollouts recorded)."""
    rows = [row for task in report["tasks"].values() for row in task["rollouts"]]
    if not any("actions" in row for row in rows):
        return []
    details = [row.get("details") or {} for row in rows]
    lines = [f"| mean actions | {sum(row.get('actions', 0) for row in rows) / len(rows):.1f} |"]
    for key, label in (("mode", "action format"), ("patch_source", "patch from")):
        counts = Counter(d[key] for d in details if key in d)
        if counts:
            lines.append(f"| {label} | " + ", ".join(f"{k} ({v})" for k, v in sorted(counts.items())) + " |")
    condensed = sum(len(d.get("condensations", [])) for d in details)
    if condensed:
        lines.append(f"| context condensations | {condensed} |")
    return lines


def _check_lines(checks: list[dict[str, Any]]) -> list[str]:
    """The model access checks (one tiny request per invocation), apart from the rollouts' cost."""
    if not checks:
        return []
    costs = [c.get("cost_usd") for c in checks]
    known = all(c is not None for c in costs)
    return [f"| model access checks | {len(checks)} calls, {_money(sum(c or 0.0 for c in costs), known)} "
            "(not in the cost above) |"]


def _task_lines(tasks: dict[str, Any]) -> list[str]:
    """The per-rollout table, task by task."""
    lines = ["## Tasks", "", "Score source: timed (log-stretch of the timed speedups), reward (the task's own), "
             "calibrated (anchors measured here), serving. Gap: the speedup on the spec script the agent saw over "
             "the hidden tests', then the expert's change's on the same task: a patch far above the expert's "
             "gained where the agent could look only.", "",
             "| task | rollout | exit | steps | status | opt_base | opt_commit | hm vs expert | "
             "score (source) | gap | cost |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for tid, task in tasks.items():
        if not task["rollouts"]:
            lines.append(f"| {tid} | - | (none finished) | | | | | | | | |")
        for row in task["rollouts"]:
            source = f" ({row['score_source']})" if row.get("score_source") else ""
            lines.append(f"| {tid} | {row['rollout']} | {row['exit_reason']} | {row['steps']} | "
                         f"{_fmt(row['status'])} | {_fmt(row['opt_base'])} | {_fmt(row['opt_commit'])} | "
                         f"{_fmt(row['hm_speedup_patch_commit'])} | {_fmt(row['score'])}{source} | "
                         f"{_fmt(row.get('overfit_gap'), 2)} / {_fmt(row.get('expert_gap'), 2)} | "
                         f"{_money(row['cost_usd'])} |")
    return lines


def render_markdown(report: dict[str, Any], run_dir: str, grading: str = "") -> str:
    s = report["summary"]
    sysinfo = s["system"]
    lines = [f"# Run report: {sysinfo['model']} x {sysinfo['scaffold']} x {sysinfo['budget']}", "",
             f"Run directory: `{run_dir}`. Model `{sysinfo['model_name']}`.{grading}", ""]
    made = report.get("provenance") or {}
    if made.get("isolated") is False:
        lines += [f"**Unsandboxed**: every sandbox of this run was plain processes of this host "
                  f"(sandbox.provider={made.get('sandbox_provider')}): nothing isolated the agents or the patches' "
                  "code from the host or from each other; read its results as those of code you trust.", ""]
    if s["n_missing"]:
        lines += [f"**{s['n_missing']} of {s['n_planned']} planned rollouts have not finished** "
                  "(they count as failures; re-run the same command to finish them).", ""]
    for task_id, why in (report.get("skipped_tasks") or {}).items():
        lines += [f"**Task `{task_id}` was skipped**: its images could not be made ({why}); its rollouts count "
                  "as failures until the same command is run again.", ""]
    lines += ["| metric | value |", "|---|---|",
              f"| tasks | {s['n_tasks']} |", f"| rollouts finished | {s['n_rollouts']} of {s['n_planned']} |"]
    if s["graded"]:
        for name in ("opt_at_k", "opt_at_k_first", "avg_at_k", "best_at_k"):
            lines.append(f"| {LABELS[name]} | " + ", ".join(f"k={k}: {v:.3f}" for k, v in s[name].items()) + " |")
        lines.append(f"| solved tasks (Opt) | {s['solved_tasks']} |")
        credited = s.get("credited")
        if credited is not None:  # reports written before hack suspects existed have none
            lines.append(f"| hack suspects (not credited) | {s['hack_suspects']}: Opt@k "
                         + ", ".join(f"k={k}: {v:.3f}" for k, v in credited["opt_at_k"].items())
                         + "; Avg@k " + ", ".join(f"k={k}: {v:.3f}" for k, v in credited["avg_at_k"].items())
                         + f"; solved tasks {credited['solved_tasks']} |")
    else:
        lines.append("| grading | not graded (grade=none): `python -m runner.grade RUN_DIR` |")
    if s["graded"]:  # counted as failures above (as GSO counts them), and listed apart here
        lines.append(f"| errored / unscored rollouts (failures above) | {s.get('errored', 0)} / "
                     f"{s.get('unscored', 0)} |")
        if s.get("overfit_gap") is not None:
            lines.append(f"| overfitting gap (visible / hidden speedup, geometric mean; over the expert's) | "
                         f"{s['overfit_gap']:.3f}; {_fmt(s.get('overfit_gap_vs_expert'))} "
                         f"({s['overfit_gap_rollouts']} rollouts) |")
    unknown = s.get("cost_unknown_rollouts", 0)
    note = f" ({unknown} rollouts of unknown cost left out)" if unknown else ""
    lines += [f"| cost | {_money(s['cost_usd'], s['cost_known'])} |",
              f"| cost per rollout | {_money(s['cost_per_rollout'], s['cost_known'])}{note} |",
              f"| cost per solved task | {_money(s['cost_per_solved_task'], s['cost_known'])}{note} |",
              f"| tokens (input / cached / output) | {s['tokens']['input']} / {s['tokens']['cached']} / "
              f"{s['tokens']['output']} |",
              f"| mean steps | {_fmt(s['mean_steps'], 1)} |", f"| rollout wall time | {s['wall_time_s']:.0f} s |"]
    lines += _scaffold_lines(report) + _check_lines(report.get("model_checks") or []) + [""]
    lines += _task_lines(report["tasks"])
    lines += ["", "## Exit reasons", "", "| reason | rollouts |", "|---|---|"]
    lines += [f"| {reason} | {count} |" for reason, count in sorted(s["exit_reasons"].items())]
    if s["graded"]:
        lines += ["", "## Grading statuses", "", "| status | rollouts |", "|---|---|"]
        lines += [f"| {status} | {count} |" for status, count in sorted(s["statuses"].items())]
    suspects = [(tid, row) for tid, task in report["tasks"].items() for row in task["rollouts"]
                if row.get("hack_reasons")]
    if suspects:
        lines += ["", "## Hack suspects", "", "Measured numbers kept above; not credited in the credited figures.", ""]
        lines += [f"- {tid} rollout {row['rollout']}: " + "; ".join(row["hack_reasons"]) for tid, row in suspects]
    if report.get("judges"):
        lines += judging.markdown(report["judges"], s["opt_at_k"])
    if report.get("provenance"):
        lines += provenance.markdown(report["provenance"])
    return "\n".join(lines) + "\n"


def write_reports(store: RunStore, conf: RunConf, task_ids: list[str], images: dict[str, TaskImages] | None = None,
                  sandboxes: SandboxProvider | None = None, skipped: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Write report.json and report.md (and the predictions and GSO's layout) from the stored results, with
    the provenance of this process: `images` are the task images it used (None: it used none, a judge run);
    `skipped`: task id -> why its images could not be made (its rollouts did not run)."""
    records = store.results()
    report = build_report(records, conf, task_ids)
    if skipped:
        report["skipped_tasks"] = dict(sorted(skipped.items()))
    if checks := store.checks():
        report["model_checks"] = checks  # only when a real model was checked: old runs rebuild identically
    if store.judges() and conf.grade != "none":  # likewise only once a judge has judged
        report["judges"] = judging.summaries(store, slots(records, task_ids, conf.rollouts),
                                             [int(k) for k in report["summary"]["opt_at_k"]])
    # Added here, not in build_report: a report rebuilt from an old run's records stays identical.
    report["provenance"] = provenance.for_report(store, conf, images, sandboxes or provider(conf.sandbox.provider))
    g = conf.grading
    grading = (f" Graded with {g.rounds} rounds ({g.mode}, {g.stat}), Opt at p = {g.p:g}, GSO's {g.gso_version} "
               f"verdict (round(gm, 1) >= {g.min_speedup:g}).") if conf.grade != "none" else ""
    store.write_report(report, render_markdown(report, str(store.root), grading))
    store.write_predictions(records, conf.model.name, conf.rollouts)
    if conf.grade != "none":
        store.write_gso_reports(records, conf.model.name, task_ids)
    try:
        write_tables(store.root, conf, slots(records, task_ids, conf.rollouts), report.get("judges"))
    except OSError:
        raise  # a full disk or a read-only directory: the command's own one line
    except Exception as err:  # noqa: BLE001 - the tables repeat report.json's numbers; it is written already
        print(f"warning: the table files were not written ({type(err).__name__}: {err})", file=sys.stderr)
    try:
        write_run_pages(store.root)  # report.html and a page per rollout's trajectory
    except OSError:
        raise  # a full disk or a read-only directory: the command's own one line
    except Exception as err:  # noqa: BLE001 - the pages show the reports; a record they cannot show loses nothing
        print(f"warning: the HTML pages were not written ({type(err).__name__}: {err}); "
              f"python -m runner.view {store.root} tries again", file=sys.stderr)
    return report


def write_tables(root: Path, conf: RunConf, by_task: dict[str, list[ResultRecord | None]],
                 judges: dict[str, Any] | None) -> list[str]:
    """The run's table files, as `runner.aggregate` writes a study's: this run as one system with its
    bootstrap intervals (systems.csv, systems.tex; only once graded) and one row per rollout (rollouts.csv,
    and .parquet with pyarrow)."""
    from harness.metrics.bootstrap import Settings  # numpy: only once there is a report to write

    label, settings = tables.system_label(conf), Settings()
    systems = []
    if conf.grade != "none" and by_task:
        row = tables.system_row(label, conf, by_task, root, tables.DEFAULT_K, judges=judges)
        tables.add_intervals([row], {label: tables.outcomes(by_task, list(by_task))}, tables.DEFAULT_K, settings)
        systems.append(row)
    return tables.write_tables(root, systems, tables.rollout_rows(label, conf, by_task), settings.to_dict())


COPY = "a writable copy of the run directory"


def report_command(work: Callable[[], Path], refused: tuple[type[Exception], ...], kept: str,
                   run_dir: Path) -> int:
    """Run a command that ends by rewriting the reports of the run in `run_dir` (`runner.grade`,
    `runner.judge`): SIGTERM and SIGHUP stop as Ctrl-C does; a refusal (`refused`) and a run directory that
    cannot be written are one line and exit 2; an interruption says that `kept` (what finished) is kept and
    exits with the signal's code."""
    if run_dir.is_dir() and (problem := check_writable(run_dir, COPY)) is not None:  # before any work is done
        print(f"error: {problem}", file=sys.stderr)
        return 2
    restore = signals.install()
    try:
        path = work()
    except refused as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc or 'Ctrl-C'}): {kept} so far are kept; run again to go on", file=sys.stderr)
        return signals.exit_code(exc)
    except OSError as err:  # a full disk or a read-only run directory
        if (problem := write_problem(err, example=COPY)) is None:
            raise
        print(f"error: {problem}; {kept} so far are kept; run again to go on", file=sys.stderr)
        return 2
    finally:
        restore()
    print(f"report: {path}")
    return 0
