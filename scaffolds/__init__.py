"""Agent scaffolds on the harness sandbox interface: `codeact`, `mini_swe` and `terminus`, and `installed`
(a real agent CLI in the sandbox: scaffolds/installed).

Each runs one task in one sandbox with one model (`harness.models`) and returns an `Episode`
(`episode.py`), through the shared `Recorder` (`recorder.py`). SCAFFOLDS maps a name to its class and
config class; modules are imported on demand so the runner's start-up stays fast.
`make_scaffold(name, options)` builds one; `make_config` says in one line what is wrong with options
before anything starts: an unknown name, a value of the wrong type (against the config's annotations), a
negative number, or zero where the config does not list the field in `ZERO_ALLOWED`, and whatever the
config's own `__post_init__` refuses.
"""
from __future__ import annotations

import dataclasses
import importlib
import types
import typing
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.sandbox.providers import SandboxProvider

# name -> (module, scaffold class, config class)
SCAFFOLDS = {
    "codeact": ("scaffolds.codeact.agent", "CodeActScaffold", "CodeActConfig"),
    "mini_swe": ("scaffolds.mini_swe.agent", "MiniSweScaffold", "MiniSweConfig"),
    "terminus": ("scaffolds.terminus.agent", "TerminusScaffold", "TerminusConfig"),
    "installed": ("scaffolds.installed.agent", "InstalledScaffold", "InstalledConfig"),  # a real agent CLI
}
NAMES = tuple(SCAFFOLDS)


def _classes(name: str) -> tuple[type, type]:
    if name not in SCAFFOLDS:
        raise ValueError(f"unknown scaffold {name!r}; choose one of {', '.join(NAMES)}")
    module_name, scaffold_cls, config_cls = SCAFFOLDS[name]
    module = importlib.import_module(module_name)
    return getattr(module, scaffold_cls), getattr(module, config_cls)


def takes_checkpoints(name: str) -> bool:
    """Whether the scaffold's run takes `checkpoints` (scaffolds/checkpoint.py): an installed agent CLI's
    conversation lives in its own process, which no checkpoint holds."""
    return bool(getattr(_classes(name)[0], "checkpoints", False))


def make_config(name: str, options: dict[str, Any] | None = None) -> Any:
    """The scaffold's config from options; ValueError (one line) naming an unknown option or a bad value."""
    _scaffold, config_cls = _classes(name)
    options = dict(options or {})
    known = [f.name for f in dataclasses.fields(config_cls)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r} for scaffold {name} (known: {', '.join(known)})")
    hints = typing.get_type_hints(config_cls)
    zero_ok = getattr(config_cls, "ZERO_ALLOWED", ())
    for key, value in options.items():
        problem = _value_problem(value, hints[key], key in zero_ok)
        if problem:
            raise ValueError(f"scaffold {name}: option {key!r} {problem}, got {value!r}")
    try:
        return config_cls(**options)
    except (TypeError, ValueError) as err:
        raise ValueError(f"scaffold {name}: {err}") from None


def _value_problem(value: Any, annotation: Any, zero_ok: bool) -> str | None:
    """Why `value` does not fit a config field annotated `annotation` (bool, int, float, str, or X | None)."""
    allowed = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    if value is None:
        return None if type(None) in allowed else "must not be null"
    kinds = [k for k in allowed if k is not type(None)]
    if bool in kinds:
        return None if isinstance(value, bool) else "must be true or false"
    if int in kinds or float in kinds:
        number = isinstance(value, int) and not isinstance(value, bool) or float in kinds and isinstance(value, float)
        if not number:
            return "must be a whole number" if float not in kinds else "must be a number"
        if value < 0 or value == 0 and not zero_ok:
            return "must be 0 or more" if zero_ok else "must be positive"
        return None
    if str in kinds and not isinstance(value, str):
        return "must be a string"
    return None


def make_scaffold(name: str, options: dict[str, Any] | None = None) -> Any:
    """A scaffold by name, configured with its options (its config dataclass's fields)."""
    scaffold_cls, _config = _classes(name)
    return scaffold_cls(make_config(name, options))


def agent_images(name: str, options: dict[str, Any] | None, images: dict[str, str], provider: SandboxProvider,
                 log: Any = print) -> dict[str, str]:
    """Each task's image for this scaffold's sandboxes (task id -> image): the task's agent image, or, for an
    installed agent, that image one layer up with the agent's program (built once; ValueError in one line
    when a task's image cannot run the agent)."""
    if name != "installed":
        return dict(images)
    from scaffolds.installed.agent import prepare_images
    return prepare_images(make_config(name, options).agent, images, provider, log)
