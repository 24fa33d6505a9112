"""imgresize: small image resampling helpers for numpy arrays.

Images are ``(H, W)`` (grayscale) or ``(H, W, C)`` (channels last) arrays.
"""
from .ops import center_crop, crop, fit_size, flip, pad_to, thumbnail
from .resize import METHODS, rescale, resize, resize_bilinear, resize_nearest
from .util import as_image, to_dtype

__all__ = [
    "METHODS",
    "as_image",
    "center_crop",
    "crop",
    "fit_size",
    "flip",
    "pad_to",
    "rescale",
    "resize",
    "resize_bilinear",
    "resize_nearest",
    "thumbnail",
    "to_dtype",
]
__version__ = "0.5.2"
