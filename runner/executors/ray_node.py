"""What runs on a Ray node: one rollout, one task's timing session, a sweep of a run's containers, a warm-up.

Every function uses the node's own engine, of the sandbox provider the run names (`sandbox.provider`,
carried by the config, the timing job or the call). A rollout reports to the driver's Board about twice a
second (steps, cost) and learns from it when to stop; the model calls go out from the node, through the
run's shared rate limiter, with the key the node itself holds (ray_keys: its environment or secrets
file; Ray never carries it). A missing task image is loaded from the driver's ImageDepot before the
container starts.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import ray

from harness import gpus
from harness.models.config import ModelConfig
from runner.config import RunConf
from runner.grading import TimingJob
from runner.rollout import RUN_LABEL, Interrupted, Live, RolloutJob, RolloutResult, RolloutRunner
from scaffolds.exits import ExitReason

SYNC_S = 0.5  # how often a rollout reports to the board


def ensure_image(image: str, depot: Any, provider_name: str) -> None:
    """Make sure the node's engine of provider `provider_name` has `image`: present, or loaded from the
    driver's depot (once per node: concurrent rollouts of one task wait for the first to load it)."""
    from harness.sandbox.providers import provider

    engine = provider(provider_name)
    if engine.has_image(image):
        return
    fd = os.open(image_lock(image), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not engine.has_image(image):
            (refs,) = ray.get(depot.tar.remote(image))
            engine.import_image(ray.get(ref) for ref in refs)  # (one piece in memory at a time)
    finally:
        os.close(fd)  # (drops the lock)


def image_lock(image: str) -> Path:
    """The node's lock for loading `image`: in a folder of this user's own (not the shared temp folder,
    where another user could plant the file, or hold its lock for ever)."""
    folder = Path.home() / ".cache" / "optrunner" / "locks"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder / f"image-{hashlib.sha1(image.encode()).hexdigest()[:16]}.lock"


def timing_cpuset(reserve: bool) -> str | None:
    """The CPUs a node's rollout containers may use when one is kept for timing (the grader pins its timed
    runs to the last CPU, GradeConfig.timing_cpuset); None on a one-CPU node or when not reserving."""
    cpus = os.cpu_count() or 1
    if not reserve or cpus < 2:
        return None
    return "0" if cpus == 2 else f"0-{cpus - 2}"


def run_rollout(conf: RunConf, run_id: str, job: RolloutJob, board: Any, limiter: Any, depot: Any,
                checkpoints: Any = None) -> RolloutResult | None:
    """One rollout on this node; None when the run is stopping (the driver drops it; a resume redoes it).
    `checkpoints`: the driver's checkpoints folder (an actor), where this rollout's are kept and read."""
    from harness.sandbox.providers import provider
    from runner.checkpoints import checkpoint_dir
    from runner.executors.ray_actors import RemoteFiles, share_limiter
    from runner.executors.ray_keys import check_node

    check_node(conf.model)  # a node without the key says so once, instead of each rollout failing on auth
    share_limiter(limiter)
    if job.task.gpus:  # the GPUs Ray gave this task are this process's whole pool
        gpus.restrict(ray.get_gpu_ids())
    live = Live(job.task.id, job.index)
    if ray.get(board.sync.remote(job.key, live.snapshot())) is not None:
        return None  # stopped while queued
    stopped = threading.Event()

    def report() -> None:
        while not stopped.wait(SYNC_S):
            try:
                reason = ray.get(board.sync.remote(job.key, live.snapshot()), timeout=10)
            except ray.exceptions.RayActorError:  # the board died with its driver: nobody will take the result
                reason = ExitReason.INTERRUPTED
            except ray.exceptions.RayError:  # the driver is busy: the rollout's own limits still hold
                continue
            if reason is not None and (live.stop_reason is None or reason != live.stop_reason):
                live.request_stop(reason)

    reporter = threading.Thread(target=report, name=f"board-{job.task.id}-{job.index}", daemon=True)
    reporter.start()
    kept = None
    try:
        sandboxes = provider(conf.sandbox.provider)
        ensure_image(job.image, depot, conf.sandbox.provider)  # (also what a checkpoint is rebuilt over)
        if checkpoints is not None:
            kept = checkpoint_dir(RemoteFiles(checkpoints), run_id, sandboxes, travel=True)
        runner = RolloutRunner(conf, run_id, sandboxes, cpuset=timing_cpuset(conf.executor.reserve_timing_cpu),
                               checkpoints=kept)
        return runner.run(job, live)
    except Interrupted:
        return None
    finally:
        stopped.set()
        board.done.remote(job.key)
        if kept is not None:  # its checkpoint lives on in the driver's folder, as archives
            kept.drop_local(job.task.id, job.index)


def time_patches(job: TimingJob, depot: Any) -> list[dict[str, Any]]:
    """One task's timing session on this node (it holds the node's one `timing_slot`)."""
    from harness.grader.grade import grade_patches
    from harness.sandbox.providers import provider

    if job.task.gpus:
        gpus.restrict(ray.get_gpu_ids())
    for image in {job.image, job.base_image} - {""}:
        ensure_image(image, depot, job.provider)
    return grade_patches(job.task, list(job.patches), job.image, job.config, instance_id=job.task.id,
                         sandboxes=provider(job.provider), base_image=job.base_image)


def sweep(run_id: str, provider_name: str) -> int:
    """Remove this run's sandboxes on this node's engine of provider `provider_name`, and those whose owning
    process died (a worker killed with its node, a force-cancelled task), and the checkpoints no file of this
    machine needs (a worker killed before it dropped its own). Returns how many sandboxes were removed."""
    from harness.sandbox.providers import provider

    engine = provider(provider_name)
    removed = engine.cleanup("all", labels={RUN_LABEL: run_id}) + engine.cleanup("orphans")
    engine.cleanup_checkpoints("orphans")
    return removed


def warm_up(model: ModelConfig | None = None) -> int:
    """Start a worker and import what a rollout needs (litellm takes seconds), before any rollout's clock;
    and check that the node holds the model's key (ray_keys.check_node)."""
    from harness.models.loader import litellm_module
    from runner.executors.ray_keys import check_node

    import runner.rollout  # noqa: F401

    litellm_module()
    check_node(model)
    return os.getpid()
