"""`python -m runner.view RUN_DIR [--open]`: (re)write a run's HTML pages (report.html and one page per
rollout's trajectory), for a finished run or one still running; `--open` shows report.html in a browser."""
from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path

from runner.config import ConfigError


def write_pages(run_dir: Path, show: bool) -> Path:
    from runner.pages import write_run_pages
    from runner.store import RunStore

    RunStore(run_dir).load_config()  # refuses a folder that is not a run (ConfigError)
    page = write_run_pages(run_dir)
    if show and not webbrowser.open(uri := page.resolve().as_uri()):  # (False: no browser could be started)
        print(f"note: no browser could be started here: open {uri} in one (the pages are written)", file=sys.stderr)
    return page


DESCRIPTION = ("(Re)write a run's HTML pages: report.html and one page per rollout's trajectory, for a finished "
               "run or one still running.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="the run's directory (outputs/runs/<name>)")
    parser.add_argument("--open", action="store_true", help="open report.html in the default browser")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.view", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    from runner.report import report_command

    return report_command(lambda: write_pages(args.run_dir, args.open), (ConfigError,), "the pages written",
                          args.run_dir)


if __name__ == "__main__":
    sys.exit(main())
