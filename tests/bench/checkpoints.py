"""What checkpointing costs a rollout (issue 35): per smoke task, one 30-step mini_swe episode with a scripted
model doing the oracle's work (explore, apply the expert's patch, rebuild, run the specification script),
cycled, with `checkpoint_every=10` through the runner's own checkpoint code (a container commit, the state file
written atomically, the previous image removed), and the same episode without checkpoints; once with a model
that answers at once and once with one that takes `--latency` seconds (a checkpoint is kept while the model
answers, so only what outlasts the call is added to the step).

Figures per task: a step's median time (model call and action) without checkpoints, each checkpoint's time,
what the steps waited for them, and that wait per step as a share of the median step. Target: under 5 %.

`--provider bwrap` runs the same on bubblewrap sandboxes (a checkpoint copies the overlay's writable layers).

usage: python -m tests.bench.checkpoints [--tasks smoke] [--steps 30] [--every 10] [--latency 1.0]
                                         [--provider docker|bwrap]
Figures are printed and written to outputs/bench/checkpoints-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.models.scripted import Script
from harness.models.scripted.steps import oracle_steps
from harness.sandbox.docker.containers import docker_client
from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.images import BaseImageSpec
from harness.sandbox.docker.task_images import ensure_images
from harness.sandbox.providers import SandboxProvider, provider
from harness.tasks import Task, select_tasks
from runner.checkpoints import CheckpointDir
from scaffolds import make_scaffold
from scaffolds.checkpoint import Checkpoints, EpisodeState
from scaffolds.limits import Limits

OUT_DIR = Path("outputs/bench")


def _steps(task: Task, n: int, latency: float) -> list[dict[str, Any]]:
    """The oracle's work steps, cycled to n (a second `git apply` fails and says so: a step all the same), each
    answered after `latency` seconds."""
    work = [s for s in oracle_steps(task.expert_patch, task.install_commands, task.prob_script) if "finish" not in s]
    steps = [dict(work[i % len(work)]) for i in range(n)] + [{"finish": "done"}]
    return [{**step, "delay_s": latency} if latency else step for step in steps]


def _episode(sandboxes: SandboxProvider, task: Task, image: str, steps: list[dict[str, Any]],
             every: int) -> dict[str, Any]:
    model = Model(ModelConfig(name="scripted/script", attempts=1), script=Script(steps=steps))
    times: list[float] = []
    with tempfile.TemporaryDirectory() as root, sandboxes.start(image) as box:
        store = CheckpointDir(Path(root), f"bench-{time.time_ns()}", sandboxes.remove_image)  # type: ignore[attr-defined]
        save = store.saver(task.id, 0, box)

        def timed(state: EpisodeState) -> None:
            started = time.perf_counter()
            save(state)
            times.append(time.perf_counter() - started)

        checkpoints = Checkpoints(every=every, save=timed) if every else None
        limits = Limits(max_steps=None, snapshot_every=0, command_timeout_s=300)
        episode = make_scaffold("mini_swe", {}).run(task, box, model, limits, checkpoints=checkpoints)
        store.discard(task.id, 0)
    durations = [s.ended_at - s.started_at for s in episode.step_records if s.ended_at is not None]
    return {"exit": episode.exit_reason.value, "steps": episode.steps, "step_median_s": statistics.median(durations),
            "wall_s": episode.wall_time_s, "checkpoints_s": times,
            "waited_s": episode.details.get("checkpoint_wait_s", [])}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.checkpoints", description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="smoke")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the slower model takes per reply")
    parser.add_argument("--provider", default="docker", choices=["docker", "bwrap"])
    args = parser.parse_args(argv)
    ensure_engine()
    tasks = select_tasks(args.tasks)
    images = ensure_images(docker_client(), tasks, BaseImageSpec(), progress=lambda m: None)
    if args.provider == "bwrap":  # the same images, exported as root file systems
        from harness.sandbox.bwrap import rootfs
        for task in tasks:
            rootfs.export(provider("docker"), images[task.id].agent)
    sandboxes = provider(args.provider)
    rows: dict[str, Any] = {}
    for latency in (0.0, args.latency):
        for task in tasks:
            steps = _steps(task, args.steps, latency)
            plain = _episode(sandboxes, task, images[task.id].agent, steps, 0)
            kept = _episode(sandboxes, task, images[task.id].agent, steps, args.every)
            per_step = sum(kept["waited_s"]) / max(1, kept["steps"])
            share = per_step / plain["step_median_s"]
            rows[f"{task.id}@{latency:g}s"] = {"without": plain, "with": kept, "wait_per_step_s": per_step,
                                               "share": share}
            print(f"{args.provider}: {task.id}, model latency {latency:g} s: {plain['steps']} steps, median step "
                  f"{plain['step_median_s'] * 1000:.0f} ms; {len(kept['checkpoints_s'])} checkpoints at "
                  f"every={args.every}: {', '.join(f'{t * 1000:.0f}' for t in kept['checkpoints_s'])} ms, the steps "
                  f"waited {', '.join(f'{t * 1000:.0f}' for t in kept['waited_s'])} ms; per step {per_step * 1000:.1f} "
                  f"ms = {share:.1%} of the median step ({'PASS' if share < 0.05 else 'FAIL'} < 5%)", flush=True)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"checkpoints-{args.provider}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(rows, indent=1))
    print(f"figures: {out}")
    return rows


if __name__ == "__main__":
    main()
