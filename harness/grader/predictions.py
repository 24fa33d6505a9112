"""GSO predictions files: `{instance_id, model_patch, model_name_or_path}` records, JSONL or a JSON list.

Everything is checked before anything is graded, so a bad file costs nothing and leaves nothing
half-written; every problem is one line naming the file and the line (or id) at fault.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


class PredictionsError(ValueError):
    """The one line to show for a bad predictions file."""


@dataclass(frozen=True)
class Prediction:
    instance_id: str
    model_patch: str | None
    model_name_or_path: str
    source: str  # "file:line", for messages


def _records(path: Path) -> tuple[str, list[tuple[int, object]]]:
    """("item", records) for a JSON list, ("line", records) for JSONL; numbers are 1-based."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise PredictionsError(f"{path}: cannot read predictions file ({getattr(err, 'strerror', None) or err})") \
            from None
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise PredictionsError(f"{path}: not valid JSON at line {err.lineno}: {err.msg}") from None
        if not data:
            raise PredictionsError(f"{path}: no predictions in the file")
        return "item", [(i + 1, item) for i, item in enumerate(data)]
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as err:
            raise PredictionsError(f"{path}:{number}: not a JSON object ({err.msg}); expected one JSON "
                                   "object per line (JSONL) or a JSON list") from None
    if not records:
        raise PredictionsError(f"{path}: no predictions in the file")
    return "line", records


def load_predictions(path: Path, known_ids: set[str]) -> list[Prediction]:
    """Parse and check one file: required fields, types, known and unique instance ids."""
    seen: dict[str, str] = {}
    out = []
    kind, records = _records(path)
    for number, record in records:
        where = f"{path}:{number}" if kind == "line" else f"{path} item {number}"
        if not isinstance(record, dict):
            raise PredictionsError(f"{where}: expected an object with instance_id and model_patch")
        for field in ("instance_id", "model_patch"):
            if field not in record:
                raise PredictionsError(f"{where}: missing '{field}'")
        instance_id, patch = record["instance_id"], record["model_patch"]
        if not isinstance(instance_id, str):
            raise PredictionsError(f"{where}: 'instance_id' should be a string, got {instance_id!r}")
        if patch is not None and not isinstance(patch, str):
            raise PredictionsError(f"{where}: 'model_patch' should be a string (a diff) or null")
        if instance_id not in known_ids:
            raise PredictionsError(f"{where}: unknown instance_id '{instance_id}' (not among the selected tasks)")
        if instance_id in seen:
            raise PredictionsError(f"{where}: duplicate instance_id '{instance_id}' (first at {seen[instance_id]})")
        seen[instance_id] = where
        out.append(Prediction(instance_id, patch, str(record.get("model_name_or_path", "")), where))
    return out
