"""Per-step cost of each scaffold, side by side in one run, on the same task image.

A zero-latency scripted model (through litellm) asks for `true` at every step; a step's time is the gap
between consecutive step starts (model call, action, observation, bookkeeping). Compared in the same
run with a bare `Sandbox.exec("true")`, a `docker exec` subprocess, and upstream mini-swe-agent 2.4.6
(its DefaultAgent, DeterministicModel and Docker environment; installed into .bench/ on first use).

Targets: codeact median <= 15 ms; mini_swe <= 0.85x upstream's per-step time, no container left
behind; terminus: the harness overhead, `duration` waits excluded (duration 0).

usage: python -m tests.bench.scaffolds [--steps 100] [--no-upstream]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.containers import LABEL
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.task_images import ensure_images
from harness.sandbox.docker.containers import docker_client
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks import select_tasks
from scaffolds import make_scaffold
from scaffolds.limits import Limits
from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.models.scripted import Script

console = Console()
OPTIONS = {"codeact": {"stuck_detection": False}, "mini_swe": {}, "terminus": {}}


def _ms(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples)
    return {"median_ms": statistics.median(ms), "p90_ms": ms[int(0.9 * (len(ms) - 1))], "n": len(ms)}


def scaffold_steps(name: str, image: str, steps: int) -> list[float]:
    """Seconds per step of one episode of `steps` x `true` (then finish) in a fresh container."""
    script = [{"bash": "true", "duration": 0}] * steps + [{"finish": "done"}]
    model = Model(ModelConfig(name="scripted/script"), script=Script(steps=script))
    task = select_tasks("smoke")[0]
    with DockerSandbox.start(image) as box:
        episode = make_scaffold(name, OPTIONS[name]).run(task, box, model, Limits(max_steps=steps + 5,
                                                                                  snapshot_every=0))
    starts = [s.started_at for s in episode.step_records]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    return gaps[1:]  # the first step pays for litellm's warm-up and the shell's start


def bare_exec(image: str, n: int) -> tuple[list[float], list[float]]:
    """Sandbox.exec and a `docker exec` subprocess, alternating, in one container."""
    sdk, cli = [], []
    with DockerSandbox.start(image) as box:
        box.exec("true")
        for _ in range(n):
            start = time.perf_counter()
            box.exec("true")
            sdk.append(time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run(["docker", "exec", box.container.id, "bash", "-c", "true"], check=True)
            cli.append(time.perf_counter() - start)
    return sdk, cli


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.scaffolds")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--no-upstream", action="store_true")
    args = parser.parse_args(argv)
    ensure_engine()
    task = select_tasks("smoke")[0]
    image = ensure_images(docker_client(), [task], BaseImageSpec(), progress=lambda m: None)[task.id].agent
    rows: dict[str, list[float]] = {"codeact": [], "mini_swe": [], "terminus": [], "upstream mini-swe-agent": []}
    upstream_left = 0
    # Two alternating passes, so machine drift hits every contender alike.
    for _ in range(2):
        for name in ("codeact", "mini_swe", "terminus"):
            rows[name] += scaffold_steps(name, image, args.steps)
        if not args.no_upstream:
            from tests.bench.upstream_mini import measure_upstream

            result = measure_upstream(image, steps=args.steps)
            rows["upstream mini-swe-agent"] += result["step_times_s"][1:]  # same warm-up rule as ours
            upstream_left += int(result["containers_left"])
    sdk, cli = bare_exec(image, 50)
    ours_left = [c for c in docker_client().containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
                 if c.labels.get("optrunner.owner", "").endswith(f":{os.getpid()}")]
    figures = {name: _ms(values) for name, values in rows.items() if values}
    figures["Sandbox.exec('true')"] = _ms(sdk)
    figures["docker exec subprocess"] = _ms(cli)
    table = Table(title=f"per-step time, {args.steps} steps of `true`, image {image}")
    for column in ("", "median ms", "p90 ms", "n"):
        table.add_column(column)
    for name, fig in figures.items():
        table.add_row(name, f"{fig['median_ms']:.1f}", f"{fig['p90_ms']:.1f}", str(fig["n"]))
    console.print(table)
    if "upstream mini-swe-agent" in figures:
        ratio = figures["mini_swe"]["median_ms"] / figures["upstream mini-swe-agent"]["median_ms"]
        console.print(f"mini_swe / upstream per step: {ratio:.2f}x (target <= 0.85x); containers left: "
                      f"ours {len(ours_left)}, upstream {upstream_left} (removed by the bench)")
    console.print(f"codeact median {figures['codeact']['median_ms']:.1f} ms (target <= 15 ms)")
    out = Path("outputs/bench") / f"scaffolds-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=1))
    return figures


if __name__ == "__main__":
    main()
