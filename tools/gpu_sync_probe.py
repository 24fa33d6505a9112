"""How much the device-wide synchronize inside a timed rep (harness/grader/gpukit.measure) adds to short kernels,
and so how far it pulls their ratios towards 1. Run on a GPU machine (tools/gpu_check.sh does, in its probe part):

    python3 tools/gpu_sync_probe.py [--reps N]

For softmax over rows, torch's fused kernel (fast) and a four-kernel form of it (slow), at three sizes, each rep
is timed two ways: `sync` as gpukit does (synchronize, start event, call, synchronize, end event) and `stream`
(start event, call, end event on the current stream, then synchronize). One line per size: the medians of each
way, the slow/fast ratio each way, and the gap `sync` adds per rep (the host's round trip between the call's
last kernel and the end event). Prints "no GPU" and exits 0 where torch sees none.
"""
from __future__ import annotations

import argparse
import statistics
import sys

import torch


def fast(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=1)


def slow(x: torch.Tensor) -> torch.Tensor:
    shifted = x - x.max(dim=1, keepdim=True).values
    exp = shifted.exp()
    return exp / exp.sum(dim=1, keepdim=True)


def median_ms(call, x: torch.Tensor, reps: int, way: str) -> float:
    for _ in range(5):
        call(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        call(x)
        if way == "sync":
            torch.cuda.synchronize()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    reps = parser.parse_args().reps
    if not torch.cuda.is_available():
        print("sync probe: no GPU")
        return 0
    for rows, cols in ((256, 1024), (2048, 4096), (8192, 8192)):
        x = torch.randn(rows, cols, device="cuda")
        got = {(name, way): median_ms(call, x, reps, way)
               for name, call in (("fast", fast), ("slow", slow)) for way in ("sync", "stream")}
        ratio = {way: got["slow", way] / got["fast", way] for way in ("sync", "stream")}
        print(f"sync probe {rows}x{cols}: fast {got['fast', 'stream'] * 1e3:.1f} us, slow "
              f"{got['slow', 'stream'] * 1e3:.1f} us on the stream; ratio {ratio['stream']:.3f} on the stream, "
              f"{ratio['sync']:.3f} with the synchronize, which adds "
              f"{(got['fast', 'sync'] - got['fast', 'stream']) * 1e3:.1f} us a rep")
    return 0


if __name__ == "__main__":
    sys.exit(main())
