"""Plain comma-separated floats: 8 columns, no missing values, no header."""
import numpy as np

import csvnum
import perfkit
from common import check_equivalence, format_matrix, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(11)
    values = rng.normal(50.0, 20.0, size=(8_500, 8))
    return {"text": format_matrix(values, ",", "{:.6f}")}


def experiment(data):
    return {"matrix": csvnum.parse(data["text"], delimiter=",")}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
