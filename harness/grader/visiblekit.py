"""Times the workload the agent saw (the task's spec script), run in a state's container like a hidden test.

The grader copies the task's spec script in as `visible_spec.py` beside this file and runs
    python visiblekit.py OUT [--file_prefix P]
as a fresh process, exactly as it runs a hidden test, and reads the `Execution time:` line this appends to OUT.
What is timed, in this order of preference:
1. the script's own protocol file: a spec written as a GSO test (it takes an output file and appends
   `Execution time:` lines to it) gets one, and its lines are used;
2. the script's own timer: `... time ...: <seconds>s` lines it prints (the bundled suite's spec scripts time
   the library call and print it), summed;
3. the whole script's run, with the modules it imports at its top level imported first, untimed.
The script's printed output is kept from the terminal. Its results are never compared with anything: this
number is a diagnostic (the visible-vs-hidden gap), never a verdict. Standard library only.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import re
import runpy
import sys
import time

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "visible_spec.py")
PRINTED = re.compile(r"time[^\n:=]*[:=]\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*s\b", re.IGNORECASE)
OWN = re.compile(r"Execution time:\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)s")


def preload(source: str) -> None:
    """Import what the script imports at its top level, so that start-up is not what is timed."""
    for node in ast.parse(source).body:
        names = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for name in names:
            try:
                __import__(name)
            except Exception:  # noqa: BLE001 - the script's own run says what is wrong
                pass


def measure(own_file: str) -> tuple[float, str]:
    """(seconds, how they were measured) of one run of the spec script."""
    with open(SPEC) as handle:
        source = handle.read()
    preload(source)
    if os.path.exists(own_file):
        os.remove(own_file)
    sys.argv = [SPEC, own_file]
    printed = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(printed):
        try:
            runpy.run_path(SPEC, run_name="__main__")
        except SystemExit as end:
            if end.code not in (None, 0):
                raise
    whole = time.perf_counter() - start
    if os.path.exists(own_file):
        with open(own_file) as handle:
            own = [float(m.group(1)) for m in OWN.finditer(handle.read())]
        if own:
            return sum(own) / len(own), "its protocol file"
    shown = [float(m.group(1)) for m in PRINTED.finditer(printed.getvalue())]
    if shown:
        return sum(shown), "its printed timer"
    return whole, "the whole script"


def main() -> None:
    parser = argparse.ArgumentParser(description="Time one run of the task's spec script.")
    parser.add_argument("output_file")
    parser.add_argument("--eqcheck", action="store_true", help="accepted; the spec's results are not checked")
    parser.add_argument("--reference", action="store_true", help="accepted; nothing is stored")
    parser.add_argument("--file_prefix", default="")
    args = parser.parse_args()
    own = os.path.join(os.environ.get("TMPDIR") or "/tmp", ".visible_spec_out.txt")
    seconds, how = measure(own)
    with open(args.output_file, "a") as out:
        out.write(f"Execution time: {seconds:.6f}s\nMeasured: {how}\n")


if __name__ == "__main__":
    main()
