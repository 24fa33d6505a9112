"""What every page shares: the Jinja environment (templates and the inline style and script), number
formats, report markdown as HTML, and images as data URIs (page.js colours the diffs).

Pages are static files that open from disk with no server and no network, so styles, scripts and plots
are inlined; only links to other pages of the same run are relative paths. Each page says so to the browser
too (`csp`): nothing may load from anywhere, only the page's own inline style and script run (by their
hashes) and images are data URIs. Model text reaches the pages (trajectories, judges' reasons in the
reports): it is escaped, and markdown from it never becomes an image or a link to somewhere else.
"""
from __future__ import annotations

import base64
import hashlib
import html
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markdown_it import MarkdownIt
from markdown_it.token import Token

HERE = Path(__file__).parent
FOLD = 1500  # characters: longer messages and observations start folded


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.ChainableUndefined)
    env.filters.update(num=num, usd=usd, secs=secs)
    style, script = (HERE / "assets" / "page.css").read_text(), (HERE / "assets" / "page.js").read_text()
    env.globals.update(style=style, script=script, csp=csp(style, script))
    return env


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def csp(style: str, script: str) -> str:
    """The pages' Content-Security-Policy: no fetch, frame, font or remote image of any kind; only the
    inline <style> and <script> exactly as inlined (hashes, so an injected one would not run; the pages
    have no style attributes or event handler attributes) and data: images (the embedded plots). Only
    single quotes: the template puts it unescaped inside a double-quoted attribute."""
    return (f"default-src 'none'; style-src {_sha256(style)}; script-src {_sha256(script)}; img-src data:; "
            "base-uri 'none'; form-action 'none'")


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


# A link target that leaves the page's own folder: a scheme (http:, mailto:, ...) or a network path (//host).
_REMOTE = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*:|[\\/]{2})")


def _image_as_text(_self: Any, tokens: Sequence[Token], idx: int, _options: Any, _env: Any) -> str:
    """`![alt](src)` as the text it was: a report never loads an image named by its (model-written) text."""
    token = tokens[idx]
    return html.escape(f"![{token.content}]({token.attrGet('src') or ''})")


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    href = str(tokens[idx].attrGet("href") or "")
    if _REMOTE.match(href):
        tokens[idx].meta["remote"] = href
        return ""  # the link's text stays, as text; its target follows it, as text (_link_close)
    return self.renderToken(tokens, idx, options, env)


def _link_close(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    start = next((i for i in range(idx - 1, -1, -1) if tokens[i].type == "link_open"), None)  # links do not nest
    if start is None or "remote" not in tokens[start].meta:
        return self.renderToken(tokens, idx, options, env)
    href = tokens[start].meta["remote"]
    text = "".join(t.content for t in tokens[start + 1:idx])
    return "" if href.removeprefix("mailto:") == text else html.escape(f" <{href}>")  # an autolink shows it once


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")  # raw HTML in the text is shown escaped
    md.add_render_rule("image", _image_as_text)
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("link_close", _link_close)
    return md


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
