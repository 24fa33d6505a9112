"""Input checking and dtype conversion."""
from typing import Tuple

import numpy as np


def as_image(img) -> np.ndarray:
    """Return ``img`` as a numpy array after checking it is ``(H, W)`` or ``(H, W, C)``."""
    arr = np.asarray(img)
    if arr.ndim not in (2, 3):
        raise ValueError(f"expected an (H, W) or (H, W, C) array, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"image has no pixels: shape {arr.shape}")
    if arr.dtype.kind not in "uifb":
        raise TypeError(f"unsupported image dtype {arr.dtype}")
    return arr


def check_size(size) -> Tuple[int, int]:
    """Validate an output size given as ``(height, width)``."""
    try:
        h, w = (int(s) for s in size)
    except (TypeError, ValueError):
        raise TypeError(f"size must be a (height, width) pair, got {size!r}") from None
    if h < 1 or w < 1:
        raise ValueError(f"output size must be positive, got {(h, w)}")
    return h, w


def to_dtype(img: np.ndarray, dtype) -> np.ndarray:
    """Convert a (typically float) image to ``dtype``.

    Integer targets are rounded to nearest and clipped to the dtype's range;
    float targets are a plain cast.
    """
    dtype = np.dtype(dtype)
    img = np.asarray(img)
    if dtype.kind in "ui":
        info = np.iinfo(dtype)
        return np.clip(np.rint(img), info.min, info.max).astype(dtype)
    if dtype.kind == "b":
        return img >= 0.5
    return img.astype(dtype)
