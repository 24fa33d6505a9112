"""Shared helpers for the imgblur performance workloads."""

import numpy as np
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)


def random_image(rng, shape, dtype):
    """Smooth-ish synthetic image: a gradient plus texture plus noise."""
    h, w = shape[0], shape[1]
    # Separable, so computed on one row and one column and broadcast: the same values as on a full
    # mgrid, at a fraction of the (untimed, but paid on every run) setup cost.
    xx = np.arange(w, dtype=np.float64)[None, :]
    yy = np.arange(h, dtype=np.float64)[:, None]
    base = 0.5 + 0.25 * np.sin(xx / 17.0) * np.cos(yy / 23.0) + 0.15 * (xx / max(w, 1))
    if len(shape) == 3:
        base = np.repeat(base[:, :, None], shape[2], axis=2)
        base = base * np.linspace(0.8, 1.1, shape[2])[None, None, :]
    img = base + 0.2 * rng.standard_normal(shape)
    img = np.clip(img, 0.0, 1.0)
    if dtype == np.uint8:
        return np.rint(img * 255.0).astype(np.uint8)
    return img.astype(np.float32)


def _check_array(ref, cur):
    ref = np.asarray(ref)
    cur = np.asarray(cur)
    assert ref.shape == cur.shape, "shape mismatch %r vs %r" % (ref.shape, cur.shape)
    assert ref.dtype == cur.dtype, "dtype mismatch %s vs %s" % (ref.dtype, cur.dtype)
    if ref.dtype == np.uint8:
        assert np.array_equal(ref, cur), "uint8 images differ in %d pixels" % int(np.count_nonzero(ref != cur))
    else:
        assert np.allclose(ref, cur, rtol=1e-6, atol=1e-6), "float images differ, max abs diff %g" % float(
            np.max(np.abs(ref.astype(np.float64) - cur.astype(np.float64)))
        )


def check_equivalence(reference, current):
    if isinstance(reference, (list, tuple)):
        assert isinstance(current, (list, tuple)) and len(reference) == len(current), "result count differs"
        for ref, cur in zip(reference, current):
            _check_array(ref, cur)
    else:
        _check_array(reference, current)
