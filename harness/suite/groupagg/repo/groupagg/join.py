"""Hash joins between two tables on a single key column."""
from __future__ import annotations

from typing import Dict, List

import numpy as np

from .table import Table

_FILL = {"f": np.nan, "i": 0, "u": 0, "b": False, "U": "", "S": b""}


def _fill_value(dtype: np.dtype):
    return _FILL.get(dtype.kind, None)


def join(left: Table, right: Table, on: str, how: str = "inner", suffix: str = "_right") -> Table:
    """Join ``left`` and ``right`` on equal values of column ``on``.

    ``how`` is ``"inner"`` (only matching rows) or ``"left"`` (every left row;
    right columns of unmatched rows are filled with NaN for floats, 0 for
    integers, False for booleans and the empty string for strings). Left rows
    keep their order; several right matches for one left row appear in right
    order. Right columns whose name clashes with a left column get ``suffix``.
    """
    if how not in ("inner", "left"):
        raise ValueError(f"how must be 'inner' or 'left', not {how!r}")

    index: Dict[object, List[int]] = {}
    for j, key in enumerate(right[on].tolist()):
        index.setdefault(key, []).append(j)

    left_idx: List[int] = []
    right_idx: List[int] = []
    for i, key in enumerate(left[on].tolist()):
        matches = index.get(key)
        if matches:
            left_idx.extend([i] * len(matches))
            right_idx.extend(matches)
        elif how == "left":
            left_idx.append(i)
            right_idx.append(-1)

    li = np.asarray(left_idx, dtype=np.intp)
    ri = np.asarray(right_idx, dtype=np.intp)
    missing = ri < 0

    out = {name: left[name][li] for name in left.columns}
    for name in right.columns:
        if name == on:
            continue
        col = right[name]
        if len(col):
            values = col[np.where(missing, 0, ri)]
        else:
            values = np.zeros(len(ri), dtype=col.dtype)
        if missing.any():
            fill = _fill_value(col.dtype)
            if fill is None:
                raise TypeError(f"cannot fill missing values of column {name!r} ({col.dtype})")
            values = values.copy()
            values[missing] = fill
        out_name = name + suffix if name in out else name
        out[out_name] = values
    return Table(out)
