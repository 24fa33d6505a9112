"""Workload: box blur of an 8-bit RGB photo-sized image (per-channel planes)."""
import numpy as np

import imgblur
import perfkit
from common import check_equivalence, load_result, random_image, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(99)
    return {"img": random_image(rng, (1440, 1920, 3), np.uint8), "radius": 2}


def experiment(data):
    return imgblur.box_blur(data["img"], data["radius"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
