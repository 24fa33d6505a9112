"""Scripted model providers, registered with litellm so offline runs take the real litellm path
(request building, usage, cost from a registered price) and no test needs a network.

Models (all `scripted/<name>`, priced at PRICE so cost is never 0):
- `oracle`: looks around, writes a patch (the task's expert patch, or any given one) into a file,
  applies it, rebuilds, runs the specification script, finishes;
- `noop`: finishes at once;
- `replay`: replays the assistant turns of a saved trajectory;
- `script`: any list of steps, including faults (for tests).

A scripted model is stateless: `Model` sends the call's index in `extra_body["call_index"]` and the
steps in `extra_body["steps"]`. Step `i` answers call `i`; past the end, the last `finish` repeats.
The reply is written in the action format the scaffold asked for, read off the request the way a
model reads its prompt: the tool names offered, or the reply format the system prompt describes.

Steps (dicts): {"bash": CMD, "duration": S?}, {"write": PATH, "text": TEXT}, {"finish": MESSAGE},
{"raw": {"content": ..., "tool_calls": [{"name", "arguments"}]}}, {"fault": KIND} with KIND in
malformed, multi, bad_args, missing_arg, unknown_tool, {"error": STATUS, "retry_after": S?};
any step may carry "delay_s" (a slow reply).
"""
from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

from harness.tasks import Task

PROVIDER = "scripted"
MODELS = ("oracle", "noop", "replay", "script")
PRICE = {"input": 1.0, "output": 4.0, "cache_read": 0.1, "cache_write": 1.25}  # USD per million tokens
SUBMIT_SENTINEL = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
WORKDIR = "/testbed"

FORMATS = ("codeact_fc", "codeact_text", "mini_tool", "mini_text", "terminus_json", "terminus_xml")


# ---------------------------------------------------------------- scripts
def oracle_steps(task: Task, patch_text: str | None = None) -> list[dict[str, Any]]:
    """What a competent agent does, in abstract actions: the patch's effect equals `patch_text`
    (default: the task's expert patch)."""
    patch = patch_text if patch_text is not None else task.expert_patch
    if not patch.endswith("\n"):
        patch += "\n"
    steps: list[dict[str, Any]] = [
        {"bash": f"cd {WORKDIR} && git status --short && ls"},
        {"write": "/tmp/optimization.patch", "text": patch},
        {"bash": f"cd {WORKDIR} && git apply --whitespace=nowarn /tmp/optimization.patch && git status --short"},
    ]
    if task.install_commands:
        steps.append({"bash": f"cd {WORKDIR} && " + " && ".join(task.install_commands), "duration": 5})
    steps.append({"write": "/tmp/spec_timing.py", "text": task.prob_script})
    steps.append({"bash": f"cd {WORKDIR} && python3 /tmp/spec_timing.py", "duration": 5})
    steps.append({"finish": "Applied the optimization, rebuilt, and checked the specification script."})
    return steps


def noop_steps() -> list[dict[str, Any]]:
    return [{"finish": "No changes."}]


