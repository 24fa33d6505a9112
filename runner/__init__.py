"""The rollout orchestrator: plans tasks x rollouts, runs them under limits, hands diffs to the grader.

__main__.py  the Hydra app (`optrunner run`, `python -m runner`); config.py its schema, built on each
             layer's own config; overrides.py the command line checked before Hydra composes it
             (conftree.py: the groups and options it knows); sweep_check.py every sweep job checked first
plan.py      which tasks and rollouts          rollout.py   one rollout under limits, with retries
executors/   where rollouts run (local, ray)   run.py       one experiment, phase by phase
records.py   typed records                     store.py     the run directory, its only owner (lock.py)
identity.py  what makes two runs the same      checkpoints.py  rollouts' checkpoints (resume mid-episode)
grading.py   a run's gradings                  grade.py     `optrunner grade RUN_DIR`
report.py    report.json / report.md           progress.py  the live display (live.py, late_calls.py)
study.py     runs loaded for comparison        aggregate.py `optrunner aggregate`; compare.py `compare`
plots.py     the study plots                   truncate.py  post-hoc step truncation
tables.py    CSV / LaTeX / parquet tables      provenance.py  provenance as report lines
judge.py     `optrunner judge` (judging.py)    view.py      `optrunner view` (pages/: the HTML)
export.py    `optrunner export` (atif.py)      manual.py    `optrunner docs` (the shipped pages)
cli.py       the `optrunner` command: one entry point over all of the above
"""
import os
from pathlib import Path

__version__ = "0.2.0"  # the package's one version string (pyproject.toml reads it from here)


def version() -> str:
    """This tool's version and the git revision it runs from (a checkout) or was built from (`--version`)."""
    from harness.provenance import source_state

    state = source_state()
    if not state.get("revision"):
        return f"optrunner {__version__} (revision unknown)"
    built = "built from " if state.get("built") else ""
    return f"optrunner {__version__} ({built}git {state['revision'][:12]}{', modified' if state.get('dirty') else ''})"


def read_dotenv(folder: Path | None = None) -> list[str]:
    """Variables from `.env` in the working directory (or `folder`) that the environment does not set, as
    Harbor, Inspect and mini-swe-agent read them: API keys kept out of the shell's history. The environment
    wins over the file; the file is never written. Returns the names set."""
    path = (folder or Path.cwd()) / ".env"
    if not path.is_file():
        return []
    from dotenv import dotenv_values

    values = dotenv_values(path)
    added = [k for k, v in values.items() if v is not None and k not in os.environ]
    for name in added:
        os.environ[name] = str(values[name])
    return added


# Hydra's configs: conf/ at the top of a checkout; inside the package (runner/conf) once installed (setup.py).
_INSTALLED_CONF = Path(__file__).resolve().parent / "conf"
CONF_DIR = _INSTALLED_CONF if _INSTALLED_CONF.is_dir() else Path(__file__).resolve().parent.parent / "conf"
