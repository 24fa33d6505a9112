"""Packed binary sensor records (many zero bytes, slowly varying fields), 2 KiB window."""
import numpy as np

import perfkit
from common import check_equivalence, load_result, run_codec, store_result  # noqa: F401


def setup():
    rng = np.random.default_rng(2024)
    n = 45_000
    rec = np.zeros(n, dtype=[("t", "<u4"), ("sensor", "<u2"), ("value", "<i2"),
                             ("flag", "u1"), ("pad", "u1", 3)])
    rec["t"] = 1_700_000_000 + np.cumsum(rng.integers(1, 4, n))
    rec["sensor"] = rng.integers(0, 16, n)
    rec["value"] = np.round(rng.normal(0, 40, n)).astype(np.int16)
    rec["flag"] = rng.random(n) < 0.05
    return {"data": rec.tobytes(), "window_bits": 11}


def experiment(data):
    return run_codec(data["data"], data["window_bits"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
