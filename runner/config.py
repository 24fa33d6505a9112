"""The runner's structured config. Each group's schema is the owning layer's own dataclass plus the
runner's fields (an `id` for reports, a few run-level knobs), so a default lives in exactly one place:

    model    harness.models.config.ModelConfig   + id, served_name, and what scripted models play from
    budget   scaffolds.limits.Limits             + id, run_cost_usd
    sandbox  harness.sandbox.interface.SandboxLimits + base_image
    grading  harness.grader.config.GradeConfig
    scaffold name + options, checked against the scaffold's own config class (scaffolds.SCAFFOLDS)
    tasks    a task source (harness.tasks.SOURCES) and its selector
    executor an executor (runner.executors.EXECUTORS)

What Hydra composes is checked at start-up, so a typo or a bad value fails in one line before any
container starts. Kept free of heavy imports (no docker, no litellm): `--help` must stay fast.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from harness.grader.config import GradeConfig
from harness.grader.judge.config import JudgeConfig
from harness.models.config import ModelConfig
from harness.sandbox.interface import DEFAULT_BASE_IMAGE, SandboxLimits
from scaffolds.limits import Limits


class ConfigError(ValueError):
    """A bad configuration, with a one-line message that says how to fix it."""


@dataclass
class ModelConf(ModelConfig):
    id: str = "oracle"
    served_name: str | None = None  # local servers
    patch: str | None = None  # oracle: file name inside each task folder instead of expert.patch
    note: bool = False  # oracle: also add a file naming the rollout, so every rollout's patch is distinct
    run_dir: str | None = None  # replay: the run whose trajectories to replay
    steps: list[Any] | None = None  # script: the scripted steps (harness.models.scripted.steps)


@dataclass
class ScaffoldConf:
    id: str = "codeact"
    name: str = "codeact"
    options: dict[str, Any] = field(default_factory=dict)  # the scaffold's config class's fields


@dataclass
class BudgetConf(Limits):
    id: str = "smoke"
    run_cost_usd: float | None = None  # a cap for the whole run
    task_timeouts: bool = True  # a task's own agent timeout (Harbor's [agent].timeout_sec) replaces wall_clock_s

    def problems(self) -> list[str]:
        out = super().problems()
        if self.run_cost_usd is not None and self.run_cost_usd <= 0:
            out.append(f"run_cost_usd must be positive or null, got {self.run_cost_usd}")
        return out


@dataclass
class TasksConf:
    source: str = "suite"  # a task source (harness.tasks.SOURCES)
    selector: str = "suite"  # what the source reads: suite|smoke|ids|PATH (suite), the dataset (gso)
    ids: list[str] | None = None
    dataset: str | None = None  # gso: the hub id or a local file or folder of rows (the selector)
    split: str = "test"  # gso
    repo_mirror: str | None = None  # gso: a folder of bare repositories, owner__name.git (offline builds)
    hints: bool = False  # gso: show the row's hints_text to the agent
    image: str = "auto"  # gso: GSO's image if present or pullable, else built (auto) | prebuilt | build
    network: str = "none"  # gso: what graded tests may reach: none | offline (libraries read caches) | allowed
    test_timeout: float | None = None  # gso: seconds per test run (0: none); null: GSO's rule per repository
    runs_per_test: int | None = None  # gso: a cap on timing rounds; null: GSO's rule (1 for its slowest repos)
    cpus: float | None = None  # gso: CPUs per container (capped at the machine's); null: GSO's rule per repository
    memory: str | None = None  # gso: memory per container; null: GSO's rule per repository
    path: str = ""  # harbor: a folder of Harbor task directories, or one (the selector)
    base_map: dict[str, str] = field(default_factory=dict)  # harbor: Dockerfile FROM image -> local image


@dataclass
class SandboxConf(SandboxLimits):
    base_image: str = DEFAULT_BASE_IMAGE

    def limits(self) -> SandboxLimits:
        return SandboxLimits(**{f.name: getattr(self, f.name) for f in dataclasses.fields(SandboxLimits)})


@dataclass
class ExecutorConf:
    kind: str = "local"  # local | ray (runner.executors)
    # ray: "" starts a Ray on this machine for the run; "auto" joins the cluster this machine belongs to;
    # "HOST:PORT" a cluster's head; "ray://HOST:PORT" through Ray Client.
    address: str = ""
    slots_per_node: int = 4  # ray, started by the runner: rollouts at once on this machine (`rollout_slot`)
    reserve_timing_cpu: bool = True  # ray: rollout containers keep off the CPU a node's timing runs use
    drain_s: float = 30.0  # ray: how long stopped rollouts get to end before their tasks are cancelled

    def problems(self) -> list[str]:
        out = []
        if self.slots_per_node < 1:
            out.append(f"slots_per_node must be at least 1, got {self.slots_per_node}")
        if self.drain_s < 0:
            out.append(f"drain_s must be 0 or more, got {self.drain_s}")
        return out


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
    grading: GradeConfig = field(default_factory=GradeConfig)
    judge: JudgeConfig | None = None  # judge=MODEL: an LLM judges each rollout once it is graded (runner.judging)
    infra_retries: int = 2
    name: str = "run"
    sweep_name: str = "sweep"
    output_root: str = "outputs"


GRADE_MODES = ("after", "stream", "none")
# Top-level keys of a composed or stored config that are records, not settings: Hydra's own node, and the
# provenance a run's config.yaml gains when it starts (runner.provenance). Never part of the experiment.
NOT_SETTINGS = ("hydra", "provenance")
# What makes two runs the same experiment: a resumed run must match on all of these.
IDENTITY_KEYS = ("model", "scaffold", "budget", "tasks", "rollouts", "temperature", "seed", "grading")


def register_schemas() -> None:
    """Type-check each config group's options (Hydra's ConfigStore) so every field can be overridden
    from the command line and a wrongly typed value fails early."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for group, node in (("model", ModelConf), ("scaffold", ScaffoldConf), ("budget", BudgetConf),
                        ("tasks", TasksConf), ("sandbox", SandboxConf), ("executor", ExecutorConf),
                        ("judge", JudgeConfig)):
        store.store(group=group, name=f"schema_{group}", node=node)


