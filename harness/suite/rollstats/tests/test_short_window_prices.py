"""Very short windows (5) over many short per-ticker price series: per-call and per-window overhead dominate."""
import numpy as np

import perfkit
import rollstats
from common import check_equivalence, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(505)
    n_tickers, n_days = 650, 32
    returns = rng.normal(0.0002, 0.01, (n_tickers, n_days))
    start = rng.uniform(5.0, 500.0, (n_tickers, 1))
    prices = np.round(start * np.exp(np.cumsum(returns, axis=1)), 2)
    return {"series": list(prices), "window": 5}


def experiment(data):
    w = data["window"]
    means, variances = [], []
    for x in data["series"]:
        means.append(rollstats.rolling_mean(x, w))
        variances.append(rollstats.rolling_var(x, w, ddof=0))
    return {"mean": np.stack(means), "var": np.stack(variances)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
