"""Scripted replies in the tool vocabularies of installed agent CLIs (scaffolds.installed), so the oracle,
noop and script models play their steps through a real agent as through our own scaffolds.

Each agent's module (one per agent, below) has `detects(tool_names) -> bool`, which says from the tools a
request offers whether the request comes from that agent, and `render(step) -> (content, tool calls)`, which
writes one abstract step (bash, write, finish; replies.py) as that agent's model would.
"""
from __future__ import annotations

import importlib
from types import ModuleType

MODULES = {
    "claude_code": "harness.models.scripted.claude_code_replies",
    "codex": "harness.models.scripted.codex_replies",
    "openhands": "harness.models.scripted.openhands_replies",
}


def module(fmt: str) -> ModuleType:
    return importlib.import_module(MODULES[fmt])


def detect(tool_names: set[str]) -> str | None:
    """The installed agent whose tools these are, or None."""
    return next((fmt for fmt in MODULES if module(fmt).detects(tool_names)), None)
