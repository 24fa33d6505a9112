"""The paths a git patch writes, read the way `git apply` reads them.

A section's `diff --git a/X b/Y` line is ambiguous when a path has a space, and it is not the only place a
path is named: `rename to`, `copy to` and the `+++` line say where the content goes, `git apply` follows
them, and quoted names carry C escapes. A guard or an exclusion filter that reads only the `diff --git`
line can be walked past (a rename into `.venv`, a quoted name). Here every path of a section comes from its
headers (rename and copy lines, `---`/`+++` lines, unquoted) and from git itself (`git apply --numstat`,
run on the host outside any repository, which only parses); a section git cannot read is refused.

Text before the first `diff --git` line is read too: `git apply` applies a traditional unified diff there
(`--- a/x` / `+++ b/x` / `@@`), and the grader's last fallback, `patch`, a context diff (`*** a/x` /
`--- b/x`) there or between sections, which git skips. Such text would reach the repository unseen by the
exclusion filter and the guards, so it is refused; a message (what git calls "No valid patches") passes.
A patch is read with its final newline (`with_final_newline`): without it git reads the last line as cut.
"""
from __future__ import annotations

import codecs
import os
import re
import subprocess
import tempfile
from typing import overload


class UnreadablePatch(ValueError):
    """A patch section `git apply` cannot parse; the message says which and why."""


def sections(patch: str) -> list[str]:
    """A unified git diff cut before each `diff --git` line: one section per file (and any text before the
    first, as the first section)."""
    return [section for section in re.split(r"(?m)^(?=diff --git )", patch) if section]


def unquote(name: str) -> str:
    """A path as git writes it in a header: as is, or in double quotes with C escapes (octal for bytes)."""
    if len(name) >= 2 and name[0] == name[-1] == '"':
        raw = codecs.escape_decode(name[1:-1].encode("utf-8", "surrogateescape"))[0]
        return raw.decode("utf-8", "surrogateescape")
    return name


def _header_paths(section: str) -> tuple[set[str], set[str]]:
    """(every path the headers name, the ones content goes to: `+++`, `rename to`, `copy to`)."""
    paths: set[str] = set()
    written: set[str] = set()
    for line in section.splitlines():
        if line.startswith(("@@", "GIT binary patch")):
            break  # the headers end: what follows is content, where "--- x" may be a removed line
        for prefix in ("rename from ", "rename to ", "copy from ", "copy to "):
            if line.startswith(prefix):
                paths.add(unquote(line[len(prefix):]))
                if prefix.endswith(" to "):
                    written.add(unquote(line[len(prefix):]))
        if line.startswith(("--- ", "+++ ")):
            name = unquote(line[4:].rstrip("\t"))  # git ends a name with a space in it with a tab
            if name != "/dev/null":
                name = name[2:] if name[:2] in ("a/", "b/") else name
                paths.add(name)
                if line.startswith("+++ "):
                    written.add(name)
    return paths, written


@overload
def with_final_newline(patch: str) -> str: ...


@overload
def with_final_newline(patch: None) -> None: ...


def with_final_newline(patch: str | None) -> str | None:
    """`patch` ending in a newline (None and "" as they are). Predictions files from other tools often drop
    it, and git then reads the last line as cut short ("corrupt patch"); `git apply` and `patch` get the
    patch file with it anyway, so adding it changes nothing they apply."""
    return patch + "\n" if patch and not patch.endswith("\n") else patch


def _numstat(text: str) -> tuple[int, str, str]:
    """`git apply --numstat -z` on `text`: (exit code, stdout, last line of stderr). Run outside any
    repository (it only parses), in the C locale so its messages can be matched."""
    with tempfile.TemporaryDirectory(prefix="optrunner-patch-") as cwd:
        done = subprocess.run(["git", "apply", "--numstat", "-z"], input=text.encode("utf-8", "surrogateescape"),
                              capture_output=True, cwd=cwd, timeout=60, env={**os.environ, "LC_ALL": "C"})
    why = done.stderr.decode(errors="replace").strip().splitlines()
    return done.returncode, done.stdout.decode("utf-8", "surrogateescape"), why[-1] if why else "no reason"


def _git_paths(section: str) -> set[str]:
    code, out, why = _numstat(section)
    if code != 0:
        first = section.splitlines()[0] if section.strip() else "(empty)"
        raise UnreadablePatch(f"git cannot read the patch section {first[:160]!r}: {why}")
    return _numstat_paths(out)


def _numstat_paths(out: str) -> set[str]:
    """The paths in `git apply --numstat -z` output (a rename's or copy's two names follow its counts)."""
    paths, tokens = set(), out.split("\0")
    i = 0
    while i < len(tokens):
        fields = tokens[i].split("\t", 2)
        if len(fields) == 3 and fields[2]:
            paths.add(fields[2])
        elif len(fields) == 3:  # a rename or copy: its two names follow
            paths.update(t for t in tokens[i + 1:i + 3] if t)
            i += 2
        i += 1
    return paths


def read_section(section: str) -> tuple[list[str], list[str]]:
    """(every path a section names or writes, both sides of a rename or copy; the paths its content goes
    to: a rename's or copy's new name, the `+++` file, or for a section without content, a mode change,
    every path). Raises UnreadablePatch when git cannot read it, and for text before the first
    `diff --git` that is not a plain message (`_leading_text`); a message names nothing."""
    _no_context_diff(section)
    if not section.startswith("diff --git "):
        _leading_text(section)
        return [], []
    named, written = _header_paths(section)
    paths = sorted(named | _git_paths(section))
    return paths, sorted(written) if written else paths


LEADING = "text before the first 'diff --git' line"
# A context diff's file headers: `patch` applies what follows them; git skips them as text between patches.
_CONTEXT_HEADERS = re.compile(r"^\*\*\* (\S.*)\n--- \S", re.MULTILINE)


def _leading_text(text: str) -> None:
    """Refuse text before the first `diff --git` line (or a whole patch without one) that git would act on:
    a traditional diff (its paths named), or anything git starts to read as a diff and cannot. Plain text,
    a commit message, passes: git finds "No valid patches in input" there, which is no error for it."""
    if not text.strip():
        return
    code, out, why = _numstat(text)
    if code == 0:
        paths = sorted(_numstat_paths(out))
        raise UnreadablePatch(f"{LEADING} is a diff of {', '.join(paths)[:300]}: git apply would apply it, "
                              "and only sections that start with 'diff --git' are checked")
    if "No valid patches in input" not in why:
        raise UnreadablePatch(f"{LEADING} is not a plain message: git reads a diff there and fails ({why})")


def _no_context_diff(text: str) -> None:
    """Refuse a context diff anywhere: git skips it, `patch` (the apply cascade's last step) applies it."""
    found = _CONTEXT_HEADERS.search(text)
    if found:
        raise UnreadablePatch(f"the patch holds a context diff of {found.group(1).strip()[:160]!r}, which git skips "
                              "and patch applies; only sections that start with 'diff --git' are read")


def section_paths(section: str) -> list[str]:
    """Every path a section names or writes (read_section)."""
    return read_section(section)[0]
