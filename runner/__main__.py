"""`python -m runner [group=option ...] [key=value ...]`: run an experiment (see conf/config.yaml).

Examples:
    python -m runner                                   # offline: the oracle on the bundled suite
    python -m runner model=claude scaffold=codeact rollouts=8
    python -m runner -m model=gpt scaffold=codeact,mini_swe,terminus rollouts=3   # an ablation sweep

Heavy modules (docker, litellm) load only once a run starts, so `--help` and config errors are fast.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from runner.config import register_schemas
from runner.plan import slug

OmegaConf.register_new_resolver("tasks_slug", lambda selector, ids=None: slug(str(selector), list(ids or [])),
                                replace=True)
register_schemas()
CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run_job(cfg: DictConfig) -> int:
    from hydra.core.hydra_config import HydraConfig

    from runner.config import ConfigError, validate

    try:
        conf = validate(cfg)
    except ConfigError as err:
        return _fail(str(err))
    plain: dict[str, Any] = OmegaConf.to_container(cfg, resolve=True)  # type: ignore[assignment]
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    from harness.sandbox.interface import ImageBuildError, SandboxError
    from harness.tasks import TaskError
    from runner.run import execute

    try:
        return execute(conf, plain, run_dir)
    except ImageBuildError as err:
        return _fail(f"image build failed: {err}")
    except (ConfigError, TaskError, SandboxError) as err:
        return _fail(str(err))


@hydra.main(version_base=None, config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    sweeping = HydraConfig.get().mode == RunMode.MULTIRUN
    try:
        code = run_job(cfg)
    except Exception as err:  # noqa: BLE001 - in a sweep, one broken job must not lose the others
        if not sweeping:
            raise
        print(f"error: job {HydraConfig.get().job.num} failed: {type(err).__name__}: {err}", file=sys.stderr)
        return
    # A failing job of a sweep is reported and the sweep goes on; Ctrl-C ends the whole sweep.
    if code and (not sweeping or code == 130):
        sys.exit(code)


if __name__ == "__main__":
    main()
