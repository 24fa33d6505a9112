"""Faults from inside a run and from concurrency (issue 33): one process per run directory, nothing an agent
or a patch does crashes the run, resume retries what infrastructure broke, a signal never deadlocks the
loop, and a change too large to read is recorded as such."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig
from harness.grader.grade import grade_patches
from harness.sandbox.docker.sandbox import DockerSandbox
from harness.sandbox.interface import PatchTooLarge
from harness.tasks.folder import load_task
from runner.config import RunConf
from runner.lock import RunDirBusy, RunLock
from runner.rollout import Live, RolloutJob, RolloutRunner
from scaffolds.exits import ExitReason
from tests.conftest import write_task
from tests.docker_support import client, smoke_task, task_image
from tests.openai_server import OpenAIServer, Reply, completion

ROOT = Path(__file__).resolve().parents[1]
HOLD = textwrap.dedent("""
    import sys, time
    from runner.lock import RunLock
    lock = RunLock(sys.argv[1], "run")
    lock.acquire()
    print("held", flush=True)
    time.sleep(600)
""")


def _holder(run_dir: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_run_directory_has_one_holder_and_a_dead_ones_lock_is_taken_over(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "r"
    holder = _holder(run_dir)
    try:
        with pytest.raises(RunDirBusy) as busy:
            RunLock(run_dir, "grade").acquire()
        message = str(busy.value)
        assert f"pid {holder.pid} on {os.uname().nodename} (optrunner run" in message and "\n" not in message
    finally:
        holder.send_signal(signal.SIGKILL)  # no chance to let go: the kernel drops its lock
        holder.wait()
    with RunLock(run_dir, "grade") as lock:
        assert f"pid {os.getpid()}" in lock.path.read_text()


@pytest.mark.docker
def test_a_second_runner_and_a_regrade_are_refused_on_a_held_run_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_dir = out / "runs" / "busy"
    holder = _holder(run_dir)
    with OpenAIServer(policy=lambda _received: Reply(body=completion("hello"))) as server:
        try:
            run = subprocess.run([sys.executable, "-m", "runner", "tasks=smoke", "tasks.ids=[rollstats]", "model=local",
                                  f"model.api_base={server.base_url}", "model.served_name=m", "model.price.input=1",
                                  "model.price.output=1",
                                  "rollouts=1", "grade=none", "name=busy", f"output_root={out}"],
                                 cwd=ROOT, capture_output=True, text=True, timeout=300)
            assert run.returncode != 0 and "Traceback" not in run.stderr
            assert f"is in use by pid {holder.pid}" in run.stderr, run.stderr[-2000:]
            assert sorted(p.name for p in run_dir.iterdir()) == [".lock"]  # nothing of its own written
            assert server.requests == []  # refused before the model's access check, a paid request (the soak found it)
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait()


def test_an_unexpected_exception_in_a_rollout_is_its_error_not_the_runs(tmp_path: Path) -> None:
    # A GPU task on a machine (or Ray node) whose pool has no GPU: the lease raises ValueError, which used
    # to end the whole run. Now the rollout ends as an error record saying why.
    task = load_task(write_task(tmp_path, "needsgpu", gpus=1))
    conf = RunConf()
    runner = RolloutRunner(conf, "run", sandboxes=None)  # type: ignore[arg-type]  (never reached)
    record = runner.run(RolloutJob(task, 0, "no-image"), Live(task.id, 0)).record
    assert record.exit_reason == ExitReason.ERROR
    assert record.exit_message.startswith("unexpected ValueError: it needs 1 GPU(s)")


def test_a_signal_while_the_loop_holds_the_executors_lock_does_not_deadlock(tmp_path: Path) -> None:
    # The handler used to take the executor's lock, held here by the same (main) thread: a deadlock
    # until a second signal. Run apart, so a deadlock is a timeout, not a hung suite.
    script = textwrap.dedent(f"""
        import os, signal, time
        from harness import signals
        from runner.config import validate
        from runner.executors.base import Context
        from runner.executors.local import LocalExecutor
        from runner.run import Runner
        from scaffolds.exits import ExitReason

        runner = Runner(validate({{}}), {{}}, {str(tmp_path / "run")!r})
        runner.executor = LocalExecutor(Context(runner.conf, "run", runner.sandboxes))
        restore = signals.install(first=runner._on_signal, second=runner._remove_sandboxes)
        with runner.executor.lock:  # what executor.running() holds on every tick
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
        assert runner.executor.stopping is None and runner.stopping == ExitReason.INTERRUPTED
        runner._act_on_signal()  # the loop's next tick
        assert runner.executor.stopping == ExitReason.INTERRUPTED and runner.exit_code == 143
        print("stopped in order", flush=True)
        os._exit(0)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "stopped in order" in done.stdout, done.stdout + done.stderr


