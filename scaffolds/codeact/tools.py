"""The four CodeAct tools: their schemas, the text protocol for models without function calling, and
argument validation.

Faithful to OpenHands CodeActAgent v0.35 as GSO ran it (see docs/scaffolds.md): `execute_bash`,
`str_replace_editor`, `think`, `finish`, with upstream's parameter names, types and enums. Without native
function calling the same tools are described in the system prompt and a call is written as

    <function=NAME>
    <parameter=KEY>VALUE</parameter>
    </function>

`</function` is a stop sequence, so a reply usually arrives cut just before it; `parse_text_call`
re-appends it before parsing. Every problem with a call becomes a `ToolError` whose message is shown to
the model as the tool's result, so a bad call costs a step, never the episode.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import bashlex

STOP = "</function"
EDITOR_COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")

BASH_DESCRIPTION = """Run a bash command in a persistent shell inside the sandbox (cwd, environment variables and an
activated virtualenv carry over from one call to the next). The result ends with the exit code.
* One command per call: several commands on separate lines are refused. Chain them with `&&` or `;`
  instead (a multi-line command such as a heredoc or a loop is one command).
* Long-running commands: when a command prints nothing new for a while, the call returns what it has
  with exit code -1 and the process keeps running. Then call again with an empty `command` to see more
  output, or with `is_input` set to "true" to type text into the process or to send a key such as
  `C-c` (interrupt), `C-d` or `C-z` to it.
* Start servers and other endless processes in the background (`cmd > log.txt 2>&1 &`).
* Prefer commands with short output (`head`, `tail`, `grep -n`); very long output is cut in the middle."""

EDITOR_DESCRIPTION = """View, create and edit files.
* `view` on a file prints it with line numbers (like `cat -n`); `view_range` picks lines. On a directory it
  lists files and directories up to two levels deep, hidden ones excluded.
* `create` writes a new file; it refuses a path that already exists.
* `str_replace` replaces `old_str` with `new_str`. `old_str` must match exactly one place in the file,
  whitespace included; add surrounding lines to make it unique.
* `insert` puts `new_str` after line `insert_line` (0 = at the top).
* `undo_edit` reverts the last edit made to the file at `path`.
After an edit the changed region is shown with line numbers. Long outputs are clipped. Paths are absolute."""

THINK_DESCRIPTION = """Write down a thought: reasoning about the code, a plan, or a list of hypotheses. It changes
nothing in the sandbox and fetches no information; it is only logged."""

FINISH_DESCRIPTION = """End the task. Call it once you are done: the repository is in its final state and you have
checked your changes. Give a short summary in `message`."""


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


TOOLS: list[dict[str, Any]] = [
    _tool("execute_bash", BASH_DESCRIPTION, {
        "command": {"type": "string", "description": "The command. Empty: show more output of the running process. "
                    "With is_input=\"true\": text or a key (`C-c` interrupts) to send to it."},
        "is_input": {"type": "string", "enum": ["true", "false"],
                     "description": "\"true\" when `command` is input for the still-running process. "
                                    "Default \"false\"."},
    }, ["command"]),
    _tool("str_replace_editor", EDITOR_DESCRIPTION, {
        "command": {"type": "string", "enum": list(EDITOR_COMMANDS), "description": "The operation."},
        "path": {"type": "string", "description": "Absolute path of a file or directory, e.g. /testbed/pkg/mod.py."},
        "file_text": {"type": "string", "description": "For `create`: the content of the new file."},
        "old_str": {"type": "string", "description": "For `str_replace`: the exact text to replace."},
        "new_str": {"type": "string",
                    "description": "For `str_replace`: the replacement. For `insert`: the text to insert."},
        "insert_line": {"type": "integer", "description": "For `insert`: insert after this line (1-based; 0 = top)."},
        "view_range": {"type": "array", "items": {"type": "integer"},
                       "description": "For `view` of a file: [first, last] line, 1-based; last = -1 means to the end."},
    }, ["command", "path"]),
    _tool("think", THINK_DESCRIPTION, {
        "thought": {"type": "string", "description": "The thought."},
    }, ["thought"]),
    _tool("finish", FINISH_DESCRIPTION, {
        "message": {"type": "string", "description": "Summary of what you did."},
        "task_completed": {"type": "string", "enum": ["true", "false", "partial"],
                           "description": "Whether the task is done."},
    }, ["message", "task_completed"]),
]
SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}


class ToolError(Exception):
    """A call the scaffold cannot run; the message is shown to the model."""


# ---------------------------------------------------------------- validation
def validate(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments checked and coerced against the tool's schema (text-mode values are all strings).
    Unknown extra parameters are dropped, as upstream ignores them."""
    if name not in SCHEMAS:
        raise ToolError(f"Unknown tool `{name}`. The available tools are: {', '.join(SCHEMAS)}.")
    schema = SCHEMAS[name]
    missing = [key for key in schema["required"] if key not in arguments or arguments[key] is None]
    if missing:
        raise ToolError(f"Missing required parameter `{missing[0]}` in the call to `{name}`.")
    out: dict[str, Any] = {}
    for key, spec in schema["properties"].items():
        if key in arguments and arguments[key] is not None:
            out[key] = _coerce(name, key, spec, arguments[key])
    return out


