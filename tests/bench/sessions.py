"""Grading sessions side by side with one patch per session, in one run.

On each smoke task, 8 distinct patches: the gold (expert) patch, `weaker.patch`, the empty patch, the gold
and the weaker patch each with a harmless extra file (same code, other bytes), that extra file alone (the
base's speed), another gold variant, and a patch that does not apply. Each is graded alone (one session
per patch, as before sessions), then all together, `--repeat` times. Printed per task:

- grading time per patch, alone and together (target: together at most 0.4x);
- the gold patch's hm against the expert over the repeats of the session (target: CV at most 2%);
- the verdicts (status, opt_base, opt_commit): together equal to alone on every patch whose interval
  does not straddle a threshold in either.

Both ways use `--memory` per grading container (the suite's tasks are small; at the default 4g this
machine's memory would split the 8 patches into sessions of 3).

usage: python -m tests.bench.sessions [--tasks smoke] [--repeat 5] [--rounds 7] [--memory 1g]
"""
from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.table import Table

from harness.grader.config import GradeConfig
from harness.grader.grade import grade_patches
from harness.metrics import cv
from harness.sandbox.docker.containers import docker_client
from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.task_images import ensure_images
from harness.tasks import Task, select_tasks

console = Console()
BROKEN = """diff --git a/no/such/file.c b/no/such/file.c
--- a/no/such/file.c
+++ b/no/such/file.c
@@ -1,3 +1,3 @@
 int a;
-int b;
+int c;
 int d;
"""


def extra_file(n: int) -> str:
    """A diff that adds a file the code never reads: the same code in other bytes."""
    return (f"diff --git a/BENCH_NOTE_{n}.md b/BENCH_NOTE_{n}.md\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/BENCH_NOTE_{n}.md\n@@ -0,0 +1 @@\n+variant {n}\n")


def variants(task: Task) -> dict[str, str]:
    gold = task.expert_patch if task.expert_patch.endswith("\n") else task.expert_patch + "\n"
    weaker = (task.path / "weaker.patch").read_text() if task.path else gold
    return {"gold": gold, "weaker": weaker, "empty": "", "gold+note": gold + extra_file(1),
            "weaker+note": weaker + extra_file(2), "note only": extra_file(3), "gold+note'": gold + extra_file(4),
            "broken": BROKEN}


def verdict(report: dict) -> tuple:
    return report["status"], bool(report.get("opt_base")), bool(report.get("opt_commit"))


def unsure(report: dict) -> bool:
    return any((report.get("uncertain") or {}).values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.sessions")
    parser.add_argument("--tasks", default="smoke")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=GradeConfig.rounds)
    parser.add_argument("--memory", default="1g")
    args = parser.parse_args(argv)
    ensure_engine()
    tasks = select_tasks(args.tasks)
    images = ensure_images(docker_client(), tasks, BaseImageSpec(), progress=lambda m: console.print(f"[dim]{m}"))
    config = GradeConfig(rounds=args.rounds, memory=args.memory)
    table = Table(title=f"8 distinct patches per task, {args.rounds} rounds: alone (a session each) vs together")
    for column in ("task", "s / patch alone", "s / patch together", "ratio", "sessions", "gold hm per repeat",
                   "CV %", "verdicts equal", "differ (sure)"):
        table.add_column(column)
    worst_ratio, worst_cv, all_equal = 0.0, 0.0, True
    for task in tasks:
        named = variants(task)
        image = images[task.id].grading
        started = time.monotonic()
        alone = {name: grade_patches(task, [patch], image, config)[0] for name, patch in named.items()}
        per_alone = (time.monotonic() - started) / len(named)
        together_runs, walls = [], []
        for _ in range(args.repeat):
            started = time.monotonic()
            together_runs.append(dict(zip(named, grade_patches(task, list(named.values()), image, config))))
            walls.append((time.monotonic() - started) / len(named))
        per_together = statistics.fmean(walls)
        golds = [run["gold"]["opt_stats"]["hm_speedup_patch_commit"] for run in together_runs
                 if run["gold"]["status"] == "passed"]
        first = together_runs[0]
        differ = [name for name in named if verdict(alone[name]) != verdict(first[name])
                  and not unsure(alone[name]) and not unsure(first[name])]
        sessions = len({r["session"]["id"] for r in first.values() if "session" in r})
        ratio = per_together / per_alone
        spread = cv(golds) * 100 if len(golds) > 1 else float("nan")
        worst_ratio, worst_cv = max(worst_ratio, ratio), max(worst_cv, spread)
        all_equal = all_equal and not differ
        table.add_row(task.id, f"{per_alone:.1f}", f"{per_together:.1f}", f"{ratio:.2f}x", str(sessions),
                      " ".join(f"{g:.3f}" for g in golds), f"{spread:.2f}",
                      f"{len(named) - len(differ)}/{len(named)}", ", ".join(differ) or "-")
        console.print(f"{task.id}: {per_alone:.1f} s per patch alone, {per_together:.1f} s together ({ratio:.2f}x), "
                      f"{sessions} session(s); gold hm {' '.join(f'{g:.3f}' for g in golds)} (CV {spread:.2f}%); "
                      f"verdicts differing where sure: {', '.join(differ) or 'none'}")
        for name in named:
            console.print(f"[dim]{task.id} {name:12} alone {verdict(alone[name])}"
                          f"{' (uncertain)' if unsure(alone[name]) else ''}; together {verdict(first[name])}"
                          f"{' (uncertain)' if unsure(first[name]) else ''}")
    console.print(table)
    console.print(f"time per patch together / alone: worst {worst_ratio:.2f}x (target <= 0.4x); gold hm CV: worst "
                  f"{worst_cv:.2f}% (target <= 2%); verdicts equal where sure: {'yes' if all_equal else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
