"""A batch of wide TSV files, each with a header row and ~12% missing cells
(empty, NA, null, ?)."""
import numpy as np

import csvnum
import perfkit
from common import check_equivalence, format_matrix, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(23)
    texts = []
    for k in range(45):
        rows, cols = int(rng.integers(75, 105)), int(rng.integers(140, 180))
        values = (rng.lognormal(0.0, 2.0, size=(rows, cols))
                  * rng.choice([-1, 1], size=(rows, cols)))
        body = format_matrix(values, "\t", "{:.5g}", missing=["", "NA", "null", "?", " "],
                             rng=rng, missing_rate=0.12)
        header = "\t".join(f"f{k:02d}_{i:03d}" for i in range(cols)) + "\n"
        texts.append(header + body)
    return {"texts": texts}


def experiment(data):
    matrices, headers = [], []
    for text in data["texts"]:
        matrices.append(csvnum.parse(text, delimiter="\t", header=True))
        headers.append(csvnum.parse_header(text, delimiter="\t"))
    return {"matrices": matrices, "headers": headers}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
