"""Times editdist.Vocabulary.nearest on a batch of misspelled words."""
import random
import time

import editdist

rng = random.Random(0)
letters = "abcdefghijklmnopqrstuvwxyz"
words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 12))) for _ in range(5000)})


def typo(word):
    chars = list(word)
    for _ in range(rng.randint(0, 2)):
        k = rng.randrange(len(chars))
        chars[k] = rng.choice(letters)
    return "".join(chars)


queries = [typo(rng.choice(words)) for _ in range(500)]
vocab = editdist.Vocabulary(words)

start = time.perf_counter()
matches = vocab.nearest(queries, max_distance=2)
elapsed = time.perf_counter() - start

found = sum(m is not None for m in matches)
print(f"nearest for {len(queries)} queries over {len(words)} words: {elapsed:.4f} s ({found} matched)")
