"""`str_replace_editor`, run on the host over the sandbox's read_file/write_file/exec.

Behaviour follows OpenHands' editor as CodeAct v0.35 used it (see docs/scaffolds.md): absolute paths
only; `view` numbers a file's lines (a `view_range` of [first, last], -1 = to the end) or lists a
directory two levels deep without hidden entries; `create` refuses an existing path; `str_replace`
needs exactly one match of `old_str`; `insert` goes after `insert_line` (0 = top); `undo_edit` reverts
the last edit of that file; after an edit the changed region is shown with line numbers; every output
is clipped at 16,000 characters. Problems raise `ToolError`, whose message the model sees.

A file over MAX_WHOLE_BYTES (a generated log, a data dump) is never read whole into this process: `view`
reads the lines it shows inside the sandbox (sed, clipped there), and edits are refused with the advice
to use shell tools, as OpenHands' editor refuses files over its size limit.
"""
from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass, field
from typing import Any

from harness.sandbox.interface import TESTBED, FileTooLarge, Sandbox
from scaffolds.codeact.tools import ToolError

SNIPPET_CONTEXT = 4  # lines shown above and below an edit
MAX_WHOLE_BYTES = 10 * 2**20  # a larger file is viewed by range, inside the sandbox, and not edited here
CLIP_NOTE = ("\n<response clipped><NOTE>Only the beginning of this output is shown. Search the file with "
             "`grep -n` and view the lines you need with `view_range`.</NOTE>")


def numbered(text: str, first: int = 1) -> str:
    """Lines with right-aligned numbers and a tab, as `cat -n` prints them."""
    return "\n".join(f"{first + i:6}\t{line}" for i, line in enumerate(text.split("\n")))


def _lines(text: str) -> list[str]:
    """The file's lines; a final newline does not make an extra empty line."""
    return (text[:-1] if text.endswith("\n") else text).split("\n") if text else []


