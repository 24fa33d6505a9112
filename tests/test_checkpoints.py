"""Long rollouts survive interruption (issue 35): every `budget.checkpoint_every` steps the episode's state and
the sandbox's files are kept, and a rollout killed mid-way continues from its last checkpoint in a fresh
sandbox, ending as the same rollout run without interruption would."""
from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from harness.models.config import ModelConfig
from harness.models.model import Model
from harness.models.scripted import Script
from scaffolds.checkpoint import Checkpoints, EpisodeState
from scaffolds.exits import ExitReason
from scaffolds.limits import Limits
from scaffolds.mini_swe.agent import BASH_TOOL
from scaffolds.recorder import Recorder
from tests.test_runner import containers_of, results, run_dir, runner, start_runner, wait_for

STEPS = "model.steps=[" + "".join(f"{{bash: 'echo line {i} >> notes.txt && sleep 0.5', duration: 1}}, "
                                  for i in range(1, 13)) + "{finish: done}]"
ARGS = ("tasks=smoke", "tasks.ids=[rollstats]", "rollouts=1", "model=script", STEPS, "grade=none",
        "budget.checkpoint_every=3")
HOST = re.compile(r"@[0-9a-f]{12}\b")  # a terminal's prompt names its container, which a fresh sandbox changes


def _comparable(trajectory: dict) -> list:
    """What the model saw and did, step by step (no times; a prompt's host name as one word)."""
    return [(step["actions"], [HOST.sub("@host", o["text"]) for o in step["observations"]])
            for step in trajectory["step_records"]]


CALL_ID = re.compile(r"call_[0-9a-f]{12}")  # the scripted provider names each tool call afresh, every run


def _messages(trajectory: dict) -> str:
    return CALL_ID.sub("call_id", HOST.sub("@host", json.dumps(trajectory["messages"])))


@pytest.mark.long("a rollout killed, resumed from its checkpoint, and a whole run to compare: ~45 s")
@pytest.mark.docker
# (codeact's and terminus's runs are make bench's: CI stays under 45 minutes)
@pytest.mark.parametrize("scaffold", ["mini_swe", pytest.param("codeact", marks=pytest.mark.slow),
                                      pytest.param("terminus", marks=pytest.mark.slow),
                                      pytest.param("mini_swe bwrap", marks=pytest.mark.slow)])
