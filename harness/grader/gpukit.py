"""The GPU timing protocol for the hidden tests of GPU tasks, beside perfkit (copied next to them too).

A GPU test ends as a CPU one does, with this module's timer:
    def run_test(eqcheck=False, reference=False, prefix=""):
        return gpukit.time_experiment(globals(), eqcheck, reference, prefix)
    if __name__ == "__main__":
        gpukit.main(run_test)
and writes the same "Execution time: <seconds>s" line, then "Timed calls: <n>": how many calls of
experiment() the process made (warm-ups and reps), which the grader weighs against the GPU's busy time
and the process's wall time seen from outside (grader.guards: a clock that stops seeing work).

What it times: after `warmups` calls (the first call of a kernel is ~75x a warm one: compilation,
caches, lazy CUDA start), `reps` calls of experiment(), each between CUDA events, the L2 cache flushed
before each (a kernel must not look fast on data an earlier repetition left in cache), and the whole
device synchronized before the end event, so work left on a side stream is counted. The figure is the
median of the reps, in seconds.

Its own timer is the one that was there when it was imported: if the code under test rebinds
`torch.cuda.synchronize` or `torch.cuda.Event.elapsed_time` (or replaces `torch.cuda.Event`), the run fails.
`device="cpu"` times the same protocol with the host's clock, for checking a test script on a machine
without a GPU; the grader always times GPU tasks on their GPU.
"""
from __future__ import annotations

import pickle
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

_EVENT = torch.cuda.Event
_ELAPSED = torch.cuda.Event.elapsed_time
_SYNC = torch.cuda.synchronize
FLUSH_BYTES = 256 * 2**20  # more than any GPU's L2 cache (an H100's is 50 MB)
_calls = 0  # calls of experiment() by this process (what main() reports)


class TimerReplaced(RuntimeError):
    """The code under test replaced the timer this protocol measures with."""


def _check_timer() -> None:
    if torch.cuda.Event is not _EVENT or torch.cuda.Event.elapsed_time is not _ELAPSED or \
            torch.cuda.synchronize is not _SYNC:
        raise TimerReplaced("the GPU timer was replaced during the run (torch.cuda.Event, its elapsed_time or "
                            "torch.cuda.synchronize)")


def measure(experiment: Callable[[Any], Any], data: Any, warmups: int = 5, reps: int = 30,
            flush_l2: bool = True, device: str = "cuda") -> tuple[list[float], Any]:
    """The seconds of each timed call of experiment(data), and the last call's result."""
    result = None
    if device == "cpu":
        for _ in range(warmups):
            experiment(data)
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            result = experiment(data)
            times.append(time.perf_counter() - start)
        _check_timer()
        return times, result
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device=device) if flush_l2 else None
    for _ in range(warmups):
        experiment(data)
    _SYNC()
    times = []
    for _ in range(reps):
        if flush is not None:
            flush.zero_()
        start, end = _EVENT(enable_timing=True), _EVENT(enable_timing=True)
        _SYNC()  # nothing launched before the start event is counted
        start.record()
        result = experiment(data)
        _SYNC()  # every stream's work is counted, not only the current stream's
        end.record()
        end.synchronize()
        times.append(_ELAPSED(start, end) / 1000.0)
    _check_timer()
    return times, result


def _host(value: Any) -> Any:
    """A result with its tensors moved to the host (what is stored and compared)."""
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        return type(value)(_host(v) for v in value)
    if isinstance(value, dict):
        return {k: _host(v) for k, v in value.items()}
    return value


def check_close(reference: Any, current: Any, rtol: float = 1e-4, atol: float = 1e-5, where: str = "result") -> None:
    """Tensors equal within tolerances (a fused kernel reorders floating-point sums), the rest exactly."""
    if isinstance(reference, torch.Tensor):
        assert isinstance(current, torch.Tensor), f"{where}: expected a tensor, got {type(current).__name__}"
        assert reference.shape == current.shape, f"{where}: shape {tuple(reference.shape)} vs {tuple(current.shape)}"
        assert torch.allclose(reference.float(), current.float(), rtol=rtol, atol=atol), \
            f"{where}: differs by up to {(reference.float() - current.float()).abs().max().item():.3g}"
    elif isinstance(reference, (list, tuple)):
        assert len(reference) == len(current), f"{where}: length {len(reference)} vs {len(current)}"
        for i, (a, b) in enumerate(zip(reference, current)):
            check_close(a, b, rtol, atol, f"{where}[{i}]")
    elif isinstance(reference, dict):
        assert set(reference) == set(current), f"{where}: key sets differ"
        for key in reference:
            check_close(reference[key], current[key], rtol, atol, f"{where}[{key!r}]")
    else:
        assert reference == current, f"{where}: {reference!r} != {current!r}"


def time_experiment(ns: dict[str, Any], eqcheck: bool = False, reference: bool = False, prefix: str = "",
                    warmups: int = 5, reps: int = 30, flush_l2: bool = True, device: str = "cuda") -> float:
    """GSO's protocol on a GPU: setup() untimed, then the median seconds of the timed reps."""
    global _calls
    data = ns["setup"]()
    times, result = measure(ns["experiment"], data, warmups, reps, flush_l2, device)
    _calls += warmups + reps
    path = f"{prefix or 'ref'}_result.pkl"
    if reference:
        with open(path, "wb") as fh:
            pickle.dump(_host(result), fh, protocol=pickle.HIGHEST_PROTOCOL)
    if eqcheck:
        with open(path, "rb") as fh:
            check = ns.get("check_equivalence", check_close)
            check(pickle.load(fh), _host(result))
    return statistics.median(times)


def main(run_test: Callable[[bool, bool, str], float]) -> None:
    """perfkit's command line, with the calls made written after the time."""
    import perfkit  # (its sibling where tests run; not imported with the package, which has its own)
    perfkit.main(run_test, lambda: [f"Timed calls: {_calls}"])
