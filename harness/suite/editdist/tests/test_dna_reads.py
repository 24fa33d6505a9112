"""Assign 70 noisy sequencing reads (90-150 bp) to the closest of 400 references within 12 edits."""
import random

import editdist
import perfkit
from common import check_equivalence, load_result, make_vocabulary, mutate, store_result


def setup():
    rng = random.Random(5)
    refs = ["".join(rng.choice("ACGT") for _ in range(rng.randint(90, 150))) for _ in range(400)]
    reads = []
    for _ in range(57):
        reads.append(mutate(rng, rng.choice(refs), rng.randint(0, 14), alphabet="ACGT"))
    for _ in range(13):  # reads from nowhere
        reads.append("".join(rng.choice("ACGT") for _ in range(rng.randint(100, 130))))
    return {"vocab": editdist.Vocabulary(refs), "reads": reads}


def experiment(data):
    idx, dist = data["vocab"].nearest_indices(data["reads"], max_distance=12)
    return {"idx": idx.tolist(), "dist": dist.tolist()}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
