"""Rolling z-scores and simple anomaly flags."""
import numpy as np

from ._validate import as_series, check_window
from .window import rolling_mean, rolling_std


def rolling_zscore(x, window, ddof=1):
    """Z-score of each point against the ``window`` points *before* it.

    ``z[i] = (x[i] - mean(x[i-window:i])) / std(x[i-window:i])``. The first
    ``window`` entries are NaN (no full history yet); so are points whose
    history has zero spread or contains NaN.
    """
    x = as_series(x)
    window = check_window(window)
    if window < 2:
        raise ValueError("rolling_zscore needs window >= 2")
    n = x.shape[0]
    z = np.full(n, np.nan, dtype=np.float64)
    if n <= window:
        return z
    # statistics of x[i-window:i] sit at index i-1 of the trailing results
    mean = rolling_mean(x, window)[window - 1:n - 1]
    std = rolling_std(x, window, ddof=ddof)[window - 1:n - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = (x[window:] - mean) / std
    scores[~(std > 0)] = np.nan
    z[window:] = scores
    return z


def detect_anomalies(x, window, threshold=3.0, ddof=1):
    """Indices of points whose rolling z-score exceeds ``threshold`` in magnitude."""
    if threshold <= 0:
        raise ValueError("threshold must be positive")
    z = rolling_zscore(x, window, ddof=ddof)
    with np.errstate(invalid="ignore"):
        return np.flatnonzero(np.abs(z) > threshold)


def anomaly_runs(indices, max_gap=1):
    """Group sorted anomaly indices into ``(start, stop)`` runs (stop exclusive).

    Indices at most ``max_gap`` apart are merged into the same run.
    """
    idx = np.asarray(indices, dtype=np.int64)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > max_gap)
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    stops = np.concatenate((idx[breaks], [idx[-1]])) + 1
    return list(zip(starts.tolist(), stops.tolist()))
