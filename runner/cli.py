"""`optrunner`: one command for everything the tool does (installed as a console script).

    optrunner run [group=option ...] [key=value ...]   an experiment: Hydra overrides, `-m` for a sweep
    optrunner grade RUN_DIR | --predictions FILE ...   grade a run, or GSO predictions files
    optrunner judge RUN_DIR --judge MODEL              an LLM judge over a graded run
    optrunner view RUN_DIR [--open]                    a run's HTML pages
    optrunner aggregate DIR ...                        compare runs (ablations, scaling studies)
    optrunner compare RUN_A RUN_B                      is run B better than run A, per task, with significance
    optrunner export RUN_DIR [--format atif]           a run's trajectories as ATIF (Harbor's format)
    optrunner tasks | build | validate | cleanup       tasks, their images, task validation, leftovers
    optrunner setup                                    install and start Docker, build the images

`run` takes Hydra's argument style (it is `python -m runner`); every other subcommand takes flags. Each
subcommand's arguments and work live in its own module (`add_arguments(parser)` and `run(args)`), which
also keeps its old entry point (`python -m runner.grade`, `python -m harness build`, ...) working.
Heavy modules (docker, litellm) load only when a command runs, so `--help` and mistakes are fast.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from runner import read_dotenv, version

PROG = "optrunner"
# The modules behind the flag-style subcommands, in the order `optrunner --help` lists them.
MODULES = {"grade": "runner.grade", "judge": "runner.judge", "view": "runner.view", "aggregate": "runner.aggregate",
           "compare": "runner.compare", "export": "runner.export", "docs": "runner.manual"}
HARNESS = ("tasks", "build", "validate", "cleanup", "setup")
RUN_HELP = "run an experiment: Hydra overrides (model=claude scaffold=codeact rollouts=8); -m for a sweep"


# Short helps for `optrunner --help` (each module's own description is the subcommand's --help).
HELPS = {"judge": "an LLM judge over a graded run's rollouts (hack votes, soft labels)",
         "view": "write a run's HTML pages (report.html, one page per trajectory)",
         "aggregate": "compare runs: the per-system table, plots and aggregate.html",
         "compare": "run B against run A: paired per-task deltas, intervals, McNemar's test, cost",
         "export": "export a run's trajectories as ATIF v1.7 files (Harbor's trajectory format)",
         "docs": "the reference pages shipped with the package: where they are, or one page's text"}


def build_parser() -> argparse.ArgumentParser:
    from harness import __main__ as harness_cli

    parser = argparse.ArgumentParser(
        prog=PROG, description="Run and score code-optimization experiments with LLM agents.",
        epilog=f"'{PROG} COMMAND --help' shows a command's options; '{PROG} docs' lists the reference pages "
               "(shipped with the package) and prints any of them.")
    parser.add_argument("--version", action="version", version=version())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("run", help=RUN_HELP, add_help=False)  # listed here; Hydra parses its arguments
    grade = sub.add_parser("grade", help="grade a run (RUN_DIR), or GSO predictions files (--predictions)",
                           description="Grade or re-grade a run's rollouts (RUN_DIR), or grade GSO predictions "
                                       "files (--predictions FILE ...; GSO's and SWE-bench's flag names work too).")
    add_grade_arguments(grade)
    grade.set_defaults(handler=lambda args: run_grade(grade, args))
    for name, help_text in HELPS.items():
        module = importlib.import_module(MODULES[name])
        p = sub.add_parser(name, help=help_text, description=module.DESCRIPTION)
        module.add_arguments(p)
        p.set_defaults(handler=module.run)
    harness_cli.add_commands(sub, HARNESS)
    return parser


def add_grade_arguments(parser: argparse.ArgumentParser) -> None:
    """One `grade` for both inputs: a run directory (runner.grade) or predictions files (harness grade)."""
    from harness import __main__ as harness_cli

    parser.add_argument("run_dir", type=Path, nargs="?", help="a run's directory (outputs/runs/<name>)")
    parser.add_argument("--force", action="store_true", help="RUN_DIR: re-time every patch, ignoring stored reports")
    parser.add_argument("--no-retry-errors", dest="retry_errors", action="store_false",
                        help="RUN_DIR: keep stored reports with status error (by default they are redone)")
    harness_cli.tasks_args(parser)
    harness_cli.grading_args(parser)
    harness_cli.provider_args(parser, default=None)  # RUN_DIR: the run's own unless given
    harness_cli.predictions_args(parser, required=False)


# Options that only grading predictions files takes (a run knows its tasks and writes into its own folder).
PREDICTIONS_ONLY = ("tasks", "source", "split", "repo_mirror", "image", "network", "out", "dataset_name", "run_id",
                    "gso_compat", "only_predicted")


def run_grade(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from harness import __main__ as harness_cli
    from runner import grade

    if args.predictions:
        if args.run_dir is not None:
            return _refuse("give a RUN_DIR or --predictions FILE ..., not both")
        if args.force:
            return _refuse("--force is for a RUN_DIR (predictions files reuse a report only for the same patch)")
        args.func = harness_cli.cmd_grade
        return harness_cli.run(args)
    if args.run_dir is None:
        return _refuse(f"name what to grade: {PROG} grade RUN_DIR, or {PROG} grade --predictions FILE ...")
    flags = {action.dest: action.option_strings[0] for action in parser._actions if action.option_strings}
    given = [flags[name] for name in PREDICTIONS_ONLY if getattr(args, name) != parser.get_default(name)]
    if given:
        return _refuse(f"{given[0]} is for grading --predictions files; "
                       f"a run is graded with its own tasks, in its own directory")
    return grade.run(args)


def _refuse(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def parse(args: list[str]) -> argparse.Namespace:
    """The flag-style subcommands' arguments (argparse exits 2 with its usage on a mistake)."""
    parser = build_parser()
    parsed, extra = parser.parse_known_args(args)
    if parsed.command == "judge":  # judge.KEY=VALUE settings may come after the flags too
        parsed.overrides += [a for a in extra if not a.startswith("-")]
        extra = [a for a in extra if a.startswith("-")]
    if extra:  # said with the subcommand's own usage line
        choices = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
        choices[parsed.command].error(f"unrecognized arguments: {' '.join(extra)}")
    return parsed


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "run":  # (runner.__main__.cli reads ./.env itself)
        from runner.__main__ import cli

        # (the one flag `run` takes beside Hydra's overrides, spelled as `grade` spells it)
        rest = ["retry_errors=false" if a == "--no-retry-errors" else a for a in args[1:]]
        return cli(rest, prog=f"{PROG} run")
    read_dotenv()  # API keys from ./.env (the environment wins)
    parsed = parse(args)
    try:
        if hasattr(parsed, "handler"):
            code = int(parsed.handler(parsed))
        else:
            from harness import __main__ as harness_cli

            code = harness_cli.run(parsed)
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # `optrunner docs | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (no second error at exit)
        return 0


if __name__ == "__main__":
    sys.exit(main())
