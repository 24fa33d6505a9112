"""Grading a task whose verifier writes a reward (Harbor's tests/test.sh), in a fresh container.

The agent's diff is applied to a fresh container of the task's image (the verifier never sees a
container the agent touched); the files the task pins are hashed and compared with the hashes taken
when the image was built (a changed one is `instruction_violation`, score 0); then Harbor's
verification: old reward files removed, tests/ copied into /tests, `/tests/test.sh` run as root in the
working directory with [verifier.env] under the verifier's timeout, and the reward read from
/logs/verifier/reward.txt (one float) or, failing that, reward.json's `reward` (other keys, of any
type, are kept as extras). A missing or unreadable reward is 0 with the reason.

Report: GSO's status keys where they apply (`status`, `reason`, `patch_successfully_applied`), the
reward as `score`, and `opt_commit` = the reward reaches the task's success threshold, so Opt@K, Avg@k,
Best@k and Dominance come from the same summary as for timing tasks.
"""
from __future__ import annotations

import json
import math
import shlex
import time
from dataclasses import replace
from typing import Any

from harness.grader.config import GradeConfig, patch_sha256
from harness.grader.states import PATCH_PATH
from harness.sandbox.interface import Sandbox, SandboxError
from harness.sandbox.providers import SandboxProvider
from harness.tasks.task import Task

TESTS_DIR = "/tests"
REWARD_TXT, REWARD_JSON = "/logs/verifier/reward.txt", "/logs/verifier/reward.json"
SUCCESS = 0.5  # AutoLab's anchor: the reference solution scores 0.5 on log-stretch tasks
HASH_PINS = ("cd {workdir} && for f in {files}; do "
             'if [ -f "$f" ]; then sha256sum "$f"; else echo "missing  $f"; fi; done')


def read_reward(txt: str | None, raw_json: str | None) -> tuple[float | None, dict[str, Any], str]:
    """(reward, extras, reason) from the two reward files' texts: reward.txt first (one float), then
    reward.json's `reward`; None with a reason when neither holds a finite number."""
    extras: dict[str, Any] = {}
    reasons = []
    if raw_json is not None:
        try:
            data = json.loads(raw_json)
            extras = data if isinstance(data, dict) else {"value": data}
        except json.JSONDecodeError as err:
            reasons.append(f"reward.json is not JSON ({err.msg})")
    if txt is not None:
        try:
            value = float(txt.strip())
            if math.isfinite(value):
                return value, {k: v for k, v in extras.items() if k != "reward"}, ""
            reasons.append(f"reward.txt holds {txt.strip()!r}")
        except ValueError:
            reasons.append(f"reward.txt holds {txt.strip()[:40]!r}, not a number")
    if extras:
        value = extras.get("reward")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value), {k: v for k, v in extras.items() if k != "reward"}, ""
        reasons.append(f"reward.json's reward is {value!r}, not a number")
    if txt is None and raw_json is None:
        reasons.append("the verifier wrote no reward file")
    return None, extras, "; ".join(reasons)


def _read(box: Sandbox, path: str) -> str | None:
    try:
        return box.read_file(path).decode("utf-8", errors="replace")
    except (FileNotFoundError, IsADirectoryError):
        return None


def grade_reward(task: Task, patch: str | None, image: str, config: GradeConfig, sandboxes: SandboxProvider,
                 instance_id: str | None = None, log: Any = lambda _m: None) -> dict[str, Any]:
    """Grade one patch of a reward task; always returns a report."""
    check = task.reward_check
    assert check is not None
    started = time.monotonic()
    report: dict[str, Any] = {
        "instance_id": instance_id or task.id, "patch_is_None": patch is None,
        "patch_exists": bool(patch and patch.strip()), "base_successfully_run": True,
        "patch_successfully_applied": False, "test_passed": False, "opt_base": False, "opt_commit": False,
        "score": 0.0, "reward": None, "reward_extras": {}, "verifier": "reward", "success_threshold": SUCCESS,
        "patch_sha256": patch_sha256(patch), **config.fields(),
    }
    box = None
    try:
        if not report["patch_exists"]:
            report.update(status="empty_patch", reason="the patch is empty")
            return report
        limits = replace(config.limits().for_task(task.cpus, task.memory), network=task.network == "allowed")
        box = sandboxes.start(image, limits, labels={"optrunner.role": "grade-reward"})
        workdir = box.workdir
        box.write_file(PATCH_PATH, patch if patch.endswith("\n") else patch + "\n")  # type: ignore[union-attr]
        applied = box.exec(f"git apply --binary --whitespace=nowarn {PATCH_PATH}", timeout=300, cwd=workdir)
        if applied.exit_code != 0:
            report.update(status="patch_failed", reason=f"git apply failed: {applied.output.strip()[-600:]}")
            return report
        report["patch_successfully_applied"] = True
        changed = _changed_pins(box, workdir, box.pins)
        if changed:
            report.update(status="instruction_violation", reason=f"pinned file(s) changed: {', '.join(changed)}")
            return report
        log(f"[{task.id}] verifier: /tests/test.sh (timeout {check.timeout:g} s)")
        box.exec(f"rm -f {REWARD_TXT} {REWARD_JSON}; mkdir -p /logs/verifier {TESTS_DIR}", timeout=60)
        for name, data, mode in check.tests:
            path = f"{TESTS_DIR}/{name}"
            box.write_file(path, data)
            box.exec(f"chmod {mode:o} {shlex.quote(path)}", timeout=30)
        run = box.exec(f"bash {TESTS_DIR}/test.sh", timeout=check.timeout, cwd=workdir, env=dict(check.env))
        report["verifier_exit_code"], report["verifier_s"] = run.exit_code, round(run.duration, 2)
        report["verifier_output"] = run.output[-2000:]
        if run.timed_out:
            report.update(status="verifier_timeout",
                          reason=f"the verifier ran over its {check.timeout:g} s ([verifier].timeout_sec)")
            return report
        reward, extras, why = read_reward(_read(box, REWARD_TXT), _read(box, REWARD_JSON))
        report["reward_extras"] = extras
        if reward is None:
            report.update(status="no_reward", reason=why)
            return report
        report.update(status="passed", reason="", reward=reward, score=reward, test_passed=True,
                      opt_base=reward > 0, opt_commit=reward >= SUCCESS)
        return report
    except SandboxError as err:
        report.update(status="error", reason=str(err))
        return report
    finally:
        if box is not None:
            try:
                box.close()
            except SandboxError:
                pass
        report["wall_time_s"] = round(time.monotonic() - started, 2)


def _changed_pins(box: Sandbox, workdir: str, pins: dict[str, str]) -> list[str]:
    if not pins:
        return []
    done = box.exec(HASH_PINS.format(workdir=shlex.quote(workdir), files=" ".join(shlex.quote(p) for p in pins)),
                    timeout=120)
    now = {}
    for line in done.output.splitlines():
        digest, _, path = line.partition("  ")
        now[path.strip()] = digest.strip()
    return sorted(path for path, digest in pins.items() if now.get(path) != digest)
