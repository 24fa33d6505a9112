"""ctypes bindings for the compiled kernels in ``_native.so``."""
import ctypes
import os

import numpy as np

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_native.so")

_i32 = np.ctypeslib.ndpointer(dtype=np.int32, flags="C_CONTIGUOUS")
_i64 = np.ctypeslib.ndpointer(dtype=np.int64, flags="C_CONTIGUOUS")
_long = ctypes.c_long


def _load():
    if not os.path.exists(_PATH):
        raise ImportError("editdist native kernels are not built; run `make` first")
    lib = ctypes.CDLL(_PATH)
    lib.ed_distance.argtypes = [_i32, _long, _i32, _long]
    lib.ed_distance.restype = ctypes.c_int
    lib.ed_distance_matrix.argtypes = [_i32, _i64, _long, _i32, _i64, _long, _i32]
    lib.ed_distance_matrix.restype = ctypes.c_int
    lib.ed_nearest.argtypes = [_i32, _i64, _long, _i32, _i64, _long, _long, _i64, _i32]
    lib.ed_nearest.restype = ctypes.c_int
    lib.ed_within.argtypes = [_i32, _long, _i32, _i64, _long, _long, _i64, _i32]
    lib.ed_within.restype = ctypes.c_long
    return lib


lib = _load()


def check(status):
    """Turn a negative status from the native layer into MemoryError."""
    if status < 0:
        raise MemoryError("editdist: native allocation failed")
    return status
