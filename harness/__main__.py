"""`python -m harness`: list tasks, build their images, clean up containers.

Every expected failure (bad task, bad selector, no Docker, failed build) ends with one line on
stderr and a non-zero exit; tracebacks are for bugs only.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

from rich.console import Console
from rich.table import Table

from harness.docker_engine import DockerUnavailable, ensure_engine
from harness.tasks import TaskError, select_tasks

console = Console(stderr=True, highlight=False, soft_wrap=True)  # log lines, never re-wrapped


def _tasks_arg(parser: argparse.ArgumentParser, default: str = "suite") -> None:
    parser.add_argument("--tasks", default=default,
                        help="'suite', 'smoke', comma-separated task ids, or a path to a folder of tasks "
                             f"(default: {default})")


def cmd_tasks(args: argparse.Namespace) -> int:
    tasks = select_tasks(args.tasks)
    if args.json:
        print(json.dumps([{"id": t.id, "repo": t.repo, "api": t.api, "languages": list(t.languages),
                           "tags": list(t.tags), "workloads": len(t.test_files), "path": str(t.path)}
                          for t in tasks], indent=2))
        return 0
    table = Table(title=f"{len(tasks)} tasks")
    for column in ("id", "repo", "api", "languages", "workloads", "tags"):
        table.add_column(column)
    for t in tasks:
        table.add_row(t.id, t.repo, t.api, ",".join(t.languages), str(len(t.test_files)), ",".join(t.tags))
    Console().print(table)
    return 0


def _docker():
    ensure_engine()
    from harness.sandbox import docker_client
    return docker_client()


def cmd_build(args: argparse.Namespace) -> int:
    from harness.images import BaseImageSpec, ensure_images
    tasks = select_tasks(args.tasks)
    tags = ensure_images(_docker(), tasks, BaseImageSpec(base=args.base_image),
                         progress=lambda msg: console.print(f"[dim]build[/] {msg}"))
    for task_id, tag in tags.items():
        print(f"{task_id}\t{tag}")
    return 0


def cmd_cleanup(_args: argparse.Namespace) -> int:
    from harness.sandbox import remove_labelled
    removed = remove_labelled(_docker())
    console.print(f"removed {removed} container(s) labelled 'optrunner'")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("tasks", help="list tasks")
    _tasks_arg(p)
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.set_defaults(func=cmd_tasks)
    p = sub.add_parser("build", help="build (or reuse) the base image and the task images")
    _tasks_arg(p)
    p.add_argument("--base-image", default="debian:bookworm-slim",
                   help="registry tag for the base image; debootstrap is used when it cannot be pulled")
    p.set_defaults(func=cmd_build)
    p = sub.add_parser("cleanup", help="remove every container labelled 'optrunner' (e.g. after a crash)")
    p.set_defaults(func=cmd_cleanup)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.func
    from harness.images import ImageBuildError
    try:
        return handler(args)
    except (TaskError, DockerUnavailable) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except ImageBuildError as err:
        # First line says what failed; the output tail follows because a build log is the useful part.
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
