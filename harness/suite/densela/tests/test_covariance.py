"""Sample covariance (X^T X after centering) of 14000 correlated observations of 120 variables."""
import numpy as np

import densela
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(31337)
    n, d = 14000, 120
    latent = rng.standard_normal((n, 8))
    mix = rng.standard_normal((8, d))
    x = latent @ mix + 0.5 * rng.standard_normal((n, d)) + rng.uniform(-50, 50, size=d)
    return {"x": x}


def experiment(data):
    cov = densela.covariance(data["x"])
    return {"cov": cov}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
