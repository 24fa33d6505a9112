"""`python -m runner [group=option ...] [key=value ...]`: run an experiment (see conf/config.yaml).

Examples:
    python -m runner                                   # offline: the oracle on the bundled suite
    python -m runner model=claude scaffold=codeact rollouts=8
    python -m runner -m model=gpt scaffold=codeact,mini_swe,terminus rollouts=3   # an ablation sweep

The command line is checked and put in Hydra's terms first (runner/overrides.py): a mistake there is one
`error: ` line and exit code 2 before Hydra creates any directory. Heavy modules (docker, litellm) load only
once a run starts, so `--help` and config errors are fast.
"""
from __future__ import annotations

import shutil
import os
import sys
from pathlib import Path
from typing import Any, cast

import hydra
from omegaconf import DictConfig, OmegaConf

from runner import CONF_DIR, read_dotenv
from runner.config import ConfigError, register_schemas
from runner.conftree import groups_help
from runner.overrides import model_slug, prepare
from runner.plan import slug

OmegaConf.register_new_resolver("tasks_slug", lambda selector, ids=None: slug(str(selector), list(ids or [])),
                                replace=True)
OmegaConf.register_new_resolver("model_slug", model_slug, replace=True)  # model.id from model.name (overrides.py)
OmegaConf.register_new_resolver("runner_groups", groups_help, replace=True)  # --help (conf/config.yaml)
register_schemas()
# Hydra creates the run directory before the job starts; whether the output root existed is known only
# before Hydra runs (cli() sets it from the command line).
ROOT_EXISTED = True


STOP_CODES = (129, 130, 143)  # SIGHUP, Ctrl-C, SIGTERM
FAILED_JOBS: list[int] = []  # a sweep's exit codes of jobs that failed: the sweep goes on, then exits non-zero
SWEEP: dict[str, Any] = {}  # a sweep's directory and how many of its jobs started (cli() reads them)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def forget_refused(run_dir: Path, root: Path, keep_root: bool = True, made: frozenset[str] | None = None) -> None:
    """Remove what a run refused before any rollout started left: Hydra's directory, and, when the
    directory held no run before this command (`made`: the names this command found there, Hydra's own),
    what the run wrote since (config.yaml, .lock, the access check's record); then the parents left empty,
    up to `root` (included unless `keep_root`). A directory with a finished rollout, or that held a run
    before, keeps its config.yaml and so is left as it is."""
    if not run_dir.is_dir():
        return
    if made is not None:
        _forget_written(run_dir, made)
    if (run_dir / "config.yaml").exists():
        return
    if any(p.name not in (".hydra", "__main__.log") for p in run_dir.iterdir()):
        return  # something else lives there: not ours to delete
    shutil.rmtree(run_dir, ignore_errors=True)
    parent = run_dir.parent
    root = root.resolve()
    stop = root if keep_root else root.parent
    while parent.resolve() != stop and root in (parent.resolve(), *parent.resolve().parents):
        try:
            parent.rmdir()  # only when empty
        except OSError:
            break
        parent = parent.parent


def _forget_written(run_dir: Path, made: frozenset[str]) -> None:
    """Remove what this command wrote in `run_dir` (the names not in `made`), unless a rollout started there or
    another process holds the directory (two commands started together on one new directory: the refused one
    must not remove the other's config.yaml): the removal happens under the directory's lock."""
    from runner.lock import RunLock
    from runner.store import LOCK_NAME, RunStore

    if RunStore(run_dir).has_started():
        return
    lock = RunLock(run_dir, "cleanup")
    try:
        lock.acquire()
    except ConfigError:  # held by another process (RunDirBusy), or a lock file that is not ours: leave it all
        return
    try:
        for path in run_dir.iterdir():
            if path.name not in made and path.name != LOCK_NAME:
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    finally:
        lock.release()
    if LOCK_NAME not in made:
        (run_dir / LOCK_NAME).unlink(missing_ok=True)


def run_job(cfg: DictConfig) -> int:
    from hydra.core.hydra_config import HydraConfig

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    root = Path(str(cfg.get("output_root", "outputs")))
    # A directory that holds no run yet is this command's to remove again if the run is refused.
    made = None if (run_dir / "config.yaml").exists() else frozenset(p.name for p in run_dir.iterdir())
    try:
        code = _run_job(cfg, run_dir)
    except BaseException:
        forget_refused(run_dir, root, ROOT_EXISTED)
        raise
    if code:  # what it wrote goes only for a refusal (2): a stopped run keeps what it has (129, 130, 143)
        forget_refused(run_dir, root, ROOT_EXISTED, made if code == 2 else None)
    return code