def replay_steps(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Steps that reproduce the assistant turns of a trajectory (OpenAI-format messages)."""
    steps = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                 for c in message.get("tool_calls") or []]
        steps.append({"raw": {"content": message.get("content") or "", "tool_calls": calls}})
    return steps


def bind(name: str, task: Task, patch_text: str | None = None,
         trajectory: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The `extra_body` a scripted model needs for one rollout of `task`."""
    short = name.split("/", 1)[-1]
    if short == "oracle":
        return {"steps": oracle_steps(task, patch_text)}
    if short == "noop":
        return {"steps": noop_steps()}
    if short == "replay":
        if trajectory is None:
            raise ValueError("the replay model needs a trajectory to replay (model.trajectory=PATH)")
        return {"steps": replay_steps(trajectory)}
    raise ValueError(f"unknown scripted model {name!r}; known: {', '.join(MODELS)}")


# ---------------------------------------------------------------- reading the request
def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content blocks (e.g. with cache_control)
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return str(content)


def detect_format(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    names = {t.get("function", {}).get("name") for t in tools or []}
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
        if fmt == "mini_tool":
            return message, [_fc("bash", command=f"echo {SUBMIT_SENTINEL}")]
        if fmt == "mini_text":
            return f"THOUGHT: {message}\n\n```mswea_bash_command\necho {SUBMIT_SENTINEL}\n```", []
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
            return _codeact_text_call("str_replace_editor", command="explode", path="/testbed"), []
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


# ---------------------------------------------------------------- the litellm provider
def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _raise_status(litellm: Any, status: int, retry_after: float | None, model: str) -> None:
    import httpx

    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    response = httpx.Response(status, headers=headers, request=httpx.Request("POST", "http://scripted.invalid"))
    message = f"scripted provider error {status}"
    kwargs = {"message": message, "llm_provider": PROVIDER, "model": model}
    if status == 429:
        raise litellm.RateLimitError(response=response, **kwargs)
    if status == 401:
        raise litellm.AuthenticationError(response=response, **kwargs)
    if status == 400:
        raise litellm.BadRequestError(response=response, **kwargs)
    raise litellm.InternalServerError(response=response, **kwargs)


def _make_handler(litellm: Any) -> Any:
    from litellm import CustomLLM, ModelResponse

    class ScriptedLLM(CustomLLM):
        def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                       model_response: Any, print_verbose: Any, encoding: Any, api_key: Any, logging_obj: Any,
                       optional_params: dict, acompletion: Any = None, litellm_params: Any = None,
                       logger_fn: Any = None, headers: Any = None, timeout: Any = None, client: Any = None) -> Any:
            extra = optional_params.get("extra_body") or {}
            index = int(extra.get("call_index", 0))
            steps = extra.get("steps")
            if steps is None:
                steps = noop_steps() if model == "noop" else []
            if not steps:
                raise litellm.BadRequestError(message=f"scripted/{model} needs steps (see scaffolds.scripted.bind)",
                                              llm_provider=PROVIDER, model=model)
            step = steps[index] if index < len(steps) else _last_finish(steps)
            if step.get("delay_s"):
                time.sleep(float(step["delay_s"]))
            if "error" in step:
                _raise_status(litellm, int(step["error"]), step.get("retry_after"), model)
            fmt = detect_format(messages, optional_params.get("tools"))
            content, calls = render(step, fmt)
            for stop in optional_params.get("stop") or []:
                if stop in content:  # a real provider cuts at its stop sequence
                    content = content[:content.index(stop)]
            message: dict[str, Any] = {"role": "assistant", "content": content or None}
            if calls:
                message["tool_calls"] = [{"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                                          "function": c} for c in calls]
            prompt = sum(_tokens(json.dumps(m.get("content"))) for m in messages)
            prompt += _tokens(json.dumps(optional_params.get("tools") or ""))
            completion = _tokens(content + json.dumps(calls))
            return ModelResponse(model=f"{PROVIDER}/{model}",
                                 choices=[{"message": message, "finish_reason": "tool_calls" if calls else "stop",
                                           "index": 0}],
                                 usage={"prompt_tokens": prompt, "completion_tokens": completion,
                                        "total_tokens": prompt + completion})

    return ScriptedLLM()


def _last_finish(steps: list[dict[str, Any]]) -> dict[str, Any]:
    finishes = [s for s in steps if "finish" in s]
    return finishes[-1] if finishes else {"finish": "Out of script."}


def register(litellm: Any) -> None:
    """Add the provider and its priced models to litellm (called once by scaffolds.model)."""
    handler = _make_handler(litellm)
    litellm.custom_provider_map = [p for p in litellm.custom_provider_map if p.get("provider") != PROVIDER]
    litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": handler})
    per = 1e-6
    litellm.register_model({f"{PROVIDER}/{name}": {
        "input_cost_per_token": PRICE["input"] * per, "output_cost_per_token": PRICE["output"] * per,
        "cache_read_input_token_cost": PRICE["cache_read"] * per,
        "cache_creation_input_token_cost": PRICE["cache_write"] * per,
        "litellm_provider": PROVIDER, "mode": "chat", "supports_function_calling": True,
        "max_input_tokens": 200_000, "max_tokens": 32_000,
    } for name in MODELS})
