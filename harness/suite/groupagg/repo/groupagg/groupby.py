"""Group-by with simple aggregations."""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple, Union

import numpy as np

from .table import Table

AGGREGATIONS = ("sum", "mean", "count", "min", "max")


def _result_dtype(func: str, dtype: np.dtype) -> np.dtype:
    """The dtype of an aggregated column, given the input column dtype."""
    if func == "count":
        return np.dtype(np.int64)
    if func == "mean":
        return np.dtype(np.float64)
    if func == "sum" and (dtype.kind in "iub"):
        return np.dtype(np.int64)
    return dtype


def _reduce(func: str, values: np.ndarray):
    if func == "sum":
        return values.sum()
    if func == "mean":
        return values.mean()
    if func == "count":
        return len(values)
    if func == "min":
        return values.min()
    if func == "max":
        return values.max()
    raise ValueError(f"unknown aggregation {func!r}")


class GroupBy:
    """Rows of a :class:`Table` grouped by the values of one or more key columns.

    Groups appear in ascending key order in every result (lexicographic order of
    the key tuple when grouping by several columns).
    """

    def __init__(self, table: Table, keys: Union[str, Sequence[str]]):
        if isinstance(keys, str):
            keys = [keys]
        keys = list(keys)
        if not keys:
            raise ValueError("group_by needs at least one key column")
        for k in keys:
            kind = table[k].dtype.kind
            if kind not in "iubUS":
                raise TypeError(f"key column {k!r} has unsupported dtype {table[k].dtype}")
        self.table = table
        self.keys = keys

    def _check_specs(self, specs: Dict[str, Tuple[str, str]]) -> None:
        for out, spec in specs.items():
            if not (isinstance(spec, tuple) and len(spec) == 2):
                raise TypeError(f"aggregation {out!r} must be a (column, function) tuple")
            col, func = spec
            if func not in AGGREGATIONS:
                raise ValueError(f"unknown aggregation {func!r}; choose from {AGGREGATIONS}")
            if out in self.keys:
                raise ValueError(f"output name {out!r} clashes with a key column")
            if func != "count" and self.table[col].dtype.kind not in "iubf":
                raise TypeError(f"cannot {func} non-numeric column {col!r}")

    def agg(self, **specs: Tuple[str, str]) -> Table:
        """Aggregate each group.

        Each keyword is an output column name mapped to ``(column, function)``
        with ``function`` one of :data:`AGGREGATIONS`. Returns a table holding the
        key columns followed by the aggregated columns, one row per group.
        """
        self._check_specs(specs)
        table = self.table
        value_cols = []
        for col, _ in specs.values():
            if col not in value_cols:
                value_cols.append(col)

        # Collect the values of every row into per-group lists.
        key_lists = [table[k].tolist() for k in self.keys]
        groups: Dict[tuple, Dict[str, list]] = {}
        for i in range(len(table)):
            key = tuple(kl[i] for kl in key_lists)
            bucket = groups.get(key)
            if bucket is None:
                bucket = {c: [] for c in value_cols}
                groups[key] = bucket
            for c in value_cols:
                bucket[c].append(table[c][i])

        ordered = sorted(groups)
        out: Dict[str, np.ndarray] = {}
        for j, k in enumerate(self.keys):
            out[k] = np.array([key[j] for key in ordered], dtype=table[k].dtype)
        for name, (col, func) in specs.items():
            dtype = table[col].dtype
            results = []
            for key in ordered:
                values = np.array(groups[key][col], dtype=dtype)
                results.append(_reduce(func, values))
            out[name] = np.array(results, dtype=_result_dtype(func, dtype))
        return Table(out)

    def size(self) -> Table:
        """Number of rows in each group, as a column named ``count``."""
        return self.agg(count=(self.keys[0], "count"))

    def sum(self, column: str) -> Table:
        return self.agg(**{column: (column, "sum")})

    def mean(self, column: str) -> Table:
        return self.agg(**{column: (column, "mean")})
