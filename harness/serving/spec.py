"""What a service task declares (task.yaml's `service:`): how its server starts and is probed, the workload it
is measured with, which metrics count, and the quality gate.

    service:
      start: python3 server.py --port 8000    # run from the working directory, as the fenced user
      port: 8000                              # on the sandbox's own loopback
      env: {WORKERS: "1"}
      ready: /health                          # an HTTP GET answered 200; "tcp": a connection is enough
      ready_timeout_s: 60
      endpoint: /v1/completions               # OpenAI-style completions
      workload: {requests: 48, prompt_tokens: [16, 48], output_tokens: [8, 16], arrival: burst}
      visible_seed: 1                         # the agent's; grading uses seeds it never saw
      primary: output_throughput              # what opt_base / opt_commit judge
      metrics: [ttft_p50, tpot_p50, e2el_p90, request_throughput]
      quality: exact                          # or a fraction of words allowed to differ: 0.05
      quality_prompts: 6

Every mistake is a ServiceError naming the field and what is expected (a task loader adds which task).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.serving.metrics import DIRECTION
from harness.serving.workload import Workload, WorkloadError

DEFAULT_METRICS = ("ttft_p50", "tpot_p50", "itl_p50", "e2el_p90", "request_throughput", "output_throughput")
FIELDS = ("start", "port", "env", "ready", "ready_timeout_s", "endpoint", "model", "workload", "visible_seed",
          "primary", "metrics", "quality", "quality_prompts", "request_timeout_s")


class ServiceError(ValueError):
    """A `service:` block that cannot be used: one line naming the field."""


@dataclass(frozen=True)
class Service:
    start: str
    port: int
    env: tuple[tuple[str, str], ...] = ()
    ready: str = "/health"  # a path answered 200 by GET, or "tcp"
    ready_timeout_s: float = 60.0
    endpoint: str = "/v1/completions"
    model: str = "model"
    workload: Workload = field(default_factory=Workload)
    visible_seed: int = 1
    primary: str = "output_throughput"
    metrics: tuple[str, ...] = DEFAULT_METRICS  # reported beside the primary one
    quality: float = 0.0  # the fraction of a response's words that may differ from the base's (0: exact)
    quality_prompts: int = 6
    request_timeout_s: float = 60.0

    @property
    def reported(self) -> tuple[str, ...]:
        """Every metric the report carries: the primary one first."""
        return (self.primary, *(m for m in self.metrics if m != self.primary))


def _number(raw: dict[str, Any], name: str, default: float, low: float, integer: bool = False) -> Any:
    value = raw.get(name, default)
    kind = "a whole number" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)) or value < low:
        raise ServiceError(f"service.{name} should be {kind} >= {low:g}, got {value!r}")
    return value


def load_service(raw: Any) -> Service:
    """The `service:` block of a task, checked field by field."""
    if not isinstance(raw, dict):
        raise ServiceError(f"service should be a mapping (start, port, workload, ...), got {raw!r}")
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise ServiceError(f"unknown field service.{unknown[0]} (known: {', '.join(FIELDS)})")
    start = raw.get("start")
    if not isinstance(start, str) or not start.strip():
        raise ServiceError(f"service.start should be the command that starts the server, got {start!r}")
    port = _number(raw, "port", 0, 1, integer=True)
    if port > 65535:
        raise ServiceError(f"service.port should be a TCP port (1-65535), got {port}")
    env = raw.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float))
                                            for k, v in env.items()):
        raise ServiceError(f"service.env should map names to values, got {env!r}")
    ready = raw.get("ready", "/health")
    if not isinstance(ready, str) or not (ready == "tcp" or ready.startswith("/")):
        raise ServiceError(f"service.ready should be a path such as /health, or tcp, got {ready!r}")
    endpoint = raw.get("endpoint", "/v1/completions")
    if not isinstance(endpoint, str) or not endpoint.startswith("/"):
        raise ServiceError(f"service.endpoint should be a path such as /v1/completions, got {endpoint!r}")
    try:
        workload = Workload.from_dict(raw.get("workload"))
    except (WorkloadError, TypeError, ValueError) as err:
        raise ServiceError(f"service.{str(err).splitlines()[0]}") from None
    known = ", ".join(DIRECTION)
    primary = raw.get("primary", "output_throughput")
    if primary not in DIRECTION:
        raise ServiceError(f"service.primary should be one of {known}, got {primary!r}")
    metrics = raw.get("metrics", list(DEFAULT_METRICS))
    if not isinstance(metrics, list) or not all(m in DIRECTION for m in metrics):
        bad = [m for m in metrics if m not in DIRECTION] if isinstance(metrics, list) else metrics
        raise ServiceError(f"service.metrics should list some of {known}, got {bad!r}")
    quality = raw.get("quality", "exact")
    if quality == "exact":
        quality = 0.0
    if isinstance(quality, bool) or not isinstance(quality, (int, float)) or not 0 <= quality < 1:
        raise ServiceError(f"service.quality should be exact or a fraction of words in [0, 1), "
                        f"got {quality!r}")
    model = raw.get("model", "model")
    if not isinstance(model, str) or not model:
        raise ServiceError(f"service.model should be the name the server serves, got {model!r}")
    return Service(start=start.strip(), port=port, env=tuple((k, str(v)) for k, v in sorted(env.items())),
                   ready=ready, ready_timeout_s=float(_number(raw, "ready_timeout_s", 60.0, 1)),
                   endpoint=endpoint, model=model, workload=workload,
                   visible_seed=_number(raw, "visible_seed", 1, 0, integer=True), primary=primary,
                   metrics=tuple(metrics), quality=float(quality),
                   quality_prompts=_number(raw, "quality_prompts", 6, 1, integer=True),
                   request_timeout_s=float(_number(raw, "request_timeout_s", 60.0, 1)))
