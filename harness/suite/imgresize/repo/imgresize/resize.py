"""Resampling: nearest-neighbour and bilinear resize.

Both methods use pixel-centre alignment: output pixel ``i`` maps to source
coordinate ``(i + 0.5) * in_size / out_size - 0.5``, as in most image
libraries (``align_corners=False``).
"""
import math

import numpy as np

from .util import as_image, check_size

METHODS = ("nearest", "bilinear")


def resize_nearest(img, size) -> np.ndarray:
    """Nearest-neighbour resize to ``size = (height, width)``; keeps the input dtype."""
    img = as_image(img)
    out_h, out_w = check_size(size)
    in_h, in_w = img.shape[:2]
    rows = np.minimum(np.floor((np.arange(out_h) + 0.5) * (in_h / out_h)).astype(np.intp), in_h - 1)
    cols = np.minimum(np.floor((np.arange(out_w) + 0.5) * (in_w / out_w)).astype(np.intp), in_w - 1)
    return img[rows[:, None], cols[None, :]]


def _source_position(i: int, scale: float, limit: int):
    """Source index pair and weight for output index ``i`` along one axis."""
    s = (i + 0.5) * scale - 0.5
    if s < 0.0:
        s = 0.0
    elif s > limit - 1:
        s = float(limit - 1)
    i0 = int(s)
    i1 = min(i0 + 1, limit - 1)
    return i0, i1, s - i0


def resize_bilinear(img, size) -> np.ndarray:
    """Bilinear resize to ``size = (height, width)``.

    The result is always float64 (use :func:`imgresize.to_dtype` to convert
    back). Source coordinates are clamped to the image, so edge pixels are
    replicated rather than blended with zeros.
    """
    img = as_image(img)
    out_h, out_w = check_size(size)
    in_h, in_w = img.shape[:2]
    src = img.astype(np.float64)
    out = np.empty((out_h, out_w) + img.shape[2:], dtype=np.float64)
    scale_y = in_h / out_h
    scale_x = in_w / out_w
    for y in range(out_h):
        y0, y1, wy = _source_position(y, scale_y, in_h)
        for x in range(out_w):
            x0, x1, wx = _source_position(x, scale_x, in_w)
            top = src[y0, x0] * (1.0 - wx) + src[y0, x1] * wx
            bottom = src[y1, x0] * (1.0 - wx) + src[y1, x1] * wx
            out[y, x] = top * (1.0 - wy) + bottom * wy
    return out


def resize(img, size, method: str = "bilinear") -> np.ndarray:
    """Resize ``img`` to ``size = (height, width)`` with ``method`` in :data:`METHODS`."""
    if method == "nearest":
        return resize_nearest(img, size)
    if method == "bilinear":
        return resize_bilinear(img, size)
    raise ValueError(f"unknown method {method!r}; choose from {METHODS}")


def rescale(img, factor: float, method: str = "bilinear") -> np.ndarray:
    """Resize by a scale ``factor`` (output sizes are rounded, at least 1 pixel)."""
    img = as_image(img)
    if factor <= 0:
        raise ValueError("factor must be positive")
    h, w = img.shape[:2]
    size = (max(1, int(math.floor(h * factor + 0.5))), max(1, int(math.floor(w * factor + 0.5))))
    return resize(img, size, method)
