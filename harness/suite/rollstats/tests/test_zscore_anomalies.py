"""Z-score anomaly detection on a seasonal series with injected outliers and level shifts."""
import numpy as np

import perfkit
import rollstats
from common import check_equivalence, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(303)
    n = 8_000
    t = np.arange(n)
    x = 3.0 * np.sin(2 * np.pi * t / 288) + rng.standard_t(5, n)
    for start in rng.choice(n - 500, 4, replace=False):
        x[start:] += rng.choice([-8.0, 8.0])  # level shifts
    outliers = rng.choice(n, 25, replace=False)
    x[outliers] += rng.choice([-1, 1], 25) * rng.uniform(8, 20, 25)
    return {"x": x, "window": 1500, "threshold": 4.0}


def experiment(data):
    x, w = data["x"], data["window"]
    idx = rollstats.detect_anomalies(x, w, threshold=data["threshold"])
    return {
        "zscore": rollstats.rolling_zscore(x, w),
        "anomalies": idx,
        "runs": rollstats.anomaly_runs(idx, max_gap=2),
    }


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
