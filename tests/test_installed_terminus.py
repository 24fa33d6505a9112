"""Installed agents: Harbor's terminus-2 (PyPI `harbor`, Python >= 3.12) run inside the rollout's sandbox on an
interpreter brought from this machine (the task images have 3.11), driving a tmux session there; its model calls
answered by the run's gateway. The scripted oracle answers in its JSON keystrokes format."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.grader.config import MEASURED
from scaffolds.installed import pythons
from scaffolds.installed.specs import AgentSpec, agent_spec
from scaffolds.installed.packages import Platform, launcher, refusal
from tests.test_runner import containers_of, results, run_dir, runner

TERMINUS = ("scaffold=installed/terminus_2", "tasks=smoke", "tasks.ids=[rollstats]", "rollouts=1")
HOST = pythons.host_glibc()
# Harbor needs 3.12; the tests bring the interpreter this machine has (pyenv's here), as a run would
BROUGHT = pythons.choose((3, 12), os.uname().machine, HOST)
needs_312 = pytest.mark.skipif(BROUGHT is None, reason="no CPython >= 3.12 on this machine to bring in")


def _served(record: dict) -> list[dict]:
    return [c for c in record["details"]["gateway_calls"] if c["status"] == 200]


@pytest.mark.docker
@needs_312
@pytest.mark.slow  # (106 s with its install cached, 142 s without: make bench; OpenHands keeps a Python agent brought
# with its own interpreter in CI)
def test_terminus_2_solves_a_task_through_the_gateway(tmp_path: Path) -> None:
    done = runner(*TERMINUS, "model=oracle", "grading.rounds=2", out=tmp_path, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "submitted" and record["exit_message"] == "the agent exited with status 0"
    agent = record["details"]["agent"]
    assert agent["exit_code"] == 0 and agent["version"] == "0.24.0" and agent["package"] == "harbor==0.24.0"
    assert "rollstats/window.py" in record["patch"]
    grading = record["grading"]
    assert grading["status"] in MEASURED and grading["opt_base"], grading
    served = _served(record)
    assert record["steps"] == len(served) == record["usage"]["calls"] > 2
    assert record["usage"]["input_tokens"] == sum(c["input_tokens"] for c in served)
    assert record["usage"]["output_tokens"] == sum(c["output_tokens"] for c in served)
    assert all(c["wire"] == "openai_chat" for c in served)
    trajectory = json.loads((run_dir(tmp_path) / record["trajectory"]).read_text())
    logs = trajectory["details"]["agent_logs"]
    # its own trajectory (Harbor's ATIF) and the tmux pane it typed into
    atif = json.loads(logs["/tmp/optrunner-agent/terminus/trajectory.json"])
    assert atif["agent"]["name"] == "terminus-2" and len(atif["steps"]) > 2
    assert "python -m rollstats" in logs["/logs/agent/terminus_2.pane"] or "rollstats" in \
        logs["/logs/agent/terminus_2.pane"]
    # it confirmed completion: task_complete twice, the last two replies
    replies = [json.loads(m["content"]) for m in trajectory["messages"] if m["role"] == "assistant"]
    assert replies[-1]["task_complete"] is True
    assert containers_of(done.pid) == []  # type: ignore[attr-defined]


def test_an_image_with_an_old_python_gets_one_brought_where_this_machine_has_one(tmp_path: Path,
                                                                                   monkeypatch) -> None:  # noqa: ANN001
    spec = agent_spec("terminus_2")
    image = Platform.parse(f"optrunner-platform {os.uname().machine} glibc {HOST[0]}.{HOST[1]} /usr/bin/python3 "
                           "3.11 yes")
    assert image is not None
    monkeypatch.setenv("OPTRUNNER_AGENT_PYTHONS", str(tmp_path / "none"))
    assert "needs python3 >= 3.12: the task image img has 3.11 (/usr/bin/python3)" in (refusal(spec, image, "img")
                                                                                      or "")
    monkeypatch.setenv("OPTRUNNER_AGENT_PYTHONS", os.pathsep.join(
        [str(tmp_path / "none"), str(Path(sys.base_prefix))] + ([str(BROUGHT[0])] if BROUGHT else [])))
    if BROUGHT is None:
        pytest.skip("no CPython >= 3.12 on this machine")
    assert refusal(spec, image, "img") is None
    # the oldest that fits (this venv's own 3.11 does not), for this machine only, at least this glibc
    assert pythons.choose((3, 12), os.uname().machine, HOST) == BROUGHT
    assert pythons.choose((3, 12), "riscv64", HOST) is None
    assert pythons.choose((3, 12), os.uname().machine, (HOST[0], HOST[1] - 1)) is None


@needs_312
def test_a_brought_interpreter_runs_from_its_copy_and_its_library_path_stays_out_of_commands(
        tmp_path: Path) -> None:
    assert BROUGHT is not None
    prefix, version = BROUGHT
    folder = tmp_path / "agent"
    pythons.copy(prefix, version, folder / "interpreter")
    short = f"python{version[0]}.{version[1]}"
    assert not (folder / "interpreter" / "lib" / short / "test").exists()
    # an agent module that reports what its interpreter is and what a command it starts sees
    (folder / "lib").mkdir()
    (folder / "lib" / "probe.py").write_text(
        "import os, subprocess, sys\n"
        "def main():\n"
        "    seen = subprocess.run(['sh', '-c', 'echo \"${LD_LIBRARY_PATH-unset}\"'], capture_output=True, text=True)\n"
        "    print(sys.version_info[:2], sys.prefix, seen.stdout.strip())\n")
    spec = AgentSpec(name="probe", registry="pypi", package="probe", version="0", module="probe:main",
                     python=(3, 12), wire="openai_chat", step="-", command=lambda launch: "")
    (folder / "launch.py").write_text(launcher(spec))
    wrapper = folder / "interpreter" / "bin" / pythons.WRAPPER
    for before, after in ((None, "unset"), ("/opt/x", "/opt/x")):
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        if before:
            env["LD_LIBRARY_PATH"] = before
        done = subprocess.run([str(wrapper), "-I", "-S", "-B", str(folder / "launch.py")], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [f"({version[0]},", f"{version[1]})", str(folder / "interpreter"), after]


