"""The opt-in unsandboxed provider on this machine (root: it drops each state's processes to users of its own).

A folder task of the suite (graphroute: python, no build) graded as plain host processes: whose each command
is, where the fixed paths point, what a state may read and write, that no process outlives its command, that
the fence changes nothing of the host's, that a killed owner's state is cleaned up, and what refuses it.
The whole grading flow on it (oracle, no-op, hack fixtures) is tests/test_gpu_check.py's unsandboxed rehearsal.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.grader.states import StepFailed, prepare_state
from harness.layout import HIDDEN_DIR, TESTBED
from harness.sandbox.interface import SandboxError, SandboxUnavailable, SharesHost
from harness.sandbox.providers import provider
from harness.sandbox.unsandboxed import state
from harness.sandbox.unsandboxed.sandbox import HostSandbox
from harness.tasks import select_tasks
from harness.tasks.task import Task

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the unsandboxed provider runs as root")
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def task() -> Task:
    return select_tasks("graphroute")[0]


@pytest.fixture(scope="module")
def image(task: Task) -> str:
    return provider("unsandboxed").ensure_images([task], rootfs_from="host", progress=lambda _m: None)[task.id].grading


@pytest.fixture
def box(image: str) -> Iterator[HostSandbox]:
    made = provider("unsandboxed").start(image)
    try:
        yield made  # type: ignore[misc]
    finally:
        made.close()


def test_each_state_has_its_own_users_files_and_fixed_paths(image: str) -> None:
    sandboxes = provider("unsandboxed")
    a, b = sandboxes.start(image), sandboxes.start(image)
    try:
        assert isinstance(a, SharesHost) and isinstance(b, SharesHost)
        ids = {a.run_uid, b.run_uid, a.builder, b.builder}  # type: ignore[attr-defined]
        assert len(ids) == 4 and min(ids) >= state.UID_BASE
        # login shells (the agent's and the build's) as the builder; the grader's own commands as root
        assert a.exec("id -u").output.strip() == str(a.builder)  # type: ignore[attr-defined]
        assert a.exec("id -u", login=False).output.strip() == "0"
        assert a.exec("echo mine > note.txt && readlink -f /testbed").output.strip() == str(a.files / "testbed")  # type: ignore[attr-defined]
        assert b.exec("cat note.txt", login=False).exit_code != 0  # (b's /testbed is b's)
        assert b.exec("readlink /testbed", login=False).output.strip() == str(b.files / "testbed")  # type: ignore[attr-defined]
        b.write_file(f"{HIDDEN_DIR}/t.txt", "b's")
        assert a.exec(f"ls {HIDDEN_DIR}", login=False).output.strip() == ""
        assert b.read_file(f"{HIDDEN_DIR}/t.txt") == b"b's"
        # the builder cannot write another state's repository, nor its own .git
        other = b.files / "testbed" / "README.md"  # type: ignore[attr-defined]
        assert a.exec(f"echo x >> {other}").exit_code != 0
        assert a.exec("touch .git/hooks/pre-commit").exit_code != 0
        # what root's commands add to the work tree (a patch applied) the builder builds in (a rebuild)
        assert a.exec("mkdir -p added/deep && echo x > added/deep/x.py", login=False).exit_code == 0
        assert a.exec("echo y > added/deep/x.so && echo z >> added/deep/x.py").exit_code == 0
        assert b.diff() == "" and "note.txt" in a.diff()
    finally:
        a.close()
        b.close()
    assert not (a.directory.exists() or b.directory.exists())  # type: ignore[attr-defined]
    if not any(state.ROOT.glob("sbx-*")):  # (the last state gone, another test's included: no link is left)
        assert not any(os.path.islink(p) and os.readlink(p).startswith(str(state.ROOT)) for p in state.LINKED)


def test_files_are_the_states_own_and_links_do_not_lead_out(box: HostSandbox) -> None:
    with pytest.raises(SandboxError, match="is this host's"):
        box.read_file("/etc/hostname")
    with pytest.raises(SandboxError, match="is this host's"):
        box.write_file("/etc/optrunner-test", "x")
    assert box.exec("ln -s /etc evil && ln -s /etc/hostname name").exit_code == 0
    with pytest.raises(SandboxError, match="leads out of the state"):
        box.write_file(f"{TESTBED}/evil/optrunner-test", "x")
    assert not os.path.exists("/etc/optrunner-test")
    with pytest.raises(FileNotFoundError):  # (a link is not followed: not the host's file)
        box.read_file(f"{TESTBED}/name")
    assert box.exec("mkfifo pipe").exit_code == 0
    with pytest.raises(FileNotFoundError, match="no regular file"):  # (read at once, not waited on)
        box.read_file(f"{TESTBED}/pipe")
    box.write_file(f"{TESTBED}/pipe", "now a file")  # (the FIFO replaced, not written through)
    box.write_file(f"{TESTBED}/name", "now a file")  # (the link replaced: /etc/hostname untouched)
    assert box.read_file(f"{TESTBED}/name") == b"now a file" and Path("/etc/hostname").read_text() != "now a file"


def test_no_process_of_a_command_outlives_it(box: HostSandbox) -> None:
    marker = f"optrunner-left-{os.getpid()}"
    box.exec(f"setsid bash -c 'exec -a {marker} sleep 300' & disown; true")
    box.exec(f"bash -c 'exec -a {marker} sleep 300' & true", login=False)
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert found == []
    done = box.exec("sleep 30", timeout=1)
    assert done.timed_out and done.duration < 10


def test_the_fence_changes_nothing_of_the_hosts(task: Task, box: HostSandbox) -> None:
    host_file = Path(tempfile.mkdtemp(prefix="optrunner-host-", dir="/var/tmp")) / "shared.txt"
    try:
        host_file.write_text("the host's")
        host_file.chmod(0o666)
        made = prepare_state("base", box, task)
        assert made.fence is not None and made.fence.uid == box.run_uid
        assert f"--reuid={box.run_uid}" in made.fence.drop
        assert host_file.stat().st_mode & 0o777 == 0o666  # (a container's fence takes go-w off every file)
        listed = box.exec("cat /var/lib/optrunner-runs/.writable", login=False).output.split()
        assert "/tmp" in listed and not any(p.startswith(str(ROOT)) for p in listed)
    finally:
        host_file.unlink()
        host_file.parent.rmdir()


def test_unfenced_tests_are_refused(task: Task, box: HostSandbox) -> None:
    with pytest.raises(StepFailed, match="fresh_state=false"):
        prepare_state("base", box, task, fresh=False)


def test_a_killed_owners_state_is_cleaned_up(image: str) -> None:
    script = (f"import os, signal; from harness.sandbox.providers import provider\n"
              f"box = provider('unsandboxed').start({image!r})\n"
              "box.exec('touch /tmp/optrunner-orphan-$PPID-x && chmod 666 /tmp/optrunner-orphan-*')\n"
              "print(box.directory, box.builder, flush=True)\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    folder, builder = done.stdout.split()
    assert Path(folder).is_dir() and state.files_of((int(builder),))
    assert provider("unsandboxed").cleanup("orphans") >= 1
    assert not Path(folder).exists() and not state.files_of((int(builder),))


def test_a_hosts_own_fixed_path_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "testbed"
    mine.mkdir()
    monkeypatch.setattr(state, "LINKED", {str(mine): "testbed"})
    with pytest.raises(SandboxUnavailable, match=f"points {mine} at each graded state, and it is this host's own"):
        provider("unsandboxed").ensure_ready()


def test_images_only_over_the_host_and_folder_tasks_only(task: Task) -> None:
    sandboxes = provider("unsandboxed")
    with pytest.raises(SandboxUnavailable, match="add sandbox.rootfs=host"):
        sandboxes.ensure_images([task], rootfs_from="image")
    from harness.sandbox.unsandboxed.provider import refusal
    from dataclasses import replace
    assert "folder tasks only" in (refusal(replace(task, base_commit="abc")) or "")
    assert "its own loopback" in (refusal(replace(task, service=object())) or "")  # type: ignore[arg-type]
    assert refusal(task) is None


def test_a_run_is_told_only_the_ipc_objects_of_its_own_user(task: Task, box: HostSandbox) -> None:
    from harness.grader.isolation import parse, wrap

    # a segment of the host's own (root's), which no run of the state made
    shmid = subprocess.run(["ipcmk", "-M", "4096"], capture_output=True, text=True, check=True).stdout.split(":")[-1]
    try:
        made = prepare_state("base", box, task)
        assert made.fence is not None and made.fence.shared
        done = box.exec(wrap(made.fence, "ipcmk -M 8192 >/dev/null && ipcmk -S 1 >/dev/null"), timeout=60,
                        login=False)
        _, outside = parse(done.output)
        assert outside is not None, done.output
        kinds = sorted(p.split(":")[1] for p in outside.left if p.startswith("ipc:"))
        assert kinds == ["sem", "shm"], outside.left  # the run's two, not the host's segment
        mine = subprocess.run(["ipcs", "-m", "-s"], capture_output=True, text=True).stdout
        assert str(made.fence.uid) not in mine  # (removed after the run, as their owner)
    finally:
        subprocess.run(["ipcrm", "-m", shmid.strip()], capture_output=True)


def test_predictions_are_graded_there_and_the_summary_says_unsandboxed(tmp_path: Path) -> None:
    import json

    predictions = tmp_path / "rollout_0.jsonl"
    predictions.write_text(json.dumps({"instance_id": "graphroute", "model_patch": "", "model_name_or_path": "m"}))
    done = subprocess.run([sys.executable, "-m", "runner.cli", "grade", "--predictions", str(predictions), "--tasks",
                           "graphroute", "--provider", "unsandboxed", "--rootfs", "host", "--rounds", "1", "--out",
                           str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "(unsandboxed: plain processes of this host, sandbox.provider=unsandboxed)" in done.stdout
    made = json.loads((tmp_path / "out" / "summary.json").read_text())["provenance"]
    assert made["isolated"] is False and made["sandbox_provider"] == "unsandboxed"
