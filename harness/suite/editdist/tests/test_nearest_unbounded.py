"""Closest word with no distance limit for 450 queries (20% junk) against 3000 words."""
import random

import editdist
import perfkit
from common import check_equivalence, load_result, make_vocabulary, mutate, store_result


def setup():
    rng = random.Random(77)
    words = make_vocabulary(rng, 3000, max_syl=5)
    queries = []
    for _ in range(450):
        if rng.random() < 0.2:  # junk that is far from everything
            queries.append("".join(rng.choice("qxzjkvw") for _ in range(rng.randint(3, 18))))
        else:
            queries.append(mutate(rng, rng.choice(words), rng.randint(1, 5)))
    return {"vocab": editdist.Vocabulary(words), "queries": queries}


def experiment(data):
    best = data["vocab"].nearest(data["queries"])
    return {"best": best}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
