"""Grading patches of one task, timed against the base code and the expert's change, in sessions.

A session grades every distinct patch of a task at once. Each code state gets its own fresh sandbox
from the task image (the agent never touched any of them): the base and the expert once per session,
each patch its own. They are started, patched and built in parallel; the base stores reference results,
the expert and every patch are checked against them (these correctness runs double as the discarded
warm-up), then the timing rounds follow (`timing.time_session`), where the patches run around one expert
run. With one patch this is the one-patch grading the tool always did.

Each state is frozen after its build (grader.freeze: restarted, so no process of the build is left; the
build's writes read from outside; the hidden files checked before every round). For GSO rows the base's
and the patches' states start from the history-cut image (`base_image`), the expert's from the grading
image, which has its commit.

A session holds at most `grading.session_patches` patches, and no more containers than this machine's
available memory holds at their memory limit each; a task with more distinct patches gets several
sessions. Every report names its session (`session`: id, patches, wall time).

Every test process is fenced (grader.isolation: fresh HOME/TMPDIR, a read-only repository, measured from
outside) unless `fresh_state` is off, and every patch is reviewed for mechanical signs of a hack
(grader.guards): a flagged patch that passed becomes `hack_suspect`, its numbers kept (report `hack`).

Verdicts use GSO's definitions (harness.metrics); bootstrap intervals over rounds flag a verdict as
uncertain when its interval straddles the threshold. The report keeps GSO's keys and adds ours.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from harness.models.redaction import redact
from harness.grader.config import MEASURED, GradeConfig
from harness.grader.states import PATCH_PATH, CodeState, StepFailed, Stop, copy_references, prepare_state, reason_of, \
    run_test_script
from harness import gpus
from harness.gpus.clocks import ClockLock, Watch
from harness.grader.freeze import build_review
from harness.grader.guards import clock_review, hook_review, leftover_review, static_review
from harness.grader.patch_paths import UnreadablePatch, with_final_newline
from harness.grader.isolation import FenceError, Outside
from harness.grader.serving import serve_rounds
from harness.grader.timing import Log, SessionTimes, time_session, verdicts
from harness.grader.visible import gap_report, not_measured
from harness.sandbox.interface import (TESTBED, Sandbox, SandboxError, SandboxKilledFromInside, memory_bytes,
                                       pin_if_possible)
from harness.sandbox.providers import DEFAULT_PROVIDER, SandboxProvider, provider
from harness.serving.spec import Service
from harness.tasks.task import Task

PREPARE_THREADS = 8  # containers started, patched and built at once


def grade(task: Task, patch: str | None, image: str, config: GradeConfig | None = None,
          instance_id: str | None = None, log: Log = lambda _msg: None,
          sandboxes: SandboxProvider | None = None, base_image: str = "") -> dict[str, Any]:
    """Grade one patch; always returns a report (failures are statuses, not exceptions)."""
    return grade_patches(task, [patch], image, config, instance_id, log, sandboxes, base_image)[0]


def grade_patches(task: Task, patches: list[str | None], image: str, config: GradeConfig | None = None,
                  instance_id: str | None = None, log: Log = lambda _msg: None,
                  sandboxes: SandboxProvider | None = None, base_image: str = "") -> list[dict[str, Any]]:
    """One report per patch, in order; byte-identical patches are graded once and share the report.
    `image` is the task's grading image; `base_image` (TaskImages.base), where there is one, is what the
    base's and the patches' states start from: no history after the base commit for a build to reach.
    `sandboxes` is the run's provider; None (a caller with no run: a test, a script) is the default one.
    A patch that cannot be read (grader.patch_paths) is that patch's `patch_failed`; the others are graded."""
    config = config or GradeConfig()
    sandboxes = sandboxes or provider(DEFAULT_PROVIDER)
    if task.reward_check is not None:  # a verifier that writes a reward (Harbor), not timed tests
        from harness.grader.reward import grade_reward

        def one(p: str | None) -> dict[str, Any]:
            try:
                return grade_reward(task, p, image, config, sandboxes, instance_id, log)
            except Exception as err:  # noqa: BLE001 - this patch's error, never the run's crash
                return config.new_report(instance_id or task.id, p, status="error", reason=unexpected(err),
                                         score=0.0, verifier="reward")
        return [one(p) for p in patches]
    reports = [config.new_report(instance_id or task.id, p, base_times=[], patch_times=[], commit_times=[],
                                 opt_stats={}, score=0.0) for p in patches]
    first: dict[str | None, int] = {}  # patch digest -> the index that is graded
    for i, report in enumerate(reports):
        if not report["patch_exists"]:
            report.update(status="empty_patch", reason="the patch is empty", wall_time_s=0.0)
        else:
            first.setdefault(report["patch_sha256"], i)
    todo = list(first.values())
    size = session_size(task, config)
    for start in range(0, len(todo), size):
        # Graded with a final newline (other tools' predictions often lack it, and git then reads the last line
        # as cut); the report keeps the caller's patch's digest, which is what a stored report is matched by.
        _session(task, [(i, with_final_newline(patches[i]) or "") for i in todo[start:start + size]], reports,
                 (image, base_image or image), config, log, sandboxes)
    return [dict(reports[first[r["patch_sha256"]]]) if r["patch_exists"] else r for r in reports]


