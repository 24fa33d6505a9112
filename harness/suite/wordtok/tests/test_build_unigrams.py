"""Workload: unigram vocabulary over a medium corpus of paragraphs."""
import perfkit
import wordtok
from common import check_equivalence, load_result, make_corpus, store_result, vocab_summary  # noqa: F401


def setup():
    return {"texts": make_corpus(seed=1, n_docs=1500, min_words=40, max_words=160)}


def experiment(data):
    vocab = wordtok.Vocabulary.build(data["texts"], min_count=2)
    return vocab_summary(vocab)


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
