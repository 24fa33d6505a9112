"""`python -m runner.judge RUN_DIR judge=MODEL [judge.votes=N] [key=value ...] [--force]`: judge a graded
run's rollouts with an LLM (hack votes for those that reached opt_commit, ISO-Bench's soft labels for
every one with a patch) and add the judge's sections to its reports. Judgements are stored per judge
(judging/<judge.id>/) and reused while the settings, patch and grading outcome match, so the command
resumes; another judge's judgements are kept, and the reports show their agreement."""
from __future__ import annotations

import sys
from pathlib import Path

from runner import CONF_DIR
from runner.config import ConfigError



def judge_config(overrides: list[str]):  # -> JudgeConfig
    """The judge's config composed from conf/judging.yaml and the command line's overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from runner.config import check_judge, register_schemas

    register_schemas()
    if not any(o.split("=", 1)[0].lstrip("+") == "judge" for o in overrides):
        raise ConfigError("name the judge: judge=MODEL (one of: "
                          + ", ".join(sorted(p.stem for p in (CONF_DIR / "judge").glob("*.yaml"))) + ")")
    try:
        with initialize_config_dir(str(CONF_DIR), version_base=None):
            composed = compose(config_name="judging", overrides=overrides)
        config = OmegaConf.to_object(composed.judge)
    except (HydraException, OmegaConfBaseException, ValueError) as err:
        raise ConfigError(f"bad judge option: {str(err).strip().splitlines()[0]}") from None
    check_judge(config)
    return config


def judge_run(run_dir: Path, overrides: list[str], force: bool = False) -> Path:
    """Judge every graded rollout of the run that this judge has not judged yet; rewrite the reports."""
    from runner.config import validate
    from runner.judging import judge_records
    from runner.plan import select
    from runner.report import write_reports
    from runner.store import RunStore

    config = judge_config(overrides)
    store = RunStore(run_dir)
    conf = validate(store.load_config())
    if conf.grade == "none" and not any(r.grading for r in store.results()):
        raise ConfigError(f"{run_dir} is not graded: grade it first (python -m runner.grade {run_dir})")
    tasks = {t.id: t for t in select(conf)}
    records = store.results()
    try:
        judge_records(store, config, tasks, records, force=force, log=lambda m: print(m, flush=True))
    finally:  # what was judged before an interruption is reported too
        write_reports(store, conf, list(tasks))
    return store.report_md


def main(argv: list[str] | None = None) -> int:
    from harness.models.errors import ModelError
    from harness.tasks import TaskError

    args = list(sys.argv[1:] if argv is None else argv)
    force = "--force" in args
    args = [a for a in args if a != "--force"]
    if not args or args[0].startswith("-") or "=" in args[0]:
        print("usage: python -m runner.judge RUN_DIR judge=MODEL [judge.votes=N] [key=value ...] [--force]",
              file=sys.stderr)
        return 2
    from runner.report import report_command

    return report_command(lambda: judge_run(Path(args[0]), args[1:], force), (ConfigError, TaskError, ModelError),
                          "the judgements made", Path(args[0]))

if __name__ == "__main__":
    raise SystemExit(main())
