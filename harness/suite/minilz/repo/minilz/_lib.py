"""ctypes bindings for the native codec (built by ``make`` as ``_native.so``)."""
import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_PATH = os.path.join(_HERE, "_native.so")

try:
    lib = ctypes.CDLL(_PATH)
except OSError as exc:  # pragma: no cover - depends on the build
    raise ImportError(
        f"minilz native library not found at {_PATH}; run `make` in the repository root"
    ) from exc

_u8p = ctypes.POINTER(ctypes.c_uint8)

lib.mlz_bound.argtypes = [ctypes.c_size_t]
lib.mlz_bound.restype = ctypes.c_size_t

lib.mlz_compress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, _u8p, ctypes.c_size_t]
lib.mlz_compress.restype = ctypes.c_size_t

lib.mlz_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, _u8p, ctypes.c_size_t]
lib.mlz_decompress.restype = ctypes.c_size_t

SIZE_ERROR = ctypes.c_size_t(-1).value
