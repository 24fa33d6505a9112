"""`aggregate.html` beside aggregate.md: its tables sortable, its plots embedded, each system linked to its
run's page (report.html, written when missing)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from harness.atomic import write_text
from runner.pages.render import data_uri, markdown, render, sections
from runner.pages.run_page import write_run_pages


def write_aggregate_page(out: Path, result: dict[str, Any]) -> Path:
    """(Re)write `out/aggregate.html` from `out/aggregate.md` and the plots named in `result`."""
    parts = sections((out / "aggregate.md").read_text())
    plots = [(name, data_uri(out / name)) for name in result.get("plots") or [] if (out / name).exists()]
    links = []
    for system in result.get("systems") or []:
        run = Path(system["run"])
        if system.get("approximate") or not (run / "config.yaml").exists():
            continue  # a truncated variant has no run directory of its own
        page = run / "report.html"
        if not page.exists():
            try:
                write_run_pages(run)
            except OSError:
                continue  # a run folder that cannot be written (read-only, full): no link, the rest stands
        links.append((system["system"], quote(os.path.relpath(page, out))))
    body = [(title, markdown(text)) for title, text in parts[1:] if title != "Plots"]
    html = render("aggregate.html.j2", head=markdown(parts[0][1]), sections=body, plots=plots, links=links)
    target = out / "aggregate.html"
    write_text(target, html)
    return target
