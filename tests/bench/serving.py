"""Serving stability: each service task's gold (expert) patch graded repeatedly, as the grader does it and as
ISO-Bench does it.

- grader: `rounds` interleaved rounds (every state's server launched once per round, the order rotating),
  held-out seeds, the primary metric's per-round values paired by round;
- ISO-Bench style: one client run per state, the states launched one after another (one round, no
  rotation), the ratio of those single runs.

Prints, per task and protocol, the primary metric's speedup of the gold patch over the expert (the same
code: 1 is right) and over the base per repeat, their coefficient of variation over the repeats, and the
seconds per grading. Target: CV of the ratio at most 2% with the grader's protocol. The two protocols
alternate repeat by repeat so machine drift hits both.

usage: python -m tests.bench.serving [--tasks serve] [--repeat 5] [--rounds R]
Figures are printed and written to outputs/bench/serving-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.grader.config import GradeConfig
from harness.grader.grade import grade
from harness.metrics import cv
from harness.sandbox.docker.containers import docker_client
from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.task_images import ensure_images
from harness.tasks import select_tasks

console = Console()
OUT_DIR = Path("outputs/bench")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.serving")
    parser.add_argument("--tasks", default="serve")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=GradeConfig.rounds, help="the grader's rounds (its default)")
    args = parser.parse_args(argv)
    ensure_engine()
    tasks = [t for t in select_tasks(args.tasks) if t.service is not None]
    images = ensure_images(docker_client(), tasks, BaseImageSpec(), progress=lambda m: console.print(f"[dim]{m}"))
    protocols = {"grader": args.rounds, "ISO-Bench style": 1}
    table = Table(title=f"gold patch graded {args.repeat}x per protocol")
    for column in ("task", "primary", "protocol", "gold/expert per repeat", "CV %", "gold/base per repeat", "CV %",
                   "s / grading"):
        table.add_column(column)
    rows = []
    for task in tasks:
        assert task.service is not None
        found: dict[str, list[dict]] = {name: [] for name in protocols}
        for _ in range(args.repeat):
            for name, rounds in protocols.items():
                found[name].append(grade(task, task.expert_patch, images[task.id].grading,
                                         GradeConfig(rounds=rounds)))
        for name, reports in found.items():
            failed = [r for r in reports if r["status"] != "passed"]
            if failed:
                console.print(f"[red]{task.id} {name}: {failed[0]['status']}: {failed[0]['reason']}")
                continue
            speedups = [r["serving"]["metrics"][task.service.primary]["speedup"] for r in reports]
            commit = [s["patch_commit"] for s in speedups]
            base = [s["patch_base"] for s in speedups]
            wall = statistics.fmean(r["wall_time_s"] for r in reports)
            row = {"task": task.id, "primary": task.service.primary, "protocol": name, "rounds": protocols[name],
                   "gold_over_expert": commit, "cv_expert": cv(commit), "gold_over_base": base,
                   "cv_base": cv(base), "seconds_per_grading": wall}
            rows.append(row)
            table.add_row(task.id, task.service.primary, f"{name} ({protocols[name]} round(s))",
                          " ".join(f"{v:.3f}" for v in commit), f"{100 * cv(commit):.2f}",
                          " ".join(f"{v:.2f}" for v in base), f"{100 * cv(base):.2f}", f"{wall:.1f}")
    console.print(table)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"serving-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"repeat": args.repeat, "rows": rows}, indent=2))
    console.print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
