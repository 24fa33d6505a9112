"""Grading stability: the gold (expert) patch graded repeatedly in `interleaved` and in `gso` mode.

Prints, per task, the coefficient of variation of hm(patch->expert) over the repeats in each mode
and the grading wall time. Targets: CV <= 2% interleaved, at most half of gso mode's; about a
minute or less per grading. The two modes alternate repeat by repeat so machine drift hits both.

usage: python -m tests.bench.grading [--tasks smoke] [--full] [--repeat 5] [--rounds R]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.sandbox.docker.engine import ensure_engine
from harness.grader.config import MODES, GradeConfig
from harness.grader.grade import grade
from harness.metrics import cv
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.task_images import ensure_images
from harness.sandbox.docker.containers import docker_client
from harness.tasks import select_tasks

console = Console()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.grading")
    parser.add_argument("--tasks", default="smoke")
    parser.add_argument("--full", action="store_true", help="every task of the suite")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=GradeConfig.rounds, help="timing rounds (the grader's default)")
    args = parser.parse_args(argv)
    ensure_engine()
    tasks = select_tasks("suite" if args.full else args.tasks)
    images = ensure_images(docker_client(), tasks, BaseImageSpec(), progress=lambda m: console.print(f"[dim]{m}"))
    table = Table(title=f"gold patch graded {args.repeat}x per mode, {args.rounds} rounds")
    for column in ("task", "mode", "hm(patch->expert) per repeat", "mean", "CV %", "s / grading", "flips"):
        table.add_column(column)
    rows = []
    for task in tasks:
        results: dict[str, list[dict]] = {mode: [] for mode in MODES}
        for _ in range(args.repeat):
            for mode in MODES:
                results[mode].append(grade(task, task.expert_patch, images[task.id].grading,
                                           GradeConfig(rounds=args.rounds, mode=mode)))
        for mode in MODES:
            reports = results[mode]
            failed = [r for r in reports if r["status"] != "passed"]
            if failed:
                console.print(f"[red]{task.id} {mode}: {failed[0]['status']}: {failed[0]['reason']}")
                continue
            hms = [r["opt_stats"]["hm_speedup_patch_commit"] for r in reports]
            wall = statistics.fmean(r["wall_time_s"] for r in reports)
            flips = len({r["opt_commit"] for r in reports}) - 1
            row = {"task": task.id, "mode": mode, "hm_patch_commit": hms, "cv": cv(hms), "wall_s": wall,
                   "opt_commit": [r["opt_commit"] for r in reports]}
            rows.append(row)
            table.add_row(task.id, mode, " ".join(f"{h:.3f}" for h in hms), f"{statistics.fmean(hms):.3f}",
                          f"{100 * row['cv']:.2f}", f"{wall:.0f}", str(flips))
    console.print(table)
    for task in tasks:
        by_mode = {r["mode"]: r["cv"] for r in rows if r["task"] == task.id}
        if len(by_mode) == 2:
            ok = by_mode["interleaved"] <= 0.02 and by_mode["interleaved"] <= by_mode["gso"] / 2
            console.print(f"{task.id}: CV interleaved {100 * by_mode['interleaved']:.2f}% vs gso "
                          f"{100 * by_mode['gso']:.2f}% -> {'meets' if ok else 'MISSES'} the target")
    out = Path("outputs/bench") / f"grading-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    console.print(f"figures in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
