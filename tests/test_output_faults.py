"""A full disk and a read-only output location: one clear line, exit 2, nothing finished lost, no container
left. Real filesystems: small tmpfs mounts (skipped where this process may not mount)."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_runner import ROOT, containers_of, runner, tasks_dir  # noqa: F401 - a fixture

pytestmark = pytest.mark.docker


def _mount(path: Path, options: str) -> Iterator[Path]:
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    yield from _mount(tmp_path / "small", "size=96k")


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    yield from _mount(tmp_path / "ro", "ro,size=1m")


def test_read_only_output_is_one_line_and_nothing_starts(read_only: Path) -> None:
    done = runner("tasks=smoke", out=read_only / "out", timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Read-only file system" in lines[0] and "output_root=" in lines[0], done.stderr
    assert not containers_of(done.pid)


def test_full_disk_is_one_line_and_keeps_what_finished(small_disk: Path) -> None:
    # (sandbox.disk=0: the free-disk check before the start would refuse this disk at once; here it fills up
    # halfway through, as a disk others write to does)
    done = runner("tasks=smoke", "rollouts=2", "grade=none", "sandbox.disk=0", out=small_disk, timeout=600)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]  # progress goes there too
    assert len(errors) == 1 and "No space left on device" in errors[0] and "resume" in errors[0], done.stderr
    assert not containers_of(done.pid)
    for path in small_disk.glob("runs/*/rollouts/*/*.json"):  # whatever was written is whole
        assert json.loads(path.read_text())["instance_id"]
    assert not list(small_disk.glob("runs/*/**/.*.tmp"))  # no half-written temp file left


def test_regrading_or_judging_a_read_only_run_is_one_line_before_any_work(
        tmp_path: Path, tasks_dir: Path) -> None:  # noqa: F811 - the fixture imported above
    for mount in _mount(tmp_path / "run", "size=4m"):
        done = runner("model=noop", "scaffold=mini_swe", f"tasks.selector={tasks_dir}", "tasks.ids=[alpha]",
                      "grade=none", "name=r", "sandbox.disk=0", out=mount)  # (a 4 MB disk: no pre-flight)
        assert done.returncode == 0, done.stderr[-2000:]
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        run_dir = mount / "runs" / "r"
        for command in (["runner.grade", str(run_dir)], ["runner.judge", str(run_dir), "judge=scripted"]):
            done = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True,
                                  timeout=120)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1, (command, done.stderr)
            assert "Read-only file system" in lines[0] and "writable copy of the run directory" in lines[0], lines
