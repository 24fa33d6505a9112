"""Overlap counts of 2500 random windows against 120k read-like intervals."""
import numpy as np

import perfkit
import spanindex
from common import check_equivalence, load_result, random_intervals, store_result


def setup():
    rng = np.random.default_rng(11)
    starts, ends = random_intervals(rng, 120_000, 0, 50_000_000, 400)
    ix = spanindex.IntervalIndex()
    ix.add_many(starts, ends)
    q_starts = rng.integers(0, 50_000_000, size=2500)
    q_ends = q_starts + rng.integers(0, 20_000, size=2500)
    return {"index": ix, "qs": q_starts, "qe": q_ends}


def experiment(data):
    counts = data["index"].count_overlaps(data["qs"], data["qe"])
    return {"counts": counts}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
