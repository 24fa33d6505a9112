"""`optrunner judge RUN_DIR --judge MODEL [--votes N] [judge.key=value ...] [--force]` (or `python -m
runner.judge RUN_DIR judge=MODEL ...`): judge a graded run's rollouts with an LLM (hack votes for those that
reached opt_commit, ISO-Bench's soft labels for every one with a patch) and add the judge's sections to its
reports. Judgements are stored per judge (judging/<judge.id>/) and reused while the settings, patch and
grading outcome match, so the command resumes; another judge's judgements are kept, and the reports show
their agreement."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from runner import CONF_DIR
from runner.config import ConfigError

if TYPE_CHECKING:
    from harness.grader.judge.config import JudgeConfig
    from runner.config import RunConf
    from runner.store import RunStore


def judge_config(overrides: list[str]) -> JudgeConfig:
    """The judge's config composed from conf/judging.yaml and the command line's overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from runner.config import check_judge, register_schemas

    register_schemas()
    if not any(o.split("=", 1)[0].lstrip("+") == "judge" for o in overrides):
        raise ConfigError("name the judge: --judge MODEL (one of: "
                          + ", ".join(sorted(p.stem for p in (CONF_DIR / "judge").glob("*.yaml"))) + ")")
    from runner.overrides import check_job_args

    check_job_args(overrides)  # a preset's unset (???) values: OmegaConf would take the schema's defaults
    try:
        with initialize_config_dir(str(CONF_DIR), version_base=None):
            composed = compose(config_name="judging", overrides=overrides)
        # (the judge group's schema is JudgeConfig: to_object makes one; OmegaConf's stubs say any container)
        config = cast("JudgeConfig", OmegaConf.to_object(composed.judge))
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        raise ConfigError(f"bad judge option: {str(err).strip().splitlines()[0]}") from None
    check_judge(config)
    return config


def judge_run(run_dir: Path, overrides: list[str], force: bool = False) -> Path:
    """Judge every graded rollout of the run that this judge has not judged yet; rewrite the reports."""
    from runner.config import validate
    from runner.lock import RunLock
    from runner.store import RunStore

    config = judge_config(overrides)
    store = RunStore(run_dir)
    conf = validate(store.load_config())
    with RunLock(run_dir, "judge"):
        return _judge(store, conf, config, force)


def _judge(store: "RunStore", conf: "RunConf", config: Any, force: bool) -> Path:
    from runner.judging import judge_records
    from runner.plan import select
    from runner.report import write_reports

    run_dir = store.root
    if conf.grade == "none" and not any(r.grading for r in store.results()):
        raise ConfigError(f"{run_dir} is not graded: grade it first (python -m runner.grade {run_dir})")
    tasks = {t.id: t for t in select(conf)}
    records = store.results()
    try:
        judge_records(store, config, tasks, records, force=force, log=lambda m: print(m, flush=True))
    finally:  # what was judged before an interruption is reported too
        write_reports(store, conf, list(tasks))
    return store.report_md


DESCRIPTION = ("Judge a graded run's rollouts with an LLM (hack votes for those that reached opt_commit, soft labels "
               "for every one with a patch) and add the judge's sections to its reports; the command resumes.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, help="the run's directory (outputs/runs/<name>)")
    parser.add_argument("overrides", nargs="*", metavar="judge.KEY=VALUE",
                        help="other judge settings (conf/judging.yaml), e.g. judge.temperature=0")
    parser.add_argument("--judge", metavar="MODEL", help="the judge model's preset (conf/judge/): "
                        + ", ".join(sorted(p.stem for p in (CONF_DIR / "judge").glob("*.yaml"))))
    parser.add_argument("--votes", type=int, metavar="N", help="votes per rollout (the preset's by default)")
    parser.add_argument("--force", action="store_true", help="judge again what this judge judged before")


def overrides_of(args: argparse.Namespace) -> list[str]:
    """The Hydra overrides the options stand for (`judge=MODEL` among the positionals still works)."""
    out = list(args.overrides)
    if args.judge is not None:
        out.insert(0, f"judge={args.judge}")
    if args.votes is not None:
        out.append(f"judge.votes={args.votes}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.judge", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_intermixed_args(argv))  # judge.KEY=VALUE before or after the flags


def run(args: argparse.Namespace) -> int:
    from harness.models.errors import ModelError
    from harness.tasks import TaskError
    from runner.report import report_command

    bad = [o for o in args.overrides if "=" not in o]
    if bad:
        print(f"error: {bad[0]!r} is not a setting: write judge.KEY=VALUE (or --judge MODEL)", file=sys.stderr)
        return 2
    overrides = overrides_of(args)
    return report_command(lambda: judge_run(args.run_dir, overrides, args.force), (ConfigError, TaskError, ModelError),
                          "the judgements made", args.run_dir)


if __name__ == "__main__":
    raise SystemExit(main())
