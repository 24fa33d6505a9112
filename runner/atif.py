"""A stored trajectory as an ATIF v1.7 document (Harbor's Agent Trajectory Interchange Format, the RFC
`rfcs/0001-trajectory-format.md` of Harbor's repository): pure functions, dicts in and a dict out.

What a trajectory file holds (`scaffolds.episode.Episode.to_dict()`): `messages`, the conversation as the model
saw it (OpenAI chat format; terminus: every message of every conversation it held, hand-offs included; an
installed agent: its last request and the reply), and `step_records`, one per model call (`call`: tokens, cost,
latency, start; `actions` and their `observations`). How it maps:

- The messages before the first reply are the prompt: a `system` step per system message, a `user` step per
  other one.
- Every model call is one `agent` step (`llm_call_count` 1, as ATIF asks: one step per inference), in call
  order. Its `message` and `reasoning_content` are the reply's, its `metrics` the call record's (`prompt_tokens`
  counts cached tokens too in both formats; cache writes, reasoning tokens, latency and retries go to
  `metrics.extra`). A call that failed (no reply, nothing run) is no step; `extra.failed_calls` counts them.
- `tool_calls`: the reply's own tool calls (codeact's and mini_swe's native modes, installed agents); a reply
  in text (codeact's and mini_swe's text modes, terminus's keystrokes) gets one per action the scaffold parsed
  from it, with ids made here. A tool call's `extra` keeps its action's exit code, duration and output size.
- `observation`: the messages that followed the reply in the conversation, each one result (a tool message is
  tied to its call by `source_call_id`; a text reply's single answer to its single action is tied too;
  `extra.role` keeps the message's role). A reply nothing followed (the last one, an installed agent's call
  left out of its last request) takes its actions' recorded observations instead.
- Replies are matched to call records in order for this tool's scaffolds (mini_swe keeps a reply it could not
  parse out of the conversation: that step's message is the reply its action kept, and its observation the
  format-error prompt that took the reply's place). An installed agent's last request may leave calls out (side
  calls, context it dropped), so its replies are matched from the end: by tool-call ids, a reply without tool
  calls to a call without actions; a call that matches none is a step with no message.
- `final_metrics`: the sums over the steps (the cost only when every call had a price); `extra` adds cache
  writes, reasoning tokens and the calls answered after the episode had ended (`late_calls`: paid, no step).
"""
from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from runner.pages.trajectory import reasoning_of, text_of

SCHEMA_VERSION = "ATIF-v1.7"
NOTES = ("Exported by optrunner from one stored trajectory: one agent step per model call; an agent step's "
         "observation holds the messages that followed its reply in the conversation.")
# call-record fields that ATIF has no field of its own for (kept in metrics.extra)
CALL_EXTRA = ("cache_write_tokens", "reasoning_tokens", "latency_s", "finish_reason", "attempts", "rate_limited",
              "rate_limit_wait_s")
DETAILS_LEFT_OUT = ("agent_logs", "gateway_calls")  # large, and about the agent process rather than the trajectory

Json = dict[str, Any]


def to_atif(trajectory: Json, record: Json | None = None, *, session_id: str, trajectory_id: str | None = None,
            version: str = "") -> Json:
    """The ATIF document of one trajectory file. `record`: its rollout record (rollouts/<task>/<i>.json), for
    the model's name and the rollout's ids; `version`: the tool's version that ran it (an installed agent has
    its own)."""
    record = record or {}
    messages = [m for m in trajectory.get("messages") or [] if isinstance(m, dict)]
    calls = [s for s in trajectory.get("step_records") or [] if isinstance(s, dict)]
    first = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
    prompt = messages[:first]
    blocks: list[tuple[Json, list[Json]]] = []
    for message in messages[first:]:
        if message.get("role") == "assistant":
            blocks.append((message, []))
        else:
            blocks[-1][1].append(message)
    installed = str(trajectory.get("scaffold") or "").startswith("installed/")
    turns = _by_ids(calls, blocks) if installed else _in_order(calls, blocks, prompt)
    steps: list[Json] = [_prompt_step(m) for m in prompt]
    # an installed agent's actions hold only what it sent back: no exit code, duration or full size to report
    steps += [_agent_step(call, reply, followers, outcomes=not installed) for call, reply, followers in turns]
    steps = [{"step_id": n, **step} for n, step in enumerate(steps, 1)]
    failed = sum(1 for call in calls if _failed(call))
    doc = {"schema_version": SCHEMA_VERSION, "session_id": session_id, "trajectory_id": trajectory_id,
           "agent": _agent(trajectory, record, version), "steps": steps, "notes": NOTES,
           "final_metrics": _final_metrics(steps, trajectory),
           "extra": _drop_none({"task": record.get("instance_id"), "rollout": record.get("rollout"),
                                "exit_reason": trajectory.get("exit_reason"),
                                "exit_message": trajectory.get("exit_message"),
                                "wall_time_s": trajectory.get("wall_time_s"), "failed_calls": failed or None,
                                "system": record.get("system")})}
    return _drop_none(doc)


