"""All words within distance 2 of 253 short queries in a 6000-word list with duplicates."""
import random

import editdist
import perfkit
from common import check_equivalence, load_result, make_vocabulary, mutate, store_result


def setup():
    rng = random.Random(2024)
    words = make_vocabulary(rng, 6000, max_syl=4, unique=False)  # duplicates allowed
    queries = [mutate(rng, rng.choice(words), rng.randint(0, 2)) for _ in range(250)]
    queries += ["", "a", "e"]
    return {"vocab": editdist.Vocabulary(words), "queries": queries}


def experiment(data):
    vocab = data["vocab"]
    hits = [vocab.search(q, 2) for q in data["queries"]]
    return {"hits": hits}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
