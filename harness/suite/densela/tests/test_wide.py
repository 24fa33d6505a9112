"""Short-and-wide output: a (96 x 400) matrix times a (400 x 5500) one."""
import numpy as np

import densela
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(99)
    a = rng.standard_normal((96, 400))
    b = rng.exponential(1.0, size=(400, 5500))
    b[:, ::7] = 0.0  # some all-zero columns
    return {"a": a, "b": b}


def experiment(data):
    c = densela.matmul(data["a"], data["b"])
    return {"c": c}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
