"""Incompressible input: 1.1 MB of uniformly random bytes, 256-byte window."""
import numpy as np

import perfkit
from common import check_equivalence, load_result, run_codec, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(1234)
    return {"data": rng.integers(0, 256, 1_100_000, dtype=np.uint8).tobytes(), "window_bits": 8}


def experiment(data):
    return run_codec(data["data"], data["window_bits"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
