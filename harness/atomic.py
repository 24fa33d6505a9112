"""Atomic file writes: a reader never sees half a file, and a file is only ever replaced whole.

The one writer every output of the project goes through (the run store, the grader's reports). Temp
names carry the process and thread, so concurrent writers never share one.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_json(path: Path, data: Any, indent: int = 1) -> None:
    write_text(path, json.dumps(data, indent=indent, default=str))


def read_json(path: Path) -> Any:
    """The parsed file, or None when it is missing or not (yet) valid JSON."""
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
