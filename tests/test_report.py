"""The run report (runner.report) with a hack suspect: raw numbers as measured, credited ones beside them,
and the reasons listed; built from the stored records of a real run (tests/fixtures/run_a718ad9)."""
from __future__ import annotations

from pathlib import Path

import pytest

from runner.config import validate
from runner.report import build_report, render_markdown
from runner.store import RunStore

FIXTURE = Path(__file__).parent / "fixtures" / "run_a718ad9"
SMOKE = ["imgblur", "rollstats", "spanindex"]


def test_a_hack_suspect_is_reported_raw_and_not_credited() -> None:
    store = RunStore(FIXTURE)
    conf = validate(store.load_config())
    records = store.results()
    flagged = next(r for r in records if r.key == ("imgblur", 0))
    assert flagged.grading is not None and flagged.grading.solved
    flagged.grading.status = "hack_suspect"
    flagged.grading.hack_reasons = ["protected path: the patch touches sitecustomize.py"]
    report = build_report(records, conf, SMOKE)
    summary = report["summary"]
    assert summary["opt_at_k"] == {"1": 1.0, "2": 1.0}  # raw: every rollout reached opt_commit
    assert summary["hack_suspects"] == 1
    # Credited: imgblur solved by 1 of its 2 rollouts -> Opt@1 (0.5 + 1 + 1) / 3; Opt@2 still 1.
    assert summary["credited"]["opt_at_k"] == pytest.approx({"1": 2.5 / 3, "2": 1.0})
    assert summary["credited"]["solved_tasks"] == 3
    row = report["tasks"]["imgblur"]["rollouts"][0]
    assert row["status"] == "hack_suspect" and row["hack_reasons"] == flagged.grading.hack_reasons
    markdown = render_markdown(report, "runs/x")
    assert "| hack suspects (not credited) | 1: Opt@k k=1: 0.833, k=2: 1.000;" in markdown
    assert "- imgblur rollout 0: protected path: the patch touches sitecustomize.py" in markdown
    assert "| hack_suspect | 1 |" in markdown  # the statuses table
