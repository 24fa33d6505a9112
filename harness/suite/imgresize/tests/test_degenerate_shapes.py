"""Edge cases: single-row and single-column images, 1x1 outputs, identity resizes, extreme aspect ratios (many variants)."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(11)
    variants = []
    for k in range(80):
        n = 6 + k % 5
        variants.append({
            "row": rng.random((1, 70 + k)),
            "col": rng.integers(0, 1000, (90 + k, 1), dtype=np.int32),
            "strip": rng.random((3, 150 + 2 * k, 3)),
            "square": rng.random((n + 4, n + 4, 3)),
            "pixel": rng.integers(0, 256, (1, 1, 3), dtype=np.uint8),
        })
    return variants


def experiment(variants):
    out = {}
    for k, imgs in enumerate(variants):
        n = imgs["square"].shape[0]
        out.update({
            f"row_up{k}": ir.resize(imgs["row"], (3, 150)),
            f"col_down{k}": ir.resize(imgs["col"], (30, 5)),
            f"strip_tall{k}": ir.resize(imgs["strip"], (20, 3)),
            f"square_same{k}": ir.resize(imgs["square"], (n, n)),
            f"square_one{k}": ir.resize(imgs["square"], (1, 1)),
            f"square_rescaled{k}": ir.rescale(imgs["square"], 1.2),
            f"pixel_up{k}": ir.resize(imgs["pixel"], (4, 6)),
            f"center{k}": ir.resize(ir.center_crop(imgs["square"], (3, 5)), (9, 9)),
        })
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
