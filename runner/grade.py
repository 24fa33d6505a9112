"""`optrunner grade RUN_DIR [--force] [--rounds R] [--mode interleaved|gso] ...` (or `python -m runner.grade`):
grade (or re-grade) an existing run and rewrite its results and reports. Stored reports are reused while the
patch and the grading settings match (runner.grading)."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.config import ConfigError

if TYPE_CHECKING:
    from runner.store import RunStore


def regrade(run_dir: Path, force: bool = False, changes: dict[str, Any] | None = None,
            sandbox_provider: str | None = None, retry_errors: bool = True, rootfs: str | None = None) -> Path:
    """Grade every finished rollout of a run that lacks a matching report; rewrite results and reports.
    `changes` are grading settings that replace the run's (rounds, mode, stat, p, gso_version);
    `sandbox_provider` and `rootfs` replace the run's `sandbox.provider` and `sandbox.rootfs` (None: the run's
    own); `retry_errors` redoes stored reports with status error (infrastructure)."""
    from runner.lock import RunLock
    from runner.store import RunStore

    store = RunStore(run_dir)
    plain = store.load_config()
    with RunLock(run_dir, "grade"):  # (a live run, or another regrade, would lose what this one rewrites)
        return _regrade(store, plain, force, changes, sandbox_provider, retry_errors, rootfs)


def _regrade(store: "RunStore", plain: dict[str, Any], force: bool, changes: dict[str, Any] | None,
             sandbox_provider: str | None, retry_errors: bool, rootfs: str | None) -> Path:
    from harness.grader.config import GradeConfig
    from harness.sandbox.providers import ensure_each, provider
    from runner.config import validate
    from runner.grading import Grader, graded
    from runner.plan import select
    from runner.report import write_reports

    conf = validate(plain)
    if changes:
        try:  # from the statistic as configured (e.g. auto), so a mode change resolves it anew
            stat = (plain.get("grading") or {}).get("stat", "auto")
            conf.grading = GradeConfig(**{**dataclasses.asdict(conf.grading), "stat": stat, **changes})
        except ValueError as err:
            raise ConfigError(f"bad grading option: {err}") from None
    if sandbox_provider is not None:  # on conf, so the reports' provenance names the provider that graded
        conf.sandbox.provider = sandbox_provider
    if rootfs is not None:
        conf.sandbox.rootfs = rootfs
    tasks = {t.id: t for t in select(conf)}
    rollouts = [store.rollout(tid, i) for tid in tasks for i in range(conf.rollouts)]
    finished = [r for r in rollouts if r is not None]
    sandboxes = provider(conf.sandbox.provider)
    sandboxes.ensure_ready(disk=conf.sandbox.disk, output_dir=store.root)
    # A task whose images cannot be made keeps its stored results as they are; the others are graded.
    needed = list({r.instance_id: tasks[r.instance_id] for r in finished}.values())
    images, skipped = ensure_each(sandboxes, needed, conf.sandbox.base_image, progress=print,
                                  base_map=dict(conf.tasks.base_map), rootfs_from=conf.sandbox.rootfs)
    order = {r.key: n for n, r in enumerate(finished)}  # (results.jsonl keeps the rollouts' order)
    kept = [r for r in store.results() if r.instance_id in skipped and r.key in order]
    finished = [r for r in finished if r.instance_id not in skipped]
    grader = Grader(store, conf.grading, images, sandboxes, force=force, retry_errors=retry_errors)
    records = []
    try:  # one timing session per task for what is not graded yet (runner.grading)
        for _task, record, report in grader.reports([(tasks[r.instance_id], r) for r in finished],
                                                    log=lambda m: print(m, flush=True)):
            records.append(graded(store, record, report))
    except KeyboardInterrupt:
        # Each new grading report is on disk already (the next run reuses it); results.jsonl stays as it was.
        write_reports(store, conf, list(tasks), images, sandboxes, skipped)
        raise
    store.rewrite_results(sorted(kept + records, key=lambda r: order[r.key]))
    write_reports(store, conf, list(tasks), images, sandboxes, skipped)
    return store.report_md


DESCRIPTION = "Grade or re-grade a run: every finished rollout without a matching grading report."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.__main__ import provider_args
    from harness.grader.config import add_grading_arguments

    parser.add_argument("run_dir", type=Path, help="the run's directory (outputs/runs/<name>)")
    parser.add_argument("--force", action="store_true", help="re-time every patch, ignoring stored reports")
    parser.add_argument("--no-retry-errors", dest="retry_errors", action="store_false",
                        help="keep stored reports with status error (by default they are redone)")
    add_grading_arguments(parser)  # each left out keeps the run's own setting
    provider_args(parser, default=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.grade", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    from harness.grader.config import grading_changes
    from harness.sandbox.interface import SandboxError
    from harness.tasks import TaskError
    from runner.report import report_command

    return report_command(lambda: regrade(args.run_dir, args.force, grading_changes(args), args.provider,
                                          getattr(args, "retry_errors", True), getattr(args, "rootfs", None)),
                          (ConfigError, TaskError, SandboxError), "the gradings finished", args.run_dir)


if __name__ == "__main__":
    sys.exit(main())
