"""Patch paths as git reads them: renames, copies and quoted names reach the exclusion filter and the
guards; a section git cannot read is refused (real git diffs of a real repository)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.grader.guards import diff_files
from harness.grader.patch_paths import UnreadablePatch, section_paths, sections, unquote, with_final_newline
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


HACKS = Path(__file__).resolve().parent / "fixtures" / "hacks"
TRADITIONAL = "--- a/src/fast.py\n+++ b/src/fast.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 3\n"


def test_a_message_with_a_diffstat_before_the_first_section_names_nothing(repo: Path) -> None:
    (repo / "src" / "fast.py").write_text("def f():\n    return 2\n")
    message = "From 1234 Mon Sep 17 00:00:00 2001\nSubject: faster f\n\n---\n src/fast.py | 2 +-\n 1 file changed\n\n"
    patch = message + staged_diff(repo)
    assert filter_patch(patch) == patch and list(diff_files(patch)) == ["src/fast.py"]


def test_a_traditional_diff_before_the_first_section_is_refused(repo: Path) -> None:
    # The hack fixture: a message, then a traditional diff that creates the timing helper, then a real
    # section. git apply applies all of it; only the section used to be read.
    patch = (HACKS / "rollstats" / "leading_diff.patch").read_text()
    assert subprocess.run(["git", "apply", "--numstat"], input=patch, capture_output=True, text=True,
                          cwd=repo).stdout.split() == ["6", "0", "perfkit.py", "1", "0", "rollstats/__init__.py"]
    why = "text before the first 'diff --git' line is a diff of perfkit.py: git apply would apply it"
    with pytest.raises(UnreadablePatch, match=why):
        filter_patch(patch)
    with pytest.raises(UnreadablePatch, match=why):
        diff_files(patch)


def test_a_traditional_diff_with_no_git_section_is_refused(repo: Path) -> None:
    assert subprocess.run(["git", "apply", "--check", "-"], input=TRADITIONAL, text=True, cwd=repo).returncode == 0
    with pytest.raises(UnreadablePatch, match="text before the first 'diff --git' line is a diff of src/fast.py"):
        filter_patch(TRADITIONAL)
    with pytest.raises(UnreadablePatch, match="is not a plain message: git reads a diff there and fails"):
        filter_patch("a message\n" + TRADITIONAL.replace("@@ -1,2 +1,2 @@", "@@ -1,2 +1,7 @@") + staged_diff(repo))


def test_a_traditional_diff_after_a_section_is_read_with_it(repo: Path) -> None:
    # Text after a section's hunks belongs to the section: git's own reading of it names the extra file.
    (repo / "src" / "fast.py").write_text("def f():\n    return 2\n")
    extra = "--- /dev/null\n+++ b/.venv/lib/site.py\n@@ -0,0 +1 @@\n+import fast\n"
    patch = staged_diff(repo) + extra
    assert ".venv/lib/site.py" in diff_files(patch)
    assert filter_patch(patch) == ""  # the section goes whole: it writes into .venv


def test_a_context_diff_anywhere_is_refused(repo: Path) -> None:
    # git skips a context diff; `patch`, the apply cascade's last step, applies it.
    (repo / "src" / "fast.py").write_text("def f():\n    return 2\n")
    context = "*** a/src/café.py\n--- b/src/café.py\n***************\n*** 1 ****\n! y = 2\n--- 1 ----\n! y = 9\n"
    for patch in (context + staged_diff(repo), staged_diff(repo) + context):
        with pytest.raises(UnreadablePatch, match="a context diff of 'a/src/café.py'"):
            filter_patch(patch)
    if shutil.which("patch"):
        done = subprocess.run(["patch", "--batch", "-p1", "--dry-run"], input=staged_diff(repo) + context,
                              capture_output=True, text=True, cwd=repo)
        assert done.returncode == 0 and "src/café.py" in done.stdout, done.stdout


def test_a_missing_final_newline_is_added_before_reading(repo: Path) -> None:
    (repo / "src" / "fast.py").write_text("def f():\n    return 2\n")
    patch = staged_diff(repo)
    with pytest.raises(UnreadablePatch, match="corrupt patch"):
        filter_patch(patch.rstrip("\n"))
    assert with_final_newline(patch.rstrip("\n")) == patch == with_final_newline(patch)
    assert with_final_newline("") == "" and with_final_newline(None) is None
