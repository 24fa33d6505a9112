"""uint8 RGB video clips (frames stacked channels-last, H x W x 3T) upscaled about 2x (bilinear; float64 result plus summary statistics)."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(8)
    clips = []
    for i in range(9):
        frames = 6 + 2 * (i % 3)
        clips.append(rng.integers(0, 256, (30 + 2 * i, 40 + 3 * i, 3 * frames), dtype=np.uint8))
    return clips


def experiment(clips):
    out = {}
    for i, clip in enumerate(clips):
        h, w = clip.shape[:2]
        big = ir.resize(clip, (2 * h + 1, 2 * w + 3), method="bilinear")
        out[f"big{i}"] = big
        out[f"stats{i}"] = np.array([big.sum(), big.min(), big.max()])
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
