"""Task images: content-hash tags, reuse, rebuild on change, and failures that name task and command."""
from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from harness.sandbox.interface import ImageBuildError
from harness.sandbox.docker.images import base_commit_of, ensure_task_image
from harness.sandbox.taskimage.contents import task_image_tag
from harness.tasks.folder import load_task
from tests.conftest import write_task
from tests.docker_support import base_tag, client

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.docker
_made: list[str] = []


def request_cleanup(tag: str) -> None:
    _made.append(tag)


@pytest.fixture(autouse=True, scope="module")
def _remove_made_images():
    yield
    for tag in _made:
        client().images.remove(tag, force=True)


def test_unchanged_task_is_reused_and_changed_task_rebuilt(tiny_task: Path) -> None:
    (tiny_task / "repo" / "tiny" / "marker.py").write_text(f"RUN = {uuid.uuid4().hex!r}\n")  # a never-seen tree
    task = load_task(tiny_task)
    messages: list[str] = []
    tag = ensure_task_image(client(), task, base_tag(), progress=messages.append)
    request_cleanup(tag)
    assert any("building" in m for m in messages)
    messages.clear()
    assert ensure_task_image(client(), task, base_tag(), progress=messages.append) == tag
    assert messages == []  # nothing rebuilt
    (tiny_task / "repo" / "tiny" / "extra.py").write_text("X = 1\n")
    changed = load_task(tiny_task)
    assert task_image_tag(changed, base_tag()) != tag
    (tiny_task / "repo" / "tiny" / "extra.py").unlink()
    assert task_image_tag(load_task(tiny_task), base_tag()) == tag
    out = client().containers.run(tag, ["bash", "-lc", "git log --all --oneline | wc -l; git rev-parse HEAD"],
                                  remove=True, network_mode="none").decode().split()
    assert out == ["1", base_commit_of(client(), tag)]


def test_failed_build_names_task_command_and_output(tmp_path: Path) -> None:
    path = write_task(tmp_path, install_commands=["echo compiling; echo 'error: boom' >&2; exit 3"])
    with pytest.raises(ImageBuildError) as err:
        ensure_task_image(client(), load_task(path), base_tag(), progress=lambda _m: None)
    text = str(err.value)
    assert text.splitlines()[0].startswith("task tiny: install command: command failed (exit 3)")
    assert "error: boom" in text and "compiling" in text


def test_cli_build_reports_a_failed_build_without_traceback(tmp_path: Path) -> None:
    write_task(tmp_path, setup_commands=["make no-such-target"])
    done = subprocess.run([sys.executable, "-m", "harness", "build", "--tasks", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "error: task tiny: setup command: command failed" in done.stderr
    assert "No rule to make target" in done.stderr
