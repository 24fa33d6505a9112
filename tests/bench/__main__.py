"""`make bench`: the foundation's figures, each measured side by side in one run.

- exec overhead: median Sandbox.exec("true") vs raw docker-py exec_run vs the `docker exec` CLI;
- start-up: sandbox ready with /testbed vs a bare `docker run -d` plus one exec;
- per task: base and expert time per workload (interleaved rounds, both containers pinned to one
  CPU), per-workload speedup and the harmonic mean (targets: base 0.1-2 s, each >= 1.5x, hm >= 2x).

usage: python -m tests.bench [--tasks suite] [--rounds 3] [--exec-n 200] [--start-n 15]
Figures are printed and written to outputs/bench/foundation-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.task_images import ensure_images
from harness.grader.states import CodeState, StepFailed, copy_references, prepare_state, run_test_script
from harness.sandbox.docker.containers import docker_client
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import SandboxLimits
from harness.tasks import Task, select_tasks

console = Console()
OUT_DIR = Path("outputs/bench")


def _interleaved_medians_ms(fns: dict[str, Callable[[], object]], n: int) -> dict[str, float]:
    """Median of n calls of each, rotating which goes first every round, so drift hits all alike."""
    names = list(fns)
    for fn in fns.values():
        fn()  # warm the connection pool
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(n):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start = time.perf_counter()
            fns[name]()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def bench_exec(image: str, n: int) -> dict[str, float]:
    box = DockerSandbox.start(image)
    try:
        figures = _interleaved_medians_ms({
            "sandbox_exec_ms": lambda: box.exec("true"),
            "docker_py_exec_run_ms": lambda: box.container.exec_run("true"),
            "docker_cli_exec_ms": lambda: subprocess.run(["docker", "exec", box.container.id, "true"], check=True),
        }, n)
    finally:
        box.close()
    figures["ratio_vs_docker_py"] = figures["sandbox_exec_ms"] / figures["docker_py_exec_run_ms"]
    return figures


def bench_startup(image: str, n: int) -> dict[str, float]:
    client = docker_client()
    ours, bare = [], []
    for _ in range(n):
        start = time.perf_counter()
        box = DockerSandbox.start(image)
        box.exec("test -d /testbed/.git")  # ready: the repository is there
        ours.append(time.perf_counter() - start)
        box.close()
        start = time.perf_counter()
        container = client.containers.run(image, ["sleep", "infinity"], detach=True, labels={"optrunner": "bench"})
        container.exec_run("true")
        bare.append(time.perf_counter() - start)
        container.remove(force=True)
    figures = {"sandbox_ready_ms": statistics.median(ours) * 1000,
               "bare_run_plus_exec_ms": statistics.median(bare) * 1000}
    figures["ratio_vs_bare"] = figures["sandbox_ready_ms"] / figures["bare_run_plus_exec_ms"]
    return figures


def bench_task(task: Task, image: str, rounds: int, cpuset: str) -> list[dict[str, object]]:
    limits = SandboxLimits(cpus=1.0)
    boxes = [DockerSandbox.start(image, limits), DockerSandbox.start(image, limits)]
    for box in boxes:
        box.pin(cpuset)
    try:
        states = [prepare_state("base", boxes[0], task, None),
                  prepare_state("expert", boxes[1], task, task.expert_patch)]
        base, expert = states
        for test in base.tests:  # warm-up runs, which also store and check the reference results
            run_test_script(base, test, "reference", task.test_timeout)
        copy_references(base, expert)
        for test in expert.tests:
            run_test_script(expert, test, "eqcheck", task.test_timeout)
        times: dict[tuple[str, str], list[float]] = {}
        for r in range(rounds):
            for test in base.tests:
                order: list[CodeState] = states if r % 2 == 0 else states[::-1]
                for state in order:
                    times.setdefault((test, state.name), []).append(
                        run_test_script(state, test, None, task.test_timeout))
        rows = []
        for test in base.tests:
            b, e = statistics.fmean(times[(test, "base")]), statistics.fmean(times[(test, "expert")])
            rows.append({"task": task.id, "workload": test, "base_s": b, "expert_s": e, "speedup": b / e})
        return rows
    finally:
        for box in boxes:
            box.close()


def harmonic_mean(values: list[float]) -> float:
    return len(values) / sum(1 / v for v in values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("--tasks", default="suite")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--exec-n", type=int, default=200)
    parser.add_argument("--start-n", type=int, default=15)
    parser.add_argument("--skip-sandbox", action="store_true", help="only the per-task timings")
    args = parser.parse_args(argv)
    ensure_engine()
    tasks = select_tasks(args.tasks)
    images = ensure_images(docker_client(), tasks, BaseImageSpec(), progress=lambda m: console.print(f"[dim]{m}"))
    report: dict[str, object] = {"machine": {"cpus": os.cpu_count()}, "rounds": args.rounds}
    first_image = images[tasks[0].id].agent
    if not args.skip_sandbox:
        report["exec"] = ex = bench_exec(first_image, args.exec_n)
        console.print(f"exec overhead (median of {args.exec_n}, interleaved): sandbox {ex['sandbox_exec_ms']:.1f} ms, "
                      f"docker-py exec_run {ex['docker_py_exec_run_ms']:.1f} ms, docker exec CLI "
                      f"{ex['docker_cli_exec_ms']:.1f} ms -> {ex['ratio_vs_docker_py']:.3f}x docker-py "
                      "(target <= 1.15x)")
        report["startup"] = st = bench_startup(first_image, args.start_n)
        console.print(f"start-up (median of {args.start_n}): sandbox ready {st['sandbox_ready_ms']:.0f} ms, bare "
                      f"run + exec {st['bare_run_plus_exec_ms']:.0f} ms -> {st['ratio_vs_bare']:.3f}x (target <= 1.3x)")
    cpuset = str((os.cpu_count() or 1) - 1)
    table = Table(title=f"base vs expert, {args.rounds} interleaved rounds, pinned to CPU {cpuset}")
    for column in ("task", "workload", "base s", "expert s", "speedup"):
        table.add_column(column, justify="left" if column in ("task", "workload") else "right")
    summary, all_rows = [], []
    for task in tasks:
        try:
            rows = bench_task(task, images[task.id].grading, args.rounds, cpuset)
        except StepFailed as err:
            console.print(f"[red]{task.id}: {err}")
            summary.append({"task": task.id, "error": str(err)})
            continue
        all_rows += rows
        for row in rows:
            in_range = 0.1 <= row["base_s"] <= 2.0  # type: ignore[operator]
            table.add_row(task.id, str(row["workload"]), f"{row['base_s']:.3f}" + ("" if in_range else " !"),
                          f"{row['expert_s']:.3f}", f"{row['speedup']:.2f}")
        speedups = [float(row["speedup"]) for row in rows]  # type: ignore[arg-type]
        hm = harmonic_mean(speedups)
        ok = hm >= 2 and min(speedups) >= 1.5 and all(0.1 <= float(r["base_s"]) <= 2 for r in rows)  # type: ignore[arg-type]
        summary.append({"task": task.id, "hm_speedup": hm, "min_speedup": min(speedups), "meets_targets": ok})
        table.add_row(task.id, "[bold]harmonic mean", "", "", f"[bold]{hm:.2f}" + ("" if ok else " [red]MISSED"))
    console.print(table)
    report["workloads"], report["tasks"] = all_rows, summary
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"foundation-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    met = sum(1 for s in summary if s.get("meets_targets"))
    console.print(f"{met}/{len(summary)} tasks meet the expert targets; figures in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
