"""Left-to-right product of four rectangular matrices of mixed shapes."""
import numpy as np

import densela
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(4242)
    shapes = [(500, 900), (900, 300), (300, 700), (700, 400)]
    mats = [rng.standard_normal(s) / np.sqrt(s[0]) for s in shapes]
    return {"mats": mats}


def experiment(data):
    out = densela.chain(*data["mats"])
    return {"out": out}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
