"""Installed agents (issue 34): upstream mini-swe-agent from PyPI, run inside the rollout's sandbox, its model
calls answered by the run's gateway through the model layer. The scripted oracle answers its `bash` tool
calls; the run, its grade, its limits and its cleanup are the runner's own."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.grader.config import MEASURED

from scaffolds.installed.specs import agent_spec
from scaffolds.installed.packages import Platform, launcher, refusal
from tests.test_runner import containers_of, results, run_dir, runner

MINI = ("scaffold=installed/mini_swe_agent", "tasks=smoke", "tasks.ids=[rollstats]", "rollouts=1")


def _served(record: dict) -> list[dict]:
    return [c for c in record["details"]["gateway_calls"] if c["status"] == 200]


@pytest.mark.long("the agent's image is built from its registry packages on an engine that lacks it: up to ~200 s")
@pytest.mark.docker
def test_upstream_mini_swe_agent_solves_a_task_through_the_gateway(tmp_path: Path) -> None:
    done = runner(*MINI, "model=oracle", "grading.rounds=2", "budget.checkpoint_every=2", out=tmp_path, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    # an agent CLI's conversation is its own process's: no checkpoint, and the run says so
    assert "keeps no checkpoints" in done.stdout and not list(run_dir(tmp_path).glob("checkpoints/*"))
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "submitted" and record["exit_message"] == "the agent exited with status 0"
    assert record["details"]["agent"]["exit_code"] == 0 and record["details"]["agent"]["version"] == "2.4.6"
    installed = record["details"]["agent"]["installed"]  # what ran, as its lock pinned it
    assert "mini-swe-agent==2.4.6" in installed["packages"] and len(installed["lock"]) == 64
    assert "rollstats/window.py" in record["patch"]
    grading = record["grading"]
    # its tests passed and it measured faster (the outside-clock guard is statistical: it may flag when loaded)
    assert grading["status"] in MEASURED and grading["opt_base"], grading
    # every step is a call the gateway answered, and the record's tokens are the gateway's
    served = _served(record)
    assert record["steps"] == len(served) == record["usage"]["calls"] > 2
    assert record["usage"]["input_tokens"] == sum(c["input_tokens"] for c in served)
    assert record["usage"]["output_tokens"] == sum(c["output_tokens"] for c in served)
    assert all(c["wire"] == "openai_chat" for c in served)
    # the trajectory: the tool calls as actions with the results the agent sent back, and its own log
    trajectory = json.loads((run_dir(tmp_path) / record["trajectory"]).read_text())
    actions = [a for step in trajectory["step_records"] for a in step["actions"]]
    assert actions and all(a["tool"] == "bash" for a in actions)
    assert any(m.get("role") == "tool" for m in trajectory["messages"])
    assert "/tmp/optrunner-agent/mini.traj.json" in trajectory["details"]["agent_logs"]
    assert containers_of(done.pid) == []  # type: ignore[attr-defined]


@pytest.mark.docker
@pytest.mark.slow
def test_a_sweep_mixes_our_scaffold_and_an_installed_agent(tmp_path: Path) -> None:
    done = runner("-m", "scaffold=mini_swe,installed/mini_swe_agent", "model=noop", "tasks=smoke",
                  "tasks.ids=[rollstats]", "rollouts=1", "grade=none", "sweep_name=mix", out=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = sorted(path for path in (tmp_path / "sweeps" / "mix").iterdir() if path.is_dir())
    scaffolds = sorted(json.loads(line)["system"]["scaffold"] for run in runs
                       for line in (run / "results.jsonl").read_text().splitlines())
    assert scaffolds == ["installed-mini_swe_agent", "mini_swe"]


def test_an_image_without_a_usable_python_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTRUNNER_AGENT_PYTHONS", "")  # no interpreter on this machine to bring in
    spec = agent_spec("mini_swe_agent")
    assert Platform.parse("") is None
    assert Platform.parse("optrunner-platform x86_64 glibc 2.36 none 0.0\n") is None  # an older probe's line
    bare = Platform.parse("optrunner-platform x86_64 glibc 2.36 none 0.0 no\n")
    assert bare is not None and bare.python is None and bare.tag("npm") == "x86_64-glibc" and not bare.tmux
    assert refusal(spec, bare, "img") == (
        "installed/mini_swe_agent needs python3 >= 3.10: the task image img has none, and no interpreter on this "
        "machine can be brought in (a CPython >= 3.10 for x86_64 built against glibc <= 2.36: set "
        "OPTRUNNER_AGENT_PYTHONS to its prefix)")
    old = Platform.parse("motd line\noptrunner-platform x86_64 glibc 2.31 /usr/bin/python3 3.8 yes")
    assert old is not None and old.version == (3, 8) and old.tag("pypi") == "py38-x86_64" and old.tmux
    assert "img has 3.8 (/usr/bin/python3)" in (refusal(spec, old, "img") or "")
    musl = Platform.parse("optrunner-platform aarch64 musl 0.0 /usr/bin/python3 3.12 no")
    assert musl is not None and "glibc" in (refusal(spec, musl, "img") or "")
    fine = Platform.parse("optrunner-platform aarch64 glibc 2.36 /usr/local/bin/python3 3.11 no")
    assert fine is not None and refusal(spec, fine, "img") is None and fine.tag("pypi") == "py311-aarch64"
    # terminus-2 drives a tmux session: an image without tmux is refused before anything is installed
    assert refusal(agent_spec("terminus_2"), fine, "img") == (
        "installed/terminus_2 needs tmux in the task image; img has none (add it to its Dockerfile)")


@pytest.mark.docker
def test_the_probe_reads_a_real_image() -> None:
    from harness.sandbox.interface import SandboxLimits
    from harness.sandbox.providers import provider
    from scaffolds.installed.packages import PROBE
    from tests.docker_support import smoke_task, task_image

    box = provider("docker").start(task_image(smoke_task()), SandboxLimits())
    try:
        found = Platform.parse(box.exec(PROBE, timeout=60).output)
    finally:
        box.close()
    assert found is not None and found.libc == "glibc" and found.glibc >= (2, 17) and found.version >= (3, 10)
    assert found.python is not None and found.python.startswith("/usr")


def test_the_launcher_puts_only_the_agents_folder_before_the_standard_library(tmp_path: Path) -> None:
    code = launcher(agent_spec("mini_swe_agent"))
    assert "sys.path[:0] = [os.path.join(here, 'lib')]" in code and "from minisweagent.run.mini import app" in code
    compile(code, "launch.py", "exec")


def test_an_unknown_installed_agent_is_one_line(tmp_path: Path) -> None:
    done = runner("scaffold=installed/mini_swe_agent", "scaffold.options.agent=nope", "model=noop", "tasks=smoke",
                  out=tmp_path, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "unknown installed agent 'nope'; known: mini_swe_agent, claude_code, codex, terminus_2" in last


@pytest.mark.docker
def test_the_wall_clock_stops_an_installed_agent(tmp_path: Path) -> None:
    done = runner(*MINI, "model=script", "model.steps=[{bash: 'sleep 120'}]", "budget.wall_clock_s=8",
                  "grade=none", "scaffold.options.args='-c environment.timeout=300'", out=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (record,) = results(run_dir(tmp_path))
    assert record["exit_reason"] == "time_limit", record["exit_message"]
    # timeout(1) inside the sandbox (124) and the runner's own clock (which TERMs the agent: 143) race for the
    # same deadline; on a loaded machine either may come first, and both are the wall clock stopping it
    assert record["details"]["agent"]["exit_code"] in (124, 143) and record["wall_time_s"] < 60
    assert containers_of(done.pid) == []  # type: ignore[attr-defined]
