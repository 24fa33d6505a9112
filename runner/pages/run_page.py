"""A run's pages: `report.html` beside report.md (its sections, tables sortable, and the rollouts with
filters, each linked to its trajectory page) and `pages/<task>/<i>.html`, one per finished rollout.

Works on a finished run and on one still running: the rollouts are those on disk, graded or not.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.atomic import read_json, write_text
from runner.pages.render import FOLD, markdown, render, sections
from runner.pages.trajectory import trajectory_view

PAGES = "pages"
ROLLOUTS_SECTION = "Tasks"  # report.md's per-rollout table: the page shows its own, filterable one instead


@dataclass
class Row:
    """One rollout of the run page's table."""
    task: str
    rollout: int
    exit_reason: str
    steps: int
    actions: int | None
    status: str
    opt_base: bool | None
    opt_commit: bool | None
    hm_vs_expert: float | None
    score: float | None
    cost_usd: float | None
    wall_time_s: float | None
    flags: str  # the grader's hack reasons, if any

    @property
    def path(self) -> str:
        """Where its trajectory page is, relative to the run directory."""
        return f"{PAGES}/{self.task}/{self.rollout}.html"

    @property
    def href(self) -> str:
        """The same as a link (a task id may hold characters a URL reserves)."""
        return f"{PAGES}/{quote(self.task)}/{self.rollout}.html"


def _index(value: str) -> int:
    return int(value) if value.isdigit() else -1


def finished(run_dir: Path) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """Every finished rollout on disk (task, index order) with its results.jsonl record when it has one."""
    results: dict[tuple[str, int], dict[str, Any]] = {}
    path = run_dir / "results.jsonl"
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill: the rollout's own file still counts
            results[(record["instance_id"], int(record["rollout"]))] = record
    out = []
    for file in sorted((run_dir / "rollouts").glob("*/*.json"), key=lambda p: (p.parent.name, _index(p.stem))):
        record = read_json(file)
        if isinstance(record, dict) and "instance_id" in record:
            out.append((record, results.get((record["instance_id"], int(record["rollout"])))))
    return out


def row_of(record: dict[str, Any], result: dict[str, Any] | None) -> Row:
    grading = (result or {}).get("grading") or {}
    stats = grading.get("opt_stats") or {}
    return Row(task=record["instance_id"], rollout=int(record["rollout"]), exit_reason=str(record.get("exit_reason")),
               steps=int(record.get("steps", 0)), actions=record.get("actions"),
               status=str(grading.get("status") or ("ungraded" if result is None or not grading else "-")),
               opt_base=grading.get("opt_base"), opt_commit=grading.get("opt_commit"),
               hm_vs_expert=stats.get("hm_speedup_patch_commit"), score=(result or {}).get("score"),
               cost_usd=record.get("cost_usd"), wall_time_s=record.get("wall_time_s"),
               flags="; ".join(grading.get("hack_reasons") or []))


def judgements_of(run_dir: Path, task: str, index: int) -> dict[str, dict[str, Any]]:
    out = {}
    for judge in sorted(p.name for p in (run_dir / "judging").glob("*") if p.is_dir()):
        found = read_json(run_dir / "judging" / judge / task / f"{index}.json")
        if isinstance(found, dict):
            out[judge] = found
    return out


def write_run_pages(run_dir: Path) -> Path:
    """(Re)write report.html and every rollout's page; returns report.html's path."""
    config = _config(run_dir)
    name = run_dir.resolve().name
    items = finished(run_dir)
    rows = [row_of(record, result) for record, result in items]
    for n, ((record, _result), row) in enumerate(zip(items, rows)):
        trajectory = read_json(run_dir / (record.get("trajectory") or f"trajectories/{row.task}/{row.rollout}.json"))
        grading = read_json(run_dir / "grading" / row.task / f"{row.rollout}.json")
        view = trajectory_view(record, trajectory if isinstance(trajectory, dict) else None,
                               grading if isinstance(grading, dict) else None,
                               judgements_of(run_dir, row.task, row.rollout))
        neighbour = lambda other: {"href": f"../../{other.href}", "label": f"{other.task} #{other.rollout}"}  # noqa: E731
        page = render("trajectory.html.j2", v=view, run_name=name, run_link="../../report.html", fold_chars=FOLD,
                      prev=neighbour(rows[n - 1]) if n > 0 else None,
                      next=neighbour(rows[n + 1]) if n + 1 < len(rows) else None)
        write_text(run_dir / row.path, page)
    report_md = run_dir / "report.md"
    parts = sections(report_md.read_text()) if report_md.exists() else []
    head = markdown(parts[0][1]) if parts else ""
    rest = [(title, markdown(body)) for title, body in parts[1:] if title != ROLLOUTS_SECTION]
    page = render("run.html.j2", name=name, config=config, head=head, sections=rest, rows=rows,
                  tasks=sorted({r.task for r in rows}), exits=sorted({r.exit_reason for r in rows}),
                  statuses=sorted({r.status for r in rows}), has_report=report_md.exists())
    out = run_dir / "report.html"
    write_text(out, page)
    return out


def _config(run_dir: Path) -> dict[str, Any]:
    import yaml

    path = run_dir / "config.yaml"
    try:
        loaded = yaml.safe_load(path.read_text()) if path.exists() else None
    except yaml.YAMLError:
        loaded = None
    return loaded if isinstance(loaded, dict) else {}
