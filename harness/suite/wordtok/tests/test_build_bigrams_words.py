"""Workload: unigram + bigram vocabulary, words only, capped size."""
import perfkit
import wordtok
from common import check_equivalence, load_result, make_corpus, store_result, vocab_summary  # noqa: F401


def setup():
    return {"texts": make_corpus(seed=2, n_docs=1000, min_words=60, max_words=200, lexicon_size=800)}


def experiment(data):
    tok = wordtok.Tokenizer(keep_punct=False)
    vocab = wordtok.Vocabulary.build(data["texts"], tokenizer=tok, ngram_range=(1, 2), min_count=2, max_size=20000)
    return vocab_summary(vocab)


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
