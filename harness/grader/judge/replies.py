"""Reading a judge's reply: one JSON object, checked against the kind of judgement asked for.

Replies are repaired where the intent is unambiguous (a code fence around the object, prose before or
after it, trailing commas, Python's True/False/None) and refused otherwise; a refusal says what is wrong,
which the judge is told when it is asked again (judge.py). Nothing is ever guessed: a reply that cannot be
read is a failed vote.
"""
from __future__ import annotations

import json
import re
from typing import Any

from harness.metrics.judging import APPROACH, TARGETING

KINDS = ("hack", "soft")
HACK_KINDS = range(1, 9)  # the eight kinds the rubric numbers
# The JSON schema of each kind's reply, for providers that take one (structured output).
SCHEMAS: dict[str, dict[str, Any]] = {
    "hack": {"type": "object", "additionalProperties": False, "required": ["hack", "kinds", "description"],
             "properties": {"hack": {"type": "boolean"}, "kinds": {"type": "array", "items": {"type": "integer"}},
                            "description": {"type": "string"}}},
    "soft": {"type": "object", "additionalProperties": False,
             "required": ["targeting", "targeting_reason", "approach", "approach_reason"],
             "properties": {"targeting": {"type": "string", "enum": list(TARGETING)},
                            "targeting_reason": {"type": "string"},
                            "approach": {"type": "string", "enum": list(APPROACH)},
                            "approach_reason": {"type": "string"}}},
}


class ReplyError(ValueError):
    """A reply that cannot be used; the message says why, in words the judge is shown."""


def response_format(kind: str, structured: bool) -> dict[str, Any] | None:
    """What to ask the provider for: the kind's JSON schema where it takes one; else nothing (the prompt
    asks for the JSON object, and a provider that refuses an unknown parameter would fail every vote)."""
    if structured:
        return {"type": "json_schema", "json_schema": {"name": f"{kind}_verdict", "schema": SCHEMAS[kind],
                                                       "strict": True}}
    return None


def parse(kind: str, text: str) -> dict[str, Any]:
    """The verdict in `text`, checked; raises ReplyError saying what is wrong."""
    data = _object(text)
    return _hack(data) if kind == "hack" else _soft(data)


def _object(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if not stripped:
        raise ReplyError("the reply was empty")
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", stripped, re.S)
    if fenced:
        stripped = fenced.group(1)
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end < start:
        raise ReplyError("the reply holds no JSON object")
    body = stripped[start:end + 1]
    for candidate in (body, _repaired(body)):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            return data
    raise ReplyError("the reply's JSON object does not parse")


def _repaired(body: str) -> str:
    """Trailing commas dropped and Python literals made JSON (outside strings: good enough for a retry)."""
    body = re.sub(r",\s*([}\]])", r"\1", body)
    return re.sub(r"\b(True|False|None)\b", lambda m: {"True": "true", "False": "false", "None": "null"}[m[1]], body)


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ReplyError(f'"{key}" must be a non-empty string')
    return value.strip()


def _hack(data: dict[str, Any]) -> dict[str, Any]:
    hack = data.get("hack")
    if isinstance(hack, str) and hack.strip().lower() in ("true", "false"):
        hack = hack.strip().lower() == "true"
    if not isinstance(hack, bool):
        raise ReplyError('"hack" must be true or false')
    kinds = data.get("kinds", [])
    if not isinstance(kinds, list) or any(isinstance(k, bool) or not isinstance(k, int) or k not in HACK_KINDS
                                          for k in kinds):
        raise ReplyError('"kinds" must be a list of the kinds\' numbers, 1 to 8')
    return {"hack": hack, "kinds": sorted(set(kinds)), "description": _text(data, "description")}


def _soft(data: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, allowed in (("targeting", TARGETING), ("approach", APPROACH)):
        value = data.get(key)
        value = value.strip().lower() if isinstance(value, str) else value
        if value not in allowed:
            raise ReplyError(f'"{key}" must be one of {", ".join(allowed)}')
        out[key] = value
        out[f"{key}_reason"] = _text(data, f"{key}_reason")
    return out
