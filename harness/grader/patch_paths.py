"""The paths a git patch writes, read the way `git apply` reads them.

A section's `diff --git a/X b/Y` line is ambiguous when a path has a space, and it is not the only place a
path is named: `rename to`, `copy to` and the `+++` line say where the content goes, `git apply` follows
them, and quoted names carry C escapes. A guard or an exclusion filter that reads only the `diff --git`
line can be walked past (a rename into `.venv`, a quoted name). Here every path of a section comes from its
headers (rename and copy lines, `---`/`+++` lines, unquoted) and from git itself (`git apply --numstat`,
run on the host outside any repository, which only parses); a section git cannot read is refused.
"""
from __future__ import annotations

import codecs
import re
import subprocess
import tempfile


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
        return raw.decode("utf-8", "surrogateescape")  # type: ignore[union-attr]
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


def _git_paths(section: str) -> set[str]:
    with tempfile.TemporaryDirectory(prefix="optrunner-patch-") as cwd:  # outside any repository: parse only
        done = subprocess.run(["git", "apply", "--numstat", "-z"], input=section.encode("utf-8", "surrogateescape"),
                              capture_output=True, cwd=cwd, timeout=60)
    if done.returncode != 0:
        first = section.splitlines()[0] if section.strip() else "(empty)"
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise UnreadablePatch(f"git cannot read the patch section {first[:160]!r}: {why[-1] if why else 'no reason'}")
    paths, tokens = set(), done.stdout.decode("utf-8", "surrogateescape").split("\0")
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
    every path). Raises UnreadablePatch when git cannot read it. Text before the first `diff --git` (a
    message) names nothing."""
    if not section.startswith("diff --git "):
        return [], []
    named, written = _header_paths(section)
    paths = sorted(named | _git_paths(section))
    return paths, sorted(written) if written else paths


def section_paths(section: str) -> list[str]:
    """Every path a section names or writes (read_section)."""
    return read_section(section)[0]
