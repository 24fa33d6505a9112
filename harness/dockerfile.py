"""A Dockerfile read as instructions: the one reader of the project (the Docker provider rewrites a task's
Dockerfile for this machine with it, bubblewrap runs it over the host's system, the Harbor task loader finds
where the agent works). It imports nothing of ours: both the task and the sandbox layers use it.

It reads what Docker's parser reads: the escape character (a backslash, or what a leading `# escape=`
parser directive names: a backtick) at a line's end continues the instruction on the next line, and
comment lines and blank lines inside a continued instruction are dropped; the continued lines are joined
as Docker joins them (the escape character and the line break removed, nothing else). Lines before
and between instructions (comments, blanks, parser directives) belong to no instruction. A `FROM` names
its image with the ARGs declared before the first FROM substituted (their defaults: no build argument is
ever passed here). A RUN, COPY or ADD with a heredoc (`<<EOF` ... `EOF`, BuildKit's) is marked and its
body kept with it, so that a reader which cannot run it refuses it rather than reads the body as
instructions.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

# Docker's parser directives: `# name=value` lines before anything else (a blank line ends them too)
_DIRECTIVE = re.compile(r"#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$")
# `<<EOF`, `<<-EOF`, `<<"EOF"` (not bash's here-string `<<<`, nor a shift such as `1<<3`)
_HEREDOC = re.compile(r"(?<!<)<<(?!<)-?\s*([\"']?)([A-Za-z_][A-Za-z0-9_]*)\1")
_HEREDOC_KEYWORDS = ("RUN", "COPY", "ADD")  # where BuildKit reads heredocs
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(frozen=True)
class Instruction:
    """One instruction of a Dockerfile."""
    keyword: str  # upper case: FROM, RUN, COPY, ...
    arguments: str  # what follows the keyword, continued lines joined (a FROM's global ARGs substituted)
    text: str  # its lines as written, comments inside and heredoc bodies included
    first: int  # its first line (1-based)
    last: int  # its last line
    heredoc: bool = False  # it holds a heredoc (its body is in `text` only)

    @property
    def line(self) -> str:
        """The instruction on one line, for messages."""
        return f"{self.keyword} {self.arguments}".strip()


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def substitute(text: str, values: dict[str, str]) -> str:
    """Docker's `$NAME`, `${NAME}` and `${NAME:-default}` in an instruction's arguments."""
    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(3)
        if name in values and values[name] != "":
            return values[name]
        return match.group(2) or ""
    return _VAR.sub(one, text)


def arg_pairs(arguments: str) -> list[tuple[str, str | None]]:
    """The names an ARG declares, each with its default (None: declared without one)."""
    try:
        words = shlex.split(arguments)
    except ValueError:  # an unbalanced quote: the whole as one declaration
        words = [arguments.strip()]
    out: list[tuple[str, str | None]] = []
    for word in words:
        name, sep, default = word.partition("=")
        out.append((name, default if sep else None))
    return out


def from_parts(arguments: str) -> tuple[str, str]:
    """A FROM's image and its stage name ("" when it has none); its --platform and other flags left out."""
    words = [w for w in arguments.split() if not w.startswith("--")]
    image = words[0] if words else ""
    alias = words[2] if len(words) >= 3 and words[1].upper() == "AS" else ""
    return image, alias


def escape_of(lines: list[str]) -> str:
    """The escape character the file's parser directives name (a backslash without one)."""
    for line in lines:
        directive = _DIRECTIVE.match(line.strip())
        if directive is None:
            break
        if directive.group(1).lower() == "escape" and directive.group(2) in ("\\", "`"):
            return directive.group(2)
    return "\\"


def read(text: str) -> list[Instruction]:
    """The instructions of Dockerfile `text`, in order."""
    lines = text.splitlines()
    # the escape character, then only blanks to the line's end: the instruction goes on
    continued = re.compile(re.escape(escape_of(lines)) + r"[ \t]*$")
    out: list[Instruction] = []
    global_args: dict[str, str] = {}  # ARGs before the first FROM: what a FROM may use
    staged = False  # a FROM was read
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or _is_comment(line):
            i += 1
            continue
        first, last, joined = i, i, ""
        while True:  # Docker's continuation: comment and blank lines inside are dropped
            if continued.search(line) is None:
                joined += line
                break
            joined += continued.sub("", line)
            i += 1
            while i < len(lines) and (not lines[i].strip() or _is_comment(lines[i])):
                i += 1
            if i == len(lines):  # the file ends inside a continuation: what was read is the instruction
                break
            line, last = lines[i], i
        i = last
        keyword, arguments = (re.split(r"\s+", joined.strip(), maxsplit=1) + [""])[:2]
        keyword = keyword.upper()
        heredoc = False
        if keyword in _HEREDOC_KEYWORDS:
            for match in _HEREDOC.finditer(arguments):  # each body follows, up to its word alone on a line
                heredoc = True
                while i + 1 < len(lines):
                    i += 1
                    if lines[i].strip() == match.group(2):
                        break
        if keyword == "FROM":
            arguments, staged = substitute(arguments, global_args), True
        elif keyword == "ARG" and not staged:
            for name, default in arg_pairs(arguments):
                global_args[name] = substitute(default or "", global_args)
        out.append(Instruction(keyword, arguments, "\n".join(lines[first:i + 1]), first + 1, i + 1, heredoc))
        i += 1
    return out
