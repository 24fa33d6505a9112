"""Bubblewrap against Docker, side by side in one run, on the same task images.

- sandbox: start time (ready for its first command) and exec overhead (`exec("true")`), medians over
  interleaved rounds (targets: bwrap start at most 0.2x Docker's, exec at most 0.3x);
- grading: the smoke tasks' gold patches regraded 3 times on each provider: hm against the expert per
  regrade, and its CV (target: bwrap's within the same +-2% as Docker's);
- runner: `python -m runner tasks=smoke model=oracle rollouts=2 sandbox.provider=P` and model=noop on
  each provider and on bwrap with `sandbox.rootfs=host`, plus executor=ray on bwrap: Opt@1 (targets
  1.000 and 0.000), and what each run left behind (bwrap sandbox directories and uplinks; Docker
  containers).

usage: python -m tests.bench.providers [--parts sandbox,grading,runner] [--exec-n 200] [--start-n 15]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.grader.config import GradeConfig
from harness.grader.grade import grade
from harness.sandbox.docker.containers import docker_client, remove_containers
from harness.sandbox.interface import SandboxLimits
from harness.sandbox.providers import provider
from harness.tasks import select_tasks

console = Console()
ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = ("docker", "bwrap")


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def sandbox_figures(image: str, exec_n: int, start_n: int) -> dict[str, dict[str, float]]:
    """Median start (ms, through the first exec) and exec("true") (ms) per provider, interleaved."""
    starts: dict[str, list[float]] = {p: [] for p in PROVIDERS}
    for i in range(start_n):
        for name in PROVIDERS if i % 2 == 0 else PROVIDERS[::-1]:
            began = time.perf_counter()
            box = provider(name).start(image, SandboxLimits())
            box.exec("true")
            starts[name].append(time.perf_counter() - began)
            box.close()
    boxes = {name: provider(name).start(image, SandboxLimits()) for name in PROVIDERS}
    execs: dict[str, list[float]] = {p: [] for p in PROVIDERS}
    try:
        for i in range(exec_n):
            for name in PROVIDERS if i % 2 == 0 else PROVIDERS[::-1]:
                began = time.perf_counter()
                boxes[name].exec("true")
                execs[name].append(time.perf_counter() - began)
    finally:
        for box in boxes.values():
            box.close()
    return {name: {"start_ms": _median_ms(starts[name]), "exec_ms": _median_ms(execs[name])} for name in PROVIDERS}


def _hm(values: list[float]) -> float:
    return len(values) / sum(1 / v for v in values)


def grading_figures(regrades: int) -> dict[str, dict[str, list[float]]]:
    """Per provider, per smoke task: the gold patch's hm against the expert in each regrade."""
    tasks = select_tasks("smoke")
    out: dict[str, dict[str, list[float]]] = {name: {t.id: [] for t in tasks} for name in PROVIDERS}
    images = {name: provider(name).ensure_images(tasks, progress=lambda _m: None) for name in PROVIDERS}
    for _ in range(regrades):
        for task in tasks:
            for name in PROVIDERS:
                found = images[name][task.id]
                report = grade(task, task.expert_patch, found.grading, GradeConfig(), sandboxes=provider(name),
                               base_image=found.base)
                speedups = (report.get("per_test_speedups") or {}).get("patch_commit") or []
                out[name][task.id].append(_hm(speedups) if report["status"] == "passed" and speedups else 0.0)
    return out


def leftovers() -> dict[str, int]:
    from harness.sandbox.bwrap import registry

    sandboxes = len(list(registry.STATE.glob("sbx-*"))) if registry.STATE.is_dir() else 0
    containers = len(docker_client().containers.list(all=True, filters={"label": "optrunner=sandbox"}))
    uplinks = len(subprocess.run(["pgrep", "-x", "slirp4netns"], capture_output=True, text=True).stdout.split())
    return {"bwrap sandboxes": sandboxes, "docker containers": containers, "uplinks": uplinks}


