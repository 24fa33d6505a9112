"""Workload: box blur of one large float32 grayscale image at two small radii."""
import numpy as np

import imgblur
import perfkit
from common import check_equivalence, load_result, random_image, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(1234)
    return {"img": random_image(rng, (2000, 2160), np.float32), "radii": [1, 2]}


def experiment(data):
    return [imgblur.box_blur(data["img"], r) for r in data["radii"]]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