@dataclass
class Editor:
    sandbox: Sandbox
    clip: int = 16_000
    workdir: str = TESTBED
    history: dict[str, list[str | None]] = field(default_factory=dict)  # None: the file did not exist

    def __call__(self, args: dict[str, Any]) -> str:
        try:
            return self._run(args)
        except OSError as err:  # anything the file system refuses is the model's to see, not the episode's end
            raise ToolError(f"`{args['path']}`: {err.strerror or type(err).__name__}") from None

    def _run(self, args: dict[str, Any]) -> str:
        command, path = args["command"], args["path"]
        if not path.startswith("/"):
            suggestion = posixpath.join(self.workdir, path)
            raise ToolError(f"The path `{path}` is not absolute: it must start with `/`. Did you mean {suggestion}?")
        kind, mode, path, size = self._kind(posixpath.normpath(path))  # a symlink is edited through its target
        if command == "undo_edit":
            return self._clip(self.undo(path))
        if command == "create":
            if kind != "none":
                raise ToolError(f"`{path}` already exists; `create` never overwrites. Edit it with `str_replace` "
                                "or `insert`, or remove it first.")
            return self.create(path, self._need(args, "file_text", command))
        if kind == "none":
            raise ToolError(f"The path `{path}` does not exist.")
        if command == "view":
            if kind == "dir":
                return self._clip(self.view_dir(path, args))
            return self._clip(self.view_large(path, args) if size > MAX_WHOLE_BYTES else self.view_file(path, args))
        if kind == "dir":
            raise ToolError(f"`{path}` is a directory; `{command}` works on files only.")
        if size > MAX_WHOLE_BYTES:
            raise ToolError(f"`{path}` has {size} bytes, more than the editor's limit of {MAX_WHOLE_BYTES}; edit it "
                            "with shell tools (sed, a script) instead.")
        if command == "str_replace":
            out = self.str_replace(path, self._need(args, "old_str", command), args.get("new_str", ""), mode)
        else:  # insert
            if "insert_line" not in args:
                raise ToolError("Missing parameter `insert_line`, required by `insert`.")
            out = self.insert(path, args["insert_line"], self._need(args, "new_str", command), mode)
        return self._clip(out)

    # ---------------------------------------------------------------- commands
    def view_file(self, path: str, args: dict[str, Any]) -> str:
        try:
            text = self.sandbox.read_file(path, MAX_WHOLE_BYTES).decode("utf-8", errors="replace")
        except FileTooLarge:  # it grew past the limit since its size was read
            return self.view_large(path, args)
        lines = _lines(text)
        view_range = args.get("view_range")
        if view_range is None:
            return f"Contents of {path}, with line numbers:\n{numbered(chr(10).join(lines))}"
        first, last = self._range(view_range, len(lines))
        chosen = lines[first - 1:] if last == -1 else lines[first - 1:last]
        return f"Lines {first}-{first + len(chosen) - 1} of {path}:\n{numbered(chr(10).join(chosen), first)}"

    def view_large(self, path: str, args: dict[str, Any]) -> str:
        """`view` of a file over MAX_WHOLE_BYTES: its line count and the lines asked for, read in the
        sandbox and cut there at the clip length (what is shown is never more than that)."""
        q = shlex.quote(path)
        count = self._exec(f"awk 'END {{ print NR }}' {q}").strip().splitlines()
        n = int(count[-1]) if count and count[-1].isdigit() else 0
        view_range = args.get("view_range")
        first, last = (1, -1) if view_range is None else self._range(view_range, n)
        end = "$" if last == -1 else str(last)
        text = self._exec(f"sed -n '{first},{end}p;{end}q' {q} | head -c {self.clip + 1}")
        chosen = _lines(text)
        return (f"Lines {first}-{first + len(chosen) - 1} of {path} ({n} lines; a large file, so only what fits "
                f"is shown):\n{numbered(chr(10).join(chosen), first)}")

    @staticmethod
    def _range(view_range: Any, n: int) -> tuple[int, int]:
        if not isinstance(view_range, (list, tuple)) or len(view_range) != 2:
            raise ToolError("`view_range` must hold two integers: [first, last] (last = -1 for the end of the file).")
        first, last = view_range
        if not 1 <= first <= max(n, 1):
            raise ToolError(f"Invalid `view_range` {list(view_range)}: the first line must be within [1, {n}].")
        if last != -1 and not first <= last <= n:
            raise ToolError(f"Invalid `view_range` {list(view_range)}: the last line must be -1 or within "
                            f"[{first}, {n}].")
        return first, last

    def view_dir(self, path: str, args: dict[str, Any]) -> str:
        if args.get("view_range") is not None:
            raise ToolError("`view_range` applies to files only, not to directories.")
        listing = self._exec(f"cd {shlex.quote(path)} && find . -mindepth 1 -maxdepth 2 -not -path '*/.*' "
                             "-printf '%P\\t%y\\n' | LC_ALL=C sort")
        entries = [line.split("\t") for line in listing.splitlines() if "\t" in line]
        shown = "\n".join(f"{posixpath.join(path, rel)}{'/' if kind == 'd' else ''}" for rel, kind in entries)
        return f"Files and directories in {path}, two levels deep, hidden ones left out:\n{path}/\n{shown}"

    def create(self, path: str, text: str) -> str:
        self.sandbox.write_file(path, text)
        self.history.setdefault(path, []).append(None)
        return f"Created {path} ({len(_lines(text))} lines)."

    def str_replace(self, path: str, old: str, new: str, mode: str) -> str:
        text = self._read_text(path)
        if old == new:
            raise ToolError("Nothing replaced: `old_str` and `new_str` are identical.")
        count = text.count(old) if old else 0
        if count == 0:
            raise ToolError(f"Nothing replaced: `old_str` does not occur verbatim in {path}. Check whitespace and "
                            "indentation, or view the file first.")
        if count > 1:
            starts, at = [], text.find(old)
            while at != -1:
                starts.append(text.count("\n", 0, at) + 1)
                at = text.find(old, at + 1)
            raise ToolError(f"Nothing replaced: `old_str` occurs {count} times in {path} (starting at lines "
                            f"{starts}). Include more surrounding lines so it matches exactly once.")
        at = text.index(old)
        updated = text[:at] + new + text[at + len(old):]
        self._write(path, updated, mode, before=text)
        first = text.count("\n", 0, at) + 1
        return self._edited(path, updated, first, first + new.count("\n"))

    def insert(self, path: str, after: int, new: str, mode: str) -> str:
        text = self._read_text(path)
        lines = _lines(text)
        if not 0 <= after <= len(lines):
            raise ToolError(f"Invalid `insert_line` {after}: it must be within [0, {len(lines)}] "
                            f"({path} has {len(lines)} lines).")
        added = new.split("\n")
        updated = "\n".join(lines[:after] + added + lines[after:]) + ("\n" if text.endswith("\n") or not text else "")
        self._write(path, updated, mode, before=text)
        return self._edited(path, updated, after + 1, after + len(added))

    def undo(self, path: str) -> str:
        stack = self.history.get(path)
        if not stack:
            raise ToolError(f"There is no edit of {path} to undo.")
        previous = stack.pop()
        if previous is None:  # the last edit created the file
            self._exec(f"rm -f {shlex.quote(path)}")
            return f"Undid the creation of {path}: the file is removed."
        kind, mode, _real, _size = self._kind(path)
        self.sandbox.write_file(path, previous)
        self._fix_mode(path, mode)
        return f"Undid the last edit of {path}. It now reads:\n{numbered(chr(10).join(_lines(previous)))}"

    # ---------------------------------------------------------------- helpers
    def _edited(self, path: str, text: str, first: int, last: int) -> str:
        lines = _lines(text)
        start = max(1, first - SNIPPET_CONTEXT)
        end = min(len(lines), last + SNIPPET_CONTEXT)
        snippet = numbered("\n".join(lines[start - 1:end]), start)
        return (f"Edited {path}. Lines {start}-{end} now read:\n{snippet}\n"
                "Check that the change is what you intended; edit again if it is not.")

    def _kind(self, path: str) -> tuple[str, str, str, int]:
        """("dir" | "file" | "none", octal mode, the path with symlinks resolved, size in bytes) in one round
        trip."""
        q = shlex.quote(path)
        out = self._exec(f"r=$(readlink -m -- {q}); if [ -d \"$r\" ]; then echo dir; elif [ -e \"$r\" ]; "
                         "then echo file $(stat -c '%a %s' \"$r\"); else echo none; fi; printf '%s\\n' \"$r\"")
        lines = out.splitlines()
        words = lines[-2].split() if len(lines) >= 2 else []
        real = lines[-1].strip() if lines and lines[-1].startswith("/") else path
        size = int(words[2]) if len(words) > 2 and words[2].isdigit() else 0
        return (words[0] if words else "none"), (words[1] if len(words) > 1 else "644"), real, size

    def _read_text(self, path: str) -> str:
        try:
            return self.sandbox.read_file(path, MAX_WHOLE_BYTES).decode("utf-8")
        except FileTooLarge:  # it grew past the limit since its size was read
            raise ToolError(f"`{path}` has more bytes than the editor's limit of {MAX_WHOLE_BYTES}; edit it with "
                            "shell tools (sed, a script) instead.") from None
        except UnicodeDecodeError:
            raise ToolError(f"{path} is not a UTF-8 text file; edit it with shell tools instead.") from None

    def _write(self, path: str, text: str, mode: str, before: str) -> None:
        self.sandbox.write_file(path, text)
        self._fix_mode(path, mode)
        self.history.setdefault(path, []).append(before)

    def _fix_mode(self, path: str, mode: str) -> None:
        if mode != "644":  # write_file writes 0644; keep an executable script executable
            self._exec(f"chmod {mode} {shlex.quote(path)}")

    def _exec(self, cmd: str) -> str:
        done = self.sandbox.exec(cmd, timeout=60)
        return done.output

    def _need(self, args: dict[str, Any], key: str, command: str) -> str:
        if key not in args:
            raise ToolError(f"Missing parameter `{key}`, required by `{command}`.")
        return args[key]

    def _clip(self, text: str) -> str:
        return text if len(text) <= self.clip else text[:self.clip] + CLIP_NOTE
