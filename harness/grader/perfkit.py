"""The GSO performance-test protocol, as a helper importable by hidden test scripts.

A GSO test script defines setup(), experiment(data), store_result(result, path),
load_result(path), check_equivalence(reference, current) and run_test(...), and is run as
    python test_x.py OUT [--reference | --eqcheck] --file_prefix P
It times ONE experiment() call and appends "Execution time: <seconds>s" to OUT.

Real GSO tests carry this code inline. The bundled suite's tests instead end with
    def run_test(eqcheck=False, reference=False, prefix=""):
        return perfkit.time_experiment(globals(), eqcheck, reference, prefix)
    if __name__ == "__main__":
        perfkit.main(run_test)
and the grader copies this file next to them, so the protocol lives in one place.
Standard library only: it runs inside task containers.
"""
from __future__ import annotations

import argparse
import pickle
import time
from typing import Any
from collections.abc import Callable


def time_experiment(ns: dict[str, Any], eqcheck: bool = False, reference: bool = False, prefix: str = "") -> float:
    setup: Callable[[], Any] = ns["setup"]
    experiment: Callable[[Any], Any] = ns["experiment"]
    data = setup()  # untimed: building inputs is not what is being optimized
    start = time.perf_counter()
    result = experiment(data)
    elapsed = time.perf_counter() - start
    path = f"{prefix or 'ref'}_result.pkl"
    if reference:
        ns["store_result"](result, path)
    if eqcheck:
        ns["check_equivalence"](ns["load_result"](path), result)
    return elapsed


def store_result(result: Any, path: str) -> None:
    """Default result storage for tests whose results pickle cleanly."""
    with open(path, "wb") as fh:
        pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)


def load_result(path: str) -> Any:
    with open(path, "rb") as fh:
        return pickle.load(fh)


def assert_same(reference: Any, current: Any, where: str = "result") -> None:
    """Exact comparison of nested dicts / lists / tuples of scalars, naming the first difference."""
    if isinstance(reference, dict):
        assert isinstance(current, dict), f"{where}: expected dict, got {type(current).__name__}"
        assert set(reference) == set(current), \
            f"{where}: key sets differ ({len(reference)} vs {len(current)} keys)"
        for key in reference:
            assert_same(reference[key], current[key], f"{where}[{key!r}]")
    elif isinstance(reference, (list, tuple)):
        assert isinstance(current, (list, tuple)), f"{where}: expected sequence, got {type(current).__name__}"
        assert len(reference) == len(current), f"{where}: length {len(reference)} vs {len(current)}"
        for i, (a, b) in enumerate(zip(reference, current)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert type(reference) is type(current) and reference == current, f"{where}: {reference!r} != {current!r}"


def main(run_test: Callable[[bool, bool, str], float], notes: Callable[[], list[str]] | None = None) -> None:
    """Parse the protocol's arguments, run the test, append its time (and `notes()`, more lines) to the file."""
    parser = argparse.ArgumentParser(description="Time one experiment() call (GSO protocol).")
    parser.add_argument("output_file", help="file to append the timing line to")
    parser.add_argument("--eqcheck", action="store_true", help="compare the result with the stored reference")
    parser.add_argument("--reference", action="store_true", help="store the result as the reference")
    parser.add_argument("--file_prefix", default="", help="prefix of the reference result file")
    args = parser.parse_args()
    elapsed = run_test(args.eqcheck, args.reference, args.file_prefix)
    with open(args.output_file, "a") as out:
        out.write(f"Execution time: {elapsed:.6f}s\n")
        for line in notes() if notes else []:
            out.write(f"{line}\n")
