"""Loading of the compiled kernels (``_native.so``) through ctypes."""
import ctypes
import os

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_PATH = os.path.join(_HERE, "_native.so")

_dptr = np.ctypeslib.ndpointer(dtype=np.float64, flags="C_CONTIGUOUS")
_long = ctypes.c_long


def _load():
    if not os.path.exists(_PATH):
        raise ImportError(
            "densela native kernels are not built; run `make` in the project root"
        )
    lib = ctypes.CDLL(_PATH)
    lib.dl_matmul.argtypes = [_dptr, _dptr, _dptr, _long, _long, _long]
    lib.dl_matmul.restype = None
    lib.dl_matvec.argtypes = [_dptr, _dptr, _dptr, _long, _long]
    lib.dl_matvec.restype = None
    lib.dl_transpose.argtypes = [_dptr, _dptr, _long, _long]
    lib.dl_transpose.restype = None
    lib.dl_center_columns.argtypes = [_dptr, _dptr, _long, _long]
    lib.dl_center_columns.restype = None
    lib.dl_cholesky.argtypes = [_dptr, _dptr, _long]
    lib.dl_cholesky.restype = ctypes.c_int
    lib.dl_cholesky_solve.argtypes = [_dptr, _dptr, _long]
    lib.dl_cholesky_solve.restype = None
    return lib


lib = _load()
