"""Shared helpers for the groupagg workloads: result storage and comparison."""

import numpy as np
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)


def table_to_plain(table):
    """A picklable snapshot of a Table: ordered (name, array) pairs."""
    return [(name, np.array(table[name])) for name in table.columns]


def check_tables(reference, current):
    """reference/current are lists of (name, array) as built by table_to_plain."""
    ref_names = [n for n, _ in reference]
    cur_names = [n for n, _ in current]
    assert ref_names == cur_names, f"columns differ: {ref_names} vs {cur_names}"
    for (name, ref), (_, cur) in zip(reference, current):
        assert ref.dtype == cur.dtype, f"{name}: dtype {ref.dtype} vs {cur.dtype}"
        assert ref.shape == cur.shape, f"{name}: shape {ref.shape} vs {cur.shape}"
        if ref.dtype.kind == "f":
            assert np.allclose(ref, cur, rtol=1e-9, atol=1e-9, equal_nan=True), (
                f"{name}: float values differ (max abs diff {np.nanmax(np.abs(ref - cur))})"
            )
        else:
            assert np.array_equal(ref, cur), f"{name}: values differ"


def check_equivalence(reference, current):
    """Results are dicts of label -> table snapshot."""
    assert sorted(reference) == sorted(current), "result labels differ"
    for label in reference:
        check_tables(reference[label], current[label])
