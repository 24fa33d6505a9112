"""Edge cases: single-row and single-column images, 1x1 outputs, identity resizes, extreme aspect ratios."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(11)
    return {
        "row": rng.random((1, 700)),
        "col": rng.integers(0, 1000, (900, 1), dtype=np.int32),
        "strip": rng.random((3, 1500, 3)),
        "square": rng.random((64, 64, 3)),
        "pixel": np.array([[[10, 20, 30]]], dtype=np.uint8),
    }


def experiment(imgs):
    return {
        "row_up": ir.resize(imgs["row"], (3, 1500)),
        "col_down": ir.resize(imgs["col"], (300, 5)),
        "strip_tall": ir.resize(imgs["strip"], (20, 300)),
        "square_same": ir.resize(imgs["square"], (64, 64)),
        "square_one": ir.resize(imgs["square"], (1, 1)),
        "square_rescaled": ir.rescale(imgs["square"], 1.2),
        "pixel_up": ir.resize(imgs["pixel"], (40, 60)),
        "center": ir.resize(ir.center_crop(imgs["square"], (17, 31)), (45, 45)),
    }


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
