"""Trailing rolling-window statistics.

Every function returns an array as long as its input. Position ``i`` holds the
statistic of the window ``x[i - window + 1 : i + 1]``; the first ``window - 1``
positions, whose window is incomplete, are NaN. A NaN inside a window makes
that window's result NaN.
"""
import numpy as np

from ._validate import as_series, check_ddof, check_window


def _empty_like(x):
    return np.full(x.shape[0], np.nan, dtype=np.float64)


def rolling_mean(x, window):
    """Arithmetic mean of each trailing window."""
    x = as_series(x)
    window = check_window(window)
    out = _empty_like(x)
    for end in range(window, x.shape[0] + 1):
        out[end - 1] = x[end - window:end].mean()
    return out


def rolling_var(x, window, ddof=1):
    """Variance of each trailing window (``ddof=1``: sample variance)."""
    x = as_series(x)
    window = check_window(window)
    ddof = check_ddof(ddof, window)
    out = _empty_like(x)
    for end in range(window, x.shape[0] + 1):
        out[end - 1] = x[end - window:end].var(ddof=ddof)
    return out


def rolling_std(x, window, ddof=1):
    """Standard deviation of each trailing window (``ddof=1``: sample std)."""
    x = as_series(x)
    window = check_window(window)
    ddof = check_ddof(ddof, window)
    out = _empty_like(x)
    for end in range(window, x.shape[0] + 1):
        out[end - 1] = x[end - window:end].std(ddof=ddof)
    return out


def rolling_min(x, window):
    """Minimum of each trailing window."""
    x = as_series(x)
    window = check_window(window)
    out = _empty_like(x)
    for end in range(window, x.shape[0] + 1):
        out[end - 1] = x[end - window:end].min()
    return out


def rolling_max(x, window):
    """Maximum of each trailing window."""
    x = as_series(x)
    window = check_window(window)
    out = _empty_like(x)
    for end in range(window, x.shape[0] + 1):
        out[end - 1] = x[end - window:end].max()
    return out


def rolling_range(x, window):
    """Peak-to-peak spread (max - min) of each trailing window."""
    return rolling_max(x, window) - rolling_min(x, window)


def rolling_summary(x, window, ddof=1):
    """All rolling statistics at once, as a dict of equally long arrays."""
    return {
        "mean": rolling_mean(x, window),
        "std": rolling_std(x, window, ddof=ddof),
        "min": rolling_min(x, window),
        "max": rolling_max(x, window),
    }
