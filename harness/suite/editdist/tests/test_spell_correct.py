"""Spelling correction: nearest of 550 misspelled words in a 5000-word vocabulary, within distance 2."""
import random

import editdist
import perfkit
from common import check_equivalence, load_result, make_vocabulary, mutate, store_result


def setup():
    rng = random.Random(1234)
    words = make_vocabulary(rng, 5000)
    queries = []
    for _ in range(550):
        w = rng.choice(words)
        queries.append(mutate(rng, w, rng.choice([0, 1, 1, 2, 2, 3])))
    return {"vocab": editdist.Vocabulary(words), "queries": queries}


def experiment(data):
    idx, dist = data["vocab"].nearest_indices(data["queries"], max_distance=2)
    return {"idx": idx.tolist(), "dist": dist.tolist()}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
