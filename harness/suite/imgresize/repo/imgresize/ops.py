"""Geometric helpers: cropping, padding, flipping and thumbnails."""
from typing import Tuple

import numpy as np

from .resize import resize
from .util import as_image, check_size


def crop(img, top: int, left: int, height: int, width: int) -> np.ndarray:
    """Return the ``height x width`` window whose top-left corner is ``(top, left)``.

    The window must lie inside the image. The result is a view of ``img``.
    """
    img = as_image(img)
    h, w = img.shape[:2]
    if height < 1 or width < 1:
        raise ValueError("crop size must be positive")
    if top < 0 or left < 0 or top + height > h or left + width > w:
        raise ValueError(f"crop window {(top, left, height, width)} outside image of size {(h, w)}")
    return img[top:top + height, left:left + width]


def center_crop(img, size) -> np.ndarray:
    """Crop the central ``(height, width)`` window (rounding the offset down)."""
    img = as_image(img)
    ch, cw = check_size(size)
    h, w = img.shape[:2]
    return crop(img, (h - ch) // 2, (w - cw) // 2, ch, cw)


def pad_to(img, size, value=0) -> np.ndarray:
    """Pad symmetrically with ``value`` to at least ``(height, width)`` (extra pixel at the end)."""
    img = as_image(img)
    th, tw = check_size(size)
    h, w = img.shape[:2]
    ph, pw = max(th - h, 0), max(tw - w, 0)
    pads = [(ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2)] + [(0, 0)] * (img.ndim - 2)
    return np.pad(img, pads, mode="constant", constant_values=value)


def flip(img, axis: str = "horizontal") -> np.ndarray:
    """Mirror the image left-right (``"horizontal"``) or top-bottom (``"vertical"``)."""
    img = as_image(img)
    if axis == "horizontal":
        return img[:, ::-1]
    if axis == "vertical":
        return img[::-1]
    raise ValueError("axis must be 'horizontal' or 'vertical'")


def fit_size(shape, max_size) -> Tuple[int, int]:
    """Largest ``(height, width)`` with the aspect ratio of ``shape`` that fits in ``max_size``.

    Never larger than ``shape`` itself; each side is at least 1.
    """
    h, w = int(shape[0]), int(shape[1])
    max_h, max_w = check_size(max_size)
    scale = min(max_h / h, max_w / w, 1.0)
    return max(1, min(max_h, int(round(h * scale)))), max(1, min(max_w, int(round(w * scale))))


def _box_reduce(img: np.ndarray, factor: int) -> np.ndarray:
    """Average non-overlapping ``factor x factor`` blocks (trailing rows/cols dropped)."""
    h, w = img.shape[:2]
    h2, w2 = h // factor, w // factor
    blocks = img[:h2 * factor, :w2 * factor].reshape((h2, factor, w2, factor) + img.shape[2:])
    acc = np.zeros((h2, w2) + img.shape[2:], dtype=np.float64)
    for i in range(factor):
        for j in range(factor):
            acc += blocks[:, i, :, j]
    return acc / (factor * factor)


def thumbnail(img, max_size, method: str = "bilinear", reducing_gap: float = 2.0) -> np.ndarray:
    """Shrink ``img`` to fit within ``max_size``, keeping its aspect ratio.

    When the image is more than ``reducing_gap`` times larger than the target,
    it is first reduced by an integer box filter (cheap anti-aliasing), then
    resampled with ``method``. Images already small enough are only resampled
    to their own size, i.e. returned unchanged in value.
    """
    img = as_image(img)
    target = fit_size(img.shape, max_size)
    h, w = img.shape[:2]
    factor = int(min(h / target[0], w / target[1]) / reducing_gap) if reducing_gap else 0
    if factor >= 2:
        img = _box_reduce(img, factor)
    return resize(img, target, method)
