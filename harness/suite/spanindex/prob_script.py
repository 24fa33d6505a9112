"""Times spanindex.IntervalIndex.count_overlaps for a batch of query windows."""
import time

import numpy as np

import spanindex

rng = np.random.default_rng(0)
starts = rng.integers(0, 30_000_000, size=150_000)
ends = starts + rng.integers(0, 2_000, size=150_000)

index = spanindex.IntervalIndex()
index.add_many(starts, ends)

q_starts = rng.integers(0, 30_000_000, size=1_000)
q_ends = q_starts + rng.integers(0, 10_000, size=1_000)

start = time.perf_counter()
counts = index.count_overlaps(q_starts, q_ends)
elapsed = time.perf_counter() - start

print(f"count_overlaps: {len(q_starts)} queries over {len(index)} intervals in {elapsed:.4f} s "
      f"(total {int(counts.sum())})")
