"""Many small tiles of mixed shapes (gray/RGB, int16/uint8/bool), each cropped then resized with an odd factor."""
import numpy as np

import imgresize as ir
import perfkit
from common import check_equivalence, load_result, store_result


def setup():
    rng = np.random.default_rng(10)
    tiles = []
    for i in range(620):
        h, w = int(rng.integers(20, 48)), int(rng.integers(20, 48))
        kind = i % 4
        if kind == 0:
            tiles.append(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        elif kind == 1:
            tiles.append(rng.integers(-2000, 2000, (h, w), dtype=np.int16))
        elif kind == 2:
            tiles.append(rng.random((h, w)) < 0.3)
        else:
            tiles.append(rng.standard_normal((h, w, 2)))
    return tiles


def experiment(tiles):
    out = {}
    for i, tile in enumerate(tiles):
        h, w = tile.shape[:2]
        patch = ir.crop(tile, 1, 2, h - 3, w - 4)
        out[f"tile{i}"] = ir.resize(patch, (10, 15))
        out[f"tile{i}_nearest"] = ir.resize(patch, (10, 15), method="nearest")
    return out


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