# ---------------------------------------------------------------- matching replies to call records
Turn = tuple[Json | None, Json | None, list[Json]]  # (call record, reply, the messages that followed it)


def _failed(call: Json) -> bool:
    """A call that raised: no reply, nothing run (a provider error, a context overflow codeact condensed)."""
    return call.get("call") is None and not call.get("actions")


def _format_error(call: Json) -> Json | None:
    actions = call.get("actions") or []
    return actions[0] if actions and isinstance(actions[0], dict) and "format_error" in actions[0] else None


def _in_order(calls: list[Json], blocks: list[tuple[Json, list[Json]]], prompt: list[Json]) -> list[Turn]:
    """This tool's scaffolds: every call that kept its reply has the next reply of the conversation."""
    turns: list[Turn] = []
    # messages past the answers to a turn's actions: where a following unparsable reply's error prompt is
    opening = next((i + 1 for i, m in enumerate(prompt) if m.get("role") == "user"), len(prompt))
    donor, start = prompt, opening
    next_block = 0
    for call in calls:
        if _failed(call):
            continue
        if _format_error(call) is not None:
            taken = [donor.pop(start)] if len(donor) > start and donor[start].get("role") == "user" else []
            turns.append((call, None, taken))
            continue
        if next_block >= len(blocks):
            turns.append((call, None, []))
            continue
        reply, followers = blocks[next_block]
        next_block += 1
        turns.append((call, reply, followers))
        donor, start = followers, len(call.get("actions") or [])
    turns += [(None, reply, followers) for reply, followers in blocks[next_block:]]
    return turns


def _ids(items: list[Any], key: str) -> set[str]:
    return {str(item[key]) for item in items if isinstance(item, dict) and item.get(key)}


def _by_ids(calls: list[Json], blocks: list[tuple[Json, list[Json]]]) -> list[Turn]:
    """An installed agent: replies matched from the last one back (its last request ends with its latest reply)."""
    matched: dict[int, int] = {}  # call index -> block index
    below = len(calls) - 1
    for b in range(len(blocks) - 1, -1, -1):
        wanted = _ids(blocks[b][0].get("tool_calls") or [], "id")
        for k in range(below, -1, -1):
            if calls[k].get("call") is None:
                continue
            have = _ids(calls[k].get("actions") or [], "id")
            if (wanted & have) if wanted else not have:
                matched[k], below = b, k - 1
                break
    turns: list[Turn] = []
    shown = 0  # the blocks before this one are placed
    for k, call in enumerate(calls):
        if _failed(call):
            continue
        if k in matched:
            turns += [(None, *blocks[b]) for b in range(shown, matched[k])]
            shown = matched[k] + 1
            turns.append((call, *blocks[matched[k]]))
        else:
            turns.append((call, None, []))
    turns += [(None, *blocks[b]) for b in range(shown, len(blocks))]
    return turns


# ---------------------------------------------------------------- steps
def _prompt_step(message: Json) -> Json:
    return {"source": "system" if message.get("role") == "system" else "user",
            "message": text_of(message.get("content"))}


def _agent_step(call: Json | None, reply: Json | None, followers: list[Json], outcomes: bool) -> Json:
    call = call or {}
    record = _dict(call.get("call")) or None
    error = _format_error(call)
    actions = [a for a in call.get("actions") or [] if isinstance(a, dict) and "format_error" not in a]
    observed = [o for o in call.get("observations") or [] if isinstance(o, dict)]
    if error is not None:
        message, reasoning = str(error.get("reply") or ""), ""
    else:
        message, reasoning = text_of((reply or {}).get("content")), reasoning_of(reply or {})
    tool_calls = _tool_calls(call, reply, actions, observed if outcomes else [])
    ids = [c["tool_call_id"] for c in tool_calls]
    results = [_result(m, ids, linked=not (reply or {}).get("tool_calls") and len(followers) == len(ids) == 1)
               for m in followers]
    if not results:  # nothing followed it in the conversation: what its actions were shown (codeact's finish: none)
        results = [_drop_none({"source_call_id": ids[i] if i < len(ids) else None, "content": str(o.get("text"))})
                   for i, o in enumerate(observed) if o.get("text")]
    started = (record or {}).get("started_at", call.get("started_at"))
    step: Json = {"timestamp": _iso(started), "source": "agent", "message": message,
                  "reasoning_content": reasoning or None, "tool_calls": tool_calls or None,
                  "observation": {"results": results} if results else None,
                  "metrics": _metrics(record) if record else None, "llm_call_count": 1 if record else None,
                  "extra": _drop_none({"index": call.get("index"), "format_error": (error or {}).get("format_error"),
                                       # a call whose reply the stored conversation lacks, a reply without a call
                                       "reply_kept": False if reply is None and error is None else None,
                                       "recorded_call": False if record is None else None})}
    return _drop_none(step)


