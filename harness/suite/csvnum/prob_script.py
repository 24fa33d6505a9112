"""Parse a numeric CSV export with csvnum and report the time taken."""
import time

import numpy as np

import csvnum

rng = np.random.default_rng(0)
values = rng.normal(0.0, 10.0, size=(8_000, 6))
lines = ["sensor_a,sensor_b,sensor_c,sensor_d,sensor_e,sensor_f"]
for row in values:
    cells = [f"{v:.5f}" for v in row]
    if rng.random() < 0.1:
        cells[int(rng.integers(0, 6))] = "NA"
    lines.append(",".join(cells))
text = "\n".join(lines) + "\n"

start = time.perf_counter()
matrix = csvnum.parse(text, delimiter=",", header=True)
elapsed = time.perf_counter() - start

print(f"parsed {matrix.shape[0]} rows x {matrix.shape[1]} columns "
      f"({int(np.isnan(matrix).sum())} missing) from {len(text)} bytes")
print(f"parse time: {elapsed:.4f}s")
