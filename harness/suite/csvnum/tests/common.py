"""Shared helpers for the csvnum performance workloads."""

import numpy as np
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)


def format_matrix(values, delimiter=",", fmt="{:.6f}", missing=None, rng=None,
                  missing_rate=0.0, line_end="\n"):
    """Render a 2-D array as delimited text.

    If ``missing_rate`` > 0, that fraction of cells (chosen with ``rng``) is
    replaced by a token drawn from ``missing``.
    """
    rows, cols = values.shape
    cells = [[fmt.format(v) for v in row] for row in values.tolist()]
    if missing_rate > 0:
        holes = rng.random((rows, cols)) < missing_rate
        picks = rng.integers(0, len(missing), size=(rows, cols))
        for r, c in zip(*np.nonzero(holes)):
            cells[r][c] = missing[picks[r, c]]
    return line_end.join(delimiter.join(row) for row in cells) + line_end


def _check_matrix(ref, cur):
    """Same shape, NaN in the same cells, and bit-identical numbers elsewhere."""
    ref = np.asarray(ref)
    cur = np.asarray(cur)
    assert cur.dtype == np.float64, cur.dtype
    assert ref.shape == cur.shape, f"shape {ref.shape} != {cur.shape}"
    ref_nan = np.isnan(ref)
    cur_nan = np.isnan(cur)
    assert np.array_equal(ref_nan, cur_nan), (
        f"NaN positions differ in {int((ref_nan != cur_nan).sum())} cells")
    keep = ~ref_nan
    assert np.array_equal(ref[keep].view(np.uint64), cur[keep].view(np.uint64)), (
        "parsed values differ")


def check_equivalence(reference, current):
    """Every parsed matrix matches exactly (see ``_check_matrix``), headers too.

    Results hold either one ``matrix`` (and ``header``) or, for workloads that parse
    a batch of documents, parallel lists ``matrices`` (and ``headers``).
    """
    assert set(reference) == set(current), f"keys {sorted(reference)} != {sorted(current)}"
    if "matrices" in reference:
        assert len(reference["matrices"]) == len(current["matrices"]), (
            f"{len(reference['matrices'])} != {len(current['matrices'])} documents")
        for ref, cur in zip(reference["matrices"], current["matrices"]):
            _check_matrix(ref, cur)
        assert reference.get("headers") == current.get("headers")
    else:
        _check_matrix(reference["matrix"], current["matrix"])
        assert reference.get("header") == current.get("header")
