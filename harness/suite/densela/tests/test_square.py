"""Square product of two dense 640 x 640 matrices."""
import numpy as np

import densela
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(20240611)
    a = rng.standard_normal((640, 640))
    b = rng.uniform(-1.0, 1.0, size=(640, 640))
    return {"a": a, "b": b}


def experiment(data):
    c = densela.matmul(data["a"], data["b"])
    return {"c": c}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
