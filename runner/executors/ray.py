"""The Ray executor: a run's rollouts and timing jobs as Ray Core tasks on a Ray cluster.

- One task per rollout, holding one `rollout_slot` (a custom resource each node declares: how many
  rollouts it runs at once) and no CPU (a rollout waits on its container and the model). The scaffold
  loop runs on the node, beside its container; the driver submits at most `parallel` at a time.
- One task per timing job, holding the node's one `timing_slot`; the node's rollout containers keep off
  the CPU its timed runs are pinned to (`executor.reserve_timing_cpu`).
- The driver keeps the run store, the progress display and the run cost cap. Workers report to a Board
  actor and read the driver's stop from it; the model's rate limiter is one actor for the whole run;
  images a node lacks come from the driver's engine (ray_actors.ImageDepot). Rollouts' checkpoints are kept
  in the run's folder through an actor, with archives any node rebuilds them from (runner.checkpoints).
- No API key passes through Ray: the runtime env carries the key variables' names, and each node's
  workers read the values from that node's environment or secrets file (ray_keys).
- A node that dies takes its tasks with it: Ray runs them again on another node (`max_retries`), and the
  sweep at the end removes what the dead workers left. A stop (Ctrl-C, SIGTERM, the cost cap) reaches
  the workers through the board; tasks still running `drain_s` later are cancelled.
"""
from __future__ import annotations

import logging
import os
import socket
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from harness.tasks.task import Task
from runner.config import ConfigError, ExecutorConf
from runner.executors.base import TICK_S, Context, Running
from runner.executors.ray_keys import key_names, runtime_env
from runner.grading import TimingJob
from runner.rollout import RUN_LABEL, RolloutJob, RolloutResult
from scaffolds.exits import ExitReason

RETRIES = 3  # times Ray re-runs a task whose worker or node died
SWEEP_TIMEOUT_S = 60.0
START_NODES = "ray start --head --resources='{\"rollout_slot\": 8, \"timing_slot\": 1}'"


@dataclass
class RemoteRollout:
    """A running rollout as its worker last reported it (runner.executors.Running)."""
    task_id: str
    index: int
    started_at: float
    attempt: int
    steps: int
    cost: float


