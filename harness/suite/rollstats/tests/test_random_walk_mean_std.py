"""Rolling mean and sample std of a drifting random walk (window 1500)."""
import numpy as np

import perfkit
import rollstats
from common import check_equivalence, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(101)
    steps = rng.normal(0.02, 1.0, 17_000)
    return {"x": 1_000.0 + np.cumsum(steps), "window": 1500}


def experiment(data):
    x, w = data["x"], data["window"]
    return {"mean": rollstats.rolling_mean(x, w), "std": rollstats.rolling_std(x, w)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
