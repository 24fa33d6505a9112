"""Queries whose edges sit exactly on, before or after interval edges, including point intervals and point queries."""
import numpy as np

import perfkit
import spanindex
from common import check_equivalence, load_result, random_intervals, store_result


def setup():
    rng = np.random.default_rng(808)
    n = 360_000
    starts, ends = random_intervals(rng, n, 0, 6_000_000, 30)
    ends[: n // 4] = starts[: n // 4]  # a quarter are single positions
    ix = spanindex.IntervalIndex()
    ix.add_many(starts, ends, ids=rng.permutation(n))
    k = 180
    a = rng.integers(0, n, size=k)
    b = rng.integers(0, n, size=k)
    # query edges placed exactly on, just before and just after interval edges
    q_starts = np.concatenate([ends[a], ends[a] + 1, starts[b], starts[a]])
    q_ends = np.concatenate([ends[a] + 50, ends[a] + 1, starts[b], starts[b] - 1 + 2 * np.abs(starts[a] - starts[b])])
    lo = np.minimum(q_starts, q_ends)
    hi = np.maximum(q_starts, q_ends)
    return {"index": ix, "qs": lo, "qe": hi}


def experiment(data):
    counts = data["index"].count_overlaps(data["qs"], data["qe"])
    return {"counts": counts}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
