"""Patch paths as git reads them: renames, copies and quoted names reach the exclusion filter and the
guards; a section git cannot read is refused (real git diffs of a real repository)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness.grader.guards import diff_files
from harness.grader.patch_paths import UnreadablePatch, section_paths, sections, unquote
from harness.grader.states import filter_patch


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "fast.py").write_text("def f():\n    return 1\n")
    (tmp_path / "src" / "two words.py").write_text("".join(f"x{i} = {i}\n" for i in range(20)))
    (tmp_path / "src" / "café.py").write_text("y = 2\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    return tmp_path


def staged_diff(repo: Path) -> str:
    git(repo, "add", "-A")
    return git(repo, "diff", "--cached", "-M", "-C", "--binary", "HEAD")


def test_a_rename_into_the_venv_is_seen_and_dropped(repo: Path) -> None:
    (repo / ".venv" / "lib").mkdir(parents=True)
    git(repo, "mv", "src/two words.py", ".venv/lib/two words.py")
    with (repo / ".venv" / "lib" / "two words.py").open("a") as out:
        out.write("CACHE = {}\n")
    patch = staged_diff(repo)
    (section,) = sections(patch)
    assert section_paths(section) == [".venv/lib/two words.py", "src/two words.py"]
    assert filter_patch(patch) == ""  # the whole section goes: it writes into .venv
    assert diff_files(patch)[".venv/lib/two words.py"] == ["CACHE = {}"]


def test_quoted_names_are_unquoted(repo: Path) -> None:
    (repo / "src" / "café.py").write_text("y = 3\n")
    patch = staged_diff(repo)
    assert '"a/src/caf\\303\\251.py"' in patch  # git quotes a non-ASCII name with octal escapes
    (section,) = sections(patch)
    assert section_paths(section) == ["src/café.py"]
    assert unquote('"a\\tb\\"c"') == 'a\tb"c'


def test_a_copy_names_both_sides(repo: Path) -> None:
    (repo / "pkg.egg-info").mkdir()
    (repo / "pkg.egg-info" / "fast.py").write_text((repo / "src" / "fast.py").read_text())
    (repo / "src" / "fast.py").write_text("def f():\n    return 2\n")
    patch = staged_diff(repo)
    paths = {p for s in sections(patch) for p in section_paths(s)}
    assert {"pkg.egg-info/fast.py", "src/fast.py"} <= paths
    kept = filter_patch(patch)
    assert "egg-info" not in kept and "return 2" in kept  # the copy dropped, the edit kept


def test_a_section_git_cannot_read_is_refused(repo: Path) -> None:
    (repo / "src" / "fast.py").write_text("def f():\n    return 2\n")
    patch = staged_diff(repo).replace("@@ -1,2 +1,2 @@", "@@ -1,2 +1,9 @@")  # a hunk that lies about its size
    with pytest.raises(UnreadablePatch, match="git cannot read the patch section 'diff --git a/src/fast.py"):
        filter_patch(patch)


def test_text_before_the_first_section_names_nothing(repo: Path) -> None:
    (repo / "src" / "fast.py").write_text("def f():\n    return 2\n")
    patch = "a message\n" + staged_diff(repo)
    first, second = sections(patch)
    assert section_paths(first) == [] and section_paths(second) == ["src/fast.py"]
