"""Writing an abstract step as the reply a model would give, in the action format the scaffold asked
for, read off the request the way a model reads its prompt: the tool names offered, or the reply
format the system prompt describes."""
from __future__ import annotations

import base64
import json
from typing import Any

from harness.layout import TESTBED
from harness.models.scripted import cli_replies

SUBMIT_SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FORMATS = ("codeact_fc", "codeact_text", "mini_tool", "mini_text", "terminus_json", "terminus_xml",
           *cli_replies.MODULES)


# ---------------------------------------------------------------- reading the request
def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content blocks (e.g. with cache_control)
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return str(content)


def detect_format(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    names = {t.get("function", {}).get("name") for t in tools or []}
    if (agent := cli_replies.detect(names)) is not None:  # an installed agent CLI's own tools
        return agent
    if "execute_bash" in names:
        return "codeact_fc"
    if "bash" in names:
        return "mini_tool"
    prompt = "\n".join(_text(m) for m in messages[:2])
    if "<function=" in prompt:
        return "codeact_text"
    if "mswea_bash_command" in prompt:
        return "mini_text"
    if "<keystrokes" in prompt:
        return "terminus_xml"
    if "keystrokes" in prompt:
        return "terminus_json"
    raise ValueError("scripted model: cannot tell the scaffold's action format from the request")


# ---------------------------------------------------------------- rendering replies
Reply = tuple[str, list[dict[str, str]]]  # content, tool calls (name, arguments)


def _heredoc(path: str, text: str) -> str:
    marker = "OPTRUNNER_EOF"
    body = text if text.endswith("\n") else text + "\n"
    return f"cat > {path} <<'{marker}'\n{body}{marker}"


def _b64_lines(path: str, text: str) -> str:
    """For a terminal: typed heredocs break on tabs (completion) and long lines, base64 does not."""
    data = base64.b64encode(text.encode()).decode()
    chunks = [data[i:i + 512] for i in range(0, len(data), 512)] or [""]
    lines = [f"printf '%s' '{chunks[0]}' > {path}.b64"]
    lines += [f"printf '%s' '{c}' >> {path}.b64" for c in chunks[1:]]
    lines.append(f"base64 -d {path}.b64 > {path} && rm {path}.b64")
    return "\n".join(lines)


def _fc(name: str, **arguments: Any) -> dict[str, str]:
    return {"name": name, "arguments": json.dumps(arguments)}


def _codeact_text_call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"<function={name}>\n{body}</function>"


def _terminus(fmt: str, commands: list[tuple[str, float]], complete: bool, note: str) -> str:
    if fmt == "terminus_json":
        return json.dumps({"analysis": note, "plan": note,
                           "commands": [{"keystrokes": k, "duration": d} for k, d in commands],
                           "task_complete": complete}, indent=2)
    cmds = "".join(f'<keystrokes duration="{d}">{_xml_escape(k)}</keystrokes>\n' for k, d in commands)
    return (f"<response>\n<analysis>{note}</analysis>\n<plan>{note}</plan>\n<commands>\n{cmds}</commands>\n"
            f"<task_complete>{'true' if complete else 'false'}</task_complete>\n</response>")


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render(step: dict[str, Any], fmt: str) -> Reply:
    """One abstract step as the reply a model would write in format `fmt`."""
    if "raw" in step:
        raw = step["raw"]
        return raw.get("content", ""), list(raw.get("tool_calls") or [])
    if fmt in cli_replies.MODULES:
        return cli_replies.module(fmt).render(step)
    if "fault" in step:
        return _fault(step["fault"], fmt)
    if "bash" in step:
        cmd, duration = step["bash"], float(step.get("duration", 2.0))
        note = f"Running: {cmd.splitlines()[0][:80]}"
        if fmt == "codeact_fc":
            return note, [_fc("execute_bash", command=cmd, is_input="false")]
        if fmt == "codeact_text":
            return f"{note}\n{_codeact_text_call('execute_bash', command=cmd)}", []
        if fmt == "mini_tool":
            return note, [_fc("bash", command=cmd)]
        if fmt == "mini_text":
            return f"THOUGHT: {note}\n\n```mswea_bash_command\n{cmd}\n```", []
        return _terminus(fmt, [(cmd + "\n", duration)], False, note), []
    if "write" in step:
        path, text = step["write"], step["text"]
        note = f"Writing {path}."
        if fmt == "codeact_fc":
            return note, [_fc("str_replace_editor", command="create", path=path, file_text=text)]
        if fmt == "codeact_text":
            call = _codeact_text_call("str_replace_editor", command="create", path=path, file_text=text)
            return f"{note}\n{call}", []
        if fmt == "mini_tool":
            return note, [_fc("bash", command=_heredoc(path, text))]
        if fmt == "mini_text":
            return f"THOUGHT: {note}\n\n```mswea_bash_command\n{_heredoc(path, text)}\n```", []
        return _terminus(fmt, [(_b64_lines(path, text) + "\n", 1.0)], False, note), []
    if "finish" in step:
        message = step["finish"]
        if fmt == "codeact_fc":
            return message, [_fc("finish", message=message, task_completed="true")]
        if fmt == "codeact_text":
            return _codeact_text_call("finish", message=message, task_completed="true"), []
        # mini-swe-agent submits text after the sentinel; the oracle hands in the patch it applied.
        submit = f"echo {SUBMIT_SENTINEL}" + (f" && cat {step['submit_file']}" if step.get("submit_file") else "")
        if fmt == "mini_tool":
            return message, [_fc("bash", command=submit)]
        if fmt == "mini_text":
            return f"THOUGHT: {message}\n\n```mswea_bash_command\n{submit}\n```", []
        return _terminus(fmt, [], True, message), []
    raise ValueError(f"scripted model: unknown step {step!r}")


def _fault(kind: str, fmt: str) -> Reply:
    terminus = fmt.startswith("terminus")
    if kind == "malformed":
        return ("I should think about this more {" if terminus else "I am not sure what to do next."), []
    if kind == "multi":
        if fmt == "mini_text":
            return "Two at once.\n```mswea_bash_command\necho one\n```\n```mswea_bash_command\necho two\n```", []
        if fmt == "codeact_text":
            return (f"{_codeact_text_call('execute_bash', command='echo one')}\n"
                    f"{_codeact_text_call('execute_bash', command='echo two')}"), []
        if terminus:
            return _terminus(fmt, [("echo one\n", 0.1), ("echo two\n", 0.1)], False, "two commands"), []
        tool = "execute_bash" if fmt == "codeact_fc" else "bash"
        return "Two at once.", [_fc(tool, command="echo one"), _fc(tool, command="echo two")]
    if kind == "bad_args":
        if fmt in ("codeact_fc", "mini_tool"):
            name = "execute_bash" if fmt == "codeact_fc" else "bash"
            return "Broken call.", [{"name": name, "arguments": '{"command": "echo hi'}]
        if fmt == "codeact_text":
            return _codeact_text_call("str_replace_editor", command="explode", path=TESTBED), []
        if terminus:
            return json.dumps({"analysis": "x", "plan": "y", "commands": "echo hi", "task_complete": False}), []
        return "```mswea_bash_command\n```", []
    if kind == "missing_arg":
        if fmt == "codeact_fc":
            return "Missing path.", [_fc("str_replace_editor", command="view")]
        if fmt == "codeact_text":
            return _codeact_text_call("str_replace_editor", command="view"), []
        if fmt == "mini_tool":
            return "Missing command.", [_fc("bash")]
        return _fault("bad_args", fmt)
    if kind == "unknown_tool":
        if fmt in ("codeact_fc", "mini_tool"):
            return "Browsing.", [_fc("browse", url="http://example.com")]
        if fmt == "codeact_text":
            return _codeact_text_call("browse", url="http://example.com"), []
        return _fault("malformed", fmt)
    raise ValueError(f"scripted model: unknown fault {kind!r}")
