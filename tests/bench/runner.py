"""Runner benchmarks, side by side in one run.

- concurrency: 16 rollouts of a scripted model that takes 1 s per call, 10 steps each (mini_swe, no
  grading), at parallel=1 and parallel=8: throughput ratio (target >= 6x) and the runner's peak
  resident memory (target < 400 MB);
- the Ray executor in the same run: `executor=ray` (a Ray started by the runner, 8 rollout slots) at
  parallel=8 against the local executor at parallel=8 (target: at least 0.9x its throughput over the
  rollout phase), and the per-rollout scheduling overhead the executor prints;
- cold start: `python -m runner --help` wall time (target < 1.5 s) and the time from launch to the
  first rollout container running.

usage: python -m tests.bench.runner [--rollouts 16] [--steps 10] [--delay 1.0]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.containers import docker_client
from tests.conftest import write_task

console = Console()
ROOT = Path(__file__).resolve().parents[2]


def _first_container_of(pid: int) -> bool:
    for container in docker_client().containers.list(filters={"label": LABEL}, ignore_removed=True):
        if container.labels.get("optrunner.owner", "").endswith(f":{pid}"):
            return True
    return False


def run_cli(args: list[str], watch_first_container: bool = False) -> dict[str, float]:
    """Run `python -m runner ARGS`; wall time, peak RSS (MB) of the runner process, time to first container."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "runner", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "CI": "true"})
    first = None
    while proc.poll() is None:
        if watch_first_container and first is None and _first_container_of(proc.pid):
            first = time.perf_counter() - started
        time.sleep(0.05 if first is None else 0.5)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"runner failed: {proc.stderr.read()[-2000:] if proc.stderr else ''}")
    return {"wall_s": wall, "first_container_s": first if first is not None else float("nan")}


def peak_rss_mb(args: list[str]) -> tuple[float, float]:
    """Wall time and peak RSS of the runner, via wait4 on the child."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "runner", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "CI": "true"})
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"runner exited {proc.returncode} with {args}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def phase(run: Path, rollouts: int) -> tuple[float, float]:
    """The rollout phase (first start to last finish, from the records) and its throughput per minute."""
    records = [json.loads(p.read_text()) for p in run.glob("rollouts/*/*.json")]
    if len(records) != rollouts:
        raise RuntimeError(f"{run}: {len(records)} of {rollouts} rollouts recorded")
    span = max(r["finished_at"] for r in records) - min(r["started_at"] for r in records)
    return span, len(records) / span * 60


def ray_row(common: list[str], tmp: str, rollouts: int) -> dict[str, float]:
    """executor=ray at parallel=8 on a Ray the runner starts with 8 rollout slots; wall time, phase and the
    overhead line the executor prints."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "runner", *common, "parallel=8", "name=ray8", "executor=ray",
                           "executor.slots_per_node=8"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "CI": "true"})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"runner exited {done.returncode}: {done.stderr[-2000:]}")
    found = re.search(r"overhead per rollout .*: mean ([\d.]+) s, max ([\d.]+) s", done.stdout)
    span, per_min = phase(Path(tmp, "out", "runs", "ray8"), rollouts)
    return {"wall_s": wall, "throughput": rollouts / wall * 60, "phase_s": span, "phase_throughput": per_min,
            "overhead_mean_s": float(found.group(1)) if found else float("nan"),
            "overhead_max_s": float(found.group(2)) if found else float("nan")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.runner")
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args(argv)
    ensure_engine()
    with tempfile.TemporaryDirectory() as tmp:
        tasks = Path(tmp) / "tasks"
        tasks.mkdir()
        write_task(tasks, "bench")
        steps = ",".join(["{bash: 'true', delay_s: %g}" % args.delay] * (args.steps - 1) + ["{finish: done}"])
        common = ["model=script", f"model.steps=[{steps}]", "scaffold=mini_swe", f"tasks.selector={tasks}",
                  f"rollouts={args.rollouts}", "grade=none", f"output_root={tmp}/out", "budget.max_steps=50"]
        results = {}
        for parallel in (1, 8):
            wall, rss = peak_rss_mb([*common, f"parallel={parallel}", f"name=p{parallel}"])
            span, per_min = phase(Path(tmp, "out", "runs", f"p{parallel}"), args.rollouts)
            results[parallel] = {"wall_s": wall, "throughput": args.rollouts / wall * 60, "rss_mb": rss,
                                 "phase_s": span, "phase_throughput": per_min}
        on_ray = ray_row(common, tmp, args.rollouts)
        helps = []
        for _ in range(5):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "runner", "--help"], cwd=ROOT, capture_output=True, check=True)
            helps.append(time.perf_counter() - start)
        first = run_cli([*common, "rollouts=1", "parallel=1", "name=first", "model.steps=[{finish: done}]"],
                        watch_first_container=True)
    table = Table(title=f"runner: {args.rollouts} rollouts x {args.steps} steps, model {args.delay:g} s per call")
    for column in ("parallel", "wall s (whole command)", "rollouts / min", "rollout phase s", "rollouts / min",
                   "peak RSS MB"):
        table.add_column(column)
    for parallel, fig in results.items():
        table.add_row(str(parallel), f"{fig['wall_s']:.1f}", f"{fig['throughput']:.1f}", f"{fig['phase_s']:.1f}",
                      f"{fig['phase_throughput']:.1f}", f"{fig['rss_mb']:.0f}")
    console.print(table)
    ratio = results[8]["throughput"] / results[1]["throughput"]
    phase_ratio = results[8]["phase_throughput"] / results[1]["phase_throughput"]
    console.print(f"throughput parallel=8 / parallel=1: {phase_ratio:.2f}x over the rollout phase, {ratio:.2f}x over "
                  f"the whole command incl. start-up (target >= 6x); peak RSS at 8: {results[8]['rss_mb']:.0f} MB "
                  "(target < 400 MB)")
    ray_ratio = on_ray["phase_throughput"] / results[8]["phase_throughput"]
    console.print(f"executor=ray, parallel=8, 8 slots: {on_ray['phase_throughput']:.1f} rollouts/min over the rollout "
                  f"phase ({on_ray['phase_s']:.1f} s), {ray_ratio:.2f}x the local executor's at parallel=8 (target >= "
                  f"0.9x); whole command {on_ray['wall_s']:.1f} s (local {results[8]['wall_s']:.1f} s; Ray's start-up "
                  f"and worker warm-up included); scheduling overhead per rollout: mean "
                  f"{on_ray['overhead_mean_s']:.3f} s, max {on_ray['overhead_max_s']:.3f} s")
    console.print(f"`python -m runner --help`: median {statistics.median(helps):.2f} s of 5 (target < 1.5 s); "
                  f"launch to first container running: {first['first_container_s']:.2f} s")


if __name__ == "__main__":
    main()
