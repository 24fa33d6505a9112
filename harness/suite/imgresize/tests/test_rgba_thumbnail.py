"""Thumbnails of a large non-square float32 RGBA image at several target boxes (box prefilter + bilinear)."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(9)
    img = rng.random((720, 1120, 4), dtype=np.float32)
    img[..., 3] = (img[..., 3] > 0.2).astype(np.float32)
    return img


def experiment(img):
    out = {}
    for box in [(100, 100), (96, 150), (64, 64)]:
        out[f"thumb_{box[0]}x{box[1]}"] = ir.thumbnail(img, box)
    out["no_prefilter"] = ir.thumbnail(img, (64, 64), reducing_gap=0)
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
