"""`optrunner export RUN_DIR --format atif [--out DIR]` (also `python -m runner.export`): every stored trajectory
of a run as an ATIF v1.7 document (runner.atif), one file per rollout at `<out>/<task>/<i>.json` (default out:
`RUN_DIR/atif`), and one per discarded attempt beside it (`<i>.attempt<n>.json`, as the run stores them).

It reads the run and writes only under the output folder, so it can run while the run is still going (the
rollouts finished so far). A folder that is not a run, or an unknown format, is one line and exit 2, before
anything is written."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from runner.config import ConfigError

FORMATS = ("atif",)
TRAJECTORY = re.compile(r"(?P<index>\d+)(?:\.attempt(?P<attempt>\d+))?\.json")

DESCRIPTION = ("Export a run's trajectories in a standard format: ATIF v1.7 (Harbor's Agent Trajectory Interchange "
               "Format), one JSON file per rollout and per discarded attempt, under RUN_DIR/atif by default.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="the run's directory (outputs/runs/<name>)")
    # (checked in `run`, not by argparse's choices: a refusal is one line, like every other one)
    parser.add_argument("--format", default="atif", metavar="FORMAT", help=f"one of: {', '.join(FORMATS)} "
                        "(default: atif)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="where the files go (default: RUN_DIR/atif)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.export", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    from harness import signals
    from harness.atomic import check_writable, write_problem

    if args.format not in FORMATS:
        return _refuse(f"unknown format {args.format!r}; known: {', '.join(FORMATS)}")
    from runner.store import RunStore

    out = args.out if args.out is not None else RunStore(args.run_dir).atif_dir
    restore = signals.install()  # SIGTERM and SIGHUP stop it as Ctrl-C does
    try:
        found = trajectories(args.run_dir)
        if (problem := check_writable(out, "--out DIR")) is not None:
            return _refuse(problem)
        written, unreadable = export_atif(args.run_dir, found, out)
    except ConfigError as err:
        return _refuse(str(err))
    except OSError as err:  # a full disk, a read-only folder: one line, what was written is kept
        problem = write_problem(err, example="--out DIR")
        if problem is None:
            raise
        return _refuse(problem)
    except KeyboardInterrupt as exc:  # each file is written whole: those written are complete
        print(f"interrupted ({exc or 'Ctrl-C'}): the files written so far are kept; run again to write them all",
              file=sys.stderr)
        return signals.exit_code(exc)
    finally:
        restore()
    print(f"atif: {written} trajectories written to {out}")
    if unreadable:
        print(f"skipped {len(unreadable)} unreadable trajectory file(s): {', '.join(unreadable[:5])}",
              file=sys.stderr)
    return 0


def _refuse(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def trajectories(run_dir: Path) -> list[tuple[str, int, int | None]]:
    """The run's trajectory files as (task, rollout, attempt or None), in order; ConfigError when `run_dir` is
    not a run (or names a path that leads out of it)."""
    from runner.store import RunStore

    store = RunStore(run_dir)
    store.load_config()  # refuses a folder that is not a run
    found = []
    for path in sorted(store.root.glob("trajectories/*/*.json")):
        match = TRAJECTORY.fullmatch(path.name)
        if match is None:
            continue
        store.inside("trajectories", path.parent.name, path.name)  # (no symlink out of the run)
        attempt = match["attempt"]
        found.append((path.parent.name, int(match["index"]), int(attempt) if attempt else None))
    return sorted(found, key=lambda t: (t[0], t[1], t[2] or 0))


def export_atif(run_dir: Path, found: list[tuple[str, int, int | None]], out: Path) -> tuple[int, list[str]]:
    """Write each trajectory's ATIF document; (how many were written, the run-relative paths of files that
    could not be read as a trajectory)."""
    from harness.atomic import read_json, write_json
    from runner import __version__
    from runner.atif import to_atif
    from runner.store import RunStore, attempt_trajectory_ref, trajectory_ref

    store = RunStore(run_dir)
    tool = (store.provenance() or {}).get("tool")
    version = str(tool.get("version") or __version__) if isinstance(tool, dict) else __version__
    run_name = store.root.resolve().name
    written, unreadable = 0, []
    for task, index, attempt in found:
        ref = trajectory_ref(task, index) if attempt is None else attempt_trajectory_ref(task, index, attempt)
        data = read_json(store.at_ref(ref))
        if not isinstance(data, dict):
            unreadable.append(ref)
            continue
        rollout = store.rollout(task, index)
        record: dict[str, Any] | None = rollout.to_dict() if rollout is not None else {"instance_id": task,
                                                                                      "rollout": index}
        session = f"{run_name}/{task}/{index}"  # the rollout: its attempts are segments of the same run
        document = to_atif(data, record, session_id=session,
                           trajectory_id=session if attempt is None else f"{session}/attempt{attempt}",
                           version=version)
        write_json(out / task / ref.rsplit("/", 1)[1], document)
        written += 1
    return written, unreadable


if __name__ == "__main__":
    sys.exit(main())
