"""The config tree's groups and options as the command line checks them: conf/ (runner.CONF_DIR) and the
folders `--config-dir` adds (their options count beside ours; the keys are still our schema's)."""
from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from runner import CONF_DIR

ADDED: list[Path] = []  # folders from --config-dir, searched before conf/


def add_dirs(dirs: list[Path]) -> None:
    """Search `dirs` too (the command line's --config-dir), from now on."""
    if dirs != ADDED:
        ADDED[:] = dirs
        for read in (groups, preset):
            read.cache_clear()


def roots() -> tuple[Path, ...]:
    return (*ADDED, Path(CONF_DIR))


@cache
def groups() -> dict[str, tuple[str, ...]]:
    """Each config group of conf/ -> its options (files only: the schema_* configs are internal); a folder
    inside a group names options of that group (scaffold=installed/mini_swe_agent)."""
    found: dict[str, set[str]] = {}
    for root in roots():
        for d in sorted(root.iterdir()) if root.is_dir() else ():
            if d.is_dir():
                found.setdefault(d.name, set()).update(p.relative_to(d).with_suffix("").as_posix()
                                                       for p in d.rglob("*.yaml"))
    return {name: tuple(sorted(options)) for name, options in sorted(found.items())}


@cache
def defaults() -> dict[str, str | None]:
    """conf/config.yaml's defaults list: group -> its default option (None: left out unless chosen)."""
    listed = yaml.safe_load((Path(CONF_DIR) / "config.yaml").read_text()).get("defaults", [])
    return {k: v for item in listed if isinstance(item, dict) for k, v in item.items()}


@cache
def preset(group: str, option: str) -> dict[str, Any]:
    path = next((p for root in roots() if (p := root / group / f"{option}.yaml").is_file()), None)
    return (yaml.safe_load(path.read_text()) or {}) if path is not None else {}


def groups_help() -> str:
    """The groups and their options for `--help` (the default marked *)."""
    width = max(map(len, groups()))
    return "\n".join(f"  {g:<{width}}  " + ", ".join(o + ("*" if defaults().get(g) == o else "") for o in opts)
                     for g, opts in groups().items())


