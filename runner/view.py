"""`python -m runner.view RUN_DIR [--open]`: (re)write a run's HTML pages (report.html and one page per
rollout's trajectory), for a finished run or one still running; `--open` shows report.html in a browser."""
from __future__ import annotations

import argparse
import sys
import time
import webbrowser
from pathlib import Path

from harness.atomic import check_writable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.view", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--open", action="store_true", help="open report.html in the default browser")
    args = parser.parse_args(argv)
    run_dir: Path = args.run_dir
    if not (run_dir / "config.yaml").is_file():
        print(f"error: {run_dir} is not a run directory (no config.yaml)", file=sys.stderr)
        return 2
    if (problem := check_writable(run_dir, "a writable copy of the run directory")) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from runner.pages import write_run_pages

    started = time.perf_counter()
    page = write_run_pages(run_dir)
    print(f"pages: {page} ({time.perf_counter() - started:.1f} s)")
    if args.open:
        webbrowser.open(page.resolve().as_uri())
    return 0


if __name__ == "__main__":
    sys.exit(main())
