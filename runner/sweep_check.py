"""Every job of a sweep checked before the first one starts (a Hydra callback, conf/config.yaml).

Hydra runs a sweep's jobs one after another, so a typo in the third value of `scaffold=codeact,mini_swe,x`
would otherwise surface hours in, after two jobs ran. The jobs are expanded the way Hydra's basic sweeper
expands them (`hydra.sweeper.params` and the command's overrides, their cartesian product) and each job's
config is composed and validated; one refused job refuses the sweep, before its directory exists.
"""
from __future__ import annotations

import sys
from typing import Any, cast

from hydra.core.config_loader import ConfigLoader
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf


def job_overrides(config: DictConfig, loader: ConfigLoader) -> list[list[str]]:
    """Each job's overrides, in the order the basic sweeper launches them."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    # Unresolved, as Hydra's sweeper reads them: an override's own interpolation (model.id='${...}') is the job's.
    params_node = config.hydra.sweeper.get("params")
    # (a mapping of overrides and a list of them; OmegaConf's stubs say any container)
    swept = cast(dict[str, Any], OmegaConf.to_container(params_node, resolve=False) if params_node else {})
    task = cast(list[str], OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
    params = [f"{k}={v}" for k, v in swept.items()]
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(params + list(task))
    return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def refusals(config: DictConfig) -> list[str]:
    """One line per job whose config is refused: `job N (overrides): why`."""
    from runner.config import ConfigError, validate
    from runner.overrides import check_job_args

    loader = GlobalHydra.instance().config_loader()
    out = []
    for num, overrides in enumerate(job_overrides(config, loader)):
        try:  # the group options and what they need first: Hydra composes `model=schema_model` and loses `???`
            check_job_args(overrides)
            validate(loader.load_sweep_config(config, overrides))
        except ConfigError as err:
            out.append(f"job {num} ({' '.join(overrides)}): {err}")
        except HydraException as err:  # an unknown group option, a malformed override
            why = str(err).strip().splitlines()[0]
            options = getattr(err, "options", None)
            out.append(f"job {num} ({' '.join(overrides)}): {why}"
                       + (f"; choose one of {', '.join(options)}" if options else ""))
    return out


class CheckSweep(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        for line in (problems := refusals(config)):
            print(f"error: sweep not started: {line}", file=sys.stderr)
        if problems:
            sys.exit(2)
