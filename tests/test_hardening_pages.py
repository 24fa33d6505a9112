"""The HTML pages load nothing from anywhere (issue 33): a Content-Security-Policy meta tag forbids every
remote load and allows only the pages' own inline style and script, and model text (a trajectory's
messages and observations, a judge's reason in report.md) never becomes an image or a remote link.

The run is the stored graded run (tests/fixtures/run_a718ad9), copied, with model text planted in it
that asks for images from a loopback HTTP server; the pages are written by the real renderer and opened in
Chromium, and the server must receive no request.
"""
from __future__ import annotations

import http.server
import json
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.pages import write_run_pages
from runner.pages.render import markdown, render
from tests.browser_support import chromium

FIXTURE = Path(__file__).parent / "fixtures" / "run_a718ad9"
CSP_META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">')
REMOTE_TAG = re.compile(r"<(img|a|link|script|iframe|source|video|audio)\b[^>]*(src|href)=\"?(https?:)?//", re.I)


class Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        Counter.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counter)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def hostile(base: str, where: str) -> str:
    return (f'look: <img src="{base}/{where}-tag.png"> and ![x]({base}/{where}-md.png) and '
            f"[click]({base}/{where}-link) <{base}/{where}-auto>")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, server: str) -> Path:
    path = tmp_path_factory.mktemp("hardening-pages") / "run"
    shutil.copytree(FIXTURE, path)
    for trajectory_path in path.glob("trajectories/*/*.json"):
        trajectory = json.loads(trajectory_path.read_text())
        for message in trajectory["messages"]:
            if message.get("role") == "assistant":
                message["content"] = hostile(server, "message")
                message["reasoning_content"] = hostile(server, "reasoning")
        for step in trajectory.get("step_records") or []:
            for observation in step.get("observations") or []:
                observation["text"] = hostile(server, "observation")
        trajectory_path.write_text(json.dumps(trajectory))
    # A judge's reason reaches report.md as markdown, which the run page renders as HTML.
    report = path / "report.md"
    report.write_text(report.read_text() + f"\n## Judges\n\nreason: {hostile(server, 'judge')}\n")
    write_run_pages(path)
    return path


def pages_of(run: Path) -> list[Path]:
    found = [run / "report.html", *sorted(run.glob("pages/*/*.html"))]
    assert len(found) > 1
    return found


def test_every_page_carries_a_csp_that_forbids_remote_loads(run: Path) -> None:
    for page in pages_of(run):
        html = page.read_text()
        policy = CSP_META.search(html)
        assert policy, f"{page.name}: no Content-Security-Policy meta tag"
        assert html.index("Content-Security-Policy") < html.index("<style>")  # before anything it governs
        rules = dict((part.split()[0], part.split()[1:]) for part in policy.group(1).split(";") if part.strip())
        assert rules["default-src"] == ["'none'"]
        assert rules["img-src"] == ["data:"]
        for kind in ("style-src", "script-src"):  # the inline ones, by hash only: no host, no 'unsafe-*'
            assert rules[kind] and all(v.startswith("'sha256-") for v in rules[kind]), rules[kind]


def test_model_text_never_becomes_a_remote_image_or_link(run: Path) -> None:
    for page in pages_of(run):
        html = page.read_text()
        assert not REMOTE_TAG.search(html), f"{page.name}: {REMOTE_TAG.search(html).group(0)}"  # type: ignore[union-attr]
    trajectory = next(run.glob("pages/*/*.html")).read_text()
    assert "&lt;img src=" in trajectory  # shown as text, escaped
    assert "judge-md.png" in (run / "report.html").read_text()  # the judge's text is there, as text


def test_markdown_images_and_remote_links_render_as_text() -> None:
    html = markdown("![x](http://h/i.png) [a](https://h/p) <http://h/auto> [ok](pages/t/0.html) [top](#x) "
                    "[net](//h/x) <b>raw</b>")
    assert "<img" not in html and "https://h/p" in html and 'href="http' not in html and 'href="//' not in html
    assert '<a href="pages/t/0.html">ok</a>' in html and '<a href="#x">top</a>' in html
    assert "&lt;b&gt;raw&lt;/b&gt;" in html


def test_the_aggregate_page_carries_the_same_policy() -> None:
    page = render("aggregate.html.j2", head=markdown("![p](http://h/x.png)"), sections=[], plots=[], links=[])
    assert CSP_META.search(page) and "<img" not in page


def test_a_browser_opening_the_pages_makes_no_request_and_runs_their_own_script(run: Path, server: str,
                                                                                 tmp_path: Path) -> None:
    control = tmp_path / "control.html"  # the same browser and server see a page without the policy load
    control.write_text(f'<!doctype html><img src="{server}/control.png">')
    with chromium() as browser:
        page = browser.new_page()
        page.goto(control.as_uri())
        page.wait_for_load_state("load")
        assert Counter.hits == ["/control.png"]
        Counter.hits.clear()
        blocked: list[str] = []
        page.on("console", lambda msg: blocked.append(msg.text) if "Content Security Policy" in msg.text else None)
        for html in pages_of(run)[:3]:
            page.goto(html.as_uri())
            page.wait_for_load_state("load")
            page.wait_for_timeout(300)
        page.goto((run / "report.html").as_uri())
        # page.js ran (the policy allows it by its hash): every sortable header got its title
        assert page.eval_on_selector_all("table.sortable th", "ths => ths.every(t => t.title === 'sort')")
        # page.css applied (allowed by its hash): body has the stylesheet's font, not the browser default
        assert page.evaluate("getComputedStyle(document.body).fontFamily") != "Times New Roman"
        page.close()
    assert Counter.hits == [], f"the pages asked {server} for {Counter.hits}"
    assert not [m for m in blocked if "inline" in m], blocked  # our own style and script were not blocked
