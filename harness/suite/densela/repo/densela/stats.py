"""Statistics helpers built on the core products."""
import numpy as np

from ._lib import lib
from .core import ShapeError, as_matrix, matmul, transpose


def gram(x):
    """Gram matrix ``x.T @ x`` of an (n_samples, n_features) matrix."""
    x = as_matrix(x, "x")
    return matmul(transpose(x), x)


def center(x):
    """Return (centered copy of ``x``, column means)."""
    xc = np.array(as_matrix(x, "x"), copy=True)
    m, n = xc.shape
    means = np.zeros(n, dtype=np.float64)
    if m and n:
        lib.dl_center_columns(xc, means, m, n)
    return xc, means


def covariance(x, ddof=1):
    """Sample covariance of the columns of ``x`` (rows are observations)."""
    x = as_matrix(x, "x")
    m = x.shape[0]
    if m - ddof <= 0:
        raise ValueError("not enough observations for the requested ddof")
    xc, _ = center(x)
    g = matmul(transpose(xc), xc)
    g /= (m - ddof)
    return g


def correlation(x):
    """Pearson correlation matrix of the columns of ``x``."""
    c = covariance(x)
    d = np.sqrt(np.diag(c))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = c / np.outer(d, d)
    return r
