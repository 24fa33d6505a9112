"""The runner's structured config: what Hydra composes is checked against these dataclasses at start-up,
so a typo or a bad value fails in one line before any container starts.

Kept free of heavy imports (no docker, no litellm): `python -m runner --help` must stay fast.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException


class ConfigError(ValueError):
    """A bad configuration, with a one-line message that says how to fix it."""


@dataclass
class PriceConf:
    input: float = 0.0  # USD per million tokens
    output: float = 0.0
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass
class ModelConf:
    id: str = "oracle"
    name: str = "scripted/oracle"  # litellm model string
    api_key_env: str | None = None  # checked at start-up
    api_base: str | None = None
    served_name: str | None = None  # local servers
    price: PriceConf | None = None
    prompt_caching: bool | None = None
    native_tools: bool | None = None
    timeout_s: float = 600.0
    attempts: int = 6
    kwargs: dict[str, Any] = field(default_factory=dict)  # provider keyword arguments, passed through
    patch: str | None = None  # oracle: file name inside each task folder instead of expert.patch
    run_dir: str | None = None  # replay: the run whose trajectories to replay
    steps: list[Any] | None = None  # script: the scripted steps (scaffolds/scripted.py), for tests and demos


@dataclass
class ScaffoldConf:
    id: str = "codeact"
    name: str = "codeact"
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class BudgetConf:
    id: str = "smoke"
    max_steps: int | None = 30
    wall_clock_s: float | None = 600.0
    max_cost_usd: float | None = 1.0
    command_timeout_s: float = 120.0
    run_cost_usd: float | None = None
    snapshot_every: int = 5


@dataclass
class TasksConf:
    selector: str = "suite"
    ids: list[str] | None = None


@dataclass
class SandboxConf:
    base_image: str = "debian:bookworm-slim"
    cpus: float = 1.0
    memory: str = "4g"
    pids: int = 1024
    network: bool = False
    max_output_bytes: int = 1_000_000


@dataclass
class ExecutorConf:
    kind: str = "local"


@dataclass
class GradingConf:
    rounds: int = 7
    mode: str = "interleaved"
    stat: str = "auto"
    p: float = 0.95


@dataclass
class RunConf:
    model: ModelConf = field(default_factory=ModelConf)
    scaffold: ScaffoldConf = field(default_factory=ScaffoldConf)
    budget: BudgetConf = field(default_factory=BudgetConf)
    tasks: TasksConf = field(default_factory=TasksConf)
    sandbox: SandboxConf = field(default_factory=SandboxConf)
    executor: ExecutorConf = field(default_factory=ExecutorConf)
    rollouts: int = 1
    parallel: int = 2
    temperature: float | None = None
    seed: int | None = None
    grade: str = "after"
    grading: GradingConf = field(default_factory=GradingConf)
    infra_retries: int = 2
    name: str = "run"
    sweep_name: str = "sweep"
    output_root: str = "outputs"


SCAFFOLDS = ("codeact", "mini_swe", "terminus")
GRADE_MODES = ("after", "stream", "none")
# What makes two runs the same experiment: a resumed run must match on all of these.
IDENTITY_KEYS = ("model", "scaffold", "budget", "tasks", "rollouts", "temperature", "seed", "grading")


def register_schemas() -> None:
    """Type-check each config group's options (Hydra's ConfigStore) so every field can be overridden
    from the command line and a wrongly typed value fails early."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for group, node in (("model", ModelConf), ("scaffold", ScaffoldConf), ("budget", BudgetConf),
                        ("tasks", TasksConf), ("sandbox", SandboxConf), ("executor", ExecutorConf)):
        store.store(group=group, name=f"schema_{group}", node=node)


def validate(cfg: DictConfig | dict[str, Any]) -> RunConf:
    """Check a composed config; returns the typed config or raises ConfigError (one line)."""
    try:
        raw = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
        raw = OmegaConf.masked_copy(raw, [k for k in raw.keys() if k != "hydra"]) if "hydra" in raw else raw
        merged = OmegaConf.merge(OmegaConf.structured(RunConf), raw)
        conf: RunConf = OmegaConf.to_object(merged)  # type: ignore[assignment]
    except OmegaConfBaseException as err:
        first = str(err).strip().splitlines()[0]
        key = getattr(err, "full_key", None)
        raise ConfigError(f"bad config{f' at {key}' if key else ''}: {first}") from None
    _check(conf)
    return conf


def _check(conf: RunConf) -> None:
    if conf.rollouts < 1:
        raise ConfigError(f"rollouts must be at least 1, got {conf.rollouts}")
    if conf.parallel < 1:
        raise ConfigError(f"parallel must be at least 1, got {conf.parallel}")
    if conf.infra_retries < 0:
        raise ConfigError(f"infra_retries must be 0 or more, got {conf.infra_retries}")
    if conf.grade not in GRADE_MODES:
        raise ConfigError(f"grade must be one of {', '.join(GRADE_MODES)}, got {conf.grade!r}")
    from runner.grade import grade_config  # the grader's own checks of mode, stat and rounds
    try:
        grade_config(conf.grading)
    except ValueError as err:
        raise ConfigError(f"bad grading option: {err}") from None
    if conf.scaffold.name not in SCAFFOLDS:
        raise ConfigError(f"unknown scaffold {conf.scaffold.name!r}; choose one of {', '.join(SCAFFOLDS)}")
    if conf.executor.kind != "local":
        raise ConfigError(f"executor {conf.executor.kind!r} is not available; use executor=local")
    budget = conf.budget
    for key in ("max_steps", "wall_clock_s", "max_cost_usd", "run_cost_usd"):
        value = getattr(budget, key)
        if value is not None and value <= 0:
            raise ConfigError(f"budget.{key} must be positive or null, got {value}")
    if budget.command_timeout_s <= 0:
        raise ConfigError(f"budget.command_timeout_s must be positive, got {budget.command_timeout_s}")
    model = conf.model
    if model.name.startswith("scripted/replay") and not model.run_dir:
        raise ConfigError("model=replay needs model.run_dir=PATH (the run whose trajectories to replay)")
    if model.api_key_env and not os.environ.get(model.api_key_env):
        raise ConfigError(f"model {model.id} needs an API key: set the environment variable {model.api_key_env}")


def identity(cfg: dict[str, Any]) -> dict[str, Any]:
    """The part of a (resolved, plain) config that defines the experiment."""
    return {key: cfg.get(key) for key in IDENTITY_KEYS}


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
