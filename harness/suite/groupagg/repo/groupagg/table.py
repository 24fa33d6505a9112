"""The Table container: an ordered set of equally long numpy columns."""
from __future__ import annotations

from typing import Dict, Iterable, List, Mapping, Sequence, Union

import numpy as np

ColumnLike = Union[np.ndarray, Sequence]


class Table:
    """An immutable-ish columnar table.

    Columns are stored as one-dimensional numpy arrays; all columns have the
    same length. Operations return new tables and never modify ``self``.
    """

    def __init__(self, columns: Mapping[str, ColumnLike] | None = None):
        self._columns: Dict[str, np.ndarray] = {}
        length = None
        for name, values in (columns or {}).items():
            arr = np.asarray(values)
            if arr.ndim != 1:
                raise ValueError(f"column {name!r} must be one-dimensional, got shape {arr.shape}")
            if length is None:
                length = len(arr)
            elif len(arr) != length:
                raise ValueError(
                    f"column {name!r} has length {len(arr)}, expected {length}"
                )
            self._columns[str(name)] = arr
        self._length = length or 0

    # ------------------------------------------------------------------ basics
    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, object]], columns: Sequence[str] | None = None) -> "Table":
        """Build a table from an iterable of dicts (one dict per row)."""
        records = list(records)
        if columns is None:
            columns = list(records[0].keys()) if records else []
        return cls({c: np.array([r[c] for r in records]) for c in columns})

    def to_records(self) -> List[dict]:
        """Return the rows as a list of plain-Python dicts."""
        lists = {name: col.tolist() for name, col in self._columns.items()}
        return [{name: lists[name][i] for name in lists} for i in range(self._length)]

    @property
    def columns(self) -> List[str]:
        return list(self._columns)

    @property
    def num_rows(self) -> int:
        return self._length

    def __len__(self) -> int:
        return self._length

    def __contains__(self, name: str) -> bool:
        return name in self._columns

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._columns[name]
        except KeyError:
            raise KeyError(f"no column named {name!r}; have {self.columns}") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Table):
            return NotImplemented
        return self.columns == other.columns and all(
            np.array_equal(self[c], other[c]) for c in self.columns
        )

    def __repr__(self) -> str:
        cols = ", ".join(f"{n}:{c.dtype}" for n, c in self._columns.items())
        return f"Table({self._length} rows; {cols})"

    # -------------------------------------------------------------- transforms
    def select(self, names: Sequence[str]) -> "Table":
        """Return a table with only the given columns, in the given order."""
        return Table({n: self[n] for n in names})

    def with_column(self, name: str, values: ColumnLike) -> "Table":
        """Return a copy with ``name`` added (or replaced)."""
        cols = dict(self._columns)
        cols[name] = np.asarray(values)
        return Table(cols)

    def rename(self, mapping: Mapping[str, str]) -> "Table":
        return Table({mapping.get(n, n): c for n, c in self._columns.items()})

    def take(self, indices: np.ndarray) -> "Table":
        """Return the rows at ``indices`` (an integer array), in that order."""
        indices = np.asarray(indices, dtype=np.intp)
        return Table({n: c[indices] for n, c in self._columns.items()})

    def filter(self, mask: ColumnLike) -> "Table":
        """Keep the rows where the boolean ``mask`` is true."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self._length,):
            raise ValueError(f"mask has shape {mask.shape}, table has {self._length} rows")
        return Table({n: c[mask] for n, c in self._columns.items()})

    def head(self, n: int = 5) -> "Table":
        return Table({name: c[:n] for name, c in self._columns.items()})

    def sort_by(self, keys: Union[str, Sequence[str]], descending: bool = False) -> "Table":
        """Sort by one or several columns (the first key is the primary one).

        Ascending sorts are stable; ``descending=True`` reverses the ascending order.
        """
        if isinstance(keys, str):
            keys = [keys]
        if not keys:
            return self
        # np.lexsort treats its *last* key as the primary one.
        order = np.lexsort([self[k] for k in reversed(keys)])
        if descending:
            order = order[::-1]
        return self.take(order)

    # ----------------------------------------------------------- relational
    def group_by(self, keys: Union[str, Sequence[str]]):
        """Start a group-by on one or several key columns; see :class:`GroupBy`."""
        from .groupby import GroupBy

        return GroupBy(self, keys)

    def join(self, other: "Table", on: str, how: str = "inner", suffix: str = "_right") -> "Table":
        """Join with ``other`` on the key column ``on``; see :func:`groupagg.join`."""
        from .join import join

        return join(self, other, on, how=how, suffix=suffix)


def concat(tables: Sequence[Table]) -> Table:
    """Stack tables with identical column names vertically."""
    tables = list(tables)
    if not tables:
        return Table()
    names = tables[0].columns
    for t in tables[1:]:
        if t.columns != names:
            raise ValueError("all tables must have the same columns in the same order")
    return Table({n: np.concatenate([t[n] for t in tables]) for n in names})