def typed(cfg: DictConfig | dict[str, Any]) -> RunConf:
    """The composed config as RunConf (defaults filled in), without the run-level checks; a layer's own
    check (e.g. GradeConfig's) fails here, named by its group."""
    try:
        if isinstance(cfg, DictConfig):
            raw = cfg
            if any(key in raw for key in NOT_SETTINGS):
                raw = OmegaConf.masked_copy(raw, [k for k in raw.keys() if k not in NOT_SETTINGS])
        else:  # left out before OmegaConf reads them: a recorded value is no interpolation to resolve
            raw = OmegaConf.create({k: v for k, v in cfg.items() if k not in NOT_SETTINGS})
        merged = OmegaConf.merge(OmegaConf.structured(RunConf), raw)
        for group in ("model", "scaffold", "budget", "tasks", "sandbox", "executor", "grading", "judge"):
            if merged[group] is None:  # an optional group left out (judge)
                continue
            try:
                OmegaConf.to_object(merged[group])
            except ValueError as err:
                if isinstance(err, OmegaConfBaseException):
                    raise
                raise ConfigError(f"bad {group} option: {err}") from None
        return OmegaConf.to_object(merged)  # type: ignore[return-value]
    except OmegaConfBaseException as err:
        first = str(err).strip().splitlines()[0]
        key = getattr(err, "full_key", None)
        raise ConfigError(f"bad config{f' at {key}' if key else ''}: {first}") from None


def validate(cfg: DictConfig | dict[str, Any]) -> RunConf:
    """Check a composed config; returns the typed config or raises ConfigError (one line)."""
    conf = typed(cfg)
    _check(conf)
    return conf


def _check(conf: RunConf) -> None:
    from harness.tasks import SOURCES
    from runner.executors import EXECUTORS
    from scaffolds import NAMES, make_config

    if conf.rollouts < 1:
        raise ConfigError(f"rollouts must be at least 1, got {conf.rollouts}")
    if conf.parallel < 1:
        raise ConfigError(f"parallel must be at least 1, got {conf.parallel}")
    if conf.infra_retries < 0:
        raise ConfigError(f"infra_retries must be 0 or more, got {conf.infra_retries}")
    if conf.grade not in GRADE_MODES:
        raise ConfigError(f"grade must be one of {', '.join(GRADE_MODES)}, got {conf.grade!r}")
    if conf.scaffold.name not in NAMES:
        raise ConfigError(f"unknown scaffold {conf.scaffold.name!r}; choose one of {', '.join(NAMES)}")
    try:
        make_config(conf.scaffold.name, conf.scaffold.options)
    except ValueError as err:
        raise ConfigError(f"scaffold.options: {err}") from None
    if conf.tasks.source not in SOURCES:
        raise ConfigError(f"unknown task source {conf.tasks.source!r}; choose one of {', '.join(SOURCES)}")
    if conf.executor.kind not in EXECUTORS:
        raise ConfigError(f"unknown executor {conf.executor.kind!r}; choose one of {', '.join(EXECUTORS)}")
    problems = conf.executor.problems()
    if problems:
        raise ConfigError(f"executor.{problems[0]}")
    problems = conf.sandbox.problems()
    if problems:
        raise ConfigError(f"sandbox.{problems[0]}")
    if conf.temperature is not None and not 0 <= conf.temperature <= 2:
        raise ConfigError(f"temperature must be in [0, 2] (or null for the provider's default), got {conf.temperature}")
    problems = conf.budget.problems()
    if problems:
        raise ConfigError(f"budget.{problems[0]}")
    problems = conf.model.problems()
    if problems:
        raise ConfigError(f"model.{problems[0]}")
    model = conf.model
    if model.name.startswith("scripted/replay") and not model.run_dir:
        raise ConfigError("model=replay needs model.run_dir=PATH (the run whose trajectories to replay)")
    if model.api_key_env and not os.environ.get(model.api_key_env):
        raise ConfigError(f"model {model.id} needs an API key: set the environment variable {model.api_key_env}")
    if conf.judge is not None:
        check_judge(conf.judge)
        if conf.grade == "none":
            raise ConfigError("a judge needs graded rollouts: drop judge=... or grade (grade=after or stream)")


def check_judge(judge: JudgeConfig) -> None:
    problems = judge.problems()
    if problems:
        raise ConfigError(f"judge.{problems[0]}")
    if judge.api_key_env and not os.environ.get(judge.api_key_env):
        raise ConfigError(f"judge {judge.id} needs an API key: set the environment variable {judge.api_key_env}")


def identity(conf: RunConf) -> dict[str, Any]:
    """The part of a typed config that defines the experiment, as plain values."""
    return {key: _plain(getattr(conf, key)) for key in IDENTITY_KEYS}


def _plain(value: Any) -> Any:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


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
