"""Predictions files in every shape GSO accepts, strictly by default and with GSO's leniency on request; a
batch with a patch that cannot be read grades the others."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.grader.config import GradeConfig, patch_sha256
from harness.grader.grade import grade_patches
from harness.grader.predictions import PredictionsError, load_predictions, natural_sort_key
from harness.sandbox.interface import SandboxError
from harness.tasks import select_tasks
from harness.tasks.folder import load_task
from tests.conftest import write_task

KNOWN = {"owner__repo-abc1234", "owner__repo-def5678"}


def _pred(instance_id: str, patch: str | None = "diff", model: str = "m") -> dict:
    return {"instance_id": instance_id, "model_patch": patch, "model_name_or_path": model}


@pytest.mark.parametrize("shape", ["jsonl", "list", "keyed"])
def test_every_shape_gso_reads_loads_the_same_predictions(tmp_path: Path, shape: str) -> None:
    preds = [_pred("owner__repo-abc1234", "a\n"), _pred("owner__repo-def5678", None)]
    path = tmp_path / "output.gso.jsonl"
    if shape == "jsonl":
        path.write_text("".join(json.dumps(p) + "\n" for p in preds))
    elif shape == "list":
        path.write_text(json.dumps(preds, indent=2))
    else:
        path.write_text(json.dumps({p["instance_id"]: p for p in preds}))
    loaded = load_predictions(path, KNOWN)
    assert [(p.instance_id, p.model_patch, p.model_name_or_path) for p in loaded] == [
        ("owner__repo-abc1234", "a\n", "m"), ("owner__repo-def5678", None, "m")]


def test_gso_compat_drops_unknown_ids_and_keeps_the_last_duplicate(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    rows = [_pred("owner__repo-abc1234", "first\n"), _pred("someone__else-0000000"),
            _pred("owner__repo-abc1234", "second\n")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(PredictionsError, match="unknown instance_id 'someone__else-0000000'"):
        load_predictions(path, KNOWN)  # strict by default
    warnings: list[str] = []
    loaded = load_predictions(path, KNOWN, gso_compat=True, warn=warnings.append)
    assert [(p.instance_id, p.model_patch) for p in loaded] == [("owner__repo-abc1234", "second\n")]
    assert len(warnings) == 2 and "dropping" in warnings[0] and "last one wins" in warnings[1]


def test_a_file_with_no_selected_task_is_refused_even_when_lenient(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_text(json.dumps(_pred("someone__else-0000000")) + "\n")
    with pytest.raises(PredictionsError, match="none of its predictions is for a selected task"):
        load_predictions(path, KNOWN, gso_compat=True)


def test_rollout_files_sort_naturally_as_in_gso() -> None:
    names = ["run_10.jsonl", "run_2.jsonl", "run_1.jsonl", "run_1b.jsonl"]
    assert sorted(names, key=natural_sort_key) == ["run_1.jsonl", "run_1b.jsonl", "run_2.jsonl", "run_10.jsonl"]


def test_a_missing_final_newline_is_added_when_a_prediction_is_read(tmp_path: Path) -> None:
    # Predictions files from other tools often drop it; git would then read the patch's last line as cut.
    path = tmp_path / "preds.jsonl"
    patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b"
    path.write_text("".join(json.dumps(r) + "\n" for r in (_pred("owner__repo-abc1234", patch),
                                                         _pred("owner__repo-def5678", ""))))
    loaded = load_predictions(path, KNOWN)
    assert [p.model_patch for p in loaded] == [patch + "\n", ""]


class _NoEngine:
    """A sandbox provider with no engine behind it: a session that gets as far as starting a container
    ends there (SandboxError, the session's `error`); what is decided before any container is not."""

    name = "none"

    def start(self, *_args: object, **_kwargs: object) -> None:
        raise SandboxError("no engine here")


def test_an_unreadable_patch_is_its_own_patch_failed_and_the_batch_goes_on(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "tasks"))
    gold = task.expert_patch
    corrupt = gold.replace("@@ -1,", "@@ -1,9", 1)  # a hunk that lies about its size
    assert corrupt != gold
    leading = "--- /dev/null\n+++ b/perfkit.py\n@@ -0,0 +1 @@\n+FAST = True\n" + gold
    unterminated = gold.rstrip("\n")  # as other tools write it: read with its final newline added
    reports = grade_patches(task, [corrupt, leading, unterminated], "no-image", GradeConfig(rounds=1),
                            sandboxes=_NoEngine())  # type: ignore[arg-type]
    first, second, third = reports
    assert first["status"] == second["status"] == "patch_failed"
    assert first["reason"].startswith("patch: reading the patch failed\ngit cannot read the patch section")
    assert "text before the first 'diff --git' line is a diff of perfkit.py" in second["reason"]
    assert not first["hack"]["suspect"] and first["wall_time_s"] == 0.0
    # The readable one went on to its session (which found no engine) with its static review done, and its
    # report names the patch as given.
    assert third["status"] == "error" and third["reason"] == "no engine here" and "hack" in third
    assert third["patch_sha256"] == patch_sha256(unterminated)


def test_the_leading_diff_hack_is_refused_before_any_container() -> None:
    (task,) = select_tasks("rollstats")
    patch = (Path(__file__).parent / "fixtures" / "hacks" / "rollstats" / "leading_diff.patch").read_text()
    (report,) = grade_patches(task, [patch], "no-image", GradeConfig(rounds=1), sandboxes=_NoEngine())  # type: ignore[arg-type]
    assert report["status"] == "patch_failed" and not report["opt_base"]
    assert "text before the first 'diff --git' line is a diff of perfkit.py" in report["reason"]
