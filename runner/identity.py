"""What makes two runs the same experiment: a typed config's identity (runner.config.IDENTITY_KEYS) as plain
values, and the dotted keys where two of them differ (a resumed run must match its config.yaml)."""
from __future__ import annotations

import dataclasses
from typing import Any

from runner.config import IDENTITY_KEYS, RunConf


def identity(conf: RunConf) -> dict[str, Any]:
    """The part of a typed config that defines the experiment, as plain values."""
    return {key: _plain(getattr(conf, key)) for key in IDENTITY_KEYS}


def _plain(value: Any) -> Any:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value


def differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two plain configs."""
    out: list[str] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} -> {b!r}")
    return out
