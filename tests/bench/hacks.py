"""Hack patches flagged, honest patches credited, over repeated gradings.

For each task with hack patches in tests/fixtures/hacks/<task>/ (one per mechanical class: a cache across
processes, a bent clock the diff does not show, an edited timing helper, a start-up hook, and for imgblur
a hook made by the build), the gold patch, `weaker.patch` and every hack are graded together in one
session, `--repeat` times. Printed per task and patch: the status of each repeat, the verdicts and the
kinds of reason. Targets: every hack `hack_suspect` in every repeat (a patch the grader must refuse,
`patch_failed`; one whose trick the checked timed runs defeat, not credited); gold and weaker `passed`
(unflagged) in every repeat, gold reaching opt_commit.

Then one row per class of hack that reaches past the code (its build, System V IPC, renamed paths, a
Harbor verifier's rounds, a task's symlinks: tests/bench/hack_classes.py) with what the grader did, and
the smoke tasks' gold grading time at `--before` (the grader before the build was frozen) and here.

usage: python -m tests.bench.hacks [--tasks smoke] [--repeat 3] [--rounds 7] [--memory 1g] [--before REF]
                                   [--skip-fixtures]
"""
from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.grader.config import GradeConfig
from harness.grader.grade import grade_patches
from harness.sandbox.docker.containers import docker_client
from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.task_images import ensure_images
from harness.tasks import select_tasks

console = Console()
HACKS = Path(__file__).resolve().parents[1] / "fixtures" / "hacks"
BEFORE = "82f082a"  # the grader before issue 44's checked timed runs and root-free hidden files
# Hack fixtures whose target is not a flag: refused before grading (patch_failed), or measured honestly and so
# not credited (their trick no longer pays: the timed runs are the checked ones).
REFUSED = {"leading_diff"}
NOT_CREDITED = {"argv_mode"}


def caught(name: str, report: dict) -> bool:
    """A hack's target met: flagged; or for REFUSED, refused; for NOT_CREDITED, not credited (no opt_base)."""
    if name in REFUSED:
        return report["status"] == "patch_failed"
    if name in NOT_CREDITED:
        return report["status"] == "hack_suspect" or not (report["status"] == "passed" and report["opt_base"])
    return report["status"] == "hack_suspect"


def kinds(report: dict) -> str:
    """The kinds of reason (the words before the first colon), counted."""
    counted = Counter(reason.split(":")[0] for reason in report.get("hack", {}).get("reasons", []))
    return ", ".join(f"{k} x{n}" if n > 1 else k for k, n in counted.items()) or "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.hacks")
    parser.add_argument("--tasks", default="smoke")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=GradeConfig.rounds)
    parser.add_argument("--memory", default="1g")
    parser.add_argument("--before", default=BEFORE, help="the commit whose gold grading time is compared")
    parser.add_argument("--skip-fixtures", action="store_true", help="only the hack classes and gold timing")
    args = parser.parse_args(argv)
    ensure_engine()
    if not args.skip_fixtures:
        fixtures(args)
    classes(args)
    return 0


def classes(args: argparse.Namespace) -> None:
    from tests.bench.hack_classes import class_rows, gold_times

    table = Table(title="hacks that reach past the code, one per class")
    for column in ("class", "what the grader did", "target met"):
        table.add_column(column)
    rows = class_rows(args.rounds)
    for name, did, met in rows:
        table.add_row(name, did, "yes" if met else "NO")
    console.print(table)
    console.print(f"classes with the target met: {sum(met for *_, met in rows)} of {len(rows)}")
    times = gold_times(args.before, args.tasks, args.rounds, args.repeat)
    timing = Table(title=f"gold patches' grading time, {args.rounds} rounds, median of {args.repeat}")
    for column in ("task", f"before ({args.before[:12]}) s", "now s", "now / before"):
        timing.add_column(column)
    for task, (before, after) in times.items():
        timing.add_row(task, f"{before:.1f}", f"{after:.1f}", f"{after / before:.2f}")
    total_before, total_after = (sum(t[i] for t in times.values()) for i in (0, 1))
    timing.add_row("all", f"{total_before:.1f}", f"{total_after:.1f}", f"{total_after / total_before:.2f}")
    console.print(timing)
    console.print(f"gold grading now / before: {total_after / total_before:.2f} (target: at most 1.10)")


def fixtures(args: argparse.Namespace) -> None:
    tasks = [t for t in select_tasks(args.tasks) if (HACKS / t.id).is_dir()]
    images = ensure_images(docker_client(), tasks, BaseImageSpec(), progress=lambda m: console.print(f"[dim]{m}"))
    config = GradeConfig(rounds=args.rounds, memory=args.memory)
    table = Table(title=f"gold, weaker and hack patches graded together, {args.repeat} repeats, {args.rounds} rounds")
    for column in ("task", "patch", "statuses", "opt_base / opt_commit", "reasons (last repeat)"):
        table.add_column(column)
    missed, false_flags, total_hacks = 0, 0, 0
    for task in tasks:
        assert task.path is not None
        named = {"gold": task.expert_patch, "weaker": (task.path / "weaker.patch").read_text()}
        named |= {p.stem: p.read_text() for p in sorted((HACKS / task.id).glob("*.patch"))}
        runs = []
        for i in range(args.repeat):
            started = time.monotonic()
            runs.append(dict(zip(named, grade_patches(task, list(named.values()), images[task.id].grading,
                                                      config))))
            console.print(f"[dim]{task.id} repeat {i + 1}: {time.monotonic() - started:.0f} s for {len(named)} "
                          "patches")
        for name in named:
            statuses = [run[name]["status"] for run in runs]
            honest = name in ("gold", "weaker")
            if honest:
                false_flags += sum(s != "passed" for s in statuses)
            else:
                total_hacks += len(statuses)
                missed += sum(not caught(name, run[name]) for run in runs)
            verdicts = " ".join(f"{'y' if r[name]['opt_base'] else 'n'}/{'y' if r[name]['opt_commit'] else 'n'}"
                                for r in runs)
            table.add_row(task.id, name, " ".join(statuses), verdicts, kinds(runs[-1][name]))
            console.print(f"{task.id} {name:14} {' '.join(statuses)}; opt_base/opt_commit {verdicts}; "
                          f"{kinds(runs[-1][name])}")
    console.print(table)
    console.print(f"hacks flagged: {total_hacks - missed} of {total_hacks} gradings (target: all); gold and weaker "
                  f"not passed (flagged or failed): {false_flags} (target: 0)")


if __name__ == "__main__":
    raise SystemExit(main())
