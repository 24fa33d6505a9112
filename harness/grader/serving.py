"""One launch of a service task's server: started fenced in a state's sandbox, probed, measured, stopped.

A launch (one state, one round):
1. the task's start command runs in the state's sandbox as the fenced user (isolation.wrap: a fresh HOME and
   TMPDIR, a repository it cannot write), in a thread of ours that waits on it;
2. readiness: the grader connects through the sandbox's own network namespace (`Connectable`) until the
   port answers (GET of the task's path answered 200, or a TCP connection for `tcp`), within the task's
   cap; how long it took is reported, so work moved before readiness is seen;
3. the warm-up requests, then the round's workload, sent by the grader's client (harness.serving.client);
4. stop: every process of the fenced user gets TERM, then KILL, and the wrapper removes what the run left
   in the container's writable places; on a GPU task, every compute process still on the session's GPUs
   (they are its alone) is killed from here too; the port must be free after it. So nothing of one launch
   (a cache in memory or on disk, a process, GPU memory) is there for the next.
"""
from __future__ import annotations

import os
import secrets
import signal
import shlex
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from harness.grader.config import GradeConfig
from harness.grader.isolation import parse, wrap
from harness.grader.states import CodeState, StepFailed, Stop, env_prefix, reason_of
from harness.grader.timing import RATIOS, bootstrap, estimates
from harness.gpus import Gpu
from harness.gpus.clocks import compute_pids
from harness.sandbox.interface import TESTBED, Connectable, ExecResult, SandboxError, harness_exec
from harness.serving.client import Endpoint, run_sync
from harness.serving.metrics import RequestRecord, as_cost, summarize
from harness.serving.spec import Service
from harness.serving.workload import Request, Workload, generate, held_out_seeds

STOP_GRACE_S = 2.0  # between TERM and KILL
TAIL = 2000  # characters of a server's output kept when it fails


@dataclass
class Launch:
    """What one launch measured."""
    ready_s: float
    records: list[RequestRecord] = field(default_factory=list)
    after: list[list[RequestRecord]] = field(default_factory=list)  # the records of launch()'s `after`
    output: str = ""  # the server's own output (its tail)
    gpu_leftovers: list[int] = field(default_factory=list)  # compute processes killed from outside after it