def connect(conf: ExecutorConf, key_vars: list[str]) -> None:
    """Join the cluster `conf.address` names, or start a Ray on this machine for the run. `key_vars`: the
    names of the variables holding the model's key; only the names go into the runtime env (Ray stores and
    logs it on every node), the workers read the values on their own node (runner.executors.ray_keys)."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    reachable(conf.address)
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    if key_vars:
        options["runtime_env"] = runtime_env(key_vars)
    try:
        if conf.address:
            ray.init(address=conf.address, **options)
        else:
            ray.init(resources={"rollout_slot": conf.slots_per_node, "timing_slot": 1}, **options)
    except (ConnectionError, RuntimeError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ConfigError(f"cannot reach the Ray cluster at {conf.address!r} ({first}); start one with "
                          f"`{START_NODES}` or leave executor.address empty for a Ray on this machine") from None


def reachable(address: str, timeout_s: float = 5.0) -> None:
    """A HOST:PORT (or ray://HOST:PORT) that does not answer is refused in seconds: Ray itself keeps
    retrying for minutes."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "" or "auto": Ray answers at once
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as err:
        raise ConfigError(f"cannot reach the Ray cluster at {address!r} ({err.strerror or err}); start one with "
                          f"`{START_NODES}` or leave executor.address empty for a Ray on this machine") from None


def _config_error(err: Any) -> ConfigError | None:
    """A worker's ConfigError (a node without the model's key) as the driver's own one-line error, without
    Ray's remote traceback around it; None for anything else."""
    cause = getattr(err, "cause", None)
    return ConfigError(str(cause)) if isinstance(cause, ConfigError) else None


def _on_gpus(remote: Any, task: Task) -> Any:
    """`remote` asking Ray for a GPU task's GPUs: it lands on a node that has them, held for it meanwhile."""
    return remote.options(num_gpus=task.gpus) if task.gpus else remote


class RayExecutor:
    def __init__(self, context: Context) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from runner.executors import ray_node
        from runner.checkpoints import Folder
        from runner.executors.ray_actors import Board, ImageDepot, limiter_actor

        self.context, self.conf = context, context.conf
        # Model calls go out from the nodes: each needs the key, which it holds itself (ray_keys).
        connect(self.conf.executor, key_names(self.conf.model.api_key_env))
        self.stopping: ExitReason | None = None
        self.overheads: list[float] = []
        try:
            self._check_resources(ray.cluster_resources())
            # The shared state lives on the driver's node (where the images and the run store are).
            here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
            # (an actor handle, as the nodes take it: Ray types it as Board itself, whose methods have no .remote)
            self.board: Any = ray.remote(Board).options(num_cpus=0, scheduling_strategy=here).remote()
            self.depot = ray.remote(ImageDepot).options(num_cpus=0, scheduling_strategy=here).remote(
                self.conf.sandbox.provider)
            self.limiter = limiter_actor(self.conf.model, scheduling_strategy=here)
            self.checkpoints = None if context.checkpoints is None else ray.remote(Folder).options(
                num_cpus=0, scheduling_strategy=here).remote(context.checkpoints)
            self._rollout = ray.remote(ray_node.run_rollout).options(
                num_cpus=0, resources={"rollout_slot": 1}, max_retries=RETRIES)
            self._timing = ray.remote(ray_node.time_patches).options(
                num_cpus=0, resources={"timing_slot": 1}, max_retries=RETRIES)
            self._conf = ray.put(self.conf)  # one copy in the object store, not one per task
            self._warm_up()
        except BaseException:
            ray.shutdown()
            raise

    def _check_resources(self, total: dict[str, float]) -> None:
        if total.get("rollout_slot", 0) < 1:
            raise ConfigError(f"no node of the Ray cluster at {self.conf.executor.address!r} offers a "
                              f"`rollout_slot`; start its nodes with `{START_NODES}`")
        if self.conf.grade != "none" and total.get("timing_slot", 0) < 1:
            raise ConfigError("no node of the Ray cluster offers a `timing_slot` for grading; start nodes with "
                              f"`{START_NODES}` or run with grade=none")

    def _warm_up(self) -> None:
        """Start the workers and import litellm there before any rollout's clock starts (seconds each)."""
        import ray

        from runner.executors import ray_node

        slots = int(ray.cluster_resources().get("rollout_slot", 1))
        task = ray.remote(ray_node.warm_up).options(num_cpus=0, resources={"rollout_slot": 1})
        try:
            # Ray's overloads take warm_up (all its arguments optional) for a function of none:
            ray.get([task.remote(self.conf.model)  # type: ignore[call-arg]
                     for _ in range(min(self.conf.parallel, slots))])
        except ray.exceptions.RayTaskError as err:
            raise _config_error(err) or err.as_instanceof_cause() from None

    # ---------------------------------------------------------------- rollouts
    def run_rollouts(self, jobs: Sequence[RolloutJob], done: Callable[[RolloutJob, RolloutResult | None], None],
                     tick: Callable[[], None]) -> None:
        import ray

        queue: deque[RolloutJob] = deque(jobs)
        pending: dict[Any, tuple[RolloutJob, float]] = {}
        told: ExitReason | None = None
        stopped_at: float | None = None
        cancelled = False
        run_id = self.context.run_id
        while queue or pending:
            if self.stopping:
                if told != self.stopping:  # from the driver's thread, never from a signal handler
                    self.board.stop.remote(self.stopping)
                    told, stopped_at = self.stopping, stopped_at or time.monotonic()
                while queue:
                    done(queue.popleft(), None)
                drained = stopped_at is not None and time.monotonic() - stopped_at > self.conf.executor.drain_s
                if drained and pending and not cancelled:
                    for ref in pending:
                        ray.cancel(ref, force=True)
                    cancelled = True
            while queue and len(pending) < self.conf.parallel:
                job = queue.popleft()
                rollout = _on_gpus(self._rollout, job.task)
                pending[rollout.remote(self._conf, run_id, job, self.board, self.limiter, self.depot,
                                       self.checkpoints)] = (
                    job, time.monotonic())
            if pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=TICK_S)
                if ready:  # and whatever else has finished meanwhile
                    ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
                for ref in ready:
                    job, submitted = pending.pop(ref)
                    result = self._result(ref, job)
                    if result is not None and result.record.attempts == 1:
                        self.overheads.append(time.monotonic() - submitted - result.record.wall_time_s)
                    done(job, result)
            tick()
        if self.overheads:
            print(f"ray: {len(self.overheads)} rollouts; scheduling overhead per rollout (driver's round trip "
                  f"minus the rollout's own time): mean {statistics.mean(self.overheads):.3f} s, "
                  f"max {max(self.overheads):.3f} s", flush=True)

    def _result(self, ref: Any, job: RolloutJob) -> RolloutResult | None:
        import ray

        try:
            return ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return None
        except ray.exceptions.RayTaskError as err:  # our code raised: a bug (or a node without the key)
            raise _config_error(err) or err.as_instanceof_cause() from None
        except ray.exceptions.RayError as err:  # its worker or node died more often than Ray retries
            print(f"ray: {job.task.id} #{job.index} lost ({type(err).__name__}); not recorded, a resume runs it "
                  "again", flush=True)
            return None
        finally:
            self.board.done.remote(job.key)

    def running(self) -> list[Running]:
        import ray

        try:
            return [RemoteRollout(**s) for s in ray.get(self.board.running.remote(), timeout=5)]
        except ray.exceptions.GetTimeoutError:
            return []

    def stop(self, reason: ExitReason) -> None:
        """Only flags (it may run in a signal handler); the rollout loop tells the board."""
        if self.stopping != ExitReason.INTERRUPTED:
            self.stopping = reason

    # ---------------------------------------------------------------- grading
    def time_patches(self, jobs: Sequence[TimingJob],
                     log: Callable[[str], None]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        import ray

        refs = {_on_gpus(self._timing, job.task).remote(job, self.depot): i for i, job in enumerate(jobs)}
        try:
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1, timeout=TICK_S)
                for ref in ready:
                    i = refs.pop(ref)
                    try:
                        reports = ray.get(ref)
                    except ray.exceptions.RayTaskError as err:
                        raise err.as_instanceof_cause() from None
                    yield i, reports
        finally:  # interrupted: the timing jobs still running end now
            for ref in refs:
                ray.cancel(ref, force=True)

    # ---------------------------------------------------------------- the end
    def remove_sandboxes(self) -> None:
        """The second signal: this machine's containers of the run, at once (in a signal handler, no Ray
        calls); the other nodes' are removed when their workers die with the driver, or by the next run."""
        self.context.sandboxes.cleanup("all", labels={RUN_LABEL: self.context.run_id})

    def close(self) -> None:
        import ray

        if not ray.is_initialized():
            return
        try:
            self._sweep_nodes()
        finally:
            ray.shutdown()

    def _sweep_nodes(self) -> None:
        """Every live node removes the run's leftover containers (the workers of a dead node, a cancelled
        task) on its own engine."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from runner.executors import ray_node

        sweep = ray.remote(ray_node.sweep)
        refs = [sweep.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], False))
                .remote(self.context.run_id, self.conf.sandbox.provider) for node in ray.nodes() if node.get("Alive")]
        try:
            ray.get(refs, timeout=SWEEP_TIMEOUT_S)
        except ray.exceptions.RayError as err:
            print(f"ray: the containers sweep did not finish on every node ({type(err).__name__}); "
                  "`python -m harness cleanup` on a node removes what is left", flush=True)
