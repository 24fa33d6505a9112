"""Tall-skinny times small: a (5000 x 160) design matrix projected by a (160 x 320) map."""
import numpy as np

import densela
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(7)
    # many observations, few features, projected onto a basis of 320 columns
    x = rng.standard_normal((5000, 160)) * rng.uniform(0.1, 10.0, size=160)
    w = rng.standard_normal((160, 320)) / np.sqrt(160)
    return {"x": x, "w": w}


def experiment(data):
    c = densela.matmul(data["x"], data["w"])
    return {"c": c, "row_sums": c.sum(axis=1)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
