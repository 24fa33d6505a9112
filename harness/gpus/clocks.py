"""A GPU's state around timed runs: NVML readings (clocks, temperature, power, throttle reasons) and the SM
clock locked for a grading session where the driver allows it.

A timed GPU run is worth as much as the clock it ran at: a GPU that boosts, heats and throttles between
the base's run and the patch's moves a ratio by more than a good kernel does. So a session locks the SM
clock at the GPU's default applications clock (sustainable without throttling) where allowed (root, a
driver that supports it), restores it after (also when the process ends), and says once where it cannot.
Readings before and after each run name the throttle reasons that slow a GPU down (`slowdowns`), so
a run that saw one can be flagged and redone. Readings are plain records, so what a GPU machine
recorded can be read back and checked anywhere.
"""
from __future__ import annotations

import atexit
import threading
from dataclasses import asdict, dataclass
from typing import Any

from harness.gpus import Gpu, nvml

# NVML's clocks-event ("throttle") reason bits, by name
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
           0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
           0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
# The reasons that mean the GPU ran slower than it was asked to (idle, a set clock or sync are not)
SLOWDOWNS = frozenset({"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                       "hw_power_brake_slowdown"})


@dataclass(frozen=True)
class Reading:
    sm_clock_mhz: int
    memory_clock_mhz: int
    temperature_c: int
    power_w: float
    reasons: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "Reading":
        return cls(int(record["sm_clock_mhz"]), int(record["memory_clock_mhz"]), int(record["temperature_c"]),
                   float(record["power_w"]), tuple(record.get("reasons", ())))

    def record(self) -> dict[str, Any]:
        return {**asdict(self), "reasons": list(self.reasons)}


def reasons_of(mask: int) -> tuple[str, ...]:
    """NVML's reason bit mask as names (an unknown bit as its hex value)."""
    out = [name for bit, name in REASONS.items() if mask & bit]
    unknown = mask & ~sum(REASONS)
    return tuple(out + ([hex(unknown)] if unknown else []))


def slowdowns(*readings: Reading | None) -> list[str]:
    """The slowdown reasons any of `readings` saw (a run that saw one is not a fair measure)."""
    return sorted({r for reading in readings if reading for r in reading.reasons if r in SLOWDOWNS})


def read(gpu: Gpu) -> Reading | None:
    """`gpu`'s state now; None where NVML cannot say."""
    with nvml() as lib:
        if lib is None:
            return None
        try:
            handle = lib.nvmlDeviceGetHandleByUUID(gpu.uuid)
            return Reading(lib.nvmlDeviceGetClockInfo(handle, lib.NVML_CLOCK_SM),
                           lib.nvmlDeviceGetClockInfo(handle, lib.NVML_CLOCK_MEM),
                           lib.nvmlDeviceGetTemperature(handle, lib.NVML_TEMPERATURE_GPU),
                           lib.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                           reasons_of(lib.nvmlDeviceGetCurrentClocksThrottleReasons(handle)))
        except lib.NVMLError:
            return None


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
