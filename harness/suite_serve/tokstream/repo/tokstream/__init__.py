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
CORPUS_TOKENS = 80_000
DIM = 2048  # the words' vectors
TOP = 8  # the successors a step weighs
CONTEXT = 3  # the words a step's context vector sums


def build_corpus():
    rng = random.Random(1234)
    preferred = {w: [rng.choice(WORDS) for _ in range(4)] for w in WORDS}
    word, tokens = WORDS[0], []
    for _ in range(CORPUS_TOKENS):
        tokens.append(word)
        word = rng.choice(preferred[word]) if rng.random() < 0.9 else rng.choice(WORDS)
    return tokens


CORPUS = build_corpus()
_rng = random.Random(99)
VECTORS = {w: [_rng.randint(-8, 8) for _ in range(DIM)] for w in WORDS}


def successors(word):
    """{next word: count} of `word` in the corpus."""
    counts = {}
    for a, b in zip(CORPUS, CORPUS[1:]):
        if a == word:
            counts[b] = counts.get(b, 0) + 1
    return counts


def pick(counts, context):
    """The next word: of the TOP successors seen most often (ties: alphabetical), the one scoring best on
    count * 64 plus its vector's dot product with the context's (the sum of the last words' vectors),
    avoiding the last two words where it can. Integer arithmetic: every implementation agrees."""
    ranked = sorted(counts, key=lambda b: (-counts[b], b))[:TOP]
    fresh = [c for c in ranked if c not in context[-2:]] or ranked
    if not fresh:
        return START
    vectors = [VECTORS[w] for w in context[-CONTEXT:] if w in VECTORS]
    summed = [sum(column) for column in zip(*vectors)] if vectors else [0] * DIM
    best, best_score = fresh[0], None
    for candidate in fresh:
        score = counts[candidate] * 64 + sum(a * b for a, b in zip(summed, VECTORS[candidate]))
        if best_score is None or score > best_score:
            best, best_score = candidate, score
    return best


def generate(prompt, max_tokens):
    """Yield `max_tokens` words continuing `prompt`, one at a time."""
    context = prompt.split() or [START]
    for _ in range(max_tokens):
        word = pick(successors(context[-1]), context)
        context.append(word)
        yield word