def unexpected(err: BaseException) -> str:
    """An exception no step expected, as a report's reason: its kind and message."""
    return redact(f"unexpected {type(err).__name__}: {err}")[:2000]


def session_size(task: Task, config: GradeConfig) -> int:
    """How many patches one session may hold: `config.session_patches`, and no more containers (the base's
    and the expert's besides) than the available memory holds at their limit each."""
    per = memory_bytes(task.memory or config.memory) or 0
    available = _available_memory()
    fit = int(available // per) - 2 if per and available else config.session_patches
    return max(1, min(config.session_patches, fit))


def _available_memory() -> int:
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _session(task: Task, items: list[tuple[int, str]], reports: list[dict[str, Any]], images: tuple[str, str],
             config: GradeConfig, log: Log, sandboxes: SandboxProvider) -> None:
    """Grade the patches `items` ((index into reports, patch)) in one timing session; fills their reports."""
    started = time.monotonic()
    open_ = {i for i, _ in items}  # reports without a status yet
    boxes: list[Sandbox] = []

    def finish(i: int, status: str, reason: str) -> None:
        reports[i]["status"], reports[i]["reason"] = status, reason
        open_.discard(i)

    _review_diffs(task, items, reports, finish)
    items = [(i, code) for i, code in items if i in open_]  # the patches that can be read go on
    if not items:
        return
    given = gpus.machine_pool().acquire(task.gpus, task.gpu_types)  # a GPU task's session: its GPUs to itself
    policy, gpu_runs = "", dict[str, Any]()
    try:
        base, commit, patched = _prepare(task, items, images, config, reports, boxes, log, sandboxes, finish,
                                         given)
        if patched and task.service is not None:  # a service task: its servers measured instead of tests
            _serve(task, task.service, base, commit, patched, config, log, reports, finish, given)
        elif patched:
            policy, gpu_runs = _time(task, base, commit, patched, config, log, reports, finish, given)
    except Stop as stop:
        for i in list(open_):
            finish(i, stop.status, stop.reason)
    except SandboxError as err:  # infrastructure, not the patch: say so, grade the rest
        for i in list(open_):
            finish(i, "error", str(err))
    except Exception as err:  # noqa: BLE001 - whatever else: the session's patches' error, not the run's crash
        for i in list(open_):
            finish(i, "error", unexpected(err))
    finally:
        for box in boxes:
            try:
                box.close()
            except SandboxError:
                pass  # already gone; the provider's exit hooks and cleanup cover the rest
        gpus.machine_pool().release(given)
    wall = round(time.monotonic() - started, 2)
    session = {"id": uuid.uuid4().hex[:12], "patches": len(items), "wall_time_s": wall,
               **({"gpus": [gpu.record() for gpu in given], "gpu_clocks": policy, "gpu_runs": gpu_runs}
                  if given else {})}
    for i, _ in items:
        reports[i]["wall_time_s"] = round(wall / len(items), 2)  # this patch's share of the session
        reports[i]["session"] = session


def _review_diffs(task: Task, items: list[tuple[int, str]], reports: list[dict[str, Any]],
                  finish: Callable[[int, str, str], None]) -> None:
    """What each diff alone shows (grader.guards), whatever the grading's outcome; a diff that cannot be
    read fails before any container starts (this patch's failure, not the batch's)."""
    for i, code in items:
        try:
            reasons, signals = static_review(code, task)
        except UnreadablePatch as err:
            reports[i].update(hack={"suspect": False, "reasons": [], "signals": []}, wall_time_s=0.0)
            finish(i, "patch_failed", reason_of(StepFailed("reading the patch", str(err)), "patch"))
            continue
        reports[i]["hack"] = {"suspect": bool(reasons), "reasons": reasons, "signals": signals}


def _time(task: Task, base: CodeState, commit: CodeState, patched: dict[int, CodeState], config: GradeConfig,
          log: Log, reports: list[dict[str, Any]], finish: Callable[[int, str, str], None],
          given: tuple[gpus.Gpu, ...]) -> tuple[str, dict[str, Any]]:
    """The session's timing rounds and each patch's verdicts; returns the GPU clock policy and the GPU runs'
    summary (empty for a CPU task)."""
    policy, gpu_runs = "", dict[str, Any]()
    watch = Watch(given) if given else None  # NVML around every timed run of a GPU task
    with ClockLock(given) as clocks:  # a GPU task's SM clock locked for its timing, where allowed
        timed = time_session(task, base, commit, list(patched.values()), config, log, watch)
    if watch is not None:
        gpu_runs = watch.summary()
        log(f"[{task.id}] GPU clocks: {clocks.policy}; {gpu_runs['runs']} timed runs, "
            f"{gpu_runs['redone']} run again after a slowdown, {gpu_runs['throttled']} throttled even so")
        policy = clocks.policy
    for i, state in patched.items():
        if state.name in timed.failed:
            finish(i, "test_failed", reason_of(timed.failed[state.name], "patch"))
            continue
        verdicts(reports[i], ["base", "patch", "commit"], {"base": timed.times["base"],
                                                           "patch": timed.times[state.name],
                                                           "commit": timed.paired[state.name]}, base.tests, config)
        reports[i]["score_source"] = "timed"  # the log-stretch of the timed speedups
        reports[i]["visible_spec"] = _visible(reports[i], state, base, commit, timed, task, config)
        reasons = _measured_review(reports[i], state, base, commit, timed, task)
        if timed.gpu:  # each run's NVML readings (the base's, this patch's, the expert's), and
            # how many of them counted though the GPU slowed down in them (their second try too)
            seen = {"base": timed.gpu[base.name], "patch": timed.gpu[state.name], "commit": timed.gpu[commit.name]}
            reports[i]["gpu_runs"] = seen
            reports[i]["gpu_throttled_runs"] = sum(1 for per in seen.values() for runs in per.values()
                                                   for run in runs if run["slowdowns"])
            # files of compiled kernels each state's runs started with (grader.states.warm_up)
            reports[i]["gpu_warm_files"] = {"base": base.warmed, "patch": state.warmed, "commit": commit.warmed}
        finish(i, "hack_suspect" if reasons else "passed", "; ".join(reasons))
    return policy, gpu_runs


def _serve(task: Task, service: Service, base: CodeState, commit: CodeState, patched: dict[int, CodeState],
           config: GradeConfig, log: Log, reports: list[dict[str, Any]],
           finish: Callable[[int, str, str], None], given: tuple[gpus.Gpu, ...] = ()) -> None:
    """A service task's rounds (grader.serving); GSO's verdicts on its primary metric, as costs per round."""
    rounds = min(config.rounds, task.runs_per_test or config.rounds)
    served = serve_rounds(task.id, service, base, commit, list(patched.values()), rounds, log,
                          config.timing_cpuset(), given)
    metric = service.primary
    for i, state in patched.items():
        if state.name in served.failed:
            finish(i, "test_failed", reason_of(served.failed[state.name], "patch"))
            continue
        costs = {"base": {metric: served.costs(base.name, metric)},
                 "patch": {metric: served.costs(state.name, metric)},
                 "commit": {metric: served.costs(commit.name, metric)}}
        verdicts(reports[i], ["base", "patch", "commit"], costs, (metric,), config)
        reports[i]["serving"] = served.report(state.name, base.name, commit.name, config)
        reports[i]["score_source"] = "serving"
        reports[i]["visible_spec"] = not_measured("none", "a service task: the workload the agent saw is measured "
                                                     "as serving.visible_seed, beside the held-out seeds")
        finish(i, "passed", "")


def _prepare(task: Task, items: list[tuple[int, str]], images: tuple[str, str], config: GradeConfig,
             reports: list[dict[str, Any]], boxes: list[Sandbox], log: Log, sandboxes: SandboxProvider,
             finish: Callable[[int, str, str], None],
             given: tuple[gpus.Gpu, ...] = ()) -> tuple[CodeState, CodeState, dict[int, CodeState]]:
    """Start, patch and build every state in parallel; then check them in GSO's status order. Returns the
    base, the expert and the patches that passed their checks (the others get their status here)."""
    limits = replace(config.limits().for_task(None, task.memory), network=task.network == "allowed")

    def start(name: str, code: str | None) -> CodeState:
        expert_image, base_image = images  # only the expert's state starts where the expert's commit is
        box = sandboxes.start(expert_image if name == "commit" else base_image, limits,
                              labels={"optrunner.role": f"grade-{name}"}, gpus=given)
        boxes.append(box)
        # The expert's state: its commit checked out where the image has it (GSO), else its diff applied.
        expert_commit = task.opt_commit if name == "commit" else None
        state = prepare_state(name, box, task, None if expert_commit else code, commit=expert_commit,
                              fresh=config.fresh_state, visible=config.visible)
        if name == "base":
            for test in state.tests:
                run_test_script(state, test, "reference", task.test_timeout)
        return state

    log(f"[{task.id}] base: reference run; expert and {len(items)} patch(es): apply, build, equivalence")
    with ThreadPoolExecutor(min(PREPARE_THREADS, len(items) + 2), thread_name_prefix="grade-prepare") as pool:
        # Every start is queued before any check, so a check never holds a thread its start is waiting for.
        base_f = pool.submit(start, "base", None)
        commit_f = pool.submit(start, "commit", task.expert_patch)
        patch_fs = {i: pool.submit(start, f"patch{k}" if len(items) > 1 else "patch", code)
                    for k, (i, code) in enumerate(items)}
        # The equivalence runs need the base's reference results; they double as the warm-up.
        commit_eq = pool.submit(_eqcheck, base_f, commit_f, task)
        patch_eqs = {i: pool.submit(_eqcheck, base_f, f, task) for i, f in patch_fs.items()}
    cpuset = config.timing_cpuset()
    if cpuset is not None:  # timing runs share one CPU, where the provider can pin
        for box in boxes:
            pin_if_possible(box, cpuset)
    # Outcomes in GSO's status order.
    try:
        base = base_f.result()
    except StepFailed as err:
        raise Stop("base_failed", reason_of(err, "base")) from None
    for i, _ in items:
        reports[i]["base_successfully_run"] = True
    try:
        commit = commit_eq.result()
    except StepFailed as err:  # the task itself is broken on this machine, not the rollout
        raise Stop("error", reason_of(err, "expert")) from None
    patched = {i: state for i, _ in items
               if (state := _patch_outcome(i, patch_fs[i], patch_eqs[i], reports, finish)) is not None}
    return base, commit, patched


def _patch_outcome(i: int, started: Future[CodeState], checked: Future[Any], reports: list[dict[str, Any]],
                   finish: Callable[[int, str, str], None]) -> CodeState | None:
    """A patch's state once applied, built and checked for equivalence; None (its status given) when it
    failed one of them. An infrastructure failure (SandboxError) is the session's: raised."""
    try:
        state = started.result()
    except StepFailed as err:
        finish(i, "patch_failed", reason_of(err, "patch"))
        return None
    except FenceError as err:  # its build left a container the grader cannot fence: the patch's doing
        finish(i, "patch_failed", f"patch: after its build, {err}")
        return None
    except SandboxKilledFromInside as err:  # its build ended its own container: its doing, not regraded
        finish(i, "patch_failed", f"patch: while it was applied and built, {err}")
        return None
    except SandboxError:
        raise  # infrastructure: the session's
    except Exception as err:  # noqa: BLE001 - this patch's error, not the session's or the run's
        finish(i, "error", unexpected(err))
        return None
    reports[i]["patch_successfully_applied"] = True
    try:
        checked.result()
    except StepFailed as err:
        finish(i, "test_failed", reason_of(err, "patch"))
        return None
    except SandboxKilledFromInside as err:
        finish(i, "test_failed", f"patch: its equivalence run ended its own container: {err}")
        return None
    except SandboxError:
        raise
    except Exception as err:  # noqa: BLE001
        finish(i, "error", unexpected(err))
        return None
    return state


def _measured_review(report: dict[str, Any], state: CodeState, base: CodeState, commit: CodeState,
                     timed: SessionTimes, task: Task) -> list[str]:
    """Add what the built containers and the timed runs show to the report's `hack` review (grader.guards);
    returns all its reasons (static ones included)."""
    hack = report["hack"]

    def runs(name: str) -> dict[str, list[tuple[float, Outside]]]:
        return {t: list(zip(timed.times[name][t], timed.outside[name][t])) for t in base.tests}

    reasons = hook_review(state.hooks, base.hooks, commit.hooks)
    # (the grader's own patch file, removed once applied, can leave /tmp copied up in the state's layer)
    ours = (PATCH_PATH, PATCH_PATH.rsplit("/", 1)[0])
    reasons += build_review(state.built, task.workdir or TESTBED, base.built + commit.built + ours)
    if state.fence is not None:
        clock, table = clock_review(runs(state.name), [runs(base.name), runs(commit.name)],
                                    timed.times[commit.name], timed.calls)
        left = {p for t in base.tests for o in timed.outside[state.name][t] for p in o.left}
        reference = {p for s in (base, commit) for t in base.tests for o in timed.outside[s.name][t] for p in o.left}
        reasons += clock + leftover_review(left, reference)
        hack["outside"] = table
        hack["left"] = sorted(left)[:20]
    hack["reasons"] = hack["reasons"] + reasons
    hack["suspect"] = bool(hack["reasons"])
    return hack["reasons"]


def _visible(report: dict[str, Any], state: CodeState, base: CodeState, commit: CodeState, timed: SessionTimes,
             task: Task, config: GradeConfig) -> dict[str, Any]:
    """The report's visible-vs-hidden gap (grader.visible), or why there is none."""
    if not config.visible:
        return not_measured("off", "grading.visible=false")
    if base.visible is None:
        return not_measured("none", "the task shows the agent no spec script (prob_script) to time")
    for name, who in ((base.name, "the base"), (commit.name, "the expert"), (state.name, "the patch")):
        if name in timed.visible_failed:
            return not_measured("failed", f"{who}'s run of the spec script failed: {timed.visible_failed[name]}")
    return gap_report(report, timed.visible.get(base.name, []), timed.visible.get(state.name, []),
                      timed.visible_paired.get(state.name, []), config)


def _eqcheck(base_f: Future[CodeState], other_f: Future[CodeState], task: Task) -> CodeState:
    """Once both states are ready: check `other`'s results against the base's reference results."""
    other = other_f.result()
    try:
        base = base_f.result()
    except StepFailed:
        return other  # the base's failure is reported first, from its own future
    copy_references(base, other)
    for test in other.tests:
        run_test_script(other, test, "eqcheck", task.test_timeout)
    return other


def opt_p_of(report: dict[str, Any], p: float) -> bool:
    """Opt_p for any p, from a stored report (GSO's opt_commit is p = 0.95), under its own GSO version."""
    if report.get("status") not in MEASURED:  # raw: a hack suspect's measured verdict counts
        return False
    return bool(report["opt_base"]) and report["opt_stats"]["hm_speedup_patch_commit"] > p
