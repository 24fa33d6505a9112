"""The machine's GPUs: what NVML reports, whether a task's request fits them, and a pool that gives each
rollout GPUs of its own.

NVML comes from the `nvidia-ml-py` package (the `gpu` extra), which loads the driver's libnvidia-ml; a
machine without either has no GPUs as far as this tool is concerned (never an error). Tasks ask for a
number of GPUs and, optionally, their types (Harbor's `[environment].gpus` and `gpu_types`; a folder
task's `gpus:` and `gpu_types:`), a type matching a GPU whose name contains it ("H100" matches
"NVIDIA H100 80GB HBM3").
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML's index: the device node /dev/nvidia<index>
    uuid: str  # what CUDA_VISIBLE_DEVICES and Docker's device requests name it by
    name: str
    memory_mb: int = 0

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> "Gpu":
        """A GPU from a recorded reading (as `record()` writes it)."""
        return cls(int(record["index"]), str(record["uuid"]), str(record["name"]), int(record.get("memory_mb", 0)))

    def record(self) -> dict[str, Any]:
        return {"index": self.index, "uuid": self.uuid, "name": self.name, "memory_mb": self.memory_mb}

    def matches(self, types: Sequence[str]) -> bool:
        return not types or any(t.lower() in self.name.lower() for t in types)


@contextmanager
def nvml() -> Iterator[Any]:
    """NVML (the `pynvml` module) initialized for the block; None where there is no nvidia-ml-py or no
    driver (never an error)."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - ImportError, or NVMLError without a driver
        yield None
        return
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()


@lru_cache(maxsize=1)
def inventory() -> tuple[Gpu, ...]:
    """The GPUs NVML reports on this machine; () where there is no nvidia-ml-py or no driver."""
    with nvml() as lib:
        if lib is None:
            return ()
        out = []
        for index in range(lib.nvmlDeviceGetCount()):
            handle = lib.nvmlDeviceGetHandleByIndex(index)
            name, uuid = lib.nvmlDeviceGetName(handle), lib.nvmlDeviceGetUUID(handle)
            memory = lib.nvmlDeviceGetMemoryInfo(handle).total // 2**20
            out.append(Gpu(index, uuid.decode() if isinstance(uuid, bytes) else uuid,
                           name.decode() if isinstance(name, bytes) else name, int(memory)))
        return tuple(out)


# What a grading session does with a GPU's clocks (gpus.clocks.ClockLock; each session records the outcome)
CLOCK_POLICY = "SM clock locked at the default applications clock per grading session, where allowed"


@lru_cache(maxsize=1)
def system() -> dict[str, Any]:
    """The machine's GPUs for provenance: models, driver and CUDA versions, the clock policy; {} without."""
    found = inventory()
    if not found:
        return {}
    with nvml() as lib:
        driver = cuda = None
        if lib is not None:
            try:
                raw = lib.nvmlSystemGetDriverVersion()
                driver = raw.decode() if isinstance(raw, bytes) else str(raw)
                version = int(lib.nvmlSystemGetCudaDriverVersion())  # e.g. 12040
                cuda = f"{version // 1000}.{version % 1000 // 10}"
            except lib.NVMLError:
                pass
    return {"models": [g.name for g in found], "driver": driver, "cuda": cuda, "clock_policy": CLOCK_POLICY}


def describe(gpus: Sequence[Gpu]) -> str:
    if not gpus:
        return "this machine has none"
    names = sorted({g.name for g in gpus})
    return f"this machine has {len(gpus)}: {', '.join(names)}"


def misfit(count: int, types: Sequence[str], gpus: Sequence[Gpu]) -> str | None:
    """Why a task asking for `count` GPUs of `types` cannot run on `gpus` (one phrase), or None when it can."""
    if count <= 0:
        return None
    usable = [g for g in gpus if g.matches(types)]
    if len(usable) >= count:
        return None
    kind = f" of type {' or '.join(types)}" if types else ""
    return f"it needs {count} GPU(s){kind} and {describe(gpus)}"


# What every CUDA process opens besides its GPUs' own /dev/nvidia<index> (those present are bound)
CONTROL_NODES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset",
                 "/dev/nvidia-caps")


def device_nodes(gpus: Sequence[Gpu]) -> list[str]:
    """The device nodes a sandbox given `gpus` needs: theirs, then the driver's control nodes."""
    if not gpus:
        return []
    return [f"/dev/nvidia{g.index}" for g in gpus] + list(CONTROL_NODES)


def visible_env(gpus: Sequence[Gpu]) -> dict[str, str]:
    """What makes CUDA see only `gpus` (by UUID: indexes renumber inside a container)."""
    return {"CUDA_VISIBLE_DEVICES": ",".join(g.uuid for g in gpus)} if gpus else {}


class GpuPool:
    """The machine's GPUs handed out whole: `lease` waits until enough matching ones are free."""

    def __init__(self, gpus: Sequence[Gpu]) -> None:
        self.gpus = tuple(gpus)
        self._free = list(self.gpus)
        self._changed = threading.Condition()

    def acquire(self, count: int, types: Sequence[str] = (), timeout: float | None = None) -> tuple[Gpu, ...]:
        """`count` free GPUs matching `types` (waiting for them); ValueError when the machine never has them,
        TimeoutError when `timeout` seconds pass first."""
        if count <= 0:
            return ()
        why = misfit(count, types, self.gpus)
        if why:
            raise ValueError(why)
        with self._changed:
            if not self._changed.wait_for(lambda: len([g for g in self._free if g.matches(types)]) >= count,
                                          timeout):
                raise TimeoutError(f"no {count} free GPU(s) within {timeout:g} s")
            taken = tuple([g for g in self._free if g.matches(types)][:count])
            for gpu in taken:
                self._free.remove(gpu)
            return taken

    def release(self, gpus: Sequence[Gpu]) -> None:
        with self._changed:
            for gpu in gpus:
                if gpu in self.gpus and gpu not in self._free:
                    self._free.append(gpu)
            self._free.sort(key=lambda g: g.index)
            self._changed.notify_all()

    @contextmanager
    def lease(self, count: int, types: Sequence[str] = ()) -> Iterator[tuple[Gpu, ...]]:
        taken = self.acquire(count, types)
        try:
            yield taken
        finally:
            self.release(taken)

    @property
    def free(self) -> tuple[Gpu, ...]:
        with self._changed:
            return tuple(self._free)


_pool: GpuPool | None = None
_pool_lock = threading.Lock()


def machine_pool() -> GpuPool:
    """This process's pool of the machine's GPUs (every rollout of a run draws from it)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = GpuPool(inventory())
        return _pool


def restrict(ids: Sequence[int | str], machine: Sequence[Gpu] | None = None) -> GpuPool:
    """This process's pool made of the GPUs `ids` only (indexes or UUIDs): those a scheduler gave the process
    (Ray's `get_gpu_ids()`), so that two processes on one machine never lease the same GPU."""
    global _pool
    wanted = {str(i) for i in ids}
    chosen = [g for g in (inventory() if machine is None else machine) if str(g.index) in wanted or g.uuid in wanted]
    with _pool_lock:
        _pool = GpuPool(chosen)
        return _pool
