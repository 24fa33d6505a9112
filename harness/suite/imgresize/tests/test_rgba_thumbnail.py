"""Thumbnails of several large non-square float32 RGBA images at several target boxes (box prefilter + bilinear)."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(9)
    imgs = []
    for h, w in [(720, 1120), (900, 600), (512, 768)]:
        img = rng.random((h, w, 4), dtype=np.float32)
        img[..., 3] = (img[..., 3] > 0.2).astype(np.float32)
        imgs.append(img)
    return imgs


def experiment(imgs):
    out = {}
    for i, img in enumerate(imgs):
        for box in [(100, 100), (64, 96), (40, 40), (24, 32)]:
            out[f"img{i}_thumb_{box[0]}x{box[1]}"] = ir.thumbnail(img, box)
        out[f"img{i}_no_prefilter"] = ir.thumbnail(img, (32, 32), reducing_gap=0)
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
