"""Workload: three-pass gaussian approximation on a float32 image, two sigmas."""
import numpy as np

import imgblur
import perfkit
from common import check_equivalence, load_result, random_image, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(7)
    return {"img": random_image(rng, (1350, 1600), np.float32), "sigmas": [1.5, 2.0]}


def experiment(data):
    return [imgblur.gaussian_blur(data["img"], s) for s in data["sigmas"]]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
