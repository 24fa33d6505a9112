"""Long window (3,000) over a series with NaN gaps and a large constant offset."""
import numpy as np

import perfkit
import rollstats
from common import check_equivalence, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(404)
    n = 10_000
    x = 1.0e5 + np.cumsum(rng.normal(0, 0.05, n)) + rng.normal(0, 1.0, n)
    for start in rng.choice(n - 20, 6, replace=False):
        x[start:start + rng.integers(1, 20)] = np.nan  # sensor dropouts
    return {"x": x, "window": 3_000}


def experiment(data):
    return rollstats.rolling_summary(data["x"], data["window"], ddof=1)


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
