"""Compress a mixed text/binary payload with minilz and report the time taken."""
import random
import time

import numpy as np

import minilz

rng = np.random.default_rng(0)
words = random.Random(0)
vocab = ["alpha", "beta", "gamma", "delta", "sensor", "value", "error", "status", "ok"]
text = " ".join(words.choice(vocab) for _ in range(12_000)).encode()
binary = rng.integers(0, 64, 30_000, dtype=np.uint8).tobytes()
payload = text + binary

start = time.perf_counter()
frame = minilz.compress(payload, window_bits=12)
elapsed = time.perf_counter() - start

assert minilz.decompress(frame) == payload
print(f"input {len(payload)} bytes -> {len(frame)} bytes (ratio {len(payload) / len(frame):.2f})")
print(f"compress time: {elapsed:.4f}s")
