"""Workload: many short chat messages (some empty) - bigram vocabulary then batch encoding."""
import random

import perfkit
import wordtok
from common import check_equivalence, load_result, make_document, make_lexicon, store_result  # noqa: F401


def setup():
    rng = random.Random(5)
    lexicon = make_lexicon(rng, 1500)
    msgs = []
    for _ in range(8000):
        r = rng.random()
        if r < 0.03:
            msgs.append("")
        elif r < 0.05:
            msgs.append(rng.choice(["  ", "!!!", "...", "?", "\n"]))
        else:
            msgs.append(make_document(rng, lexicon, rng.randint(2, 30), punct_rate=0.25))
    return {"msgs": msgs}


def experiment(data):
    vocab = wordtok.Vocabulary.build(data["msgs"], ngram_range=(1, 2), min_count=3, max_size=5000)
    encoded = vocab.encode_batch(data["msgs"])
    return {"vocab": vocab.itos, "counts": vocab.counts, "encoded": encoded}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