def _probe(box: Connectable, service: Service) -> bool:
    """Whether the server answers: a 200 to GET of the ready path, or a TCP connection for `tcp`."""
    (sock,) = box.connection_sockets(1)
    try:
        sock.settimeout(2.0)
        sock.connect(("127.0.0.1", service.port))
        if service.ready == "tcp":
            return True
        sock.sendall(f"GET {service.ready} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        status = sock.recv(64).split(b" ", 2)
        return len(status) >= 2 and status[1] == b"200"
    except OSError:
        return False
    finally:
        sock.close()


def _start_command(state: CodeState, service: Service, lifetime_s: float) -> str:
    env = {**state.env, **dict(service.env)}
    workdir = state.task.workdir or TESTBED
    # timeout(1) caps the server's life whatever the grader does; exec: the server is the fenced process
    command = (f"{env_prefix(env)}cd {shlex.quote(workdir)} && exec timeout -s KILL {lifetime_s:.0f} "
               f"bash -c {shlex.quote(service.start)}")
    assert state.fence is not None
    return wrap(state.fence, command)


def launch(state: CodeState, service: Service, requests: list[Request], warmup: list[Request],
           after: Sequence[tuple[Workload, list[Request]]] = (), client_cpus: set[int] | None = None,
           gpus: Sequence[Gpu] = ()) -> Launch:
    """Start `state`'s server, send `warmup` then `requests` (the measured workload), then each of `after` (a
    workload and its requests: records of their own, in `Launch.after`), and stop it. StepFailed when the
    server does not come up, exits early or leaves its port taken; SandboxError when the sandbox cannot be
    reached from here. `client_cpus`: where the client runs meanwhile (off the CPU the server is pinned to,
    so the two never take turns on one CPU). `gpus`: the session's, emptied of compute processes after it."""
    box = state.sandbox
    if not isinstance(box, Connectable):
        raise SandboxError("this sandbox provider cannot reach a server inside its sandboxes (no Connectable)")
    if state.fence is None:  # stopping the server is stopping the fenced user's processes
        raise ValueError("a service task's servers run fenced: grade it with grading.fresh_state=true")
    sent = len(requests) + len(warmup) + sum(len(more) for _, more in after)
    budget = service.ready_timeout_s + service.request_timeout_s * sent + 60
    ran: dict[str, ExecResult | BaseException] = {}

    def serve() -> None:
        try:
            ran["done"] = box.exec(_start_command(state, service, budget), timeout=budget + 30, cwd="/",
                                   login=False)
        except BaseException as err:  # noqa: BLE001 - read by the launching thread
            ran["done"] = err

    server = threading.Thread(target=serve, name=f"serve-{state.name}", daemon=True)
    started = time.monotonic()
    server.start()
    try:
        while not _probe(box, service):
            if "done" in ran:
                raise StepFailed("the server", f"it exited before it was ready\n{_output(ran['done'])}")
            if time.monotonic() - started > service.ready_timeout_s:
                raise StepFailed("the server", f"not ready within {service.ready_timeout_s:g} s")
            time.sleep(0.1)
        result = Launch(round(time.monotonic() - started, 3))
        previous = os.sched_getaffinity(0)  # (this thread's: the client runs on it)
        if client_cpus:
            os.sched_setaffinity(0, client_cpus)
        try:
            result.records = _phase(box, service, service.workload, requests, warmup)
            result.after = [_phase(box, service, workload, more, []) for workload, more in after]
        finally:
            os.sched_setaffinity(0, previous)
    finally:
        _stop(state, server)
        leftovers = end_compute(gpus)
    result.output, result.gpu_leftovers = _output(ran.get("done", "")), leftovers
    if _probe(box, service):
        raise StepFailed("the server", "its port still answers after every process of the run was stopped")
    return result


def _phase(box: Connectable, service: Service, workload: Workload, requests: list[Request],
           warmup: list[Request]) -> list[RequestRecord]:
    """One workload sent by the client, over sockets made in the sandbox's namespace beforehand (making one
    is a visit to the namespace, and a Docker container's pid a call to its engine: not on the clock)."""
    pool = box.connection_sockets(len(requests) + len(warmup))
    endpoint = Endpoint(pool.pop, service.port, path=service.endpoint, model=service.model)
    try:
        return run_sync(endpoint, requests, workload, service.request_timeout_s, warmup)
    finally:
        for sock in pool:  # (none is left unless a request never started)
            sock.close()


def _stop(state: CodeState, server: threading.Thread) -> None:
    """TERM then KILL to every process of the fenced user (the fence's own way: as that user, kill -1)."""
    assert state.fence is not None  # (launch refuses an unfenced state)
    kill = f"{state.fence.drop} bash -c 'kill -{{sig}} -1' 2>/dev/null"  # (kill -1 spares the caller)
    # Whether any process of the user is left, read from /proc (kill -0 -1 cannot tell: it succeeds when any
    # other process exists, permitted or not)
    left = f"[ -n \"$(find /proc -mindepth 1 -maxdepth 1 -name '[0-9]*' -user {state.fence.uid} -print -quit)\" ]"
    polls = int(STOP_GRACE_S / 0.05)
    harness_exec(state.sandbox, f"{kill.format(sig='TERM')}; for _ in $(seq {polls}); do "
                 f"{left} || break; sleep 0.05; done; {kill.format(sig='KILL')}; true", timeout=60, cwd="/")
    server.join(30)


def end_compute(gpus: Sequence[Gpu], listed: Callable[[Gpu], Sequence[int]] = compute_pids,
                wait_s: float = 10.0) -> list[int]:
    """After a server stopped: the compute processes still on `gpus`, killed. The GPUs are the grading
    session's alone and one server runs at a time, so whatever runs there now is this launch's: a worker its
    process group did not take along (or one outside the fence). Those still exiting get STOP_GRACE_S first.
    Returns the pids killed; StepFailed when one is still listed `wait_s` after SIGKILL."""
    def left() -> set[int]:
        return {pid for gpu in gpus for pid in listed(gpu)}

    found = left()
    grace = time.monotonic() + STOP_GRACE_S
    while found and time.monotonic() < grace:
        time.sleep(0.05)
        found = left()
    for pid in sorted(found):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # (it ended meanwhile)
    deadline = time.monotonic() + wait_s
    while (still := left()) and time.monotonic() < deadline:
        time.sleep(0.05)
    if still:
        raise StepFailed("stopping the server", f"GPU compute process(es) {sorted(still)} outlived SIGKILL")
    return sorted(found)


def _output(done: ExecResult | BaseException | str) -> str:
    if isinstance(done, ExecResult):
        return parse(done.output)[0][-TAIL:]
    return str(done)[-TAIL:]


@dataclass
class ServedRounds:
    """What a service task's rounds measured: values[state][metric], one per round; runs[state], one summary
    per launch (seed, readiness, requests completed, failed, short; on GPUs, the compute processes killed
    after it); quality[state], the fraction of the words of its answers (the workloads' and the quality
    prompts') that differ from the base's;
    visible[state], the primary metric on the agent's own seed; failed: the patches whose server failed
    (dropped from later rounds)."""
    seeds: list[int]
    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    runs: dict[str, list[dict]] = field(default_factory=dict)
    quality: dict[str, float] = field(default_factory=dict)
    visible: dict[str, float] = field(default_factory=dict)
    failed: dict[str, StepFailed] = field(default_factory=dict)


    def costs(self, name: str, metric: str) -> list[float]:
        """A state's metric per round as a cost (lower better: a throughput inverted), for the verdicts."""
        return [as_cost(metric, v) for v in self.values[name][metric]]

    def report(self, name: str, base: str, commit: str, config: GradeConfig) -> dict[str, Any]:
        """The serving block of a patch's report: each metric per round for the three states, its paired
        speedups (median over rounds of each round's ratio, as costs) with bootstrap intervals, the runs,
        the quality gate's reading and the visible-vs-held-out gap of the primary metric."""
        metrics: dict[str, Any] = {}
        for metric in self.values[name]:
            arrays = {"base": np.array([self.costs(base, metric)]), "patch": np.array([self.costs(name, metric)]),
                      "commit": np.array([self.costs(commit, metric)])}
            _, speedups = estimates(arrays, config.stat)
            intervals = bootstrap(arrays, config)
            metrics[metric] = {
                "rounds": {"base": self.values[base][metric], "patch": self.values[name][metric],
                           "commit": self.values[commit][metric]},
                "speedup": {key: float(speedups[key][0]) for key in RATIOS},
                "intervals": {key: intervals[f"gm_speedup_{key}"] for key in RATIOS}}
        primary = next(iter(self.values[name]))
        held_out = float(np.mean(self.values[name][primary]))
        visible = self.visible.get(name)
        return {"seeds": self.seeds, "primary": primary, "metrics": metrics,
                "runs": {"base": self.runs[base], "patch": self.runs[name], "commit": self.runs[commit]},
                "quality_differs": self.quality.get(name),
                "visible_seed": {"value": visible, "held_out_mean": held_out,
                                 "gap": None if visible is None or not held_out else visible / held_out - 1}}


def differing_words(answers: list[str], reference: list[str]) -> float:
    """The fraction of the reference's words a set of answers does not repeat in place (0: the same)."""
    total = wrong = 0
    for got, want in zip(answers, reference):
        a, b = got.split(), want.split()
        total += max(len(a), len(b))
        wrong += sum(1 for x, y in zip(a, b) if x != y) + abs(len(a) - len(b))
    return wrong / total if total else 0.0


def serve_rounds(task_id: str, service: Service, base: CodeState, commit: CodeState, patches: list[CodeState],
                 rounds: int, log: Callable[[str], None], server_cpus: str | None = None,
                 gpus: Sequence[Gpu] = ()) -> ServedRounds:
    """Every state's server launched once per round on that round's held-out seed, states in an order that
    rotates each round; the first round also asks the quality prompts one at a time and the agent's own seed.
    `server_cpus` (the timing cpuset the states are pinned to): the client runs on the other CPUs. `gpus`: the
    session's (each launch leaves no compute process on them).
    A base or expert server that fails ends the session (Stop); a patch's fails that patch."""
    secret = secrets.randbits(63)  # this session's: its seeds cannot be known before it
    seeds = held_out_seeds(service.visible_seed, rounds + 1, secret)
    quality_seed, seeds = seeds[-1], seeds[:-1]
    states = [base, commit, *patches]
    pinned = {int(c) for c in server_cpus.split(",")} if server_cpus else set()
    client_cpus = (os.sched_getaffinity(0) - pinned) or None
    out = ServedRounds(seeds, {s.name: {m: [] for m in service.reported} for s in states},
                       {s.name: [] for s in states})
    quality_requests = generate(replace(service.workload, arrival="burst"), quality_seed,
                                count=service.quality_prompts)
    # Every answer a state gave, in the order asked (every state is asked the same: the same seeds): the
    # quality gate reads them all, so a server cannot answer well only when it is asked one thing at a time.
    answers: dict[str, list[str]] = {s.name: [] for s in states}
    log(f"[{task_id}] serving: {rounds} rounds x {len(states)} servers, held-out seeds {seeds}")

    def measure(state: CodeState, seed: int, first: bool) -> None:
        workload = service.workload
        warmup = generate(workload, seed + 1, count=workload.warmup)  # (never the agent's seed either)
        # After the measured workload, in the first round: the quality prompts one at a time, and the
        # agent's own seed (the visible-vs-held-out gap); neither touches what the round measured.
        extra = [(replace(workload, arrival="burst", concurrency=1), quality_requests)] if first else []
        if first and state is not base and state is not commit:  # (the gap is reported for patches)
            extra.append((workload, generate(workload, service.visible_seed)))
        done = launch(state, service, generate(workload, seed), warmup, extra, client_cpus, gpus)
        _record(out, answers[state.name], state.name, seed, done, service, bool(gpus), first)

    for r, seed in enumerate(seeds):
        live = [s for s in states if s.name not in out.failed]
        shift = r % len(live)
        for state in live[shift:] + live[:shift]:
            try:
                measure(state, seed, r == 0)
            except StepFailed as err:
                if state is base or state is commit:
                    raise Stop("base_failed" if state is base else "error", reason_of(err, state.name)) from None
                out.failed[state.name] = err
    _quality_gate(out, answers, base, commit, patches, service)
    return out


def _record(out: ServedRounds, answers: list[str], name: str, seed: int, done: Any, service: Service,
            on_gpus: bool, first: bool) -> None:
    """One launch's measurements into `out` and its answers into `answers`; StepFailed when a request failed
    or the responses define a reported metric not."""
    summary = summarize(done.records)
    failed = [r for r in done.records if not r.ok]
    if failed:
        raise StepFailed("the workload", f"{len(failed)} of {len(done.records)} requests failed: "
                                         f"{failed[0].error}\n{done.output}")
    for metric in service.reported:
        if metric not in summary.values:
            raise StepFailed("the workload", f"its responses define no {metric} (one token each?)")
        out.values[name][metric].append(summary.values[metric])
    out.runs[name].append({"seed": seed, "ready_s": done.ready_s, "completed": summary.completed,
                           "short": summary.short, "duration_s": round(summary.duration_s, 4),
                           **({"gpu_leftovers": done.gpu_leftovers} if on_gpus else {})})
    answers += [r.text for r in done.records]
    if first:
        asked, *mine = done.after
        answers += [r.text for r in asked]
        own = summarize(mine[0]).values.get(service.primary) if mine else None
        if own is not None:
            out.visible[name] = own


def _quality_gate(out: ServedRounds, answers: dict[str, list[str]], base: CodeState, commit: CodeState,
                  patches: list[CodeState], service: Service) -> None:
    """Each server served the work asked for, and the same answers as the base's (within the task's
    `quality`); one that did not fails (the expert's ends the session)."""
    reference = answers[base.name]
    states = [base, commit, *patches]
    for state in states:
        if state.name not in out.failed and len(answers[state.name]) == len(reference):
            out.quality[state.name] = differing_words(answers[state.name], reference)
    base_short = sum(run["short"] for run in out.runs[base.name])
    for state in (commit, *patches):  # served the work asked for, and the same answers as the base
        if state.name in out.failed:
            continue
        short = sum(run["short"] for run in out.runs[state.name])
        differ = out.quality.get(state.name, 0.0)
        bad: StepFailed | None = None
        if short > base_short:
            bad = StepFailed("the workload", f"{short} responses were shorter than asked (the base's: {base_short})")
        elif differ > service.quality:
            bad = StepFailed("the quality gate", f"{differ:.1%} of its answers' words differ from the base's "
                                                 f"(the task allows {service.quality:.1%})")
        if bad is not None and state is commit:
            raise Stop("error", reason_of(bad, "expert"))
        if bad is not None:
            out.failed[state.name] = bad
