"""Agent scaffolds on the harness sandbox interface: `codeact`, `mini_swe` and `terminus`.

Each runs one task in one sandbox with one model (`harness.models`) and returns an `Episode`
(`episode.py`), through the shared `Recorder` (`recorder.py`). SCAFFOLDS maps a name to its class and
config class; modules are imported on demand so the runner's start-up stays fast.
`make_scaffold(name, options)` builds one; `check_options` says in one line what is wrong with
options before anything starts.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any

# name -> (module, scaffold class, config class)
SCAFFOLDS = {
    "codeact": ("scaffolds.codeact.agent", "CodeActScaffold", "CodeActConfig"),
    "mini_swe": ("scaffolds.mini_swe.agent", "MiniSweScaffold", "MiniSweConfig"),
    "terminus": ("scaffolds.terminus.agent", "TerminusScaffold", "TerminusConfig"),
}
NAMES = tuple(SCAFFOLDS)


def _classes(name: str) -> tuple[type, type]:
    if name not in SCAFFOLDS:
        raise ValueError(f"unknown scaffold {name!r}; choose one of {', '.join(NAMES)}")
    module_name, scaffold_cls, config_cls = SCAFFOLDS[name]
    module = importlib.import_module(module_name)
    return getattr(module, scaffold_cls), getattr(module, config_cls)


def make_config(name: str, options: dict[str, Any] | None = None) -> Any:
    """The scaffold's config from options; ValueError (one line) naming an unknown option or a bad value."""
    _scaffold, config_cls = _classes(name)
    options = dict(options or {})
    known = [f.name for f in dataclasses.fields(config_cls)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r} for scaffold {name} (known: {', '.join(known)})")
    try:
        return config_cls(**options)
    except (TypeError, ValueError) as err:
        raise ValueError(f"scaffold {name}: {err}") from None


def make_scaffold(name: str, options: dict[str, Any] | None = None) -> Any:
    """A scaffold by name, configured with its options (its config dataclass's fields)."""
    scaffold_cls, _config = _classes(name)
    return scaffold_cls(make_config(name, options))
