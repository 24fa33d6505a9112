"""Prompt templates (Jinja, beside each scaffold) and the middle cut for long observations."""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2


def truncate_middle(text: str, limit: int, note: str = "[... {n} characters cut ...]") -> str:
    """Keep the head and the tail; the cut is in the middle, where output matters least."""
    if len(text) <= limit:
        return text
    marker = note.format(n=len(text) - limit)
    head = limit // 2
    return text[:head] + "\n" + marker + "\n" + text[len(text) - (limit - head):]


@cache
def _templates(folder: str) -> jinja2.Environment:
    """One environment per prompt folder: templates are parsed once, not at every step."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=False, trim_blocks=True, lstrip_blocks=True)


def render_template(folder: Path, name: str, **variables: Any) -> str:
    return _templates(str(folder)).get_template(name).render(**variables).strip()
