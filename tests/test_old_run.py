"""A run directory written before the redesign (by a718ad9: `python -m runner tasks=smoke rollouts=2
grading.rounds=3`, the oracle on the three smoke tasks) still loads, resumes and aggregates unchanged.

The fixture lives in tests/fixtures/run_a718ad9 and is never modified; each test works on a copy.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner.aggregate import main as aggregate_main
from runner.config import validate
from runner.records import ResultRecord, RolloutRecord
from runner.report import build_report
from runner.store import RunStore
from tests.test_runner import runner

FIXTURE = Path(__file__).parent / "fixtures" / "run_a718ad9"
RUN_NAME = "oracle_codeact_smoke_smoke_n2"  # the name the same command gives the run
SMOKE = ["imgblur", "rollstats", "spanindex"]


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / RUN_NAME
    shutil.copytree(FIXTURE, path)
    return path


def test_old_records_read_back_as_the_same_json() -> None:
    for line in (FIXTURE / "results.jsonl").read_text().splitlines():
        assert json.dumps(ResultRecord.from_dict(json.loads(line)).to_dict()) == line
    files = sorted(FIXTURE.glob("rollouts/*/*.json"))
    assert len(files) == 6
    for path in files:
        data = json.loads(path.read_text())
        assert json.dumps(RolloutRecord.from_dict(data).to_dict(), indent=1) == path.read_text()


def test_old_report_is_rebuilt_identically() -> None:
    store = RunStore(FIXTURE)
    conf = validate(store.load_config())
    rebuilt = build_report(store.results(), conf, SMOKE)
    stored = json.loads((FIXTURE / "report.json").read_text())
    assert json.dumps(rebuilt, indent=1) == json.dumps(stored, indent=1)  # same numbers, keys and order
    summary = rebuilt["summary"]
    assert summary["opt_at_k"] == {"1": 1.0, "2": 1.0} and summary["n_rollouts"] == 6


def test_old_run_aggregates(old_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "agg"
    code = aggregate_main([str(old_run), "--out", str(out), "--k", "2"])  # `python -m runner.aggregate`, in-process
    assert code == 0, capsys.readouterr().err
    (row,) = json.loads((out / "aggregate.json").read_text())["systems"]
    assert row["system"] == "oracle x codeact x smoke" and row["finished"] == 6
    assert row["opt_at_1"] == row["opt_at_K"] == 1.0 and row["solved_tasks"] == 3
    assert row["cost_usd"] == pytest.approx(sum(r.cost_usd or 0 for r in RunStore(old_run).results()))


@pytest.mark.docker
def test_old_run_resumes_where_it_stopped(old_run: Path) -> None:
    # As if the run had been killed before imgblur's second rollout finished: its files and line are gone,
    # its grading report stays (it matches the same patch, so the resumed run reuses it instead of timing).
    # It was graded before test processes were fenced: it matches a run that turns the fence off.
    (old_run / "rollouts" / "imgblur" / "1.json").unlink()
    (old_run / "trajectories" / "imgblur" / "1.json").unlink()
    lines = (old_run / "results.jsonl").read_text().splitlines(keepends=True)
    kept = [line for line in lines if not ('"instance_id": "imgblur"' in line and '"rollout": 1,' in line)]
    assert len(kept) == 5
    (old_run / "results.jsonl").write_text("".join(kept))
    grading_before = (old_run / "grading" / "imgblur" / "1.json").read_text()

    done = runner("tasks=smoke", "rollouts=2", "grading.rounds=3", "grading.fresh_state=false",
                  out=old_run.parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "5 rollouts already finished, 1 to run" in done.stdout
    after = (old_run / "results.jsonl").read_text()
    assert after.startswith("".join(kept))  # nothing finished before is rewritten or duplicated
    records = RunStore(old_run).results()
    assert len(records) == 6 and len(after.splitlines()) == 6
    redone = next(r for r in records if r.key == ("imgblur", 1))
    assert redone.exit_reason == "submitted" and redone.grading and redone.grading.opt_commit
    assert (old_run / "grading" / "imgblur" / "1.json").read_text() == grading_before
    assert json.loads((old_run / "report.json").read_text())["summary"]["n_rollouts"] == 6
