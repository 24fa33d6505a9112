"""densela: small dense linear algebra on row-major float64 matrices."""
from .core import ShapeError, chain, matmul, matvec, transpose
from .decomp import NotPositiveDefinite, cholesky, solve_spd
from .stats import center, correlation, covariance, gram

__all__ = [
    "ShapeError",
    "NotPositiveDefinite",
    "matmul",
    "matvec",
    "transpose",
    "chain",
    "gram",
    "center",
    "covariance",
    "correlation",
    "cholesky",
    "solve_spd",
]
__version__ = "0.3.1"
