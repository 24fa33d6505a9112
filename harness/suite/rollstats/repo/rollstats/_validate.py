"""Input checking shared by the public functions."""
import numpy as np


def as_series(values):
    """Return ``values`` as a contiguous 1-D float64 array (NaN allowed)."""
    arr = np.ascontiguousarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"expected a 1-D series, got an array with shape {arr.shape}")
    return arr


def check_window(window):
    """Validate a window length and return it as an int."""
    if isinstance(window, bool) or int(window) != window:
        raise TypeError(f"window must be an integer, got {window!r}")
    window = int(window)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    return window


def check_ddof(ddof, window):
    ddof = int(ddof)
    if ddof < 0 or ddof >= window:
        raise ValueError(f"ddof must be in [0, window), got {ddof} for window {window}")
    return ddof
