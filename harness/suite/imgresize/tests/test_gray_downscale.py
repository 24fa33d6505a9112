"""Large float grayscale image downscaled by about 4x (bilinear)."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(7)
    yy, xx = np.mgrid[0:1200, 0:1600]
    img = 0.5 + 0.25 * np.sin(xx / 37.0) * np.cos(yy / 23.0) + 0.05 * rng.standard_normal((1200, 1600))
    return img


def experiment(img):
    return {"small": ir.resize(img, (300, 420))}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
