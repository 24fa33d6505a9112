"""`sandbox.provider=bwrap sandbox.rootfs=host`: a whole run with no Docker engine reachable.

The task's layer is built over the host's own system (its python3 and numpy: `.ci/run` installs
Debian's python3-numpy, as the task images have), the rollouts and the grading run in bubblewrap
sandboxes, and nothing is left behind.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.sandbox.bwrap import registry
from harness.sandbox.interface import SandboxUnavailable
from harness.sandbox.providers import provider
from tests.conftest import write_task
from tests.test_runner import runner

NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}  # any call to an engine fails


def _bwrap_here() -> bool:
    try:
        provider("bwrap").ensure_ready()
        return True
    except SandboxUnavailable:
        return False


pytestmark = pytest.mark.skipif(not _bwrap_here(), reason="bubblewrap cannot make sandboxes on this machine")


def _ours(pid: int) -> list[Path]:
    """The sandbox directories the run with this process id left."""
    host = registry.owner_id().rpartition(":")[0]
    return [d for d in registry.STATE.glob("sbx-*") if registry.read_meta(d).get("owner") == f"{host}:{pid}"]


def test_a_run_over_the_hosts_system_needs_no_docker(tmp_path: Path) -> None:
    write_task(tmp_path / "tasks", "hosttiny")
    common = [f"tasks.selector={tmp_path / 'tasks'}", "scaffold=mini_swe", "rollouts=1", "sandbox=bwrap",
              "sandbox.rootfs=host", "grading.rounds=2"]
    for model, expected in (("oracle", 1.0), ("noop", 0.0)):
        done = runner(*common, f"model={model}", f"name={model}", out=tmp_path / "out", env=NO_DOCKER, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        report = json.loads((tmp_path / "out" / "runs" / model / "report.json").read_text())
        assert report["summary"]["opt_at_k"]["1"] == expected, report["summary"]
        assert report["provenance"]["sandbox_provider"] == "bwrap"
        assert _ours(done.pid) == []  # type: ignore[attr-defined]


def test_tasks_that_need_an_image_are_refused_in_one_line(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "fixtures" / "harbor"
    done = runner("tasks=harbor", f"tasks.path={fixtures}", "model=noop", "rollouts=1", "sandbox=bwrap",
                  "sandbox.rootfs=host", out=tmp_path / "out", env=NO_DOCKER, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "which sandbox.rootfs=host cannot run" in done.stderr, done.stderr[-1000:]
