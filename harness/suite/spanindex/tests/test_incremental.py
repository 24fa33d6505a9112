"""Index growing in four rounds (bulk and single adds), queried after each round."""
import numpy as np

import perfkit
import spanindex
from common import check_equivalence, load_result, random_intervals, store_result


def setup():
    rng = np.random.default_rng(31)
    starts, ends = random_intervals(rng, 40_000, 0, 10_000_000, 1500)
    ix = spanindex.IntervalIndex()
    ix.add_many(starts, ends)
    batches = []
    for _ in range(4):
        bs, be = random_intervals(rng, 20_000, 0, 10_000_000, 1500)
        singles = [(int(s), int(s) + int(l)) for s, l in
                   zip(rng.integers(0, 10_000_000, 50), rng.integers(0, 100, 50))]
        qs = rng.integers(0, 10_000_000, size=1300)
        qe = qs + rng.integers(0, 5000, size=1300)
        batches.append((bs, be, singles, qs, qe))
    return {"index": ix, "batches": batches}


def experiment(data):
    ix = data["index"]
    out = []
    for bs, be, singles, qs, qe in data["batches"]:
        ix.add_many(bs, be)
        for s, e in singles:
            ix.add(s, e)
        out.append(ix.count_overlaps(qs, qe))
    return {"counts": np.concatenate(out), "size": np.array([len(ix)])}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
