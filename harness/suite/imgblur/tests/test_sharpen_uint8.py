"""Workload: unsharp-mask sharpening of an 8-bit image with a noise threshold."""
import numpy as np

import imgblur
import perfkit
from common import check_equivalence, load_result, random_image, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(31337)
    return {"img": random_image(rng, (1700, 1900), np.uint8)}


def experiment(data):
    return imgblur.sharpen(data["img"], amount=0.9, radius=4, threshold=3.0)


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
