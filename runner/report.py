"""A run's report: `report.json` for programs and `report.md` for people, from results.jsonl alone.

A planned rollout that has no record counts as a failure with score 0 (as GSO counts a task with no
prediction), and the report says how many are missing. Unknown prices are flagged, never shown as $0.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from harness import metrics
from runner.store import RunStore, write_json, write_text

TOKEN_KEYS = {"input": "input_tokens", "cached": "cached_read_tokens", "cache_write": "cache_write_tokens",
              "output": "output_tokens", "reasoning": "reasoning_tokens"}


def _money(value: float | None, known: bool = True) -> str:
    if value is None:
        return "unknown"
    return f"${value:.4f}" + ("" if known else " (+ unknown)")


def build_report(records: list[dict[str, Any]], conf: Any, task_ids: list[str]) -> dict[str, Any]:
    n = conf.rollouts
    graded = conf.grade != "none"
    by_task: dict[str, dict[int, dict[str, Any]]] = {tid: {} for tid in task_ids}
    for record in records:
        if record["instance_id"] in by_task and record["rollout"] < n:
            by_task[record["instance_id"]][record["rollout"]] = record
    finished = [r for rows in by_task.values() for r in rows.values()]

    def solved(record: dict[str, Any] | None) -> bool:
        return bool(record and (record.get("grading") or {}).get("opt_commit"))

    success = {tid: [solved(rows.get(i)) for i in range(n)] for tid, rows in by_task.items()}
    scores = {tid: [float((rows.get(i) or {}).get("score") or 0.0) for i in range(n)] for tid, rows in by_task.items()}
    ks = [str(k) for k in range(1, n + 1)]
    costs = [r.get("cost_usd") for r in finished]
    known_costs = [c for c in costs if c is not None]
    cost_known = len(known_costs) == len(costs)
    total_cost = sum(known_costs)
    solved_tasks = sum(any(v) for v in success.values())
    tokens = {name: sum(int((r.get("usage") or {}).get(key, 0)) for r in finished) for name, key in TOKEN_KEYS.items()}
    summary: dict[str, Any] = {
        "system": {"model": conf.model.id, "model_name": conf.model.name, "scaffold": conf.scaffold.id,
                   "scaffold_options": dict(conf.scaffold.options), "budget": conf.budget.id},
        "n_tasks": len(task_ids), "n_rollouts": len(finished), "n_planned": len(task_ids) * n,
        "n_missing": len(task_ids) * n - len(finished), "graded": graded,
        "opt_at_k": {k: metrics.suite_opt_at_k(success, int(k)) for k in ks} if graded else None,
        "opt_at_k_first": {k: metrics.suite_opt_at_k(success, int(k), mode="first") for k in ks} if graded else None,
        "avg_at_k": {k: metrics.avg_at_k(scores, int(k)) for k in ks} if graded else None,
        "best_at_k": {k: metrics.best_at_k(scores, int(k)) for k in ks} if graded else None,
        "solved_tasks": solved_tasks if graded else None,
        "cost_usd": total_cost if known_costs or not costs else None, "cost_known": cost_known,
        "cost_per_rollout": total_cost / len(finished) if finished and known_costs else None,
        "cost_per_solved_task": total_cost / solved_tasks if graded and solved_tasks and known_costs else None,
        "tokens": tokens,
        "mean_steps": sum(r["steps"] for r in finished) / len(finished) if finished else None,
        "wall_time_s": sum(r["wall_time_s"] for r in finished),
        "exit_reasons": dict(Counter(r["exit_reason"] for r in finished)),
        "statuses": dict(Counter((r.get("grading") or {}).get("status", "ungraded") for r in finished)),
    }
    per_task = {}
    for tid, rows in by_task.items():
        per_task[tid] = {
            "opt_at_1": metrics.opt_at_k(n, sum(success[tid]), 1) if graded else None,
            "avg_score": sum(scores[tid]) / n if graded else None,
            "rollouts": [_row(rows[i]) for i in sorted(rows)],
        }
    return {"summary": summary, "tasks": per_task}


def _row(record: dict[str, Any]) -> dict[str, Any]:
    grading = record.get("grading") or {}
    stats = grading.get("opt_stats") or {}
    return {"rollout": record["rollout"], "status": grading.get("status"), "exit_reason": record["exit_reason"],
            "steps": record["steps"], "wall_time_s": record["wall_time_s"], "cost_usd": record.get("cost_usd"),
            "opt_base": grading.get("opt_base"), "opt_commit": grading.get("opt_commit"),
            "score": record.get("score"), "uncertain": grading.get("uncertain"),
            "hm_speedup_patch_commit": stats.get("hm_speedup_patch_commit"),
            "gm_speedup_patch_base": stats.get("gm_speedup_patch_base")}


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def render_markdown(report: dict[str, Any], run_dir: str) -> str:
    s = report["summary"]
    sysinfo = s["system"]
    lines = [f"# Run report: {sysinfo['model']} x {sysinfo['scaffold']} x {sysinfo['budget']}", "",
             f"Run directory: `{run_dir}`. Model `{sysinfo['model_name']}`.", ""]
    if s["n_missing"]:
        lines += [f"**{s['n_missing']} of {s['n_planned']} planned rollouts have not finished** "
                  "(they count as failures; re-run the same command to finish them).", ""]
    lines += ["| metric | value |", "|---|---|",
              f"| tasks | {s['n_tasks']} |", f"| rollouts finished | {s['n_rollouts']} of {s['n_planned']} |"]
    if s["graded"]:
        for name in ("opt_at_k", "avg_at_k", "best_at_k"):
            label = name.replace("_at_k", "@k").replace("opt", "Opt").replace("avg", "Avg").replace("best", "Best")
            lines.append(f"| {label} | " + ", ".join(f"k={k}: {v:.3f}" for k, v in s[name].items()) + " |")
        lines.append(f"| solved tasks (Opt) | {s['solved_tasks']} |")
    else:
        lines.append("| grading | not graded (grade=none): `python -m runner.grade RUN_DIR` |")
    lines += [f"| cost | {_money(s['cost_usd'], s['cost_known'])} |",
              f"| cost per rollout | {_money(s['cost_per_rollout'], s['cost_known'])} |",
              f"| cost per solved task | {_money(s['cost_per_solved_task'], s['cost_known'])} |",
              f"| tokens (input / cached / output) | {s['tokens']['input']} / {s['tokens']['cached']} / "
              f"{s['tokens']['output']} |",
              f"| mean steps | {_fmt(s['mean_steps'], 1)} |", f"| rollout wall time | {s['wall_time_s']:.0f} s |", ""]
    lines += ["## Tasks", "", "| task | rollout | exit | steps | status | opt_base | opt_commit | hm vs expert | "
              "score | cost |", "|---|---|---|---|---|---|---|---|---|---|"]
    for tid, task in report["tasks"].items():
        if not task["rollouts"]:
            lines.append(f"| {tid} | - | (none finished) | | | | | | | |")
        for row in task["rollouts"]:
            lines.append(f"| {tid} | {row['rollout']} | {row['exit_reason']} | {row['steps']} | "
                         f"{_fmt(row['status'])} | {_fmt(row['opt_base'])} | {_fmt(row['opt_commit'])} | "
                         f"{_fmt(row['hm_speedup_patch_commit'])} | {_fmt(row['score'])} | "
                         f"{_money(row['cost_usd'])} |")
    lines += ["", "## Exit reasons", "", "| reason | rollouts |", "|---|---|"]
    lines += [f"| {reason} | {count} |" for reason, count in sorted(s["exit_reasons"].items())]
    if s["graded"]:
        lines += ["", "## Grading statuses", "", "| status | rollouts |", "|---|---|"]
        lines += [f"| {status} | {count} |" for status, count in sorted(s["statuses"].items())]
    return "\n".join(lines) + "\n"


def write_reports(store: RunStore, conf: Any, task_ids: list[str]) -> dict[str, Any]:
    report = build_report(store.results(), conf, task_ids)
    write_json(store.root / "report.json", report)
    write_text(store.root / "report.md", render_markdown(report, str(store.root)))
    store.write_predictions(store.results(), conf.model.name, conf.rollouts)
    return report
