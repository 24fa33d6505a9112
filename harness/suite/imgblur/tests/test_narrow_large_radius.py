"""Workload: many thin strips where the window is wider than the image.

Most window samples fall outside the image, so the clamped border rule is
exercised heavily (tall 1-4 pixel columns, wide 1-4 pixel rows, both dtypes).
"""
import numpy as np

import imgblur
import perfkit
from common import check_equivalence, load_result, random_image, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(2024)
    imgs, radii = [], []
    for i in range(1300):
        thin = int(rng.integers(1, 5))
        long_side = int(rng.integers(1500, 3000))
        shape = (long_side, thin) if i % 2 == 0 else (thin, long_side)
        dtype = np.uint8 if i % 3 == 0 else np.float32
        imgs.append(random_image(rng, shape, dtype))
        radii.append(thin // 2 + 1)  # 2 * r + 1 > thin side
    return {"imgs": imgs, "radii": radii}


def experiment(data):
    return [imgblur.box_blur(img, r) for img, r in zip(data["imgs"], data["radii"])]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
