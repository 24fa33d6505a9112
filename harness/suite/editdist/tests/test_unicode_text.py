"""Case-insensitive correction of a 2000-token text of short accented and Greek words."""
import random

import editdist
import perfkit
from common import check_equivalence, load_result, make_vocabulary, mutate, store_result


def setup():
    rng = random.Random(99)
    base = make_vocabulary(rng, 3000, max_syl=2)
    accents = {"a": "àáâä", "e": "éèêë", "i": "íï", "o": "óôö", "u": "úüù", "c": "ç", "n": "ñ"}
    words = []
    for w in base:
        chars = [rng.choice(accents[ch]) if ch in accents and rng.random() < 0.3 else ch for ch in w]
        words.append("".join(chars))
    greek = "αβγδεζηθικλμνξοπρστυφχψω"
    words += ["".join(rng.choice(greek) for _ in range(rng.randint(3, 10))) for _ in range(500)]
    # Zipf-like running text: common words repeat, many are slightly wrong or upper case
    weights = [1.0 / (r + 1) for r in range(len(words))]
    tokens = rng.choices(words, weights=weights, k=2000)
    out = []
    for t in tokens:
        r = rng.random()
        if r < 0.5:
            t = mutate(rng, t, rng.randint(1, 2), alphabet="abcdeéèàoöuüñçαβγ")
        elif r < 0.7:
            t = t.upper()
        out.append(t)
    return {"vocab": editdist.Vocabulary(words, casefold=True), "text": " ".join(out)}


def experiment(data):
    fixed = data["vocab"].correct(data["text"], max_distance=2)
    return {"fixed": fixed}


def run_test(eqcheck=False, reference=False, prefix=""):
    return perfkit.time_experiment(globals(), eqcheck, reference, prefix)


if __name__ == "__main__":
    perfkit.main(run_test)
