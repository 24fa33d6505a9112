"""A batch of plain comma-separated float files: 8 columns, no missing values, no header."""
import numpy as np

import csvnum
import perfkit
from common import check_equivalence, format_matrix, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(11)
    texts = []
    for rows in rng.integers(1_800, 2_400, size=24):
        values = rng.normal(50.0, 20.0, size=(int(rows), 8))
        texts.append(format_matrix(values, ",", "{:.6f}"))
    return {"texts": texts}


def experiment(data):
    return {"matrices": [csvnum.parse(text, delimiter=",") for text in data["texts"]]}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
