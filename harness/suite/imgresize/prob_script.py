"""Time one bilinear resize of an RGB photo-sized array."""
import timeit

import numpy as np

import imgresize as ir

rng = np.random.default_rng(0)
img = rng.integers(0, 256, (480, 640, 3), dtype=np.uint8)


def workload():
    ir.resize(img, (150, 200), method="bilinear")


print(f"Execution time: {timeit.timeit(workload, number=1):.6f}s")