@pytest.mark.docker
def test_a_directory_at_the_old_diff_path_and_a_500_mb_file_in_the_work_tree() -> None:
    with DockerSandbox.start(task_image(smoke_task()), client=client()) as box:
        # A fixed temporary path was read back blindly: a directory (or symlink) there crashed the run.
        box.exec("mkdir -p /tmp/.optrunner.diff/x && echo '# faster' >> README.md")
        assert "+# faster" in box.diff()
        # A generated file of 500 MB: over sandbox.max_patch_bytes, never read whole.
        box.exec("yes 'a generated line of output' | head -c 500M > generated.log", timeout=300)
        started = time.monotonic()
        with pytest.raises(PatchTooLarge, match="over sandbox.max_patch_bytes"):
            box.diff()
        assert time.monotonic() - started < 240
        assert box.exec("ls -d /tmp/.optrunner-diff.* 2>/dev/null | wc -l").output.strip() == "0"  # none left


BREAK_FENCE = """diff --git a/build.sh b/build.sh
new file mode 100644
--- /dev/null
+++ b/build.sh
@@ -0,0 +1 @@
+touch /var/lib/optrunner-runs
"""


@pytest.mark.docker
def test_a_build_that_breaks_the_fence_fails_its_patch_and_the_rest_are_graded(tmp_path: Path) -> None:
    # The build makes a file where the grader's runs folder goes: fencing that container fails. That used
    # to raise out of the grader (and end the run); now it is that patch's outcome.
    task = load_task(write_task(tmp_path, "tiny", install_commands=["sh build.sh 2>/dev/null || true"]))
    gold, hostile = grade_patches(task, [task.expert_patch, BREAK_FENCE], task_image(task), GradeConfig(rounds=2))
    assert hostile["status"] == "patch_failed" and "could not fence" in hostile["reason"], hostile["reason"]
    assert gold["status"] == "passed"


@pytest.mark.docker
@pytest.mark.slow  # (CI time, 40-90 s here: make bench)
def test_resume_runs_infrastructure_failures_again_and_keeps_their_spend(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [sys.executable, "-m", "runner", "tasks=smoke", "tasks.ids=[rollstats]", "model=oracle", "rollouts=2",
            "name=r", f"output_root={out}", "grading.rounds=2"]
    first = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-2000:]
    run = out / "runs" / "r"
    # What an engine that died under rollout 1 and grading of rollout 0 leave behind, as they record it.
    path = run / "rollouts" / "rollstats" / "1.json"
    record = json.loads(path.read_text())
    spent = record["usage"]["input_tokens"]
    record.update(exit_reason="infra_error", exit_message="SandboxError: docker: connection refused")
    path.write_text(json.dumps(record))
    grading = run / "grading" / "rollstats" / "0.json"
    report = json.loads(grading.read_text())
    report.update(status="error", reason="docker: connection refused")
    grading.write_text(json.dumps(report))
    results_path = run / "results.jsonl"
    lines = [json.loads(line) for line in results_path.read_text().splitlines()]
    for line in lines:
        if line["rollout"] == 0:
            line["grading"].update(status="error", reason="docker: connection refused")
    results_path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    # `optrunner run --no-retry-errors` keeps them as they are
    kept = subprocess.run([sys.executable, "-m", "runner.cli", "run", "--no-retry-errors", *args[3:]], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert kept.returncode == 0, kept.stderr[-2000:]
    assert json.loads(path.read_text())["exit_reason"] == "infra_error"
    assert json.loads(grading.read_text())["status"] == "error"

    again = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "1 of them infrastructure failures, run again" in again.stdout
    redone = json.loads(path.read_text())
    assert redone["exit_reason"] == "submitted"
    assert redone["usage"]["input_tokens"] == 2 * spent and len(redone["attempt_usage"]) == 2  # both spends
    assert json.loads(grading.read_text())["status"] == "passed"
    results = [json.loads(line) for line in results_path.read_text().splitlines()]
    last = {(r["instance_id"], r["rollout"]): r for r in results}  # (the last line of a rollout wins)
    assert last[("rollstats", 1)]["exit_reason"] == "submitted"
    assert last[("rollstats", 0)]["grading"]["status"] == "passed"


def test_a_copied_run_directory_cannot_lead_the_store_outside_itself(tmp_path: Path) -> None:
    from runner.config import ConfigError
    from runner.store import RunStore

    store = RunStore(tmp_path / "run")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.jsonl").write_text(json.dumps({
        "instance_id": "../../escaped", "rollout": 0, "system": {"model": "m", "scaffold": "s", "budget": "b"},
        "model_name": "m", "exit_reason": "submitted", "exit_message": "", "steps": 1, "wall_time_s": 1.0,
        "started_at": 0.0, "finished_at": 1.0, "attempts": 1, "usage": {}, "cost_usd": 0.0, "patch": "",
        "patch_sha256": None, "trajectory": "../../../etc/passwd", "grading": None, "score": None}) + "\n")
    with pytest.raises(ConfigError, match="not a plain name inside the run directory"):
        store.results()
    for hostile in ("../x", "a/b", ".hidden", "", "x\x00y"):
        with pytest.raises(ConfigError):
            store.inside("rollouts", hostile, "0.json")
    (tmp_path / "run" / "rollouts").mkdir()
    (tmp_path / "run" / "rollouts" / "link").symlink_to(tmp_path)  # a link inside that points out
    with pytest.raises(ConfigError, match="leads outside the run directory"):
        store.inside("rollouts", "link", "0.json")
    assert store.inside("rollouts", "task-1.x_y", "0.json") == tmp_path / "run" / "rollouts" / "task-1.x_y" / "0.json"