def _run_job(cfg: DictConfig, run_dir: Path) -> int:
    from runner.config import validate

    try:
        conf = validate(cfg)
    except ConfigError as err:
        return _fail(str(err))
    plain = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True))  # (a DictConfig's: a dict)
    from harness import signals
    from harness.atomic import write_problem
    from harness.sandbox.interface import ImageBuildError, SandboxError
    from harness.tasks import TaskError
    from runner.run import execute

    try:
        return execute(conf, plain, run_dir)
    except OSError as err:
        if (problem := write_problem(err, str(run_dir))) is None:
            raise
        return _fail(f"{problem}; what finished is kept: run the same command again to resume")
    except KeyboardInterrupt as exc:  # before any rollout started (the runner handles it from then on)
        print(f"interrupted ({exc or 'Ctrl-C'}) before any rollout started", file=sys.stderr)
        return signals.exit_code(exc)
    except ImageBuildError as err:
        return _fail(f"image build failed: {err}")
    except (ConfigError, TaskError, SandboxError) as err:
        return _fail(str(err))


@hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    sweeping = HydraConfig.get().mode == RunMode.MULTIRUN
    if sweeping:
        SWEEP.update(dir=Path(HydraConfig.get().sweep.dir), jobs=SWEEP.get("jobs", 0) + 1)
    try:
        code = run_job(cfg)
    except Exception as err:  # noqa: BLE001 - in a sweep, one broken job must not lose the others
        if not sweeping:
            raise
        print(f"error: job {HydraConfig.get().job.num} failed: {type(err).__name__}: {err}", file=sys.stderr)
        FAILED_JOBS.append(1)
        return
    # A failing job of a sweep is reported and the sweep goes on; a stopping signal ends the whole sweep.
    if code and (not sweeping or code in STOP_CODES):
        sys.exit(code)
    if code:
        FAILED_JOBS.append(code)


def cli(argv: list[str] | None = None, prog: str = "python -m runner") -> int:
    """The runner's command line (`python -m runner ...`, `optrunner run ...`): Hydra overrides in `argv`
    (default: sys.argv[1:]); returns the exit code."""
    global ROOT_EXISTED
    from harness.atomic import check_writable

    args = list(sys.argv[1:] if argv is None else argv)
    read_dotenv()  # API keys from ./.env (the environment wins)
    if "--version" in args:  # this tool's version and revision (Hydra's own flag would print Hydra's)
        from runner import version

        print(version())
        return 0
    try:  # a mistake on the command line is one line, before Hydra creates anything
        args = prepare(args, prog)
    except ConfigError as err:
        return _fail(str(err))
    roots = [a.split("=", 1)[1] for a in args if a.startswith("output_root=")]
    output_root = Path(roots[-1] if roots else "outputs")
    ROOT_EXISTED = output_root.exists()
    # Hydra creates the run directory before the job starts: a read-only or full location must be one line.
    if (problem := check_writable(output_root)) is not None:
        return _fail(problem)
    FAILED_JOBS.clear()
    SWEEP.clear()
    saved = sys.argv
    sys.argv = [prog, *args]  # Hydra reads its arguments from sys.argv
    try:
        main()
        sys.stdout.flush()
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BrokenPipeError:  # `--help | head -1`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (no second error at exit)
        return 0
    finally:
        sys.argv = saved
    if FAILED_JOBS:
        _failed_jobs(len(FAILED_JOBS), SWEEP.get("jobs", 0), SWEEP.get("dir"), output_root)
        return FAILED_JOBS[0]
    return 0


def _failed_jobs(failed: int, jobs: int, sweep_dir: Path | None, root: Path) -> None:
    """The sweep's last line; when every job was refused, Hydra's multirun.yaml goes too (nothing ran)."""
    if failed < jobs:
        print(f"error: {failed} of the sweep's {jobs} jobs failed (above); the others finished", file=sys.stderr)
        return
    print(f"error: {'the' if jobs == 1 else f'all {jobs}'} job{'s' if jobs > 1 else ''} of the sweep failed (above)",
          file=sys.stderr)
    if sweep_dir is not None and sweep_dir.is_dir() and [p.name for p in sweep_dir.iterdir()] == ["multirun.yaml"]:
        (sweep_dir / "multirun.yaml").unlink()
        forget_refused(sweep_dir, root, ROOT_EXISTED)


if __name__ == "__main__":
    sys.exit(cli())
