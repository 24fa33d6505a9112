"""ctypes bindings for the native parser (built by ``make`` as ``_native.so``)."""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_PATH = os.path.join(_HERE, "_native.so")

try:
    lib = ctypes.CDLL(_PATH)
except OSError as exc:  # pragma: no cover - depends on the build
    raise ImportError(
        f"csvnum native library not found at {_PATH}; run `make` in the repository root"
    ) from exc

c_double_p = ctypes.POINTER(ctypes.c_double)
c_int64_p = ctypes.POINTER(ctypes.c_int64)

lib.csvnum_parse.argtypes = [
    ctypes.c_char_p,   # buffer (NUL-terminated)
    ctypes.c_size_t,   # length
    ctypes.c_char,     # delimiter
    ctypes.c_int,      # skip header
    c_int64_p,         # field -> output column map
    ctypes.c_size_t,   # map length
    ctypes.c_size_t,   # output columns
    ctypes.POINTER(ctypes.c_size_t),
    ctypes.POINTER(ctypes.c_int),
]
lib.csvnum_parse.restype = c_double_p

lib.csvnum_free.argtypes = [c_double_p]
lib.csvnum_free.restype = None

STATUS_OK = 0
STATUS_ENOMEM = 1
