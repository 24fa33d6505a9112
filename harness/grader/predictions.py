"""GSO predictions files: `{instance_id, model_patch, model_name_or_path}` records, as JSONL (GSO's
`output.gso.jsonl`), a JSON list, or a JSON object keyed by instance id.

Everything is checked before anything is graded, so a bad file costs nothing and leaves nothing
half-written; every problem is one line naming the file and the line (or id) at fault. `gso_compat`
mirrors GSO's own leniency instead: predictions for ids outside the dataset are dropped with a warning
and, for a repeated id, the last one wins.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.atomic import plain_name
from harness.grader.patch_paths import with_final_newline


class PredictionsError(ValueError):
    """The one line to show for a bad predictions file."""


@dataclass(frozen=True)
class Prediction:
    instance_id: str
    model_patch: str | None
    model_name_or_path: str
    source: str  # "file:line", for messages


def _keyed(text: str) -> dict[str, object] | None:
    """A JSON object keyed by instance id (GSO accepts one), or None when the text is something else."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None  # JSONL: one object per line
    keyed = isinstance(data, dict) and bool(data) and "instance_id" not in data
    if keyed and all(isinstance(v, dict) for v in data.values()):
        return data
    return None


def _records(path: Path) -> tuple[str, list[tuple[int | str, object]]]:
    """("item", records) for a JSON list, ("id", records) for an object keyed by id, ("line", records) for
    JSONL; numbers are 1-based."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise PredictionsError(f"{path}: cannot read predictions file ({getattr(err, 'strerror', None) or err})") \
            from None
    keyed = _keyed(text)
    if keyed is not None:
        return "id", list(keyed.items())
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise PredictionsError(f"{path}: not valid JSON at line {err.lineno}: {err.msg}") from None
        if not data:
            raise PredictionsError(f"{path}: no predictions in the file")
        return "item", [(i + 1, item) for i, item in enumerate(data)]
    records: list[tuple[int | str, object]] = []
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


def natural_sort_key(name: str) -> list[int | str]:
    """GSO's order of rollout files for Opt@K: numbers inside names compare as numbers (run_2 < run_10)."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


ROLLOUT_NAME = re.compile(r"rollout_(\d+)")


def rollout_numbers(paths: list[Path]) -> list[int]:
    """Each predictions file's rollout number: a file named `rollout_<N>` (any suffix) keeps N, as the runner
    writes them; every other file takes the smallest number not yet taken, in the order given. Numbering by
    position alone would name `rollout_10` `rollout_2` in the shell's lexicographic order."""
    named = [int(m.group(1)) if (m := ROLLOUT_NAME.fullmatch(p.name.split(".", 1)[0])) else None for p in paths]
    taken = [n for n in named if n is not None]
    if len(set(taken)) != len(taken):
        twice = sorted({n for n in taken if taken.count(n) > 1})
        raise PredictionsError(f"two predictions files are named rollout_{twice[0]}: give each rollout one file")
    free = (n for n in range(len(paths) + len(taken)) if n not in set(taken))
    return [n if n is not None else next(free) for n in named]


def load_predictions(path: Path, known_ids: set[str], gso_compat: bool = False,
                     warn: Callable[[str], None] = lambda _m: None) -> list[Prediction]:
    """Parse and check one file: required fields, types, known and unique instance ids."""
    seen: dict[str, str] = {}
    out: dict[str, Prediction] = {}
    kind, records = _records(path)
    for number, record in records:
        where = {"line": f"{path}:{number}", "item": f"{path} item {number}", "id": f"{path} key {number!r}"}[kind]
        if not isinstance(record, dict):
            raise PredictionsError(f"{where}: expected an object with instance_id and model_patch")
        for field in ("instance_id", "model_patch"):
            if field not in record:
                raise PredictionsError(f"{where}: missing '{field}'")
        instance_id, patch = record["instance_id"], record["model_patch"]
        if not isinstance(instance_id, str):
            raise PredictionsError(f"{where}: 'instance_id' should be a string, got {instance_id!r}")
        if kind == "id" and instance_id != number:
            raise PredictionsError(f"{where}: the key and its 'instance_id' ({instance_id!r}) differ")
        if patch is not None and not isinstance(patch, str):
            raise PredictionsError(f"{where}: 'model_patch' should be a string (a diff) or null")
        model_name = record.get("model_name_or_path")
        if model_name is not None and not isinstance(model_name, str) or model_folder(model_name or "x") is None:
            raise PredictionsError(f"{where}: 'model_name_or_path' {model_name!r} cannot name a folder of GSO's "
                                   "report layout; give the model a name")
        if instance_id not in known_ids:
            if gso_compat:
                warn(f"{where}: dropping a prediction for '{instance_id}', which is not among the selected tasks")
                continue
            raise PredictionsError(f"{where}: unknown instance_id '{instance_id}' (not among the selected tasks)")
        if instance_id in seen:
            if not gso_compat:
                raise PredictionsError(f"{where}: duplicate instance_id '{instance_id}' (first at {seen[instance_id]})")
            warn(f"{where}: '{instance_id}' repeats {seen[instance_id]}; the last one wins, as in GSO")
            del out[instance_id]
        seen[instance_id] = where
        # With its final newline, which other tools' files often drop: without it git reads the patch's last
        # line as cut short and refuses the patch (GSO's `patch --fuzz` fallback grades it).
        out[instance_id] = Prediction(instance_id, with_final_newline(patch), str(record.get("model_name_or_path", "")),
                                      where)
    if not out:
        raise PredictionsError(f"{path}: none of its predictions is for a selected task")
    return list(out.values())


def model_folder(name: str) -> str | None:
    """The folder GSO's report layout names after a model (`/` -> `__`, as GSO does); None for a name that
    would leave the layout's folder or name none (".", "..", NUL)."""
    folder = name.replace("/", "__")
    return folder if plain_name(folder) else None
