"""Predictions files in every shape GSO accepts, strictly by default and with GSO's leniency on request."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.grader.predictions import PredictionsError, load_predictions, natural_sort_key

KNOWN = {"owner__repo-abc1234", "owner__repo-def5678"}


def _pred(instance_id: str, patch: str | None = "diff", model: str = "m") -> dict:
    return {"instance_id": instance_id, "model_patch": patch, "model_name_or_path": model}


@pytest.mark.parametrize("shape", ["jsonl", "list", "keyed"])
def test_every_shape_gso_reads_loads_the_same_predictions(tmp_path: Path, shape: str) -> None:
    preds = [_pred("owner__repo-abc1234", "a"), _pred("owner__repo-def5678", None)]
    path = tmp_path / "output.gso.jsonl"
    if shape == "jsonl":
        path.write_text("".join(json.dumps(p) + "\n" for p in preds))
    elif shape == "list":
        path.write_text(json.dumps(preds, indent=2))
    else:
        path.write_text(json.dumps({p["instance_id"]: p for p in preds}))
    loaded = load_predictions(path, KNOWN)
    assert [(p.instance_id, p.model_patch, p.model_name_or_path) for p in loaded] == [
        ("owner__repo-abc1234", "a", "m"), ("owner__repo-def5678", None, "m")]


def test_gso_compat_drops_unknown_ids_and_keeps_the_last_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    rows = [_pred("owner__repo-abc1234", "first"), _pred("someone__else-0000000"),
            _pred("owner__repo-abc1234", "second")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(PredictionsError, match="unknown instance_id 'someone__else-0000000'"):
        load_predictions(path, KNOWN)  # strict by default
    warnings: list[str] = []
    loaded = load_predictions(path, KNOWN, gso_compat=True, warn=warnings.append)
    assert [(p.instance_id, p.model_patch) for p in loaded] == [("owner__repo-abc1234", "second")]
    assert len(warnings) == 2 and "dropping" in warnings[0] and "last one wins" in warnings[1]


def test_a_file_with_no_selected_task_is_refused_even_when_lenient(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_text(json.dumps(_pred("someone__else-0000000")) + "\n")
    with pytest.raises(PredictionsError, match="none of its predictions is for a selected task"):
        load_predictions(path, KNOWN, gso_compat=True)


def test_rollout_files_sort_naturally_as_in_gso() -> None:
    names = ["run_10.jsonl", "run_2.jsonl", "run_1.jsonl", "run_1b.jsonl"]
    assert sorted(names, key=natural_sort_key) == ["run_1.jsonl", "run_1b.jsonl", "run_2.jsonl", "run_10.jsonl"]
