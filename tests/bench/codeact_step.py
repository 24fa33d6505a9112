"""Per-step cost of the CodeAct scaffold, end to end, next to a bare `docker exec`.

An episode of a scripted model whose every step is `execute_bash("true")` runs on the tiny task's image
(no diff snapshots, stuck detection off since every step is the same); each step's wall time covers the
model call through litellm, the command in the persistent shell and the bookkeeping. In the same run,
`container.exec_run("true")` is timed for scale. Target: codeact step median <= 15 ms.

usage: python -m tests.bench.codeact_step [--steps 200]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from harness.sandbox.docker.engine import ensure_engine
from harness.sandbox.docker.images import BaseImageSpec, ensure_base_image, ensure_task_image
from harness.sandbox.docker.containers import docker_client
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.tasks.folder import load_task
from scaffolds.codeact import CodeActConfig, CodeActScaffold
from scaffolds.limits import Limits
from harness.models.config import ModelConfig
from harness.models.loader import litellm_module
from harness.models.model import Model
from harness.models.scripted import Script
from tests.conftest import write_task

WARMUP = 5  # first steps left out: connection pool and litellm's lazy imports


def _stats(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)
    return {"median_ms": statistics.median(ms), "p90_ms": ms[int(0.9 * (len(ms) - 1))], "n": len(ms)}


def measure(steps: int = 200) -> dict:
    ensure_engine()
    client = docker_client()
    tmp = tempfile.TemporaryDirectory()  # the task folder must outlive the episode (its prompt reads it)
    task = load_task(write_task(Path(tmp.name)))
    image = ensure_task_image(client, task, ensure_base_image(client, BaseImageSpec()), progress=lambda _m: None)
    litellm_module()
    total = steps + WARMUP
    model = Model(ModelConfig(name="scripted/script", native_tools=True),
                  script=Script(steps=[{"bash": "true"}] * total))
    with DockerSandbox.start(image, client=client) as box:
        episode = CodeActScaffold(CodeActConfig(stuck_detection=False)).run(
            task, box, model, Limits(max_steps=total, snapshot_every=0))
        records = [s for s in episode.step_records[WARMUP:] if s.ended_at is not None]
        step_times = [s.ended_at - s.started_at for s in records]  # type: ignore[operator]
        model_times = [s.call.latency_s for s in records if s.call is not None]
        box.container.exec_run("true")
        exec_times = []
        for _ in range(steps):
            started = time.perf_counter()
            box.container.exec_run("true")
            exec_times.append(time.perf_counter() - started)
    tmp.cleanup()
    return {"exit_reason": episode.exit_reason, "codeact_step": _stats(step_times),
            "model_call": _stats(model_times), "exec_run_true": _stats(exec_times)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.codeact_step")
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    result = measure(args.steps)
    table = Table(title=f"codeact step vs docker exec ({args.steps} samples each; target step median <= 15 ms)")
    for column in ("what", "median ms", "p90 ms", "n"):
        table.add_column(column, justify="left" if column == "what" else "right")
    for label, key in (("codeact step, end to end", "codeact_step"), ("  of which the model call", "model_call"),
                       ("container.exec_run('true')", "exec_run_true")):
        row = result[key]
        table.add_row(label, f"{row['median_ms']:.2f}", f"{row['p90_ms']:.2f}", str(row["n"]))
    Console().print(table)
    ok = result["codeact_step"]["median_ms"] <= 15
    Console().print(f"episode ended: {result['exit_reason']}; target {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
