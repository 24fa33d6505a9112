"""GSO rows as tasks: every local format `datasets` reads, GSO's exact schema, and nothing of the answer
in what the agent sees."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.tasks import TaskError
from harness.tasks.gso import GsoOptions, GsoSource, check_rows, image_key, to_task
from tests.gso_rows import DIFF, gso_row

ROWS = [gso_row(), gso_row("Acme__fastsum-5e6f7a8", api="fastsum.mean")]


def _write(tmp_path: Path, shape: str, rows: list[dict]) -> Path:
    import datasets

    if shape == "jsonl":
        path = tmp_path / "rows.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif shape == "json":
        path = tmp_path / "rows.json"
        path.write_text(json.dumps(rows))
    elif shape == "parquet":
        path = tmp_path / "rows.parquet"
        datasets.Dataset.from_list(rows).to_parquet(str(path))
    else:  # a save_to_disk folder holding the test split, as `load_dataset(...).save_to_disk` writes it
        path = tmp_path / "gso"
        datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(path))
    return path


@pytest.mark.parametrize("shape", ["jsonl", "json", "parquet", "disk"])
def test_every_local_format_gives_the_same_tasks(tmp_path: Path, shape: str) -> None:
    tasks = GsoSource(warn=lambda m: pytest.fail(m)).select(str(_write(tmp_path, shape, ROWS)))
    assert [t.id for t in tasks] == ["Acme__fastsum-1a2b3c4", "Acme__fastsum-5e6f7a8"]
    first = tasks[0]
    assert first.source == "gso" and first.repo == "Acme/fastsum" and first.expert_patch == DIFF
    assert first.test_names == ("gso_test_0.py", "gso_test_1.py")
    assert dict(first.hidden_files)["gso_test_1.py"].decode() == ROWS[0]["tests"][1]
    assert first.install_commands == tuple(ROWS[0]["install_commands"])
    assert first.base_commit == ROWS[0]["base_commit"] and first.opt_commit == ROWS[0]["opt_commit"]


def test_image_keys_lower_case_the_id() -> None:
    assert image_key(gso_row()) == "gso.eval.x86_64.acme__fastsum-1a2b3c4:latest"


def test_the_agent_sees_nothing_of_the_answer_and_hints_only_on_request() -> None:
    row = gso_row()
    shown = json.dumps(to_task(row).prompt_vars())
    for secret in ("return sum(xs)", row["opt_commit"], row["gt_commit_message"], row["hints_text"],
                   "experiment()"):
        assert secret not in shown
    assert to_task(row, GsoOptions(hints=True)).prompt_vars()["description"] == row["hints_text"]


@pytest.mark.parametrize("change, message", [
    (lambda r: r.pop("gt_diff"), "missing column 'gt_diff'"),
    (lambda r: r.update(tests="python test.py"), "column 'tests' of row 1 (Acme__fastsum-1a2b3c4) should be a list"),
    (lambda r: r.update(install_commands=[1, 2]), "column 'install_commands' of row 1"),
    (lambda r: r.update(opt_commit=None), "column 'opt_commit' of row 1 (Acme__fastsum-1a2b3c4) should be a commit"),
])
def test_a_bad_column_is_one_error_naming_it(change, message: str) -> None:
    row = gso_row()
    change(row)
    with pytest.raises(TaskError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_rows([row], "rows.jsonl")


def test_an_extra_column_is_a_warning_and_a_repeated_id_an_error() -> None:
    warnings: list[str] = []
    check_rows([gso_row(difficulty="hard")], "rows.jsonl", warnings.append)
    assert warnings == ["rows.jsonl: ignoring column(s) GSO rows do not have: difficulty"]
    with pytest.raises(TaskError, match="instance_id 'Acme__fastsum-1a2b3c4' appears twice"):
        check_rows([gso_row(), gso_row()], "rows.jsonl")


def test_bad_files_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="no such file or folder of GSO rows"):
        GsoSource().select(str(tmp_path / "missing.jsonl"))
    (tmp_path / "rows.csv").write_text("instance_id\nx\n")
    with pytest.raises(TaskError, match="expected a .json, .jsonl or .parquet file"):
        GsoSource().select(str(tmp_path / "rows.csv"))
    (tmp_path / "broken.jsonl").write_text('{"instance_id": "x"\n')
    with pytest.raises(TaskError, match="broken.jsonl: cannot read GSO rows"):
        GsoSource().select(str(tmp_path / "broken.jsonl"))
    disk = _write(tmp_path, "disk", ROWS)
    with pytest.raises(TaskError, match="no split 'train' \\(it has test\\)"):
        GsoSource(split="train").select(str(disk))


def test_a_hub_that_does_not_answer_is_one_line_in_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    # A closed local port stands in for the unreachable hub, whatever this machine's network.
    monkeypatch.setenv("HF_ENDPOINT", "https://127.0.0.1:9")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    started = time.monotonic()
    with pytest.raises(TaskError, match="does not answer .*tasks.dataset=PATH"):
        GsoSource().select("gso-bench/gso")
    assert time.monotonic() - started < 10