def _tool_calls(call: Json, reply: Json | None, actions: list[Json], observed: list[Json]) -> list[Json]:
    """The reply's tool calls, else one per parsed action; each with its action's outcome in `extra`."""
    native = [c for c in (reply or {}).get("tool_calls") or [] if isinstance(c, dict)]
    by_id = {str(a["id"]): (a, o) for a, o in zip(actions, observed + [{}] * len(actions)) if a.get("id")}
    out = []
    if native:
        for n, c in enumerate(native):
            function = _dict(c.get("function"))
            pair = by_id.get(str(c.get("id"))) or ((actions[n], observed[n]) if len(native) == len(actions)
                                                   and n < len(observed) else None)
            out.append(_tool_call(c.get("id") or _made_id(call, n), str(function.get("name") or ""),
                                  function.get("arguments"), pair[1] if pair else None))
        return out
    for n, action in enumerate(actions):
        name, arguments = _action_call(action)
        out.append(_tool_call(action.get("id") or _made_id(call, n), name, arguments,
                              observed[n] if n < len(observed) else None))
    return out


def _action_call(action: Json) -> tuple[str, Any]:
    """A parsed action as (tool name, arguments): codeact's named tools, mini_swe's commands, terminus's keys."""
    if "tool" in action:
        return str(action["tool"]), action.get("arguments")
    if "command" in action:
        return "bash", {"command": action["command"]}
    if "keystrokes" in action:
        return "send_keys", {k: action[k] for k in ("keystrokes", "duration", "waited_s") if k in action}
    return "action", action


def _made_id(call: Json, n: int) -> str:
    return f"call-{call.get('index', 'x')}-{n}"


def _tool_call(call_id: Any, name: str, arguments: Any, observed: Json | None) -> Json:
    raw = None
    if isinstance(arguments, str):  # a function call's arguments as the model wrote them: JSON text
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = None
        arguments, raw = (parsed, None) if isinstance(parsed, dict) else ({}, arguments)
    elif not isinstance(arguments, dict):
        arguments, raw = {}, json.dumps(arguments, default=str)
    outcome = {}
    if observed:
        text = str(observed.get("text", ""))
        outcome = {"exit_code": observed.get("exit_code"), "duration_s": observed.get("duration_s"),
                   "output_chars": observed.get("full_chars", len(text))}
    extra = _drop_none({"raw_arguments": raw, **outcome})
    return _drop_none({"tool_call_id": str(call_id), "function_name": name, "arguments": arguments,
                       "extra": extra or None})


def _result(message: Json, ids: list[str], linked: bool) -> Json:
    """One message that followed a reply, as an observation result."""
    source = None
    if message.get("role") == "tool" and str(message.get("tool_call_id")) in ids:
        source = str(message.get("tool_call_id"))
    elif linked and message.get("role") != "tool":
        source = ids[0]
    return _drop_none({"source_call_id": source, "content": text_of(message.get("content")),
                       "extra": {"role": str(message.get("role") or "user")}})


def _metrics(call: Json) -> Json:
    out = {"prompt_tokens": _int(call.get("input_tokens")), "completion_tokens": _int(call.get("output_tokens")),
           "cached_tokens": _int(call.get("cached_read_tokens")), "cost_usd": call.get("cost_usd"),
           "extra": {k: call[k] for k in CALL_EXTRA if call.get(k) is not None}}
    return _drop_none(out)


def _final_metrics(steps: list[Json], trajectory: Json) -> Json:
    measured = [s["metrics"] for s in steps if "metrics" in s]
    costs = [m.get("cost_usd") for m in measured]
    late = [c for c in trajectory.get("late_calls") or [] if isinstance(c, dict)]
    extra: Json = {key: sum(int(m["extra"].get(key) or 0) for m in measured)
                   for key in ("cache_write_tokens", "reasoning_tokens")}
    if late:
        extra["late_calls"] = len(late)
        extra["late_calls_cost_usd"] = sum(float(c.get("cost_usd") or 0.0) for c in late)
    return _drop_none({
        "total_prompt_tokens": sum(m.get("prompt_tokens", 0) for m in measured),
        "total_completion_tokens": sum(m.get("completion_tokens", 0) for m in measured),
        "total_cached_tokens": sum(m.get("cached_tokens", 0) for m in measured),
        "total_cost_usd": sum(costs) if all(c is not None for c in costs) else None,  # unknown: not a guess
        "total_steps": len(steps), "extra": extra})


def _agent(trajectory: Json, record: Json, version: str) -> Json:
    scaffold = str(trajectory.get("scaffold") or _dict(record.get("system")).get("scaffold") or "unknown")
    details = _dict(trajectory.get("details"))
    extra = {"scaffold": scaffold, **{k: v for k, v in details.items() if k not in DETAILS_LEFT_OUT}}
    installed = _dict(details.get("agent"))
    name, agent_version = scaffold, version
    if scaffold.startswith("installed/") and installed:  # the real agent CLI, at the version its lock pins
        name, agent_version = str(installed.get("name") or scaffold), str(installed.get("version") or "")
    return _drop_none({"name": name, "version": agent_version or "unknown",
                       "model_name": record.get("model_name") or None, "extra": extra})


# ---------------------------------------------------------------- small helpers
def _iso(seconds: Any) -> str | None:
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _dict(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _drop_none(values: Json) -> Json:
    """ATIF's optional fields are left out rather than null (what Harbor's own export writes)."""
    return {k: v for k, v in values.items() if v is not None}
