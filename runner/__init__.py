"""The rollout orchestrator: plans tasks x rollouts, runs them under limits, hands diffs to the grader.

__main__.py  the Hydra app (`optrunner run`, `python -m runner`); config.py its schema, built on each
             layer's own config; overrides.py the command line checked before Hydra composes it
plan.py      which tasks and rollouts          rollout.py   one rollout under limits, with retries
executors/   where rollouts run (local, ray)   run.py       one experiment, phase by phase
records.py   typed records                     store.py     the run directory, its only owner
grading.py   a run's gradings                  grade.py     `optrunner grade RUN_DIR`
report.py    report.json / report.md           progress.py  the live display
study.py     runs loaded for comparison        aggregate.py `optrunner aggregate`
plots.py     the study plots                   truncate.py  post-hoc step truncation
tables.py    CSV / LaTeX / parquet tables      checkpoints.py  rollouts' checkpoints (resume mid-episode)
judge.py     `optrunner judge`                 view.py      `optrunner view` (pages/: the HTML)
cli.py       the `optrunner` command: one entry point over all of the above
"""
from pathlib import Path

__version__ = "0.2.0"  # the package's one version string (pyproject.toml reads it from here)


def version() -> str:
    """This tool's version, and the git revision when it runs from a checkout (`--version`)."""
    from harness.provenance import SOURCE_ROOT, git_state

    state = git_state(SOURCE_ROOT)
    if not state.get("revision"):
        return f"optrunner {__version__}"
    return f"optrunner {__version__} (git {state['revision'][:12]}{', modified' if state.get('dirty') else ''})"


# Hydra's configs: conf/ at the top of a checkout; inside the package (runner/conf) once installed (setup.py).
_INSTALLED_CONF = Path(__file__).resolve().parent / "conf"
CONF_DIR = _INSTALLED_CONF if _INSTALLED_CONF.is_dir() else Path(__file__).resolve().parent.parent / "conf"
