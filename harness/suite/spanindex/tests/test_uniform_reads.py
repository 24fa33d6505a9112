"""Overlap counts of 1300 random windows against each of four samples of 100k read-like intervals."""
import numpy as np

import perfkit
import spanindex
from common import check_equivalence, load_result, random_intervals, store_result


def setup():
    rng = np.random.default_rng(11)
    samples = []
    for _ in range(4):
        starts, ends = random_intervals(rng, 100_000, 0, 50_000_000, 400)
        ix = spanindex.IntervalIndex()
        ix.add_many(starts, ends)
        q_starts = rng.integers(0, 50_000_000, size=1300)
        q_ends = q_starts + rng.integers(0, 20_000, size=1300)
        samples.append((ix, q_starts, q_ends))
    return {"samples": samples}


def experiment(data):
    counts = [ix.count_overlaps(qs, qe) for ix, qs, qe in data["samples"]]
    return {"counts": np.stack(counts)}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