def test_a_rollout_killed_mid_way_continues_from_its_checkpoint_and_ends_the_same(tmp_path: Path,
                                                                                 scaffold: str) -> None:
    name, _, sandboxes = scaffold.partition(" ")
    ARGS = (f"scaffold={name}", *([f"sandbox.provider={sandboxes}"] if sandboxes else []), *globals()["ARGS"])
    whole = runner(*ARGS, out=tmp_path / "whole", timeout=600)
    assert whole.returncode == 0, whole.stderr[-2000:]
    (expected,) = results(run_dir(tmp_path / "whole"))
    proc = start_runner(*ARGS, out=tmp_path / "cut")
    try:
        def checkpointed() -> bool:
            found = list((tmp_path / "cut").glob("runs/*/checkpoints/*__0.json"))
            journal = list((tmp_path / "cut").glob("runs/*/checkpoints/*.calls.jsonl"))
            if not found or not journal:
                return False
            done = len(json.loads(found[0].read_text())["state"]["steps"])
            return done >= 6 and len(journal[0].read_text().splitlines()) > done  # a call after it, too

        wait_for(checkpointed, 120, "a checkpoint at step 6 and a call after it")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    path = run_dir(tmp_path / "cut")
    assert not (path / "results.jsonl").exists()
    again = runner(*ARGS, out=tmp_path / "cut", timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    (record,) = results(path)
    assert record["exit_reason"] == expected["exit_reason"] == "submitted"
    assert not record["details"].get("checkpoint_errors"), record["details"]["checkpoint_errors"]
    assert record["patch"] == expected["patch"] and "+line 12" in record["patch"]
    assert record["steps"] == expected["steps"] >= 13
    resumed = record["details"]["resumed_from"]
    assert resumed in (6, 9, 12) and record["details"]["pieces"][0]["from_step"] == 0
    assert [p["from_step"] for p in record["details"]["pieces"]] == [0, resumed]
    # no step lost or doubled: what the model saw and did, step by step, is the uninterrupted rollout's
    ours = json.loads((path / record["trajectory"]).read_text())
    theirs = json.loads((run_dir(tmp_path / "whole") / expected["trajectory"]).read_text())
    assert _comparable(ours) == _comparable(theirs)
    assert _messages(ours) == _messages(theirs)
    # every call answered is paid for once: the uninterrupted rollout's calls, plus those answered after the
    # checkpoint before the kill (their work was lost, and they were made again)
    lost = record["details"]["lost_calls"]
    assert len(lost) == 1 and lost[0]["calls"] >= 1
    assert record["usage"]["calls"] == expected["usage"]["calls"] + lost[0]["calls"] == record["steps"] + \
        lost[0]["calls"]
    again_steps = theirs["step_records"][resumed:resumed + lost[0]["calls"]]
    assert lost[0]["input_tokens"] == sum(step["call"]["input_tokens"] for step in again_steps)
    assert record["usage"]["input_tokens"] == expected["usage"]["input_tokens"] + lost[0]["input_tokens"]
    # recorded: its checkpoint and its image are gone, and no container is left
    assert list(path.glob("checkpoints/*")) == []
    from tests.docker_support import client
    assert client().images.list(name="optrunner/checkpoint") == []
    assert not containers_of(proc.pid) and not containers_of(again.pid)  # type: ignore[attr-defined]


def _model() -> Model:
    return Model(ModelConfig(name="scripted/script", attempts=1),
                 script=Script(steps=[{"bash": f"echo {i}"} for i in range(8)]))


class _NoSandbox:
    """The Recorder reads a sandbox only for diff snapshots, which these limits turn off."""
    workdir = "/testbed"


def test_the_recorder_hands_over_a_state_every_n_steps_and_continues_from_one() -> None:
    model = _model()
    saved: list[EpisodeState] = []
    rec = Recorder("mini_swe", _NoSandbox(), model, Limits(max_steps=None, snapshot_every=0),  # type: ignore[arg-type]
                   checkpoints=Checkpoints(every=3, save=saved.append))
    state = {"messages": [{"role": "user", "content": "go"}], "n": 0}
    rec.state_of = lambda: state
    for _ in range(7):
        rec.query(state["messages"], tools=[BASH_TOOL])
        state["n"] += 1
    assert [len(s.steps) for s in saved] == [3, 6]  # taken before the 4th and the 7th call
    assert saved[1].state == {"messages": [{"role": "user", "content": "go"}], "n": 6}
    assert saved[1].usage["calls"] == 6 and saved[1].elapsed_s >= 0
    # plain JSON, and a fresh Recorder continues from it: the steps, the usage and the model's next call
    copy = EpisodeState.from_dict(json.loads(json.dumps(saved[1].to_dict())))
    fresh = _model()
    again = Recorder("mini_swe", _NoSandbox(), fresh, Limits(max_steps=7, snapshot_every=0),  # type: ignore[arg-type]
                     checkpoints=Checkpoints(every=3, save=saved.append, resume=copy))
    again.restore(copy)
    assert len(again.steps) == 6 and again.usage.calls == 6 and fresh.calls == 6
    reply = again.query(copy.state["messages"], tools=[BASH_TOOL])
    assert "echo 6" in json.dumps(reply.message)  # the 7th step of the script, not the 1st
    with pytest.raises(Exception) as ended:  # its step limit counts the steps before the checkpoint too
        again.query(copy.state["messages"], tools=[BASH_TOOL])
    assert getattr(ended.value, "reason", None) == ExitReason.STEP_LIMIT
    assert len(saved) == 2  # nothing saved again at the step it continued from
    with pytest.raises(ValueError, match="cannot continue a codeact episode"):
        Recorder("codeact", _NoSandbox(), fresh, Limits()).restore(copy)  # type: ignore[arg-type]


def _providers() -> list[str]:
    from tests.docker_support import providers_here
    return list(providers_here())


@pytest.mark.docker
@pytest.mark.parametrize("name", _providers())
def test_cleanup_removes_the_checkpoints_no_file_needs(name: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    from harness.sandbox.providers import provider
    from runner.checkpoints import FILE_LABEL
    from tests.test_sandbox_conformance import image_for

    image, sandboxes = image_for(name), provider(name)  # (bwrap: the exported directory of the same image)
    names = {which: f"optrunner/checkpoint:cleanup-{name}-{which}" for which in ("kept", "older", "gone")}
    files = {which: tmp_path / f"{which}.json" for which in names}
    try:
        with sandboxes.start(image) as box:
            box.exec("echo kept > /tmp/mark", timeout=30)
            for which, kept in names.items():
                box.checkpoint(kept, {FILE_LABEL: str(files[which])})
        # "older": the checkpoint a resumed sandbox still runs on, kept until its rollout is recorded
        files["kept"].write_text(json.dumps({"image": names["kept"]}))
        files["older"].write_text(json.dumps({"image": "optrunner/checkpoint:newer", "older": [names["older"]]}))
        with sandboxes.start(names["kept"]) as again:  # a fresh sandbox from a checkpoint holds its files
            assert again.exec("cat /tmp/mark", timeout=30).output.strip() == "kept"
        done = subprocess.run([sys.executable, "-m", "harness", "cleanup", "--provider", name], capture_output=True,
                              text=True, cwd=Path(__file__).resolve().parent.parent)
        assert done.returncode == 0, done.stderr
        # (at least ours: the engine is shared with other tests, whose killed runs may have left one too)
        assert re.search(r"removed [1-9]\d* checkpoint\(s\)", done.stdout + done.stderr), done.stdout + done.stderr
        assert sandboxes.has_image(names["kept"]) and sandboxes.has_image(names["older"])  # type: ignore[attr-defined]
        assert not sandboxes.has_image(names["gone"])  # type: ignore[attr-defined]
    finally:
        for kept in names.values():
            sandboxes.remove_image(kept)  # type: ignore[attr-defined]


@pytest.mark.docker
def test_a_stop_signal_keeps_the_work_of_a_rollout_waiting_on_its_model(tmp_path: Path) -> None:
    # a model that takes 2 s per reply, and no periodic checkpoint before step 100: only the signal keeps one
    steps = "model.steps=[" + "".join(f"{{bash: 'echo line {i} >> notes.txt', delay_s: 2}}, " for i in range(1, 7)) \
        + "{finish: done}]"
    args = ("scaffold=mini_swe", "tasks=smoke", "tasks.ids=[rollstats]", "rollouts=1", "model=script", steps,
            "grade=none", "budget.checkpoint_every=100")
    proc = start_runner(*args, out=tmp_path)
    try:
        def three_answered() -> bool:
            journal = list(tmp_path.glob("runs/*/checkpoints/*.calls.jsonl"))
            return bool(journal) and len(journal[0].read_text().splitlines()) >= 3

        wait_for(three_answered, 120, "three answered calls")
        # The third reply's action (an echo) runs, then the fourth call waits 2 s on the model: a signal
        # during the action keeps nothing new (its state is not consistent), so it comes in that wait.
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, output[-2000:]
    path = run_dir(tmp_path)
    kept_files = list(path.glob("checkpoints/*__0.json"))
    assert len(kept_files) == 1, output[-3000:]
    (kept,) = kept_files
    done = len(json.loads(kept.read_text())["state"]["steps"])
    assert done >= 3  # the steps answered before the signal: its periodic checkpoint would have been at 100
    again = runner(*args, out=tmp_path, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    (record,) = results(path)
    assert record["exit_reason"] == "submitted" and record["steps"] == 7
    assert record["details"]["resumed_from"] == done
    assert all(f"+line {i}" in record["patch"] for i in range(1, 7))
    assert not containers_of(proc.pid) and not containers_of(again.pid)  # type: ignore[attr-defined]


@pytest.mark.docker
@pytest.mark.parametrize("name", _providers())
def test_a_sandbox_started_from_a_checkpoint_has_its_files_and_a_checkpoint_of_it_stands_alone(name: str) -> None:
    from harness.sandbox.interface import Checkpointable
    from harness.sandbox.providers import provider
    from tests.test_sandbox_conformance import image_for

    image, sandboxes = image_for(name), provider(name)  # (bwrap: the exported directory of the same image)
    first, second = f"optrunner/checkpoint:conformance-{name}-1", f"optrunner/checkpoint:conformance-{name}-2"
    try:
        with sandboxes.start(image) as box:
            assert isinstance(box, Checkpointable)
            box.exec("echo one > /testbed/added.txt && rm /testbed/README.md && mkdir -p /tmp/kept/deep && "
                     "echo deep > /tmp/kept/deep/file", timeout=30)
            box.checkpoint(first)
            box.exec("echo after > /testbed/late.txt", timeout=30)  # after the checkpoint: not in it
        with sandboxes.start(first) as again:
            shown = again.exec("cat /testbed/added.txt /tmp/kept/deep/file; ls /testbed", timeout=30).output
            assert "one" in shown and "deep" in shown and "README.md" not in shown and "late.txt" not in shown
            again.exec("echo two >> /testbed/added.txt", timeout=30)
            again.checkpoint(second)  # from a sandbox that started from a checkpoint
        sandboxes.remove_image(first)  # (the runner removes the older one once the newer exists)
        with sandboxes.start(second) as third:
            shown = third.exec("cat /testbed/added.txt; ls /testbed", timeout=30).output
            assert "one\ntwo" in shown and "README.md" not in shown
    finally:
        for kept in (first, second):
            sandboxes.remove_image(kept)


@pytest.mark.docker
@pytest.mark.parametrize("name", _providers())
def test_a_checkpoint_rebuilt_elsewhere_from_its_archives_has_its_files(name: str) -> None:
    """What a Ray node does with another node's checkpoint: the image is not on its engine, so it is rebuilt from
    the task image and the archives the sandboxes exported (a resumed sandbox's archive may need the one before)."""
    from harness.sandbox.interface import Portable
    from harness.sandbox.providers import provider
    from tests.test_sandbox_conformance import image_for

    image, sandboxes = image_for(name), provider(name)  # (bwrap: the exported directory of the same image)
    first, second = f"optrunner/checkpoint:travel-{name}-1", f"optrunner/checkpoint:travel-{name}-2"
    try:
        with sandboxes.start(image) as box:
            assert isinstance(box, Portable)
            box.exec("echo one > /testbed/added.txt && rm /testbed/README.md && mkdir -p /tmp/kept/deep && "
                     "echo deep > /tmp/kept/deep/file && echo \"# changed\" >> /testbed/Makefile && "
                     "ln -s added.txt /testbed/link", timeout=30)
            box.checkpoint(first)
            one, alone = box.export_checkpoint(first)
        sandboxes.remove_image(first)  # type: ignore[attr-defined] - another node's: not on this engine
        sandboxes.import_checkpoint(first, image, [one])  # type: ignore[attr-defined]
        with sandboxes.start(first) as again:
            shown = again.exec("cat /testbed/added.txt /tmp/kept/deep/file /testbed/link; tail -1 /testbed/Makefile;"
                               " ls /testbed", timeout=30).output
            assert "one\ndeep\none\n# changed\n" in shown and "README.md" not in shown
            again.exec("echo two >> /testbed/added.txt && rm -r /tmp/kept", timeout=30)
            again.checkpoint(second)
            two, alone_two = again.export_checkpoint(second)
        sandboxes.remove_image(first)  # type: ignore[attr-defined]
        sandboxes.remove_image(second)  # type: ignore[attr-defined]
        sandboxes.import_checkpoint(second, image, [two] if alone_two else [one, two])  # type: ignore[attr-defined]
        with sandboxes.start(second) as third:
            shown = third.exec("cat /testbed/added.txt; ls /testbed /tmp", timeout=30).output
            assert "one\ntwo" in shown and "README.md" not in shown and "kept" not in shown
        assert alone == alone_two == (name == "bwrap")  # Docker's archive holds only what changed since
    finally:
        for kept in (first, second):
            sandboxes.remove_image(kept)  # type: ignore[attr-defined]
