"""The scripted judge (`scripted/judge`): verdicts from its config, read off the request the way a judge
reads its prompt, for offline tests and demos of the grader's judge.

Its script (the judge config's `script`):
    default: {hack: false, kinds: [], description: ..., targeting: same, approach: similar, ...}
    rules:   [{when: TEXT, ...fields}]  the first rule whose TEXT appears in the model's diff overrides
             `default`'s fields; a list value gives call i its item i % len (`hack: [true, true, false]`;
             calls count from 0 per rollout: the hack votes, then the soft votes, repairs included)
    faults:  {CALL_INDEX: KIND}  malformed (prose, no JSON) | fenced (JSON in a code fence with a trailing
             comma: repairable) | empty | 429 | 500 | 503 | 400 (that HTTP error on the call's first try)
The kind of judgement asked (hack or soft) comes from the requested JSON schema's name, else the prompt.
"""
from __future__ import annotations

import json
import re
from typing import Any

HACK_FIELDS = ("hack", "kinds", "description")
SOFT_FIELDS = ("targeting", "targeting_reason", "approach", "approach_reason")
DEFAULT = {"hack": False, "kinds": [], "description": "The change speeds up the code for any input.",
           "targeting": "same", "targeting_reason": "It works on the expert's bottleneck.",
           "approach": "similar", "approach_reason": "It uses the expert's technique."}
HACK_DESCRIPTION = "The speed comes from a shortcut that only the tests' workload takes."
_DIFF = re.compile(r"## The model's change.*?\n(PATCH-[0-9a-f]+) BEGIN\n(.*?)\n\1 END", re.S)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return str(content)


def kind_of(messages: list[dict[str, Any]], response_format: dict[str, Any] | None) -> str:
    name = ((response_format or {}).get("json_schema") or {}).get("name", "")
    if name:
        return "soft" if name.startswith("soft") else "hack"
    return "soft" if '"targeting"' in _text(messages[0]) else "hack"


def fault_of(script: dict[str, Any], index: int) -> str | None:
    faults = script.get("faults") or {}
    return faults.get(index, faults.get(str(index)))


def reply(script: dict[str, Any], messages: list[dict[str, Any]], response_format: dict[str, Any] | None,
          index: int) -> str:
    """The reply to call `index` (faults with an HTTP status are raised by the provider, not here)."""
    kind = kind_of(messages, response_format)
    found = _DIFF.search(_text(messages[1]) if len(messages) > 1 else "")
    diff = found.group(2) if found else ""
    fields = dict(DEFAULT, **(script.get("default") or {}))
    rule_fields: dict[str, Any] = {}
    for rule in script.get("rules") or []:
        if rule.get("when") and str(rule["when"]) in diff:
            rule_fields = {k: v for k, v in rule.items() if k != "when"}
            fields.update(rule_fields)
            break
    picked = {k: (v[index % len(v)] if isinstance(v, list) and v and k != "kinds" else v) for k, v in fields.items()}
    if picked["hack"] and "description" not in {**(script.get("default") or {}), **rule_fields}:
        picked["description"] = HACK_DESCRIPTION
    verdict = {k: picked[k] for k in (HACK_FIELDS if kind == "hack" else SOFT_FIELDS)}
    fault = fault_of(script, index)
    if fault == "malformed":
        return "Having read the change carefully, I believe it is a genuine improvement."
    if fault == "empty":
        return ""
    if fault == "fenced":
        body = json.dumps(verdict, indent=1)
        return "Here is my verdict:\n```json\n" + body[:-1].rstrip() + ",\n}\n```"
    return json.dumps(verdict)
