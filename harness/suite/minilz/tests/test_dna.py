"""Four-letter alphabet (nucleotide-like, 900 kB) with planted repeats, 512-byte window.

Every 3-byte prefix is common, so many window positions are real candidates.
"""
import numpy as np

import perfkit
from common import check_equivalence, load_result, run_codec, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(99)
    alphabet = np.frombuffer(b"ACGT", dtype=np.uint8)
    seq = rng.choice(alphabet, 900_000)
    # copy segments (with point mutations) a short way downstream to create real
    # repeats, many of them within reach of the window
    for _ in range(2_600):
        length = int(rng.integers(20, 400))
        src = int(rng.integers(0, len(seq) - 2 * length - 600))
        dst = src + length + int(rng.integers(0, 600))
        seg = seq[src:src + length].copy()
        mut = rng.random(length) < 0.02
        seg[mut] = rng.choice(alphabet, int(mut.sum()))
        seq[dst:dst + length] = seg
    return {"data": seq.tobytes(), "window_bits": 9}


def experiment(data):
    return run_codec(data["data"], data["window_bits"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
