"""A run's pages: `report.html` beside report.md (its sections, tables sortable, and the rollouts with
filters, each linked to its trajectory page) and `pages/<task>/<i>.html`, one per finished rollout.

Works on a finished run and on one still running: the rollouts are those on disk, graded or not. A run
directory may come from elsewhere (copied, downloaded): a record whose task id is not a plain name (it
would place a page outside `pages/`) is left out with one warning line, and a trajectory is read only
from inside the run directory.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.atomic import write_text
from harness.tasks.ids import id_problem
from runner.pages.render import FOLD, markdown, render, sections
from runner.pages.trajectory import trajectory_view
from runner.records import ResultRecord, RolloutRecord
from runner.store import RunStore

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


def row_of(record: RolloutRecord, result: ResultRecord | None) -> Row:
    grading = result.grading if result is not None else None
    return Row(task=record.instance_id, rollout=record.rollout, exit_reason=str(record.exit_reason),
               steps=record.steps, actions=record.actions or None,  # as report.md: 0 is a run from before
               status=str(grading.status or "-") if grading is not None else "ungraded",
               opt_base=grading.opt_base if grading else None, opt_commit=grading.opt_commit if grading else None,
               hm_vs_expert=grading.opt_stats.get("hm_speedup_patch_commit") if grading else None,
               score=result.score if result is not None else None, cost_usd=record.cost_usd,
               wall_time_s=record.wall_time_s, flags="; ".join(grading.hack_reasons or []) if grading else "")


def write_run_pages(run_dir: Path) -> Path:
    """(Re)write report.html and every rollout's page; returns report.html's path."""
    store = RunStore(run_dir)
    name = run_dir.resolve().name
    results = {r.key: r for r in store.results()}
    records = shown_records(store, run_dir)
    rows = [row_of(record, results.get(record.key)) for record in records]
    judges = store.judges()

    def neighbour(n: int) -> dict[str, str] | None:
        if not 0 <= n < len(rows):
            return None
        return {"href": f"../../{rows[n].href}", "label": f"{rows[n].task} #{rows[n].rollout}"}

    for n, (record, row) in enumerate(zip(records, rows)):
        judgements = {j: found for j in judges if (found := store.judgement(j, *record.key)) is not None}
        view = trajectory_view(record.to_dict(), _trajectory(store, record, run_dir),
                               store.grading(*record.key), judgements)
        page = render("trajectory.html.j2", v=view, run_name=name, run_link="../../report.html", fold_chars=FOLD,
                      prev=neighbour(n - 1), next=neighbour(n + 1))
        write_text(run_dir / row.path, page)
    report_md = store.report_md
    parts = sections(report_md.read_text()) if report_md.exists() else []
    head = markdown(parts[0][1]) if parts else ""
    rest = [(title, markdown(body)) for title, body in parts[1:] if title != ROLLOUTS_SECTION]
    page = render("run.html.j2", name=name, config=store.load_config() if store.is_run() else {}, head=head,
                  sections=rest, rows=rows, tasks=sorted({r.task for r in rows}),
                  exits=sorted({r.exit_reason for r in rows}), statuses=sorted({r.status for r in rows}))
    out = store.report_html
    write_text(out, page)
    return out


def shown_records(store: RunStore, run_dir: Path) -> list[RolloutRecord]:
    """The finished rollouts whose ids can name a page; each other one is one warning line."""
    out = []
    for record in store.finished():
        problem = id_problem(f"{run_dir}: rollout {record.rollout}", record.instance_id)
        if problem is not None:
            print(f"warning: {problem}; its page is not written", file=sys.stderr, flush=True)
            continue
        out.append(record)
    return out


def _trajectory(store: RunStore, record: RolloutRecord, run_dir: Path) -> dict[str, Any] | None:
    """The rollout's trajectory, from the path its record names only when that lies inside the run."""
    inside = bool(record.trajectory) and (run_dir / str(record.trajectory)).resolve().is_relative_to(run_dir.resolve())
    return (store.trajectory(record) if inside else None) or store.trajectory_of(*record.key)
