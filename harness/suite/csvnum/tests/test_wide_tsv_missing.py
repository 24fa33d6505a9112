"""Wide TSV with a header row and ~12% missing cells (empty, NA, null, ?)."""
import numpy as np

import csvnum
import perfkit
from common import check_equivalence, format_matrix, load_result, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(23)
    rows, cols = 450, 160
    values = rng.lognormal(0.0, 2.0, size=(rows, cols)) * rng.choice([-1, 1], size=(rows, cols))
    body = format_matrix(values, "\t", "{:.5g}", missing=["", "NA", "null", "?", " "],
                         rng=rng, missing_rate=0.12)
    header = "\t".join(f"feature_{i:03d}" for i in range(cols)) + "\n"
    return {"text": header + body}


def experiment(data):
    matrix = csvnum.parse(data["text"], delimiter="\t", header=True)
    return {"matrix": matrix, "header": csvnum.parse_header(data["text"], delimiter="\t")}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
