"""A toy document search: the documents sharing the most words with a query, best first.

The collection is a seeded set of short documents over a small vocabulary; `search(query, k)` scores
each document by how many of the query's distinct words it holds and returns the ids of the k best (ties:
the lower id first), so every answer is fixed by its query.
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
DOCUMENTS = 4_000
WORDS_PER_DOCUMENT = 10


def build_documents():
    rng = random.Random(4321)
    return [[rng.choice(WORDS) for _ in range(WORDS_PER_DOCUMENT)] for _ in range(DOCUMENTS)]


DOCS = build_documents()


def build_index(docs):
    """{word: [ids of the documents holding it]}."""
    index = {}
    for doc_id, doc in enumerate(docs):
        for word in set(doc):
            index.setdefault(word, []).append(doc_id)
    return index


def search(query, k):
    """The ids ("d<number>") of the `k` documents sharing the most words with `query`."""
    index = build_index(DOCS)
    scores = {}
    for word in set(query.split()):
        for doc_id in index.get(word, ()):
            scores[doc_id] = scores.get(doc_id, 0) + 1
    best = sorted(scores, key=lambda doc_id: (-scores[doc_id], doc_id))[:k]
    return [f"d{doc_id}" for doc_id in best]
