"""Helpers that turn filter parameters into box-filter schedules.

A Gaussian blur is approximated by repeated box blurs (three passes give an
error of a few percent, which is plenty for previews and denoising).  The
radii are chosen with the method described by W. Jarosz, "Fast Image
Convolutions" (2001), so that the variance of the composed filter matches
``sigma ** 2`` as closely as integer radii allow.
"""
import math


def boxes_for_gauss(sigma, passes=3):
    """Return a list of ``passes`` box radii approximating a Gaussian of ``sigma``.

    >>> boxes_for_gauss(2.0)
    [1, 1, 2]
    """
    if sigma < 0:
        raise ValueError("sigma must be non-negative")
    if passes < 1:
        raise ValueError("passes must be >= 1")
    if sigma == 0:
        return [0] * passes
    w_ideal = math.sqrt(12.0 * sigma * sigma / passes + 1.0)
    wl = int(math.floor(w_ideal))
    if wl % 2 == 0:
        wl -= 1
    wu = wl + 2
    m_ideal = (12.0 * sigma * sigma - passes * wl * wl - 4 * passes * wl - 3 * passes) / (-4.0 * wl - 4.0)
    m = int(round(m_ideal))
    widths = [wl if i < m else wu for i in range(passes)]
    return [max(0, (wd - 1) // 2) for wd in widths]


def effective_sigma(radii):
    """Standard deviation of the filter obtained by composing box blurs of ``radii``."""
    var = 0.0
    for r in radii:
        n = 2 * r + 1
        var += (n * n - 1) / 12.0
    return math.sqrt(var)
