"""The live view (runner.progress): a table per task on a terminal, the line-per-rollout log elsewhere."""
from __future__ import annotations

import io
from dataclasses import dataclass

import pytest
from rich.console import Console

from runner.progress import Progress
from runner.records import RolloutRecord
from scaffolds.exits import ExitReason


@dataclass
class Running:  # what Progress reads of a running rollout (runner.live.Live)
    task_id: str
    index: int
    steps: int
    cost: float
    attempt: int = 0
    started_at: float = 0.0


def _finished(task: str, index: int, reason: ExitReason, steps: int, cost: float | None) -> RolloutRecord:
    return RolloutRecord(instance_id=task, rollout=index, exit_reason=reason, steps=steps, cost_usd=cost,
                         wall_time_s=10.0)


def _text(progress: Progress, live: list[Running]) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(progress.task_table(live))
    return console.export_text()


def test_the_task_table_counts_done_running_failed_steps_and_spend(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("run", total=6, done_before=0, cost_before=0.0, parallel=2) as progress:
        progress.finished(_finished("alpha", 0, ExitReason.SUBMITTED, 5, 0.25))
        progress.finished(_finished("alpha", 1, ExitReason.INFRA_ERROR, 2, 0.05))
        progress.finished(_finished("beta", 0, ExitReason.STEP_LIMIT, 10, None))
        text = _text(progress, [Running("alpha", 2, 3, 0.1), Running("gamma", 0, 1, 0.02)])
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in text.splitlines() if line.count("│") == 7}
    assert rows["alpha"] == ["2", "1", "1", "10", "$0.4000"]  # 5 + 2 + 3 steps; 0.25 + 0.05 + 0.10 spent
    assert rows["beta"] == ["1", "0", "-", "10", "$0.0000 + unknown"]  # a step limit is no failure; no price
    assert rows["gamma"] == ["0", "1", "-", "1", "$0.0200"]


def test_without_a_terminal_each_finished_rollout_is_one_log_line(capsys: pytest.CaptureFixture[str]) -> None:
    with Progress("run", total=2, done_before=0, cost_before=0.0, parallel=1) as progress:
        assert not progress.interactive  # (pytest's stderr is no TTY)
        progress.finished(_finished("alpha", 0, ExitReason.SUBMITTED, 5, 0.25))
        progress.update([Running("alpha", 1, 2, 0.01)])
    err = capsys.readouterr().err
    assert "finished alpha #0: submitted, 5 steps, 10 s, $0.2500" in err
    assert "┃" not in err and "│" not in err  # no table drawn into a log
