"""A batch of count tables: many short integer fields (event counts); a few columns
selected out of order."""
import numpy as np

import csvnum
import perfkit
from common import check_equivalence, format_matrix, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(5)
    texts = []
    for rows in rng.integers(2_200, 2_800, size=48):
        counts = rng.poisson(lam=[0.5, 3, 12, 1, 40, 7, 2, 90, 0.1], size=(int(rows), 9))
        texts.append(format_matrix(counts, ",", "{}"))
    return {"texts": texts, "usecols": [4, 0, 2, 6, -1]}


def experiment(data):
    return {"matrices": [csvnum.parse(text, delimiter=",", usecols=data["usecols"])
                         for text in data["texts"]]}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
