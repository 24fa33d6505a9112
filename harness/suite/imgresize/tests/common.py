"""Shared helpers for the imgresize workloads: result storage and comparison."""

import numpy as np
import perfkit
from perfkit import load_result  # noqa: F401  (pickle storage)


def store_result(result, path):
    perfkit.store_result({k: np.asarray(v) for k, v in result.items()}, path)


def check_equivalence(reference, current):
    assert sorted(reference) == sorted(current), "result keys differ"
    for key in reference:
        ref, cur = np.asarray(reference[key]), np.asarray(current[key])
        assert ref.shape == cur.shape, f"{key}: shape {ref.shape} vs {cur.shape}"
        assert ref.dtype == cur.dtype, f"{key}: dtype {ref.dtype} vs {cur.dtype}"
        if ref.dtype.kind == "f":
            assert np.allclose(ref, cur, rtol=1e-7, atol=1e-9), (
                f"{key}: max abs diff {np.max(np.abs(ref - cur))}")
        else:
            assert np.array_equal(ref, cur), f"{key}: values differ"
