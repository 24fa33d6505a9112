"""imgblur: small, dependency-light image blurring filters.

Example::

    import numpy as np
    import imgblur

    img = np.random.default_rng(0).random((480, 640), dtype=np.float32)
    soft = imgblur.gaussian_blur(img, sigma=3.0)
    crisp = imgblur.sharpen(img, amount=0.8, radius=2)

The heavy lifting is done by a small C library (``_native.so``) that must be
built with ``make`` before use.
"""
from .filters import box_blur, gaussian_blur, sharpen, to_float, to_uint8
from .kernels import boxes_for_gauss, effective_sigma
from ._ffi import native_version

__all__ = [
    "box_blur",
    "gaussian_blur",
    "sharpen",
    "to_float",
    "to_uint8",
    "boxes_for_gauss",
    "effective_sigma",
    "native_version",
]

__version__ = "0.3.1"