def _coerce(tool: str, key: str, spec: dict[str, Any], value: Any) -> Any:
    where = f"parameter `{key}` of `{tool}`"
    kind = spec["type"]
    if kind == "string":
        if isinstance(value, bool) and "enum" in spec:
            value = "true" if value else "false"  # a JSON boolean for a "true"/"false" enum: take the intent
        if not isinstance(value, str):
            value = json.dumps(value) if isinstance(value, (list, dict)) else str(value)
        if "enum" in spec and value not in spec["enum"]:
            allowed = ", ".join(f"`{v}`" for v in spec["enum"])
            raise ToolError(f"Invalid value `{value}` for {where}: allowed values are {allowed}.")
        return value
    if kind == "integer":
        try:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        except ValueError:
            raise ToolError(f"Invalid value `{value}` for {where}: expected an integer.") from None
    if kind == "array":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise ToolError(f"Invalid value `{value}` for {where}: expected a list such as [1, 20].") from None
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ToolError(f"Invalid value `{value}` for {where}: expected a list of integers such as [1, 20].")
        return value
    return value


def single_command(command: str) -> None:
    """ToolError when `command` holds several top-level commands on separate lines, as upstream refuses
    them (parsed by bashlex, as upstream does; what it cannot parse counts as one command)."""
    try:
        parts = [command[node.pos[0]:node.pos[1]] for node in bashlex.parse(command)]
    except Exception:  # noqa: BLE001 - bashlex raises several kinds (ParsingError, NotImplementedError, ...)
        return
    if len(parts) > 1:
        listed = "\n".join(f"({i}) {part}" for i, part in enumerate(parts, 1))
        raise ToolError("Several commands in one call were NOT run. Send one command per call, or join them "
                        f"into one with `&&` or `;`. The commands were:\n{listed}")


# ---------------------------------------------------------------- the text protocol
FUNCTION_RE = re.compile(r"<function=([^>\s]+)>(.*?)</function>", re.DOTALL)
PARAMETER_RE = re.compile(r"<parameter=([^>\s]+)>(.*?)</parameter>", re.DOTALL)
VERBATIM = {"file_text", "old_str", "new_str"}  # text whose whitespace matters


@dataclass(frozen=True)
class TextCall:
    name: str
    arguments: dict[str, str]


def complete_reply(content: str) -> str:
    """The reply with the `</function>` the stop sequence cut off put back, as the model meant it."""
    if "<function=" not in content:
        return content
    tail = content.rstrip()
    if tail.endswith("</function>"):
        return content
    if tail.endswith(STOP):
        return tail + ">"
    return content + ("</function>" if content.endswith("\n") else "\n</function>")


def parse_text_call(content: str) -> TextCall | None:
    """The first call in a (completed) reply, or None when it has none. Only one call per message runs."""
    match = FUNCTION_RE.search(complete_reply(content))
    if match is None:
        return None
    arguments: dict[str, str] = {}
    for param in PARAMETER_RE.finditer(match.group(2)):
        key, value = param.group(1), param.group(2)
        if key in VERBATIM:
            # A model usually opens the value on a new line; that newline is layout, not content.
            arguments[key] = value[1:] if value.startswith("\n") else value
        else:
            arguments[key] = value.strip()
    return TextCall(match.group(1), arguments)


def describe_tools() -> list[dict[str, Any]]:
    """The tools as plain data for the text-protocol prompt template."""
    described = []
    for tool in TOOLS:
        fn = tool["function"]
        params = []
        for key, spec in fn["parameters"]["properties"].items():
            kind = spec["type"] if spec["type"] != "array" else "array of integers"
            params.append({"name": key, "type": kind, "required": key in fn["parameters"]["required"],
                           "description": spec["description"], "enum": spec.get("enum")})
        described.append({"name": fn["name"], "description": fn["description"], "parameters": params})
    return described
