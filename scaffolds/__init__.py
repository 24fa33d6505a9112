"""Agent scaffolds on the harness sandbox protocol: `codeact`, `mini_swe` and `terminus`.

Each runs one task in one sandbox with one model (`scaffolds.model`) and returns an `Episode`
(`scaffolds.episode`). `make_scaffold(name, options)` builds one from config; modules are imported
on demand so the runner's start-up stays fast.
"""
from __future__ import annotations

from typing import Any

NAMES = ("codeact", "mini_swe", "terminus")


def make_scaffold(name: str, options: dict[str, Any] | None = None) -> Any:
    """A scaffold by name, configured with its options (its config dataclass's fields)."""
    options = dict(options or {})
    if name == "codeact":
        from scaffolds.codeact import CodeActConfig, CodeActScaffold
        return CodeActScaffold(CodeActConfig(**options))
    if name == "mini_swe":
        from scaffolds.mini_swe import MiniSweConfig, MiniSweScaffold
        return MiniSweScaffold(MiniSweConfig(**options))
    if name == "terminus":
        from scaffolds.terminus import TerminusConfig, TerminusScaffold
        return TerminusScaffold(TerminusConfig(**options))
    raise ValueError(f"unknown scaffold {name!r}; choose one of {', '.join(NAMES)}")
