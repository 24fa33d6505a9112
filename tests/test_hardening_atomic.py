"""Atomic writes are durable (issue 33): the temp file's bytes are fsynced before the rename, and the
directory after it, so a crash leaves the old file or the new one, never an empty one under the name.

os.fsync and os.replace are wrapped to record what they are called on, and still do their real work."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness import atomic


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        info = os.fstat(fd)
        kind = "dir" if stat.S_ISDIR(info.st_mode) else "file"
        seen.append(("fsync", f"{kind}:{info.st_ino}"))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append(("replace", f"file:{os.stat(src).st_ino}"))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return seen


def test_write_text_fsyncs_the_file_before_the_rename_and_the_directory_after(tmp_path: Path,
                                                                              calls: list[tuple[str, str]]) -> None:
    target = tmp_path / "out" / "record.json"
    atomic.write_text(target, "first")
    atomic.write_text(target, "second")
    assert target.read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["record.json"]  # no temp file left
    directory = f"dir:{target.parent.stat().st_ino}"
    for write in (calls[:3], calls[3:]):
        (op1, file_synced), (op2, file_renamed), (op3, dir_synced) = write
        assert (op1, op2, op3) == ("fsync", "replace", "fsync")
        assert file_synced == file_renamed and file_synced.startswith("file:")  # the temp file, then renamed
        assert dir_synced == directory
    assert len(calls) == 6


def test_write_json_goes_through_the_same_path(tmp_path: Path, calls: list[tuple[str, str]]) -> None:
    atomic.write_json(tmp_path / "a.json", {"k": 1})
    assert [op for op, _ in calls] == ["fsync", "replace", "fsync"]
    assert atomic.read_json(tmp_path / "a.json") == {"k": 1}


def test_a_failed_write_leaves_no_temp_file_and_syncs_no_directory(tmp_path: Path,
                                                                   calls: list[tuple[str, str]]) -> None:
    target = tmp_path / "dir-in-the-way"
    target.mkdir()
    (target / "x").write_text("keeps it from being replaced")
    with pytest.raises(OSError):
        atomic.write_text(target, "text")  # renaming a file over a non-empty directory fails
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir-in-the-way"]
    assert [op for op, _ in calls] == ["fsync", "replace"]
