"""Compute rolling statistics and z-score anomalies for a sensor series and report the time."""
import time

import numpy as np

import rollstats

rng = np.random.default_rng(0)
n = 6_000
t = np.arange(n)
x = 50.0 + 4.0 * np.sin(2 * np.pi * t / 500) + rng.normal(0, 1.0, n)
x[rng.choice(n, 20, replace=False)] += 12.0

start = time.perf_counter()
summary = rollstats.rolling_summary(x, 100)
anomalies = rollstats.detect_anomalies(x, 100, threshold=4.0)
elapsed = time.perf_counter() - start

print(f"last window: mean={summary['mean'][-1]:.3f} std={summary['std'][-1]:.3f} "
      f"min={summary['min'][-1]:.3f} max={summary['max'][-1]:.3f}")
print(f"{len(anomalies)} anomalies, first at {anomalies[:5].tolist()}")
print(f"rolling stats time: {elapsed:.4f}s")
