"""Time wordtok.Vocabulary.build on a synthetic corpus."""
import random
import time

import wordtok


def make_corpus(seed, n_docs):
    rng = random.Random(seed)
    syll = ["ka", "lo", "ri", "ten", "mar", "sa", "vel", "do", "in", "or", "an"]
    lexicon = sorted({"".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(3000)})
    punct = [",", ".", "!", "?", "...", ";", "-"]
    docs = []
    for _ in range(n_docs):
        words = []
        for _ in range(rng.randint(40, 160)):
            w = lexicon[min(int(rng.paretovariate(1.1)) - 1, len(lexicon) - 1)]
            if rng.random() < 0.05:
                w = rng.choice(["don't", "it's", "Café", "o'clock"])
            words.append(w + (rng.choice(punct) if rng.random() < 0.1 else ""))
        docs.append(" ".join(words))
    return docs


def main():
    texts = make_corpus(0, 1500)

    start = time.perf_counter()
    vocab = wordtok.Vocabulary.build(texts, ngram_range=(1, 2), min_count=2)
    elapsed = time.perf_counter() - start

    print("vocabulary size %d, top entries %s" % (len(vocab), vocab.itos[2:8]))
    print("Execution time: %.6fs" % elapsed)


if __name__ == "__main__":
    main()
