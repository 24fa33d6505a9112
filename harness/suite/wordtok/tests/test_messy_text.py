"""Workload: punctuation-heavy, mixed-script text with odd whitespace and apostrophes.

Tokenizes with several tokenizer configurations, including case preservation
and punctuation dropping.
"""
import random

import perfkit
import wordtok
from common import check_equivalence, load_result, make_corpus, store_result  # noqa: F401


def setup():
    texts = make_corpus(seed=4, n_docs=300, min_words=50, max_words=250, punct_rate=0.5, exotic_rate=0.12, compat_rate=0.05)
    rng = random.Random(4)
    snippets = [
        "x_1 = foo(a, b)...bar['k'] // 3.14e-2 && !done",
        "''quoted'' 'tis the dogs' bones '' ' ' \u2019n\u2019",
        "....... .. . ...",
        "",
        "   \t\n ",
        "émigré CAFÉ Ångström ǅungla ﬃ ½ ² ⅷ",
    ]
    for i in range(0, len(texts), 3):
        texts[i] = texts[i] + " " + rng.choice(snippets)
    return {"texts": texts}


def experiment(data):
    configs = [
        wordtok.Tokenizer(),
        wordtok.Tokenizer(lowercase=False, keep_punct=False),
        wordtok.Tokenizer(lowercase=False),
    ]
    return [tok.tokenize_batch(data["texts"]) for tok in configs]


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
