"""The runner's structured config. Each group's schema is the owning layer's own dataclass plus the
runner's fields (an `id` for reports, a few run-level knobs), so a default lives in exactly one place:

    model    harness.models.config.ModelConfig   + id, served_name, and what scripted models play from
    budget   scaffolds.limits.Limits             + id, run_cost_usd
    sandbox  harness.sandbox.interface.SandboxLimits + base_image, provider, rootfs
    grading  harness.grader.config.GradeConfig
    scaffold name + options, checked against the scaffold's own config class (scaffolds.SCAFFOLDS)
    tasks    a task source (harness.tasks.SOURCES) and its selector
    executor an executor (runner.executors.EXECUTORS)

What Hydra composes is checked at start-up, so a typo or a bad value fails in one line before any
container starts. Kept free of heavy imports (no docker, no litellm): `--help` must stay fast.
"""
from __future__ import annotations

import dataclasses
import difflib
import os
import types
import typing
from dataclasses import dataclass, field
from functools import cache
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from harness.grader.config import GradeConfig
from harness.grader.judge.config import JudgeConfig
from harness.models.config import ModelConfig
from harness.sandbox.interface import DEFAULT_BASE_IMAGE, SandboxLimits
from harness.sandbox.providers import DEFAULT_PROVIDER, PROVIDERS, ROOTFS, isolates, rootfs_problem
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
    models_dir: str | None = None  # isobench: the folder holding model weights, <models_dir>/<org>/<model>


@dataclass
class SandboxConf(SandboxLimits):
    base_image: str = DEFAULT_BASE_IMAGE
    provider: str = DEFAULT_PROVIDER  # what starts the sandboxes (harness.sandbox.providers.PROVIDERS)
    rootfs: str = "image"  # image | host (harness.sandbox.providers.ROOTFS)
    # rootfs=host: what runs as python3 (a path | system | auto); "": $OPTRUNNER_HOST_PYTHON, else auto
    host_python: str = ""
    # agents' rollouts on a provider that isolates nothing (sandbox=unsandboxed): refused unless this is set
    allow_unsandboxed: bool = False

    def problems(self) -> list[str]:
        out = super().problems()
        if self.provider not in PROVIDERS:
            out.append(f"provider must be one of {', '.join(PROVIDERS)}, got {self.provider!r}")
        if self.rootfs not in ROOTFS:
            out.append(f"rootfs must be one of {', '.join(ROOTFS)}, got {self.rootfs!r}")
        elif self.provider in PROVIDERS and (problem := rootfs_problem(self.provider, self.rootfs)):
            out.append(problem)
        return out

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
    # A rollout's attempts in all, across resumes (its record's `attempts`): an infrastructure failure is run
    # again only while it has attempts left, so no rollout gets an unbounded number of fresh tries.
    rollout_attempts: int = 3
    # On resume: rollouts recorded infra_error / provider_error with attempts left (rollout_attempts) run again,
    # grading reports with status error are redone (false: kept as they are; `--no-retry-errors`). Not part of
    # the experiment's identity.
    retry_errors: bool = True
    atif: bool = False  # also write each finished rollout's trajectory as ATIF (runner.atif) under atif/
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
                kept = [k for k in raw.keys() if k not in NOT_SETTINGS]
                raw = OmegaConf.masked_copy(raw, cast(list[str], kept))  # (OmegaConf's stubs: str keys only)
            # Hydra's `+key=value` adds keys the schema lacks, and OmegaConf keeps them as stray attributes:
            # a misspelt setting would be ignored in silence. (A plain dict below fails in the merge itself.)
            if (stray := _stray_key(raw, RunConf, "")) is not None:
                raise ConfigError(unknown_key(stray))
        else:  # left out before OmegaConf reads them: a recorded value is no interpolation to resolve
            raw = OmegaConf.create({k: v for k, v in cfg.items() if k not in NOT_SETTINGS})
        # (a merge into a structured DictConfig is one; OmegaConf's stubs say DictConfig | ListConfig)
        merged = cast(DictConfig, OmegaConf.merge(OmegaConf.structured(RunConf), raw))
        for group in ("model", "scaffold", "budget", "tasks", "sandbox", "executor", "grading", "judge"):
            if merged[group] is None:  # an optional group left out (judge)
                continue
            try:
                OmegaConf.to_object(merged[group])
            except ValueError as err:
                if isinstance(err, OmegaConfBaseException):
                    raise
                raise ConfigError(f"bad {group} option: {err}") from None
        return cast(RunConf, OmegaConf.to_object(merged))  # (a RunConf: the merge's structure is RunConf's)
    except MissingMandatoryValue as err:
        key = getattr(err, "full_key", None) or "a value"
        raise ConfigError(f"{key} must be set: add {key}=VALUE to the command") from None
    except OmegaConfBaseException as err:
        first = str(err).strip().splitlines()[0]
        key = getattr(err, "full_key", None)
        raise ConfigError(f"bad config{f' at {key}' if key else ''}: {first}") from None


@dataclass(frozen=True)
class Key:
    """Where a dotted key lands in RunConf's schema."""
    known: bool
    path: str  # known: the key; unknown: the key up to its first unknown part
    siblings: tuple[str, ...] = ()  # unknown: the names known at that level
    free: bool = False  # a free-form mapping or inside one (scaffold.options, model.kwargs.X): any name goes
    nullable: str | None = None  # a node on the way that is null by default (judge, model.price)


