"""Shared helpers for the rollstats performance workloads."""

import numpy as np
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)

RTOL = 1e-7
ATOL = 1e-9


def _check_array(name, ref, cur):
    ref = np.asarray(ref)
    cur = np.asarray(cur)
    assert ref.shape == cur.shape, f"{name}: shape {ref.shape} != {cur.shape}"
    if np.issubdtype(ref.dtype, np.floating):
        assert np.array_equal(np.isnan(ref), np.isnan(cur)), f"{name}: NaN positions differ"
        assert np.allclose(ref, cur, rtol=RTOL, atol=ATOL, equal_nan=True), (
            f"{name}: max abs diff {np.nanmax(np.abs(ref - cur))}")
    else:
        assert np.array_equal(ref, cur), f"{name}: values differ"


def check_equivalence(reference, current):
    assert sorted(reference) == sorted(current), "result keys differ"
    for key in reference:
        ref, cur = reference[key], current[key]
        if isinstance(ref, np.ndarray):
            _check_array(key, ref, cur)
        else:
            assert ref == cur, f"{key}: {ref!r} != {cur!r}"
