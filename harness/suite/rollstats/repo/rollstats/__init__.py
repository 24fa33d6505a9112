"""rollstats: rolling-window statistics and anomaly flags for 1-D time series.

>>> import numpy as np, rollstats
>>> rollstats.rolling_mean(np.arange(5.0), 3)
array([nan, nan,  1.,  2.,  3.])
"""
from .anomaly import anomaly_runs, detect_anomalies, rolling_zscore
from .window import (
    rolling_max,
    rolling_mean,
    rolling_min,
    rolling_range,
    rolling_std,
    rolling_summary,
    rolling_var,
)

__all__ = [
    "rolling_mean",
    "rolling_var",
    "rolling_std",
    "rolling_min",
    "rolling_max",
    "rolling_range",
    "rolling_summary",
    "rolling_zscore",
    "detect_anomalies",
    "anomaly_runs",
]
__version__ = "1.2.0"
