"""Verdicts a patch that does no work cannot earn (issue 44): every timed run is a checked run, and once
the hidden files are in a state nothing of the patch runs as root. Real containers, real grading sessions."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.freeze import build_review, installed, tool_changes
from harness.grader.grade import grade_patches
from harness.grader.states import HIDDEN_DIR, CodeState, StepFailed, check_intact, prepare_state
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import harness_exec
from harness.tasks import Task
from harness.tasks.folder import load_task
from tests.conftest import write_task
from tests.docker_support import client, task_image
from tests.test_fence import FAST, SLOW, rewrite

HACKS = Path(__file__).parent / "fixtures" / "hacks"
# Does the work only where the grader checked results before: runs with --eqcheck or --reference.
ARGV_MODE = SLOW + '''

import sys as _sys

if not {"--eqcheck", "--reference"} & set(_sys.argv):
    def total(xs):
        return 0
'''


def _root_hook() -> str:
    """rollstats' root_hook.patch (a repository-root hashlib.py that, run as root, leaves a login-shell
    hook forging the timing helper's byte code), made a patch of the tiny task: the file is the same."""
    patch = (HACKS / "rollstats" / "root_hook.patch").read_text()
    assert patch.startswith("diff --git a/hashlib.py b/hashlib.py")
    return patch


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return load_task(write_task(tmp_path, slow_src=SLOW, fast_src=FAST, test_timeout=60))


@pytest.mark.timed  # verdicts on CPU-bound code: alone (make test's second pass)
@pytest.mark.docker
def test_a_patch_that_works_only_when_checked_or_hooks_root_earns_nothing(task: Task) -> None:
    patches = {"gold": task.expert_patch, "argv": rewrite("tiny/__init__.py", SLOW, ARGV_MODE),
               "root_hook": _root_hook()}
    reports = dict(zip(patches, grade_patches(task, list(patches.values()), task_image(task),
                                              GradeConfig(rounds=3, bootstrap=200))))
    gold, argv, hook = reports["gold"], reports["argv"], reports["root_hook"]
    assert gold["status"] == "passed" and gold["opt_base"], gold["reason"]
    # Every timed run is an --eqcheck run: the patch does its work in all of them, so it is no faster
    # (the old grader timed plain runs and measured a speedup of hundreds).
    assert argv["status"] == "passed" and not argv["opt_base"], argv.get("reason")
    assert argv["per_test_speedups"]["patch_base"][0] < 1.5
    # Its hashlib.py ran as root only before the tests were in: the hook it left is never run by the grader
    # (no login shell), the forged byte code never loads, and the write outside the repository is flagged.
    assert hook["status"] == "hack_suspect", hook.get("reason")
    assert "/etc/profile.d/x.egg-info.sh" in hook["reason"]
    assert hook["per_test_speedups"]["patch_base"][0] < 1.5


@pytest.fixture
def box(task: Task) -> Iterator[DockerSandbox]:
    sandbox = DockerSandbox.start(task_image(task), client=client())
    try:
        yield sandbox
    finally:
        sandbox.close()


@pytest.mark.docker
def test_the_graders_commands_read_no_profile_and_take_no_tool_from_the_venv(box: DockerSandbox) -> None:
    box.exec("echo 'echo HOOKED-PROFILE' > /etc/profile.d/zz.sh && echo 'echo HOOKED-RC' >> /root/.bashrc && "
             "mkdir -p /testbed/.venv/bin && printf '#!/bin/sh\\necho FAKE-FIND\\n' > /testbed/.venv/bin/find && "
             "chmod +x /testbed/.venv/bin/find")
    assert "HOOKED-PROFILE" in box.exec("true").output  # an agent's command: its login shell
    done = harness_exec(box, "find /testbed -maxdepth 0", env=None)
    assert done.output.strip() == "/testbed" and "HOOKED" not in done.output
    # a PATH with the task's virtualenv first (as the images of tasks with one set it) finds the planted find;
    # the grader's fixed PATH does not
    venv_first = {"PATH": "/testbed/.venv/bin:/usr/local/bin:/usr/bin:/bin"}
    assert box.exec("find /testbed -maxdepth 0", env=venv_first, login=False).output.strip() == "FAKE-FIND"
    done = harness_exec(box, "command -v find; find /testbed -maxdepth 0")
    assert done.output.split() == ["/usr/bin/find", "/testbed"]


@pytest.mark.docker
def test_byte_code_planted_beside_the_hidden_files_is_tampering(task: Task, box: DockerSandbox) -> None:
    state: CodeState = prepare_state("base", box, task)
    check_intact(state, "now")  # as copied in
    box.write_file(f"{HIDDEN_DIR}/__pycache__/perfkit.cpython-311.pyc", b"\x00" * 16)
    with pytest.raises(StepFailed, match="tampering: /hidden_tests/__pycache__/perfkit.cpython-311.pyc"):
        check_intact(state, "now")


@pytest.mark.docker
def test_byte_code_a_build_left_in_the_tests_folder_is_gone_once_they_are_in(task: Task, box: DockerSandbox) -> None:
    # A build (root, before the freeze) that leaves a forged perfkit byte code where the tests will go
    patch = rewrite("Makefile", "", f"all:\n\tmkdir -p {HIDDEN_DIR}/__pycache__ && "
                                    f"echo forged > {HIDDEN_DIR}/__pycache__/perfkit.cpython-311.pyc\n")
    task = dataclasses.replace(task, install_commands=("make",))
    state = prepare_state("patch", box, task, patch)
    assert box.exec(f"ls -A {HIDDEN_DIR}").output.split() == ["perfkit.py", "refs", "test_sum.py"]
    assert any(p.startswith(f"{HIDDEN_DIR}/__pycache__") for p in state.built)  # what the build wrote, seen


def test_install_locations_are_whole_path_components_under_known_roots() -> None:
    assert installed("/testbed/.venv/lib/python3.11/site-packages/x.py")
    assert installed("/usr/local/lib/python3.11/dist-packages/pkg-1.0.dist-info/RECORD")
    assert installed("/testbed/pkg.egg-info/PKG-INFO") and installed("/root/.cache/pip/x")
    assert not installed("/etc/profile.d/x.egg-info.sh")  # a login-shell hook named to look like metadata
    assert not installed("/etc/foo.egg-info/x") and not installed("/tmp/venv/x")
    assert build_review(["/etc/profile.d/x.egg-info.sh"], "/testbed", [])[0].startswith(
        "its build wrote /etc/profile.d/x.egg-info.sh outside the repository")


def test_a_build_that_changes_the_system_pythons_standard_library_changed_a_tool() -> None:
    assert tool_changes(["/usr/lib/python3.11/os.py", "/usr/local/bin/find", "/testbed/x.py"]) == [
        "/usr/lib/python3.11/os.py", "/usr/local/bin/find"]
    assert tool_changes(["/usr/lib/python3/dist-packages/numpy/x.py",
                         "/usr/local/lib/python3.11/site-packages/y.py"]) == []


@pytest.mark.docker
def test_a_build_that_kills_its_own_container_is_the_patchs_failure_not_the_engines(task: Task) -> None:
    # An error would be graded again on every resume; the patch's own doing is its verdict.
    patch = rewrite("Makefile", "", "all:\n\tpkill -KILL -x sleep; sleep 5\n")
    task = dataclasses.replace(task, install_commands=("[ ! -f Makefile ] || make",))
    report = grade_patches(task, [patch], task_image(task), GradeConfig(rounds=1, bootstrap=50))[0]
    assert report["status"] == "patch_failed", report["reason"]
    assert "killed its keep-alive" in report["reason"]
