"""Small uint8 RGB image upscaled about 2x (bilinear; float64 result plus summary statistics)."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(8)
    return rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)


def experiment(img):
    big = ir.resize(img, (120, 170), method="bilinear")
    return {"big": big, "stats": np.array([big.sum(), big.min(), big.max()])}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
