"""The harness commands: list tasks, build images, validate tasks, grade predictions, clean up, set up Docker.

`python -m harness X`, and `optrunner tasks|build|validate|cleanup|setup` and `optrunner grade --predictions`.

Every expected failure (bad task, bad selector, no Docker, failed build) ends with one line on
stderr and a non-zero exit; tracebacks are for bugs only.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness import signals
from harness.atomic import write_problem
from harness.grader.config import add_grading_arguments, grading_changes
from harness.grader.predictions import PredictionsError
from harness.sandbox.interface import DEFAULT_BASE_IMAGE as BASE_IMAGE
from harness.sandbox.interface import ImageBuildError, SandboxError, TaskImages
from harness.sandbox.providers import DEFAULT_PROVIDER, PROVIDERS, SandboxProvider, provider
from harness.tasks import SOURCES, Task, TaskError, select_tasks
from harness.tasks.folder import LISTING
from harness.tasks.task import IMAGE_POLICIES, NETWORK_POLICIES

if TYPE_CHECKING:
    from harness.grader.config import GradeConfig

console = Console(stderr=True, highlight=False, soft_wrap=True)  # log lines, never re-wrapped


def tasks_args(parser: argparse.ArgumentParser, default: str = "suite") -> None:
    parser.add_argument("--tasks", default=None,
                        help="suite source: 'suite', 'smoke', comma-separated task ids, or a path to a folder of "
                             f"tasks (default: {default}); gso source: the hub id or a local file or folder of "
                             "rows (default: gso-bench/gso)")
    parser.add_argument("--source", choices=sorted(SOURCES), default=None, help="the task source (default suite)")
    gso = parser.add_argument_group("gso source")
    gso.add_argument("--split", default="test", help="the dataset's split (default test)")
    gso.add_argument("--repo-mirror", default=None, help="a folder of bare repositories owner__name.git (offline)")
    gso.add_argument("--image", choices=IMAGE_POLICIES, default="auto",
                     help="GSO's image when present or pullable, else built from the row (auto); only one of them")
    gso.add_argument("--network", choices=NETWORK_POLICIES, default="none", help="what graded tests may reach")


def _select(args: argparse.Namespace) -> list[Task]:
    """The tasks the arguments name (a source's options go to the source that takes them)."""
    source = args.source or "suite"
    selector = args.tasks if args.tasks is not None else ("suite" if source == "suite" else "")
    if source == "harbor" and not selector.strip():
        raise TaskError("--source harbor needs a folder: --tasks DIR (Harbor task directories, or one)")
    return select_tasks(selector, source, split=args.split, repo_mirror=args.repo_mirror, image=args.image,
                        network=args.network)


def cmd_tasks(args: argparse.Namespace) -> int:
    if args.words:
        return _init_task(args.words, args.dir)
    listing = LISTING.set(True)  # a list shows the tasks this machine cannot run too (their GPUs say why)
    try:
        tasks = _select(args)
    finally:
        LISTING.reset(listing)
    if args.json:
        print(json.dumps([{"id": t.id, "repo": t.repo, "api": t.api, "languages": list(t.languages),
                           "tags": list(t.tags), "workloads": len(t.test_names), "gpus": t.gpus,
                           "path": str(t.path or "")} for t in tasks], indent=2))
        return 0
    table = Table(title=f"{len(tasks)} tasks")
    for column in ("id", "repo", "api", "languages", "workloads", "gpus", "tags"):
        table.add_column(column)
    for t in tasks:
        table.add_row(t.id, t.repo, t.api, ",".join(t.languages), str(len(t.test_names)), str(t.gpus),
                      ",".join(t.tags))
    Console().print(table)
    return 0


def _init_task(words: list[str], parent: Path) -> int:
    if len(words) != 2 or words[0] != "init":
        raise TaskError(f"tasks takes flags, or `init NAME` to write a new task folder; got {' '.join(words)!r}")
    from harness.tasks.template import init_task

    folder = init_task(words[1], parent)
    print(f"wrote {folder}: a working task (a slow function, its spec, one hidden test, the expert's patch); "
          f"check it with: optrunner validate --tasks {folder}")
    return 0


def provider_args(parser: argparse.ArgumentParser, default: str | None = DEFAULT_PROVIDER, rootfs: bool = True) -> None:
    """`--provider`: what starts the sandboxes (harness.sandbox.providers); None as `default` means the run's own
    (`optrunner grade RUN_DIR`). `--rootfs` (with `rootfs`): image or host, as `sandbox.rootfs`."""
    said = default or "the run's own sandbox.provider; predictions files: " + DEFAULT_PROVIDER
    parser.add_argument("--provider", choices=list(PROVIDERS), default=default,
                        help=f"the sandbox provider (default: {said}); bwrap is bubblewrap, the 'bwrap' extra; "
                             "unsandboxed: plain processes of this host, no isolation (with --rootfs host)")
    if rootfs:
        parser.add_argument("--rootfs", choices=("image", "host"), default=None,
                            help="what a sandbox's system is (sandbox.rootfs): the task's image (default"
                                 + ("" if default else ": the run's own") + ") or, with --provider bwrap or "
                                 "unsandboxed, this host's own (a machine without Docker)")


def _rootfs(args: argparse.Namespace) -> str:
    return getattr(args, "rootfs", None) or "image"


def _provider(args: argparse.Namespace) -> SandboxProvider:
    # None: `optrunner grade --predictions` without --provider (its default is a run's own, for RUN_DIR)
    return provider(args.provider or DEFAULT_PROVIDER)


def _sandboxes(args: argparse.Namespace) -> SandboxProvider:
    sandboxes = _provider(args)
    sandboxes.ensure_ready()
    return sandboxes


def _build_log(msg: str) -> None:
    console.print(f"[dim]build[/] {escape(msg)}")


def cmd_build(args: argparse.Namespace) -> int:
    tasks = _select(args)
    tags = _sandboxes(args).ensure_images(tasks, args.base_image, progress=_build_log, rootfs_from=_rootfs(args))
    for task_id, images in tags.items():
        grading = f"\t(grading: {images.grading})" if images.grading != images.agent else ""
        print(f"{task_id}\t{images.agent}{grading}")
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    sandboxes = _sandboxes(args)
    removed = sandboxes.cleanup("all" if args.all else "orphans")
    which = "labelled 'optrunner'" if args.all else "left behind by processes that are gone"
    console.print(f"removed {removed} {args.provider} sandbox(es) {which}")
    # rollout checkpoints (runner/checkpoints.py) nothing names any more
    gone = sandboxes.cleanup_checkpoints("all" if args.all else "orphans")
    console.print(f"removed {gone} checkpoint(s)" + ("" if args.all else " no checkpoint file needs"))
    return 0


def grading_args(parser: argparse.ArgumentParser) -> None:
    add_grading_arguments(parser)
    parser.add_argument("--out", type=Path, default=None, help="output directory (default outputs/<command>-<time>)")


def _grading_setup(args: argparse.Namespace, tasks: list[Task], command: str
                   ) -> tuple[GradeConfig, SandboxProvider, dict[str, TaskImages], Path, dict[str, Any]]:
    """The grading settings, the sandbox provider, the tasks' images, the output folder and the provenance
    summary.json records."""
    from harness import provenance
    from harness.grader.config import GradeConfig
    try:
        config = GradeConfig(**grading_changes(args))
    except ValueError as err:
        raise TaskError(f"bad grading option: {err}") from None
    sandboxes = _sandboxes(args)
    images = sandboxes.ensure_images(tasks, BASE_IMAGE, progress=_build_log, rootfs_from=_rootfs(args))
    run_id = getattr(args, "run_id", None) or time.strftime("%Y%m%d-%H%M%S")
    out = args.out or Path("outputs") / f"{command}-{run_id}"
    return config, sandboxes, images, out, provenance.collect(sandboxes, images, config)


def _fmt_interval(values: list[float] | None) -> str:
    return f"[{values[0]:.3f}, {values[1]:.3f}]" if values else "-"


def cmd_validate(args: argparse.Namespace) -> int:
    from harness.grader.batch import validate
    tasks = _select(args)
    if not tasks:
        raise TaskError(f"--tasks {args.tasks}: matches no tasks")
    if args.repeat < 1:
        raise TaskError("--repeat must be at least 1")
    config, sandboxes, images, out, provenance = _grading_setup(args, tasks, "validate")
    results = validate(tasks, images, config, args.repeat, out, log=lambda m: console.print(f"[dim]{m}"),
                       provenance=provenance, sandboxes=sandboxes)
    table = Table(title=f"validation: gold (expert) and empty patch, {config.rounds} rounds, {config.mode}, "
                        f"repeat {args.repeat}")
    for column in ("task", "expert hm vs base", "gold hm vs expert", "95% interval", "gold opt_base/opt_commit",
                   "uncertain", "empty", "flips"):
        table.add_column(column)
    for res in results:
        for i, gold in enumerate(res.gold):
            stats = gold.get("opt_stats") or {}
            intervals = gold.get("intervals") or {}
            table.add_row(
                res.task if i == 0 else "", f"{stats.get('hm_speedup_commit_base', 0):.2f}" if stats else "-",
                f"{stats.get('hm_speedup_patch_commit', 0):.3f}" if stats else gold["status"],
                _fmt_interval(intervals.get("hm_speedup_patch_commit")),
                f"{gold['opt_base']}/{gold['opt_commit']}"
                + ("" if gold["status"] == "passed" else f" ({gold['status']})"),
                ",".join(k for k, v in (gold.get("uncertain") or {}).items() if v) or "-",
                res.empty[i]["status"] + ("" if not res.empty[i]["opt_commit"] else " OPT?!"),
                str(res.flips) if i == 0 else "")
    Console().print(table)
    bad = [r.task for r in results if not (r.gold_passes and r.empty_fails)]
    flips = sum(r.flips for r in results)
    print(f"{len(results) - len(bad)}/{len(results)} tasks valid, {flips} verdict flips; reports in {out}"
          + _unsandboxed(provenance))
    if bad:
        print(f"invalid: {', '.join(bad)}", file=sys.stderr)
    return 0 if not bad else 1


def cmd_grade(args: argparse.Namespace) -> int:
    from harness.grader.batch import grade_predictions
    from harness.grader.predictions import load_predictions, natural_sort_key, rollout_numbers
    if args.dataset_name is not None:  # GSO's and SWE-bench's name for the dataset: a GSO source
        if args.tasks is not None:
            raise TaskError("--dataset_name and --tasks name the same thing: give one of them")
        args.tasks, args.source = args.dataset_name, args.source or "gso"
    tasks = _select(args)
    if not tasks:
        raise TaskError(f"--tasks {args.tasks}: matches no tasks")
    known = {t.id for t in tasks}
    files = sorted(args.predictions, key=lambda p: natural_sort_key(str(p))) if args.gso_compat else args.predictions
    numbers = rollout_numbers(files)
    if len(files) > 1:
        console.print("rollouts: " + ", ".join(f"{n} <- {f}" for n, f in sorted(zip(numbers, map(str, files)))))
    warn = lambda m: console.print(f"[yellow]warning:[/] {m}")  # noqa: E731
    # every file is checked before anything is graded; the rollouts are graded in their numbers' order
    ordered = sorted(zip(numbers, files))
    rollouts = [load_predictions(path, known, args.gso_compat, warn) for _, path in ordered]
    wanted = sorted({p.instance_id for preds in rollouts for p in preds})
    graded_tasks = [t for t in tasks if t.id in wanted] if args.only_predicted else tasks
    config, sandboxes, images, out, provenance = _grading_setup(args, [t for t in tasks if t.id in wanted], "grade")
    summary = grade_predictions(rollouts, graded_tasks, images, config, out,
                                log=lambda m: console.print(f"[dim]{m}"), provenance=provenance,
                                numbers=[n for n, _ in ordered], sandboxes=sandboxes)
    k = str(summary["rollouts"])
    line = f"Opt@1 {summary['opt_at_k']['1']:.3f}"
    if k != "1":
        line += f"  Opt@{k} {summary['opt_at_k'][k]:.3f} (first {k}: {summary['opt_at_k_first'][k]:.3f})"
    print(f"{line}  over {summary['tasks']} tasks; statuses {summary['statuses']}; reports in {out}"
          + _unsandboxed(provenance))
    return 0


def _unsandboxed(provenance: dict[str, Any]) -> str:
    """What a summary line adds when nothing isolated the graded code (the provenance the reports record)."""
    return "" if provenance.get("isolated") is not False else \
        f" (unsandboxed: plain processes of this host, sandbox.provider={provenance.get('sandbox_provider')})"


def predictions_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """`grade`'s predictions options, with GSO's and SWE-bench's flag names as aliases."""
    parser.add_argument("--predictions", "--predictions_path", type=Path, nargs="+", required=required,
                        help="JSONL (GSO's output.gso.jsonl), a JSON list, or a JSON object keyed by instance id, of "
                             "{instance_id, model_patch, model_name_or_path}; one file per rollout (a file named "
                             "rollout_<N> is rollout N; others are numbered in the order given)")
    parser.add_argument("--dataset_name", default=None,
                        help="GSO's dataset (hub id, or a local file or folder of rows): the same as --source gso "
                             "--tasks NAME")
    parser.add_argument("--run_id", default=None, help="names the output directory: outputs/grade-<run_id>")
    parser.add_argument("--gso-compat", action="store_true",
                        help="GSO's leniency: drop predictions for unknown ids (warning), the last duplicate wins, and "
                             "files without a rollout_<N> name in natural order (run_2 before run_10)")
    parser.add_argument("--only-predicted", action="store_true",
                        help="summarize over the predicted tasks only (default: every selected task; missing = failed)")


def cmd_setup(args: argparse.Namespace) -> int:
    """The one command (besides `make`) that installs or starts anything: the sandbox engine and the tools its
    images need, then the images of `--tasks` (unless --no-images)."""
    sandboxes = _provider(args)
    sandboxes.setup(progress=lambda m: console.print(f"[dim]setup[/] {escape(m)}"))
    if args.no_images:
        return 0
    return cmd_build(args)


COMMANDS = ("tasks", "build", "validate", "grade", "cleanup", "setup")
SANDBOX_COMMANDS = ("build", "validate", "grade", "cleanup", "setup")  # those that take --provider


def add_commands(sub: "argparse._SubParsersAction[argparse.ArgumentParser]",
                 names: tuple[str, ...] = COMMANDS) -> None:
    """This module's subcommands (`python -m harness X`, and `optrunner X` for those `names`)."""
    helps = {"tasks": "list tasks", "build": "build (or reuse) the base image and the task images",
             "validate": "grade each task's expert patch (must be opt_commit) and the empty patch",
             "grade": "grade GSO predictions files (one file per rollout)",
             "cleanup": "remove sandboxes (containers) left behind by crashed or killed runs",
             "setup": "install and start the sandbox engine (Docker: Debian, as root) and build the task images"}
    for name in names:
        p = sub.add_parser(name, help=helps[name], description=helps[name][0].upper() + helps[name][1:] + ".")
        if name in ("tasks", "build", "validate", "grade"):
            tasks_args(p)
        if name in ("build", "setup"):
            if name == "setup":
                p.add_argument("--tasks", default="smoke", help="the tasks whose images to build (default smoke)")
                p.add_argument("--no-images", action="store_true", help="only the engine and its tools")
                p.set_defaults(source=None, split="test", repo_mirror=None, image="auto", network="none")
            p.add_argument("--base-image", default=BASE_IMAGE,
                           help="registry tag for the base image; debootstrap is used when it cannot be pulled")
        if name in ("validate", "grade"):
            grading_args(p)
        if name in SANDBOX_COMMANDS:
            provider_args(p, rootfs=name != "cleanup")
        if name == "tasks":
            p.add_argument("words", nargs="*", metavar="init NAME",
                           help="write a new task folder NAME (in --dir), working as written: edit it, then "
                                "optrunner validate --tasks DIR/NAME")
            p.add_argument("--dir", type=Path, default=Path("."), help="where `init` writes (default: here)")
            p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
        if name == "validate":
            p.add_argument("--repeat", type=int, default=1, help="grade everything N times and count verdict flips")
        if name == "grade":
            predictions_args(p)
        if name == "cleanup":
            p.add_argument("--all", action="store_true", help="remove every container labelled 'optrunner', "
                           "also those of runs still going")
        p.set_defaults(func=globals()[f"cmd_{name}"])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__.splitlines()[0])
    add_commands(parser.add_subparsers(dest="command", required=True))
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the parsed command: every expected failure is one line and a non-zero exit."""
    handler: Callable[[argparse.Namespace], int] = args.func
    restore = signals.install()  # SIGTERM and SIGHUP stop as Ctrl-C does
    try:
        return handler(args)
    except ImageBuildError as err:
        # First line says what failed; the output tail follows because a build log is the useful part.
        print(f"error: {err}", file=sys.stderr)
        return 1
    except (TaskError, SandboxError, PredictionsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        console.print(f"interrupted ({exc or 'Ctrl-C'}): what finished is kept")
        return signals.exit_code(exc)
    except OSError as err:  # a full disk or a read-only output location
        if (problem := write_problem(err, example="--out DIR")) is None:
            raise
        print(f"error: {problem}; what finished is kept", file=sys.stderr)
        return 2
    finally:
        restore()


def main(argv: list[str] | None = None) -> int:
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
