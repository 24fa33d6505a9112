"""Synthetic corpora and result helpers for the wordtok workloads."""
import random
import perfkit
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)

_SYLLABLES = ["ka", "lo", "ri", "ten", "mar", "sa", "vel", "do", "qu", "in", "or", "ble", "st", "an", "ph", "ez"]
_CONTRACTIONS = ["don't", "it's", "we'll", "o'clock", "rock'n'roll", "I\u2019m", "they're", "can't"]
_UNICODE_WORDS = ["café", "naïve", "Zürich", "façade", "αλφα", "привет", "東京", "niño", "Ångström"]
# characters that NFKC normalisation rewrites (full-width forms, ligatures, ...)
_COMPAT = ["ｆｕｌｌ", "ﬁle", "Ⅻ", "½", "\u2026", "\u00a0", "²"]
_PUNCT = [",", ".", "!", "?", ";", ":", "...", "-", "(", ")", "\"", "'", "/", "&", "%", "$", "#", "@", "🙂"]
_SPACES = [" ", " ", " ", " ", "  ", "\t", "\n", " \n\n"]


def make_lexicon(rng, size):
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def make_document(rng, lexicon, n_words, punct_rate=0.12, exotic_rate=0.03, compat_rate=0.001):
    """A document of roughly ``n_words`` Zipf-distributed words with punctuation.

    ``exotic_rate`` controls accented / non-Latin words and contractions,
    ``compat_rate`` the (rarer) characters that NFKC normalisation rewrites.
    """
    parts = []
    n_lex = len(lexicon)
    for _ in range(n_words):
        r = rng.random()
        if r < exotic_rate:
            w = rng.choice(_UNICODE_WORDS)
        elif r < 2 * exotic_rate:
            w = rng.choice(_CONTRACTIONS)
        elif r < 2.5 * exotic_rate:
            w = str(rng.randint(0, 5000)) + rng.choice(["", ".5", "_x", "th"])
        else:
            idx = min(int(rng.paretovariate(1.1)) - 1, n_lex - 1)
            w = lexicon[idx]
            if rng.random() < 0.08:
                w = w.capitalize()
        parts.append(w)
        if rng.random() < compat_rate:
            parts.append(rng.choice(_COMPAT))
        if rng.random() < punct_rate:
            parts.append(rng.choice(_PUNCT) * (1 if rng.random() < 0.9 else rng.randint(2, 4)))
        parts.append(rng.choice(_SPACES) if rng.random() < 0.9 else "")
    return "".join(parts)


def make_corpus(seed, n_docs, min_words, max_words, lexicon_size=3000, **kw):
    rng = random.Random(seed)
    lexicon = make_lexicon(rng, lexicon_size)
    return [make_document(rng, lexicon, rng.randint(min_words, max_words), **kw) for _ in range(n_docs)]


def vocab_summary(vocab):
    return {"itos": list(vocab.itos), "counts": dict(vocab.counts), "doc_freq": dict(vocab.doc_freq)}


def check_equivalence(reference, current):
    """Exact comparison of nested dicts / lists / tuples of strings and ints."""
    perfkit.assert_same(reference, current)
