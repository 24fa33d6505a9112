"""Times densela.matmul on a pair of random dense matrices."""
import time

import numpy as np

import densela

rng = np.random.default_rng(0)
a = rng.standard_normal((512, 512))
b = rng.standard_normal((512, 512))

start = time.perf_counter()
c = densela.matmul(a, b)
elapsed = time.perf_counter() - start

print(f"matmul {a.shape} @ {b.shape}: {elapsed:.4f} s  (checksum {c.sum():.6f})")
