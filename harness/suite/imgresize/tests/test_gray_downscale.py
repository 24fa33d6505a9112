"""A stack of float grayscale scans (varied sizes) each downscaled by about 4x (bilinear)."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(7)
    imgs = []
    for i in range(750):
        h, w = int(rng.integers(48, 96)), int(rng.integers(64, 120))
        yy, xx = np.mgrid[0:h, 0:w]
        img = (0.5 + 0.25 * np.sin((xx + 3 * i) / 37.0) * np.cos((yy + i) / 23.0)
               + 0.05 * rng.standard_normal((h, w)))
        imgs.append(img)
    return imgs


def experiment(imgs):
    out = {}
    for i, img in enumerate(imgs):
        h, w = img.shape
        out[f"small{i}"] = ir.resize(img, ((h + 2) // 4, (w + 1) // 4))
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
