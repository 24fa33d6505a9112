"""Public image filters.

Images are numpy arrays of dtype ``float32`` or ``uint8`` with shape
``(height, width)`` (grayscale) or ``(height, width, channels)``.  Every
filter returns a new array of the same shape and dtype and never modifies its
input.  Pixels beyond the image border are taken from the nearest edge pixel
("clamp" or "replicate" border handling).
"""
import numpy as np

from . import _ffi
from .kernels import boxes_for_gauss

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.uint8))


def _check_image(img):
    img = np.asarray(img)
    if img.dtype not in SUPPORTED_DTYPES:
        raise TypeError("imgblur supports float32 and uint8 images, got %s" % img.dtype)
    if img.ndim not in (2, 3):
        raise ValueError("expected a 2-D or 3-D (H, W, C) image, got shape %r" % (img.shape,))
    return img


def _per_plane(img, func):
    """Apply ``func`` (2-D array -> 2-D array) to every channel of ``img``."""
    if img.ndim == 2:
        return func(np.ascontiguousarray(img))
    out = np.empty_like(img)
    for c in range(img.shape[2]):
        out[:, :, c] = func(np.ascontiguousarray(img[:, :, c]))
    return out


def box_blur(img, radius):
    """Mean filter over a square window of side ``2 * radius + 1``.

    ``radius`` may exceed the image size; the clamped border then simply
    repeats edge pixels.  ``radius == 0`` returns a copy of the image.
    For ``uint8`` images the mean is rounded half up to the nearest integer.
    """
    img = _check_image(img)
    radius = int(radius)
    if radius < 0:
        raise ValueError("radius must be non-negative")
    if radius == 0 or img.size == 0:
        return img.copy()
    return _per_plane(img, lambda plane: _ffi.box_blur_plane(plane, radius))


def gaussian_blur(img, sigma, passes=3):
    """Approximate Gaussian blur of standard deviation ``sigma``.

    Implemented as ``passes`` successive box blurs (see
    :func:`imgblur.kernels.boxes_for_gauss`).  For ``uint8`` images every
    intermediate pass is rounded back to 8 bits.
    """
    img = _check_image(img)
    out = img
    for r in boxes_for_gauss(sigma, passes):
        out = box_blur(out, r)
    if out is img:
        out = img.copy()
    return out


def sharpen(img, amount=1.0, radius=2, threshold=0.0):
    """Unsharp mask: ``img + amount * (img - box_blur(img, radius))``.

    Only pixels whose detail magnitude ``|img - blurred|`` exceeds
    ``threshold`` are changed, which keeps flat regions free of amplified
    noise.  ``uint8`` results are rounded and clipped to ``[0, 255]``.
    """
    img = _check_image(img)
    blurred = box_blur(img, radius)
    src = img.astype(np.float32)
    detail = src - blurred.astype(np.float32)
    if threshold > 0:
        detail = np.where(np.abs(detail) > threshold, detail, np.float32(0))
    result = src + np.float32(amount) * detail
    if img.dtype == np.uint8:
        return np.clip(np.rint(result), 0, 255).astype(np.uint8)
    return result.astype(np.float32)


def to_float(img):
    """Convert a ``uint8`` image to ``float32`` in ``[0, 1]`` (float images pass through)."""
    img = _check_image(img)
    if img.dtype == np.uint8:
        return img.astype(np.float32) / np.float32(255.0)
    return img.copy()


def to_uint8(img):
    """Convert a ``float32`` image in ``[0, 1]`` to ``uint8`` with rounding and clipping."""
    img = _check_image(img)
    if img.dtype == np.uint8:
        return img.copy()
    return np.clip(np.rint(img * np.float32(255.0)), 0, 255).astype(np.uint8)
