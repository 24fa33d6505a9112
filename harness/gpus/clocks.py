"""A GPU's state around timed runs: NVML readings (clocks, temperature, power, throttle reasons) and the SM
clock locked for a grading session where the driver allows it.

A timed GPU run is worth as much as the clock it ran at: a GPU that boosts, heats and throttles between
the base's run and the patch's moves a ratio by more than a good kernel does. So a session locks the SM
clock at the GPU's default applications clock (sustainable without throttling) where allowed (root, a
driver that supports it), restores it after (also when the process ends), and says once where it cannot.
Readings before and after each run name the throttle reasons that slow a GPU down (`slowdowns`), NVML's
cumulative violation counters cover the time between them (a slowdown that came and went), and the
compute processes on the GPU before a run show another job sharing it (`slowed`), so a run that saw one
can be flagged and redone (`Watch`), and NVML's utilization samples over the run give
the GPU's busy time, the GPU's side of the clock checked from outside (grader.guards). Readings are plain
records, so what a GPU machine recorded can be read back and checked anywhere.
"""
from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

from harness.gpus import Gpu, nvml

T = TypeVar("T")

# NVML's clocks-event ("throttle") reason bits, by name
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
           0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
           0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
# The reasons that mean the GPU ran slower than it was asked to (idle, a set clock or sync are not)
SLOWDOWNS = frozenset({"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                       "hw_power_brake_slowdown"})


# NVML's cumulative violation counters (nanoseconds the GPU ran below its asked clock for that cause, since
# the driver loaded), by name: a reason that came and went between two readings still moves its counter.
VIOLATIONS = {"power": "NVML_PERF_POLICY_POWER", "thermal": "NVML_PERF_POLICY_THERMAL",
              "board_limit": "NVML_PERF_POLICY_BOARD_LIMIT", "reliability": "NVML_PERF_POLICY_RELIABILITY"}


@dataclass(frozen=True)
class Reading:
    sm_clock_mhz: int
    memory_clock_mhz: int
    temperature_c: int
    power_w: float
    reasons: tuple[str, ...] = ()
    violation_ns: tuple[tuple[str, int], ...] = ()  # (VIOLATIONS name, its counter) where NVML has one
    processes: tuple[int, ...] = ()  # host pids of the compute processes on the GPU, still alive

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "Reading":
        return cls(int(record["sm_clock_mhz"]), int(record["memory_clock_mhz"]), int(record["temperature_c"]),
                   float(record["power_w"]), tuple(record.get("reasons", ())),
                   tuple(sorted((str(k), int(v)) for k, v in (record.get("violation_ns") or {}).items())),
                   tuple(int(p) for p in record.get("processes", ())))

    def record(self) -> dict[str, Any]:
        out = {**asdict(self), "reasons": list(self.reasons)}
        out.pop("violation_ns"), out.pop("processes")  # (only where read: older records have neither)
        if self.violation_ns:
            out["violation_ns"] = dict(self.violation_ns)
        if self.processes:
            out["processes"] = list(self.processes)
        return out


def reasons_of(mask: int) -> tuple[str, ...]:
    """NVML's reason bit mask as names (an unknown bit as its hex value)."""
    out = [name for bit, name in REASONS.items() if mask & bit]
    unknown = mask & ~sum(REASONS)
    return tuple(out + ([hex(unknown)] if unknown else []))


def slowdowns(*readings: Reading | None) -> list[str]:
    """The slowdown reasons any of `readings` saw (a run that saw one is not a fair measure)."""
    return sorted({r for reading in readings if reading for r in reading.reasons if r in SLOWDOWNS})


def violated(before: Reading | None, after: Reading | None) -> list[str]:
    """The violation counters that moved from `before` to `after` ("thermal_violation", ...): the GPU ran
    below its clock for that cause at some instant between the two readings, whatever each instant says."""
    if before is None or after is None:
        return []
    then = dict(before.violation_ns)
    return sorted(f"{name}_violation" for name, now in after.violation_ns if name in then and now > then[name])


def slowed(before: Sequence[Reading | None], after: Sequence[Reading | None]) -> list[str]:
    """Everything that makes one timed run on these GPUs no fair measure: a slowdown reason at either
    reading, a violation counter that moved in between, or another process computing on a GPU when the
    run began ("shared_gpu": exclusivity is per process, so another CUDA job is seen only this way)."""
    found = set(slowdowns(*before, *after))
    found.update(v for b, a in zip(before, after) for v in violated(b, a))
    if any(r is not None and r.processes for r in before):
        found.add("shared_gpu")
    return sorted(found)


def live_pids(listed: Iterable[int]) -> tuple[int, ...]:
    """The pids NVML lists that are still running (a process that just exited, the last timed run's, can
    linger in its list for a moment)."""
    return tuple(sorted(pid for pid in set(listed) if os.path.exists(f"/proc/{pid}")))


def _listed_pids(lib: Any, handle: Any) -> tuple[int, ...]:
    """The running compute processes NVML lists on the device `handle` (host pids); none where it cannot say."""
    try:
        return live_pids(int(p.pid) for p in lib.nvmlDeviceGetComputeRunningProcesses(handle))
    except lib.NVMLError:
        return ()


def compute_pids(gpu: Gpu) -> tuple[int, ...]:
    """The running compute processes NVML lists on `gpu` (host pids); none where NVML cannot say."""
    with nvml() as lib:
        if lib is None:
            return ()
        try:
            handle = lib.nvmlDeviceGetHandleByUUID(gpu.uuid)
        except lib.NVMLError:
            return ()
        return _listed_pids(lib, handle)


def read(gpu: Gpu) -> Reading | None:
    """`gpu`'s state now; None where NVML cannot say. The violation counters and compute processes are
    read where the driver has them (each left out where it has not)."""
    with nvml() as lib:
        if lib is None:
            return None
        try:
            handle = lib.nvmlDeviceGetHandleByUUID(gpu.uuid)
            reading = Reading(lib.nvmlDeviceGetClockInfo(handle, lib.NVML_CLOCK_SM),
                              lib.nvmlDeviceGetClockInfo(handle, lib.NVML_CLOCK_MEM),
                              lib.nvmlDeviceGetTemperature(handle, lib.NVML_TEMPERATURE_GPU),
                              lib.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                              reasons_of(lib.nvmlDeviceGetCurrentClocksThrottleReasons(handle)))
        except lib.NVMLError:
            return None
        counters = []
        for name, policy in VIOLATIONS.items():
            try:
                status = lib.nvmlDeviceGetViolationStatus(handle, getattr(lib, policy))
                counters.append((name, int(status.violationTime)))
            except (lib.NVMLError, AttributeError):
                continue
        return replace(reading, violation_ns=tuple(counters), processes=_listed_pids(lib, handle))


def utilization_samples(gpu: Gpu, since_us: int) -> list[tuple[int, int]] | None:
    """NVML's GPU utilization samples newer than `since_us` (microseconds since the epoch): (timestamp µs,
    percent of the sample period a kernel ran). None where NVML cannot say; [] where it has none yet."""
    with nvml() as lib:
        if lib is None:
            return None
        try:
            handle = lib.nvmlDeviceGetHandleByUUID(gpu.uuid)
            _kind, samples = lib.nvmlDeviceGetSamples(handle, lib.NVML_GPU_UTILIZATION_SAMPLES, since_us)
        except lib.NVMLError as err:
            return [] if getattr(err, "value", None) == getattr(lib, "NVML_ERROR_NOT_FOUND", -1) else None
        return [(int(s.timeStamp), int(s.sampleValue.uiVal)) for s in samples]


def busy_seconds(samples: Sequence[tuple[int, int]], start_us: int, end_us: int) -> float | None:
    """The seconds a GPU was busy within [start_us, end_us] by its utilization samples: each sample's
    percent of its own period (from the sample before it), clipped to the window. None when no sample
    covers any of the window (the driver keeps a short buffer; too few samples say nothing)."""
    ordered = sorted(samples)
    busy, covered = 0.0, 0
    for (t0, _), (t1, percent) in zip(ordered, ordered[1:]):
        lo, hi = max(t0, start_us), min(t1, end_us)
        if hi > lo:
            busy += percent / 100.0 * (hi - lo) / 1e6
            covered += hi - lo
    return round(busy, 4) if covered else None


@dataclass(frozen=True)
class RunSeen:
    """What NVML saw of one timed run on its GPUs: readings before and after, and the busy seconds."""
    before: tuple[Reading | None, ...]
    after: tuple[Reading | None, ...]
    busy_s: float | None = None
    redone: tuple[str, ...] = ()  # the slowdowns of the run this one replaced

    @property
    def slowdowns(self) -> list[str]:
        return slowed(self.before, self.after)

    def record(self) -> dict[str, Any]:
        return {"before": [r.record() if r else None for r in self.before],
                "after": [r.record() if r else None for r in self.after],
                "busy_s": self.busy_s, "slowdowns": self.slowdowns, "redone_after": list(self.redone)}


@dataclass
class Watch:
    """NVML around each timed run on `gpus`: a run that saw a slowdown is redone once and the redo kept
    (flagged when it throttled too). `read` and `samples` are NVML's (recorded readings in tests)."""
    gpus: tuple[Gpu, ...]
    read: Callable[[Gpu], Reading | None] = read
    samples: Callable[[Gpu, int], list[tuple[int, int]] | None] = utilization_samples
    clock: Callable[[], float] = time.time
    kept: list[RunSeen] = field(default_factory=list)  # one per run whose time counts
    redone: list[RunSeen] = field(default_factory=list)  # the runs that slowed down and were run again

    def once(self, run: Callable[[], T]) -> tuple[T, RunSeen]:
        before = tuple(self.read(g) for g in self.gpus)
        start = int(self.clock() * 1e6)
        value = run()
        end = int(self.clock() * 1e6)
        after = tuple(self.read(g) for g in self.gpus)
        # (samples from a little before the start: the first one in the window needs the one before it)
        busy = [busy_seconds(self.samples(g, start - 2_000_000) or [], start, end) for g in self.gpus]
        return value, RunSeen(before, after, None if None in busy else round(sum(b or 0.0 for b in busy), 4))

    def run(self, run: Callable[[], T], log: Callable[[str], None] = lambda _: None) -> tuple[T, RunSeen]:
        """run() watched; run again once when the GPU slowed down during it, and the second one kept."""
        value, seen = self.once(run)
        if seen.slowdowns:
            log(f"the GPU slowed down during a timed run ({', '.join(seen.slowdowns)}): run again")
            self.redone.append(seen)
            value, again = self.once(run)
            seen = RunSeen(again.before, again.after, again.busy_s, tuple(seen.slowdowns))
        self.kept.append(seen)
        return value, seen

    def summary(self) -> dict[str, Any]:
        """The session's runs in numbers: how many counted, how many were run again, and how many counted
        though they throttled (their second try slowed down too)."""
        return {"runs": len(self.kept), "redone": len(self.redone),
                "throttled": sum(1 for s in self.kept if s.slowdowns),
                "slowdowns": sorted({r for s in self.kept + self.redone for r in s.slowdowns})}


class ClockLock:
    """The SM clock of `gpus` locked for a `with` block where allowed; `policy` says what was done."""

    _locked: set[str] = set()  # UUIDs locked by this process, restored at exit whatever happens
    _guard = threading.Lock()

    def __init__(self, gpus: tuple[Gpu, ...]) -> None:
        self.gpus = gpus
        self.policy = "default clocks (no GPU)" if not gpus else ""

    def __enter__(self) -> "ClockLock":
        if not self.gpus:
            return self
        with nvml() as lib:
            if lib is None:
                self.policy = "default clocks (NVML unavailable)"
                return self
            try:
                clocks = []
                for gpu in self.gpus:
                    handle = lib.nvmlDeviceGetHandleByUUID(gpu.uuid)
                    mhz = lib.nvmlDeviceGetDefaultApplicationsClock(handle, lib.NVML_CLOCK_GRAPHICS)
                    lib.nvmlDeviceSetGpuLockedClocks(handle, mhz, mhz)
                    with self._guard:
                        self._locked.add(gpu.uuid)
                    clocks.append(f"{mhz} MHz")
                self.policy = f"SM clock locked at {', '.join(clocks)}"
            except lib.NVMLError as err:
                self.policy = f"default clocks (locking not allowed here: {err})"
        if not self.policy.startswith("SM clock locked"):
            self._restore()  # (the GPUs locked before the one that refused)
        return self

    def __exit__(self, *_exc: object) -> None:
        self._restore()

    def _restore(self) -> None:
        with self._guard:
            mine = [g.uuid for g in self.gpus if g.uuid in self._locked]
        if mine:
            reset(mine)


def reset(uuids: list[str]) -> None:
    """Give the GPUs `uuids` their default clocks back (what a lock changed)."""
    with nvml() as lib:
        if lib is None:  # (nothing was locked without NVML)
            return
        for uuid in uuids:
            try:
                lib.nvmlDeviceResetGpuLockedClocks(lib.nvmlDeviceGetHandleByUUID(uuid))
            except lib.NVMLError:
                pass
            with ClockLock._guard:
                ClockLock._locked.discard(uuid)


@atexit.register
def _restore_at_exit() -> None:  # (SIGTERM ends the process through harness.signals: atexit runs)
    with ClockLock._guard:
        left = sorted(ClockLock._locked)
    if left:
        reset(left)
