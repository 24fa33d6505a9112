"""A toy token-streaming language model: greedy continuation of a prompt by bigram counts over a fixed corpus.

The corpus is a seeded walk over a small vocabulary in which each word has a few preferred successors; the
model continues from the prompt's last word, one word per token, always taking the successor seen most
often (ties broken alphabetically), so every answer is fixed by its prompt.
"""
import random

WORDS = tuple("""
alpha bravo cedar delta ember fjord garnet harbor indigo juniper kelp lumen maple nectar onyx
pebble quartz raven sierra tundra umber velvet willow xenon yarrow zephyr amber basalt cobalt
dune elm flint glacier heron iris jade kestrel lotus meadow nova orchid prairie quill ridge
sable thistle upland vista wren yucca zinnia anchor beacon canyon drift echo falcon grove haze
island jetty knoll lagoon mesa north orbit pine quiet reef shore tide union valley wave yonder
zenith arbor bloom crest dawn
""".split())
START = "alpha"
CORPUS_TOKENS = 40_000


def build_corpus():
    rng = random.Random(1234)
    preferred = {w: [rng.choice(WORDS) for _ in range(4)] for w in WORDS}
    word, tokens = WORDS[0], []
    for _ in range(CORPUS_TOKENS):
        tokens.append(word)
        word = rng.choice(preferred[word]) if rng.random() < 0.9 else rng.choice(WORDS)
    return tokens


CORPUS = build_corpus()


def successors(word):
    """{next word: count} of `word` in the corpus."""
    counts = {}
    for a, b in zip(CORPUS, CORPUS[1:]):
        if a == word:
            counts[b] = counts.get(b, 0) + 1
    return counts


def pick(counts, word, previous):
    """The successor seen most often (ties: alphabetical), avoiding the last two words where it can."""
    ranked = sorted(counts, key=lambda b: (-counts[b], b))
    for candidate in ranked:
        if candidate not in (word, previous):
            return candidate
    return ranked[0] if ranked else START


def generate(prompt, max_tokens):
    """Yield `max_tokens` words continuing `prompt`, one at a time."""
    words = prompt.split()
    word = words[-1] if words else START
    previous = words[-2] if len(words) > 1 else START
    for _ in range(max_tokens):
        word, previous = pick(successors(word), word, previous), word
        yield word
