"""Workload: many small tiles of mixed size, dtype and radius (thumbnail pipeline)."""
import numpy as np

import imgblur
import perfkit
from common import check_equivalence, load_result, random_image, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(5)
    tiles, radii = [], []
    for i in range(1800):
        h = int(rng.integers(2, 96))
        w = int(rng.integers(2, 96))
        dtype = np.uint8 if i % 3 == 0 else np.float32
        shape = (h, w, 3) if i % 5 == 0 else (h, w)
        tiles.append(random_image(rng, shape, dtype))
        radii.append(int(rng.integers(1, 4)))
    return {"tiles": tiles, "radii": radii}


def experiment(data):
    return [imgblur.box_blur(t, r) for t, r in zip(data["tiles"], data["radii"])]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
