"""Very short windows (5) over a long price series: per-window overhead dominates."""
import numpy as np

import perfkit
import rollstats
from common import check_equivalence, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(505)
    n = 9_000
    returns = rng.normal(0.0002, 0.01, n)
    prices = 100.0 * np.exp(np.cumsum(returns))
    return {"x": np.round(prices, 2), "window": 5}


def experiment(data):
    x, w = data["x"], data["window"]
    return {"mean": rollstats.rolling_mean(x, w), "var": rollstats.rolling_var(x, w, ddof=0)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
