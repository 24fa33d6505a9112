"""Shared helpers for the spanindex workloads: integer results must match exactly."""

import numpy as np
import perfkit
from perfkit import load_result  # noqa: F401  (pickle storage)


def store_result(result, path):
    perfkit.store_result({k: np.asarray(v) for k, v in result.items()}, path)


def check_equivalence(reference, current):
    assert set(reference) == set(current), (sorted(reference), sorted(current))
    for key in reference:
        ref = np.asarray(reference[key])
        cur = np.asarray(current[key])
        assert ref.shape == cur.shape, f"{key}: shape {cur.shape} != {ref.shape}"
        assert ref.dtype.kind == cur.dtype.kind == "i", f"{key}: dtypes {ref.dtype}, {cur.dtype}"
        if not np.array_equal(ref, cur):
            bad = np.flatnonzero(ref.ravel() != cur.ravel())
            i = int(bad[0])
            raise AssertionError(f"{key}: {bad.size} mismatches, first at {i}: "
                                 f"{cur.ravel()[i]} != {ref.ravel()[i]}")


def random_intervals(rng, n, lo, hi, mean_len):
    """n closed intervals with starts uniform in [lo, hi) and lognormal lengths."""
    starts = rng.integers(lo, hi, size=n)
    lengths = rng.lognormal(np.log(mean_len), 0.8, size=n).astype(np.int64)
    return starts, starts + lengths
