"""Four-letter alphabet (nucleotide-like) with planted repeats, 8 KiB window.

Every 3-byte prefix is common, so many window positions are real candidates.
"""
import numpy as np

import perfkit
from common import check_equivalence, load_result, run_codec, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(99)
    alphabet = np.frombuffer(b"ACGT", dtype=np.uint8)
    seq = rng.choice(alphabet, 42_000)
    # copy some segments (with point mutations) to create real repeats
    for _ in range(60):
        length = int(rng.integers(20, 400))
        src = int(rng.integers(0, len(seq) - length))
        dst = int(rng.integers(0, len(seq) - length))
        seg = seq[src:src + length].copy()
        mut = rng.random(length) < 0.02
        seg[mut] = rng.choice(alphabet, int(mut.sum()))
        seq[dst:dst + length] = seg
    return {"data": seq.tobytes(), "window_bits": 13}


def experiment(data):
    return run_codec(data["data"], data["window_bits"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
