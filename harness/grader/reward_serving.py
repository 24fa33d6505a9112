"""A Harbor task that declares a service (`[optrunner.service]` in task.toml): its server measured.

tests/test.sh has passed on the patch first (reward.py): that is the task's correctness gate. Then three fresh
containers of the task's image become code states as the timed tasks' are (grader.states.prepare_state: built,
frozen, fenced): the untouched environment (the base), the reference solution (solution/solve.sh run as root,
the task's own code) and the patch. Their servers are launched and measured in interleaved rounds on held-out
seeds with the quality gate (grader.serving.serve_rounds), and the verdicts are GSO's, on the service's
primary metric as a cost per round, as for a folder service task (grade.py `_serve`). The reward stays in the
report; the score and the verdicts are the serving ones (`score_source: serving`).

None of the verification's container is reused: test.sh ran there as root with the patch's code in place.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from harness.grader.config import GradeConfig
from harness.grader.isolation import FenceError
from harness.grader.serving import serve_rounds
from harness.grader.states import CodeState, StepFailed, Stop, prepare_state, reason_of, run_solution
from harness.grader.timing import verdicts
from harness.gpus import Gpu
from harness.sandbox.interface import Sandbox, pin_if_possible
from harness.serving.spec import Service
from harness.tasks.task import Task


def _reference(box: Sandbox, task: Task) -> CodeState:
    """The reference solution's state: solve.sh (the task's, trusted) run as root, then frozen like any other."""
    solved = run_solution(box, task)
    if solved.exit_code != 0:
        raise StepFailed("solution/solve.sh", solved.output)
    return prepare_state("reference", box, task)


def grade_service(task: Task, service: Service, patch: str, start: Callable[[str], Sandbox], config: GradeConfig,
                  log: Callable[[str], None], report: dict[str, Any], given: tuple[Gpu, ...] = ()) -> None:
    """Measure the patch's server against the base's and the reference's and put the verdicts in `report`
    (whose verification passed). A patch that fails here is `patch_failed` / `test_failed` with score 0; a base
    or reference that fails is the task's `base_failed` / `error`. `given`: the session's GPUs, if any."""
    if not task.solution_files:
        report.update(status="error", reason="a service task needs solution/solve.sh: the reference the patch's "
                                             "server is measured against", score=0.0, opt_base=False,
                      opt_commit=False)
        return
    boxes = {role: start(f"serve-{role}") for role in ("base", "reference", "patch")}
    # A prebuilt image's working directory is the image's own (the task names none): the servers start there
    task = replace(task, workdir=task.workdir or boxes["base"].workdir)
    log(f"[{task.id}] service: base, reference and patch built in fresh containers")
    # Every server runs fenced (serving.launch stops it as the fenced user's processes), whatever fresh_state says
    with ThreadPoolExecutor(3, thread_name_prefix="serve-prepare") as pool:
        base_f = pool.submit(prepare_state, "base", boxes["base"], task)
        reference_f = pool.submit(_reference, boxes["reference"], task)
        patch_f = pool.submit(prepare_state, "patch", boxes["patch"], task, patch)
    failed = {"score": 0.0, "opt_base": False, "opt_commit": False, "test_passed": False}
    try:
        try:
            base = base_f.result()
        except StepFailed as err:
            raise Stop("base_failed", reason_of(err, "base")) from None
        try:
            reference = reference_f.result()
        except StepFailed as err:
            raise Stop("error", reason_of(err, "reference")) from None
        try:
            patched = patch_f.result()
        except StepFailed as err:
            report.update(status="patch_failed", reason=reason_of(err, "patch"), **failed)
            return
        except FenceError as err:  # what the patch left in its container cannot be fenced: its doing
            report.update(status="patch_failed", reason=f"patch: after it was applied, {err}", **failed)
            return
        if (cpuset := config.timing_cpuset()) is not None:  # the servers share one CPU, the client the others
            for box in boxes.values():
                pin_if_possible(box, cpuset)
        rounds = min(config.rounds, task.runs_per_test or config.rounds)
        served = serve_rounds(task.id, service, base, reference, [patched], rounds, log, cpuset, given)
    except Stop as stop:
        report.update(status=stop.status, reason=stop.reason, **failed)
        return
    if patched.name in served.failed:
        report.update(status="test_failed", reason=reason_of(served.failed[patched.name], "patch"), **failed)
        return
    metric = service.primary
    costs = {"base": {metric: served.costs(base.name, metric)}, "patch": {metric: served.costs(patched.name, metric)},
             "commit": {metric: served.costs(reference.name, metric)}}
    verdicts(report, ["base", "patch", "commit"], costs, (metric,), config)
    report.update(serving=served.report(patched.name, base.name, reference.name, config), score_source="serving")
