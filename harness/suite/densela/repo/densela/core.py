"""Basic products: matrix-matrix, matrix-vector and transposition."""
import numpy as np

from ._lib import lib


class ShapeError(ValueError):
    """Raised when operand shapes are incompatible."""


def as_matrix(a, name="a"):
    """Return ``a`` as a C-contiguous 2-D float64 array (copying only if needed)."""
    arr = np.ascontiguousarray(a, dtype=np.float64)
    if arr.ndim != 2:
        raise ShapeError(f"{name} must be 2-D, got {arr.ndim}-D")
    return arr


def as_vector(x, name="x"):
    """Return ``x`` as a C-contiguous 1-D float64 array."""
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-D, got {arr.ndim}-D")
    return arr


def matmul(a, b):
    """Matrix product ``a @ b`` of an (m, k) and a (k, n) matrix."""
    a = as_matrix(a, "a")
    b = as_matrix(b, "b")
    m, k = a.shape
    k2, n = b.shape
    if k != k2:
        raise ShapeError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    out = np.empty((m, n), dtype=np.float64)
    if m and n:
        if k == 0:
            out.fill(0.0)
        else:
            lib.dl_matmul(a, b, out, m, k, n)
    return out


def matvec(a, x):
    """Matrix-vector product ``a @ x``."""
    a = as_matrix(a, "a")
    x = as_vector(x, "x")
    m, n = a.shape
    if x.shape[0] != n:
        raise ShapeError(f"vector of length {x.shape[0]} for matrix {a.shape}")
    out = np.zeros(m, dtype=np.float64)
    if m and n:
        lib.dl_matvec(a, x, out, m, n)
    return out


def transpose(a):
    """Return a new, contiguous transpose of ``a``."""
    a = as_matrix(a, "a")
    m, n = a.shape
    out = np.empty((n, m), dtype=np.float64)
    if m and n:
        lib.dl_transpose(a, out, m, n)
    return out


def chain(*mats):
    """Product of several matrices, evaluated left to right."""
    if not mats:
        raise ValueError("chain() needs at least one matrix")
    acc = as_matrix(mats[0], "mats[0]")
    for i, m in enumerate(mats[1:], start=1):
        acc = matmul(acc, as_matrix(m, f"mats[{i}]"))
    return acc
