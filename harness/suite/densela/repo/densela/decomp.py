"""Cholesky factorisation and symmetric positive definite solves."""
import numpy as np

from ._lib import lib
from .core import ShapeError, as_matrix, as_vector


class NotPositiveDefinite(np.linalg.LinAlgError):
    """The matrix handed to :func:`cholesky` is not positive definite."""


def cholesky(a):
    """Lower-triangular ``L`` with ``L @ L.T == a``."""
    a = as_matrix(a, "a")
    n, n2 = a.shape
    if n != n2:
        raise ShapeError(f"cholesky needs a square matrix, got {a.shape}")
    out = np.empty((n, n), dtype=np.float64)
    status = lib.dl_cholesky(a, out, n)
    if status:
        raise NotPositiveDefinite(f"leading minor {status} is not positive")
    return out


def solve_spd(a, b):
    """Solve ``a @ x = b`` for a symmetric positive definite ``a``."""
    l = cholesky(a)
    x = np.array(as_vector(b, "b"), copy=True)
    if x.shape[0] != l.shape[0]:
        raise ShapeError(f"right-hand side of length {x.shape[0]} for {a.shape}")
    lib.dl_cholesky_solve(l, x, l.shape[0])
    return x
