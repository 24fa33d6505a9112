"""Workload: tall, narrow strips where the window is wider than the image.

Most window samples fall outside the image, so the clamped border rule is
exercised heavily (including a 1-pixel-wide column and a 1-pixel-high row).
"""
import numpy as np

import imgblur
import perfkit
from common import check_equivalence, load_result, random_image, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(2024)
    imgs = [
        random_image(rng, (2400, 40), np.uint8),
        random_image(rng, (1500, 1), np.float32),
        random_image(rng, (1, 1800), np.uint8),
        random_image(rng, (2000, 33), np.float32),
    ]
    return {"imgs": imgs, "radii": [18, 30, 45, 19]}


def experiment(data):
    return [imgblur.box_blur(img, r) for img, r in zip(data["imgs"], data["radii"])]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
