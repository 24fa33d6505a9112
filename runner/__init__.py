"""The rollout orchestrator: plans tasks x rollouts, runs them under limits, hands diffs to the grader.

__main__.py  the Hydra app (`python -m runner`); config.py its schema, built on each layer's own config
plan.py      which tasks and rollouts          rollout.py   one rollout under limits, with retries
executors/   where rollouts run (local)        run.py       one experiment, phase by phase
records.py   typed records                     store.py     the run directory, its only owner
grading.py   a run's gradings                  grade.py     `python -m runner.grade`
report.py    report.json / report.md           progress.py  the live display
study.py     runs loaded for comparison        aggregate.py `python -m runner.aggregate`
plots.py     the study plots                   truncate.py  post-hoc step truncation
"""