def runner_figures(tmp: Path) -> list[tuple[str, float | None, dict[str, int], float]]:
    """(label, Opt@1, left behind, seconds) for each runner configuration."""
    rows = []
    configs = [(f"{name} {model}", [f"sandbox.provider={name}", f"model={model}"])
               for name in PROVIDERS for model in ("oracle", "noop")]
    configs += [(f"bwrap rootfs=host {model}", ["sandbox.provider=bwrap", "sandbox.rootfs=host", f"model={model}"])
                for model in ("oracle", "noop")]
    configs.append(("bwrap oracle, executor=ray", ["sandbox.provider=bwrap", "model=oracle", "executor=ray"]))
    for i, (label, extra) in enumerate(configs):
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "runner", "tasks=smoke", "rollouts=2", f"output_root={tmp}",
                               f"name=run{i}", *extra], cwd=ROOT, capture_output=True, text=True)
        seconds = time.monotonic() - began
        report = tmp / "runs" / f"run{i}" / "report.json"
        opt1 = None
        if done.returncode == 0 and report.exists():
            opt1 = float(json.loads(report.read_text())["summary"]["opt_at_k"]["1"])
        else:
            console.print(f"[red]{label}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
        rows.append((label, opt1, leftovers(), seconds))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.providers")
    parser.add_argument("--parts", default="sandbox,grading,runner")
    parser.add_argument("--exec-n", type=int, default=200)
    parser.add_argument("--start-n", type=int, default=15)
    parser.add_argument("--regrades", type=int, default=3)
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    for name in PROVIDERS:
        provider(name).ensure_ready()
    remove_containers("orphans")
    provider("bwrap").cleanup("orphans")
    tasks = select_tasks("smoke")
    images = provider("bwrap").ensure_images(tasks[:1], progress=lambda m: console.print(f"[dim]{m}"))
    image = images[tasks[0].id].agent
    if "sandbox" in parts:
        figures = sandbox_figures(image, args.exec_n, args.start_n)
        table = Table(title=f"sandbox start and exec, medians ({args.start_n} starts, {args.exec_n} execs), {image}")
        for column in ("provider", "start ms", "exec ms"):
            table.add_column(column)
        for name, fig in figures.items():
            table.add_row(name, f"{fig['start_ms']:.1f}", f"{fig['exec_ms']:.1f}")
        console.print(table)
        start_ratio = figures["bwrap"]["start_ms"] / figures["docker"]["start_ms"]
        exec_ratio = figures["bwrap"]["exec_ms"] / figures["docker"]["exec_ms"]
        console.print(f"bwrap / docker: start {start_ratio:.2f}x (target <= 0.2), "
                      f"exec {exec_ratio:.2f}x (target <= 0.3)")
    if "grading" in parts:
        hms = grading_figures(args.regrades)
        table = Table(title=f"gold patches' hm against the expert, {args.regrades} regrades each")
        for column in ("task", *(f"{n} hm" for n in PROVIDERS), *(f"{n} CV %" for n in PROVIDERS)):
            table.add_column(column)
        for task in hms["docker"]:
            runs = [hms[n][task] for n in PROVIDERS]
            cvs = [statistics.pstdev(r) / statistics.mean(r) * 100 if statistics.mean(r) else float("nan")
                   for r in runs]
            table.add_row(task, *(" ".join(f"{v:.3f}" for v in r) for r in runs), *(f"{c:.1f}" for c in cvs))
        console.print(table)
    if "runner" in parts:
        with tempfile.TemporaryDirectory(prefix="optrunner-providers-") as tmp:
            rows = runner_figures(Path(tmp))
        table = Table(title="python -m runner tasks=smoke rollouts=2, per provider")
        for column in ("run", "Opt@1", "left behind", "seconds"):
            table.add_column(column)
        for label, opt1, left, seconds in rows:
            table.add_row(label, "-" if opt1 is None else f"{opt1:.3f}",
                          ", ".join(f"{k}: {v}" for k, v in left.items()), f"{seconds:.0f}")
        console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
