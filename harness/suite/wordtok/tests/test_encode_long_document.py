"""Workload: tokenize and encode one long document (a book) against a prebuilt vocabulary."""
import random

import perfkit
import wordtok
from common import check_equivalence, load_result, make_document, make_lexicon, store_result  # noqa: F401


def setup():
    rng = random.Random(3)
    lexicon = make_lexicon(rng, 5000)
    train = [make_document(rng, lexicon, 80) for _ in range(200)]
    vocab = wordtok.Vocabulary.build(train, min_count=1)
    book = "\n\n".join(make_document(rng, lexicon, 400) for _ in range(400))
    return {"vocab": vocab, "book": book}


def experiment(data):
    return data["vocab"].encode_text(data["book"])


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
