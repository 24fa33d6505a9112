"""What every page shares: the Jinja environment (templates and the inline style and script), number
formats, report markdown as HTML, and images as data URIs (page.js colours the diffs).

Pages are static files that open from disk with no server and no network, so styles, scripts and plots
are inlined; only links to other pages of the same run are relative paths.
"""
from __future__ import annotations

import base64
import math
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markdown_it import MarkdownIt

HERE = Path(__file__).parent
FOLD = 1500  # characters: longer messages and observations start folded


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.ChainableUndefined)
    env.filters.update(num=num, usd=usd, secs=secs)
    env.globals.update(style=(HERE / "assets" / "page.css").read_text(),
                       script=(HERE / "assets" / "page.js").read_text())
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def num(value: Any, digits: int = 3) -> str:
    """A number for a table cell: '-' when missing or not finite."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def usd(value: Any) -> str:
    return "-" if value is None else f"${value:.4f}"


def secs(value: Any) -> str:
    return "-" if value is None else f"{value:.1f} s"


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown(text: str) -> str:
    """report.md / aggregate.md as HTML; every table sortable (page.js)."""
    return _markdown().render(text).replace("<table>", '<table class="sortable">')


def sections(text: str) -> list[tuple[str, str]]:
    """A markdown report split at its `## ` headings: (heading, body) pairs; the first heading is ''."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        if line.startswith("## "):
            out.append((line[3:].strip(), []))
        else:
            out[-1][1].append(line)
    return [(head, "\n".join(body)) for head, body in out]


def data_uri(path: Path) -> str:
    kind = {"png": "image/png", "svg": "image/svg+xml", "jpg": "image/jpeg"}.get(path.suffix.lstrip("."), "image/png")
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode()}"
