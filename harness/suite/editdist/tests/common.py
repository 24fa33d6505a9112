"""Shared data generators and result helpers for the editdist workloads."""

import numpy as np
from perfkit import load_result, store_result  # noqa: F401  (pickle storage)

ONSETS = ["", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t",
          "v", "w", "z", "br", "ch", "cl", "dr", "gr", "pl", "qu", "sh", "st", "th", "tr"]
VOWELS = ["a", "e", "i", "o", "u", "y", "ai", "ea", "ee", "ie", "oo", "ou"]
CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "ng", "ck", "st", "rd", "x"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def make_word(rng, min_syl=1, max_syl=4):
    n = rng.randint(min_syl, max_syl)
    return "".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(n))


def make_vocabulary(rng, size, min_syl=1, max_syl=4, unique=True):
    words, seen = [], set()
    while len(words) < size:
        w = make_word(rng, min_syl, max_syl)
        if unique and w in seen:
            continue
        seen.add(w)
        words.append(w)
    return words


def mutate(rng, word, edits, alphabet=LETTERS):
    """Apply ``edits`` random single-character edits to ``word``."""
    chars = list(word)
    for _ in range(edits):
        op = rng.randrange(3) if chars else 1
        if op == 0:
            del chars[rng.randrange(len(chars))]
        elif op == 1:
            chars.insert(rng.randrange(len(chars) + 1), rng.choice(alphabet))
        else:
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
    return "".join(chars)


def _plain(x):
    if isinstance(x, np.ndarray):
        return ("ndarray", str(x.dtype), x.shape, x.tolist())
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, np.integer):
        return int(x)
    return x


def check_equivalence(reference, current):
    ref, cur = _plain(reference), _plain(current)
    assert type(ref) is type(cur), (type(ref), type(cur))
    assert set(ref) == set(cur), (sorted(ref), sorted(cur))
    for key in ref:
        r, c = ref[key], cur[key]
        if r != c:
            if isinstance(r, list) and isinstance(c, list) and len(r) == len(c):
                first = next(i for i, (a, b) in enumerate(zip(r, c)) if a != b)
                raise AssertionError(f"{key}: first mismatch at {first}: {c[first]!r} != {r[first]!r}")
            raise AssertionError(f"{key}: results differ")
