"""Serving metrics from the client's request records: pure functions, checked against hand-computed tables.

The definitions are the serving benchmarks' (vLLM's `benchmark_serving`, SGLang's `bench_serving`), per
completed request i, with times from the client's clock:
- TTFT_i = first content chunk - sent (time to first token);
- E2E_i  = end - sent (end-to-end latency);
- TPOT_i = (E2E_i - TTFT_i) / (output_tokens_i - 1), for requests with more than one output token (time per
  output token after the first);
- ITL    = every gap between a request's consecutive content chunks, over all requests (inter-token latency);
- request throughput = completed / duration; output throughput = output tokens / duration, where duration
  runs from the workload's start to the last request's end.
Percentiles are numpy's default (linear interpolation), as those benchmarks compute them. Lower is better
for the latencies, higher for the throughputs (`DIRECTION`); a grader turns a higher-is-better metric into
a time-like one by inverting it (`as_cost`), so "patch faster than base" reads the same for every metric.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

LATENCIES = ("ttft", "tpot", "itl", "e2el")
STATISTICS = ("mean", "p50", "p90", "p99")
THROUGHPUTS = ("request_throughput", "output_throughput")
# metric name -> whether lower is better
DIRECTION: dict[str, str] = {**{f"{m}_{s}": "lower" for m in LATENCIES for s in STATISTICS},
                             **{m: "higher" for m in THROUGHPUTS}}


@dataclass
class RequestRecord:
    """One request's timeline, as the client saw it (seconds from the workload's start)."""
    index: int
    sent_s: float
    end_s: float | None = None  # None: it never ended (a timeout, a dropped connection)
    chunks_s: list[float] = field(default_factory=list)  # when each chunk carrying content arrived
    output_tokens: int = 0  # the server's usage count when it gave one, else the content chunks
    max_tokens: int = 0  # what was asked
    status: int = 0  # HTTP status (0: no response)
    error: str = ""  # empty when it completed
    text: str = ""  # the content, for the quality gate

    @property
    def ok(self) -> bool:
        return not self.error and self.end_s is not None and bool(self.chunks_s)


@dataclass(frozen=True)
class ServingMetrics:
    values: dict[str, float]  # every metric of DIRECTION that the records define
    completed: int
    failed: int
    short: int  # completed with fewer output tokens than asked
    output_tokens: int
    duration_s: float


def _stats(name: str, samples: Sequence[float]) -> dict[str, float]:
    if not samples:
        return {}
    data = np.asarray(samples, dtype=float)
    return {f"{name}_mean": float(data.mean()), f"{name}_p50": float(np.percentile(data, 50)),
            f"{name}_p90": float(np.percentile(data, 90)), f"{name}_p99": float(np.percentile(data, 99))}


def summarize(records: Sequence[RequestRecord], start_s: float = 0.0) -> ServingMetrics:
    """The serving metrics of one workload run (failed requests are counted, never averaged in)."""
    done = [r for r in records if r.ok]
    ttft = [r.chunks_s[0] - r.sent_s for r in done]
    e2el = [r.end_s - r.sent_s for r in done if r.end_s is not None]
    tpot = [((r.end_s - r.sent_s) - (r.chunks_s[0] - r.sent_s)) / (r.output_tokens - 1)
            for r in done if r.end_s is not None and r.output_tokens > 1]
    itl = [b - a for r in done for a, b in zip(r.chunks_s, r.chunks_s[1:])]
    values: dict[str, float] = {}
    for name, samples in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)):
        values.update(_stats(name, samples))
    tokens = sum(r.output_tokens for r in done)
    duration = max((r.end_s for r in done if r.end_s is not None), default=start_s) - start_s
    if done and duration > 0:
        values["request_throughput"] = len(done) / duration
        values["output_throughput"] = tokens / duration
    short = sum(1 for r in done if r.max_tokens and r.output_tokens < r.max_tokens)
    return ServingMetrics(values, len(done), len(records) - len(done), short, tokens, duration)


def as_cost(metric: str, value: float) -> float:
    """A metric as a cost, lower better: the latencies as they are, a throughput inverted (seconds per unit),
    so a speedup is cost_before / cost_after for every metric."""
    if metric not in DIRECTION:
        raise KeyError(f"unknown serving metric {metric!r}: known are {', '.join(DIRECTION)}")
    if DIRECTION[metric] == "lower":
        return value
    return float("inf") if value <= 0 else 1.0 / value
