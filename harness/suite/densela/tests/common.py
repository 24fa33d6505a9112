"""Shared helpers for the densela performance workloads."""

import numpy as np
import perfkit
from perfkit import load_result  # noqa: F401  (pickle storage)


def store_result(result, path):
    perfkit.store_result({k: np.asarray(v) for k, v in result.items()}, path)


def check_equivalence(reference, current, rtol=1e-7, atol=1e-9):
    assert set(reference) == set(current), (sorted(reference), sorted(current))
    for key in reference:
        ref = np.asarray(reference[key])
        cur = np.asarray(current[key])
        assert ref.shape == cur.shape, f"{key}: shape {cur.shape} != {ref.shape}"
        assert ref.dtype == cur.dtype, f"{key}: dtype {cur.dtype} != {ref.dtype}"
        assert np.allclose(cur, ref, rtol=rtol, atol=atol), (
            f"{key}: max abs diff {np.max(np.abs(cur - ref))}"
        )
