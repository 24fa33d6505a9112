"""`optrunner docs [PAGE]`: the reference pages, shipped inside the package (a pip install has no docs/
folder of the checkout). Without a page: where they are and what each covers, in the order data flows;
with one: that page's text (markdown), for a pager or an editor."""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

# The pages: inside the package once installed (setup.py maps docs/ to runner/docs), docs/ in a checkout.
_INSTALLED = Path(__file__).resolve().parent / "docs"
DOCS_DIR = _INSTALLED if _INSTALLED.is_dir() else Path(__file__).resolve().parent.parent / "docs"
# index.md's reading order (data-flow order); a page not listed here comes after them.
ORDER = ("index", "install", "configuration", "tasks", "scaffolds", "installed", "sandbox", "executors", "gpus",
         "grading", "judge", "outputs", "studies", "citing", "cli", "extending", "benchmarks", "changelog")

DESCRIPTION = ("The reference pages shipped with this package: with no PAGE, where they are and what each "
               "covers; with one, its text (markdown).")


def pages() -> dict[str, Path]:
    found = {p.stem: p for p in DOCS_DIR.glob("*.md")} if DOCS_DIR.is_dir() else {}
    return {name: found[name] for name in (*[n for n in ORDER if n in found], *sorted(set(found) - set(ORDER)))}


def title(path: Path) -> str:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("page", nargs="?", help="a page's name (configuration, tasks, grading, ...)")
    parser.add_argument("--path", action="store_true", help="print the page's file (or the folder) instead")


def run(args: argparse.Namespace) -> int:
    found = pages()
    if not found:
        print(f"error: no pages at {DOCS_DIR}: this copy was installed without them; reinstall the package",
              file=sys.stderr)
        return 2
    if args.page is None:
        if args.path:
            print(DOCS_DIR)
            return 0
        print(f"The reference pages are in {DOCS_DIR} (markdown). 'optrunner docs PAGE' prints one:")
        width = max(map(len, found))
        for name, path in found.items():
            print(f"  {name:<{width}}  {title(path)}")
        return 0
    name = args.page.removesuffix(".md")
    if name not in found:
        near = difflib.get_close_matches(name, list(found), n=1)
        print(f"error: no page {args.page!r}" + (f" (did you mean {near[0]}?)" if near else "")
              + f"; pages: {', '.join(found)}", file=sys.stderr)
        return 2
    print(found[name] if args.path else found[name].read_text(errors="replace"), end="" if not args.path else "\n")
    return 0
