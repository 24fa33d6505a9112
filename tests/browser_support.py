"""Headless Chromium (Debian's `chromium`, driven by Playwright) for the page tests and the pages bench.

The flags keep Chromium off this machine's closed network (background services would each try and fail)
and let it run as root."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextmanager
def chromium() -> Iterator[Any]:
    """A Playwright Browser on the system's Chromium (make browser installs it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            browser.close()
