"""Rolling min/max/range of a noisy periodic sensor signal with spikes (window 5760: four days of minutes, 21 days)."""
import numpy as np

import perfkit
import rollstats
from common import check_equivalence, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(202)
    n = 30_240
    t = np.arange(n)
    x = 20.0 + 5.0 * np.sin(2 * np.pi * t / 1440) + rng.normal(0, 0.3, n)
    spikes = rng.choice(n, 60, replace=False)
    x[spikes] += rng.normal(0, 15, 60)
    return {"x": x, "window": 5760}


def experiment(data):
    x, w = data["x"], data["window"]
    return {
        "min": rollstats.rolling_min(x, w),
        "max": rollstats.rolling_max(x, w),
        "range": rollstats.rolling_range(x, w),
    }


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
