"""Many short integer fields (event counts); a few columns selected out of order."""
import numpy as np

import csvnum
import perfkit
from common import check_equivalence, format_matrix, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(5)
    rows, cols = 13_000, 9
    counts = rng.poisson(lam=[0.5, 3, 12, 1, 40, 7, 2, 90, 0.1], size=(rows, cols))
    return {"text": format_matrix(counts, ",", "{}"), "usecols": [4, 0, 2, 6, -1]}


def experiment(data):
    return {"matrix": csvnum.parse(data["text"], delimiter=",", usecols=data["usecols"])}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
