"""Reading a terminus reply: JSON (the default) or the XML variant, into one `Reply`.

Both formats carry the same four fields: `analysis` and `plan` (free text), `commands` (a list of
keystrokes, each with a `duration` in seconds to wait after sending them) and `task_complete`.
Small, unambiguous defects are repaired and reported as warnings the model sees next turn (text
around the JSON object, missing closing braces, a missing duration); anything else raises
`ParseError` with a message that tells the model what to fix. Pure functions: no I/O, no state.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from scaffolds.terminus.tmux import is_key_name

FORMATS = ("json", "xml")
REQUIRED = ("analysis", "plan", "commands")


class ParseError(ValueError):
    """The reply cannot be used; the message is shown to the model."""


@dataclass(frozen=True)
class Command:
    keystrokes: str
    duration: float  # seconds to wait after sending, before reading the terminal


@dataclass
class Reply:
    analysis: str
    plan: str
    commands: list[Command]
    task_complete: bool
    warnings: list[str] = field(default_factory=list)


def parse_reply(text: str, fmt: str, default_duration: float = 1.0) -> Reply:
    if fmt == "json":
        return parse_json(text, default_duration)
    if fmt == "xml":
        return parse_xml(text, default_duration)
    raise ValueError(f"unknown reply format {fmt!r}; known: {', '.join(FORMATS)}")


# ---------------------------------------------------------------- JSON
def parse_json(text: str, default_duration: float = 1.0) -> Reply:
    starts = [m.start() for m in re.finditer(r"\{", text)]
    if not starts:
        raise ParseError("no JSON object found in the reply")
    first_error = ""
    for start in starts[:20]:  # prose before the object may itself contain braces
        try:
            obj, warnings = _json_object_at(text, start)
        except ParseError as err:
            first_error = first_error or str(err)
            continue
        return _reply_from_fields(obj, warnings, default_duration)
    raise ParseError(first_error)


def _json_object_at(text: str, start: int) -> tuple[dict[str, Any], list[str]]:
    """Decode the object opening at `start`, closing brackets left open at the end of the reply."""
    warnings = []
    if text[:start].strip():
        warnings.append("there was text before the JSON object; it was ignored")
    end, unclosed = _scan(text, start)
    if end is not None:
        candidate = text[start:end]
        if text[end:].strip():
            warnings.append("there was text after the JSON object; it was ignored")
    elif unclosed is None:
        raise ParseError("the JSON object ends inside a string (the reply looks cut off)")
    else:
        candidate = text[start:].rstrip() + unclosed
        warnings.append(f"the JSON object was not closed; added {unclosed!r} at the end")
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(value, dict):
        raise ParseError("the reply must be a JSON object")
    return value, warnings


def _scan(text: str, start: int) -> tuple[int | None, str | None]:
    """Walk brackets outside strings from `start`. Returns (end, None) when the object closes at
    `end`, (None, closers) when the text ends with brackets open, (None, None) inside a string."""
    stack: list[str] = []
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack[-1] != ch:
                return i + 1, None  # mismatched: let json.loads report it precisely
            stack.pop()
            if not stack:
                return i + 1, None
    if in_string:
        return None, None
    return None, "".join(reversed(stack))


# ---------------------------------------------------------------- XML
_SECTION = r"<{0}>(.*?)</{0}>"
_KEYSTROKES = re.compile(r"<keystrokes((?:\s+[a-zA-Z_]+\s*=\s*\"[^\"]*\")*)\s*>(.*?)</keystrokes>", re.S)
_ENTITY = re.compile(r"&(#x[0-9a-fA-F]+|#[0-9]+|lt|gt|amp|quot|apos);")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}


def parse_xml(text: str, default_duration: float = 1.0) -> Reply:
    warnings = []
    start = text.find("<response>")
    if start < 0:
        raise ParseError("no <response> element found in the reply")
    end = text.find("</response>", start)
    if text[:start].strip():
        warnings.append("there was text before <response>; it was ignored")
    if end < 0:
        body = text[start + len("<response>"):]
        warnings.append("</response> was missing; the reply was read to its end")
    else:
        body = text[start + len("<response>"):end]
        if text[end + len("</response>"):].strip():
            warnings.append("there was text after </response>; it was ignored")
    fields: dict[str, Any] = {}
    for name in ("analysis", "plan", "task_complete"):
        found = re.search(_SECTION.format(name), body, re.S)
        if found:
            fields[name] = unescape(found.group(1).strip())
    commands = re.search(_SECTION.format("commands"), body, re.S)
    if commands:
        fields["commands"] = [{"keystrokes": unescape(m.group(2)), **_attributes(m.group(1))}
                              for m in _KEYSTROKES.finditer(commands.group(1))]
    elif re.search(r"<commands\s*/>", body):
        fields["commands"] = []
    return _reply_from_fields(fields, warnings, default_duration)


def _attributes(text: str) -> dict[str, str]:
    return {k: unescape(v) for k, v in re.findall(r"([a-zA-Z_]+)\s*=\s*\"([^\"]*)\"", text)}


def unescape(text: str) -> str:
    """XML entities only (one pass, so `&amp;lt;` stays `&lt;`), numeric references included."""
    def replace(m: re.Match[str]) -> str:
        ref = m.group(1)
        if ref.startswith("#x"):
            return chr(int(ref[2:], 16))
        if ref.startswith("#"):
            return chr(int(ref[1:]))
        return _NAMED[ref]
    return _ENTITY.sub(replace, text)


# ---------------------------------------------------------------- shared checks
def _reply_from_fields(obj: dict[str, Any], warnings: list[str], default_duration: float) -> Reply:
    missing = [name for name in REQUIRED if name not in obj]
    if missing:
        raise ParseError(f"missing required field(s): {', '.join(missing)}")
    for name in ("analysis", "plan"):
        if not isinstance(obj[name], str):
            raise ParseError(f"'{name}' must be a string")
    if not isinstance(obj["commands"], list):
        raise ParseError("'commands' must be a list of {keystrokes, duration} objects")
    commands = [_command(i, raw, default_duration, warnings) for i, raw in enumerate(obj["commands"], 1)]
    for i, cmd in enumerate(commands[:-1], 1):
        if not cmd.keystrokes.endswith("\n") and not is_key_name(cmd.keystrokes):
            warnings.append(f"command {i} does not end with a newline, so it was typed but not run; "
                            "the next command's keystrokes went onto the same line")
    return Reply(analysis=obj["analysis"], plan=obj["plan"], commands=commands,
                 task_complete=_boolean(obj.get("task_complete", False)), warnings=warnings)


def _command(index: int, raw: Any, default_duration: float, warnings: list[str]) -> Command:
    if not isinstance(raw, dict):
        raise ParseError(f"command {index} must be an object with 'keystrokes' and 'duration'")
    keys = raw.get("keystrokes")
    if not isinstance(keys, str):
        raise ParseError(f"command {index}: 'keystrokes' is missing or not a string")
    if "duration" not in raw:
        warnings.append(f"command {index} had no duration; waited the default {default_duration:g} s")
        return Command(keys, default_duration)
    seconds = _seconds(raw["duration"])
    if seconds is None or seconds < 0:
        warnings.append(f"command {index}: duration {raw['duration']!r} is not a non-negative number; "
                        f"waited the default {default_duration:g} s")
        return Command(keys, default_duration)
    return Command(keys, seconds)


def _seconds(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw)
        except ValueError:
            return None
    return None


def _boolean(raw: Any) -> bool:
    if isinstance(raw, str):
        return raw.strip().lower() == "true"
    return bool(raw)
