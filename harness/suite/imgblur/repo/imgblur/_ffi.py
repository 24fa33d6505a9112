"""ctypes bindings for the compiled kernels in ``_native.so``.

The shared library is built by ``make`` at the repository root.  This module
only declares prototypes and exposes thin, type-checked wrappers; all argument
validation that concerns shapes and dtypes happens in :mod:`imgblur.filters`.
"""
import ctypes
import os

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIB_PATH = os.path.join(_HERE, "_native.so")

try:
    _lib = ctypes.CDLL(_LIB_PATH)
except OSError as exc:  # pragma: no cover - depends on the build
    raise ImportError(
        "imgblur native library not found at %s; run `make` in the repository root" % _LIB_PATH
    ) from exc

_f32_p = ctypes.POINTER(ctypes.c_float)
_u8_p = ctypes.POINTER(ctypes.c_uint8)
_int = ctypes.c_int

_lib.ib_box_blur_f32.argtypes = [_f32_p, _f32_p, _int, _int, _int]
_lib.ib_box_blur_f32.restype = _int
_lib.ib_box_blur_u8.argtypes = [_u8_p, _u8_p, _int, _int, _int]
_lib.ib_box_blur_u8.restype = _int
_lib.ib_version.argtypes = []
_lib.ib_version.restype = ctypes.c_char_p


def native_version():
    """Return the version string compiled into the native library."""
    return _lib.ib_version().decode("ascii")


def box_blur_plane(plane, radius):
    """Box-blur one contiguous 2-D plane (float32 or uint8) and return a new array."""
    h, w = plane.shape
    out = np.empty_like(plane)
    if plane.dtype == np.float32:
        rc = _lib.ib_box_blur_f32(plane.ctypes.data_as(_f32_p), out.ctypes.data_as(_f32_p), h, w, radius)
    elif plane.dtype == np.uint8:
        rc = _lib.ib_box_blur_u8(plane.ctypes.data_as(_u8_p), out.ctypes.data_as(_u8_p), h, w, radius)
    else:  # guarded by the caller
        raise TypeError("unsupported dtype %s" % plane.dtype)
    if rc != 0:
        raise RuntimeError("native box blur failed with code %d" % rc)
    return out
