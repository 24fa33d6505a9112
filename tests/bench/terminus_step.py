"""Per-step overhead of the terminus scaffold, next to a bare `sandbox.exec("true")`.

A scripted episode sends `true\\n` with duration 0 for `steps` steps; a step's wall time (model call
through litellm's scripted provider, parsing, send-keys + capture in one exec, bookkeeping) is the
harness overhead, since no `duration` wait is left in it. Run: python -m tests.bench.terminus_step
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from harness.sandbox.docker.sandbox import DockerSandbox
from scaffolds.limits import Limits
from harness.models.config import ModelConfig
from harness.models.loader import litellm_module
from harness.models.model import Model
from harness.models.scripted import Script
from scaffolds.terminus import TerminusConfig, TerminusScaffold
from tests.docker_support import sandbox_for, smoke_task


def _summary_ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return {"median_ms": round(statistics.median(ordered) * 1000, 1), "p90_ms": round(p90 * 1000, 1),
            "n": len(ordered)}


def _bare_exec(box: DockerSandbox, n: int) -> list[float]:
    box.exec("true")  # warm the connection pool
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        box.exec("true")
        samples.append(time.perf_counter() - started)
    return samples


def measure(steps: int = 50) -> dict[str, Any]:
    litellm_module()  # the import (~3 s) is not a per-step cost
    task = smoke_task()
    script = [{"bash": "true", "duration": 0}] * steps + [{"finish": "done"}]
    model = Model(ModelConfig(name="scripted/script"), script=Script(steps=script))
    for box in sandbox_for(task):
        episode = TerminusScaffold(TerminusConfig(default_duration_s=0.0)).run(task, box, model, Limits(max_steps=None))
        command_steps = [s for s in episode.step_records if s.actions][1:]  # the first call pays one-off costs
        step_s = [s.ended_at - s.started_at - sum(a["waited_s"] for a in s.actions)  # type: ignore[operator]
                  for s in command_steps]
        model_s = [s.call.latency_s for s in command_steps if s.call]
        terminal_s = [o.duration_s for s in command_steps for o in s.observations]
        bare = _bare_exec(box, steps)
    return {"exit_reason": episode.exit_reason, "steps": steps,
            "terminus_step": _summary_ms(step_s), "model_call": _summary_ms(model_s),
            "send_and_capture": _summary_ms(terminal_s), "bare_exec_true": _summary_ms(bare)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    print(json.dumps(measure(args.steps), indent=2))


if __name__ == "__main__":
    main()