@cache
def _fields(cls: type) -> dict[str, tuple[Any, bool]]:
    """A dataclass's fields: name -> (type without Optional, whether it defaults to None)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if typing.get_origin(tp) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0] if len(args) == 1 else Any
        out[f.name] = (tp, f.default is None)
    return out


def _is_mapping(tp: Any) -> bool:
    return (typing.get_origin(tp) or tp) is dict


def lookup(key: str) -> Key:
    """Whether a dotted key (`budget.max_steps`, `scaffold.options.patch`) names a setting of RunConf."""
    cls: Any = RunConf
    parts = key.split(".")
    nullable = None
    for i, part in enumerate(parts):
        path = ".".join(parts[:i + 1])
        fields = _fields(cls) if isinstance(cls, type) and dataclasses.is_dataclass(cls) else {}
        if part not in fields:
            return Key(False, path, tuple(fields))
        cls, null = fields[part]
        if null and dataclasses.is_dataclass(cls) and nullable is None and i < len(parts) - 1:
            nullable = path
        if _is_mapping(cls):
            return Key(True, key, free=True, nullable=nullable)
    return Key(True, key, nullable=nullable)


@cache
def _all_paths() -> tuple[str, ...]:
    """Every setting two levels deep (`rollouts`, `budget.max_steps`): where a key put in the wrong place may be."""
    out = []
    for name, (tp, _) in _fields(RunConf).items():
        out.append(name)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            out += [f"{name}.{sub}" for sub in _fields(tp)]
    return tuple(out)


def suggest(key: str, extra: tuple[str, ...] = ()) -> str | None:
    """The known key nearest to an unknown one (`extra`: group names that may be meant at the top level)."""
    where = lookup(key)
    bad = where.path.rsplit(".", 1)[-1]
    parent = where.path.rpartition(".")[0]
    near = difflib.get_close_matches(bad, list(where.siblings) + list(extra if not parent else ()), n=1)
    if near:
        return (f"{parent}.{near[0]}" if parent else near[0]) + key[len(where.path):]
    # Misplaced (max_steps for budget.max_steps) or misspelt in the wrong group (model.temprature).
    by_name = {p: p.rsplit(".", 1)[-1] for p in _all_paths()}
    near = difflib.get_close_matches(bad, list(by_name.values()), n=1)
    return next((p for p, name in by_name.items() if near and name == near[0]), None)


def unknown_key(key: str, value: str | None = None, extra: tuple[str, ...] = ()) -> str:
    """One line for a key the schema lacks, with the nearest known key, written as the override to use."""
    where = lookup(key)
    parent = where.path.rpartition(".")[0]
    what = "key" if parent else "group or key"
    if (guess := suggest(key, extra)) is not None:
        return f"unknown {what} {where.path}: did you mean {guess}{'' if value is None else '=' + value}?"
    if parent:
        return f"unknown key {where.path}: {parent} has {', '.join(where.siblings)}"
    groups = f"groups are {', '.join(extra)}; " if extra else ""
    return f"unknown group or key {where.path}: {groups}keys are {', '.join(where.siblings)} (see --help)"


def _stray_key(node: DictConfig, cls: Any, prefix: str) -> str | None:
    """The first key of a composed node that its schema class lacks."""
    fields = _fields(cls)
    for name in node.keys():
        if name not in fields:
            return f"{prefix}{name!s}"
        tp = fields[name][0]
        child = node._get_node(name)
        if dataclasses.is_dataclass(tp) and isinstance(child, DictConfig) and not child._is_none() \
                and not child._is_missing() and not child._is_interpolation():
            if (stray := _stray_key(child, tp, f"{prefix}{name}.")) is not None:
                return stray
    return None


def validate(cfg: DictConfig | dict[str, Any]) -> RunConf:
    """Check a composed config; returns the typed config or raises ConfigError (one line)."""
    conf = typed(cfg)
    _check(conf)
    return conf


def _check(conf: RunConf) -> None:
    from harness.tasks import SOURCES
    from runner.executors import EXECUTORS, missing_extra
    from scaffolds import NAMES, make_config

    if conf.rollouts < 1:
        raise ConfigError(f"rollouts must be at least 1, got {conf.rollouts}")
    if conf.parallel < 1:
        raise ConfigError(f"parallel must be at least 1, got {conf.parallel}")
    if conf.infra_retries < 0:
        raise ConfigError(f"infra_retries must be 0 or more, got {conf.infra_retries}")
    if conf.rollout_attempts < 1:
        raise ConfigError(f"rollout_attempts must be at least 1, got {conf.rollout_attempts}")
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
    if (missing := missing_extra(conf.executor.kind)) is not None:
        raise ConfigError(missing)
    problems = conf.executor.problems()
    if problems:
        raise ConfigError(f"executor.{problems[0]}")
    problems = conf.sandbox.problems()
    if problems:
        raise ConfigError(f"sandbox.{problems[0]}")
    if not isolates(conf.sandbox.provider) and not conf.sandbox.allow_unsandboxed:
        raise ConfigError(f"sandbox.provider={conf.sandbox.provider} runs agents as plain processes of this host, "
                          "with nothing isolating them; to do it all the same add sandbox.allow_unsandboxed=true "
                          "(grading predictions there needs no such setting)")
    if conf.scaffold.name == "installed" and conf.sandbox.rootfs != "image":  # (checked before any install)
        raise ConfigError(f"an installed agent (scaffold=installed/...) is added to each task's image, and "
                          f"sandbox.rootfs={conf.sandbox.rootfs} has none: drop sandbox.rootfs (with sandbox=bwrap, "
                          "Docker builds the images) or use a scaffold of this package (codeact, mini_swe, terminus)")
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
