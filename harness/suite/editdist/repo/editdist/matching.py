"""Pairwise distances and vocabulary lookups."""
import numpy as np

from ._lib import check, lib
from .packing import codepoints, normalize, pack


def distance(a, b):
    """Levenshtein distance between two strings."""
    x = codepoints(a)
    y = codepoints(b)
    if x.size == 0 or y.size == 0:
        return int(max(x.size, y.size))
    return check(lib.ed_distance(x, x.size, y, y.size))


def ratio(a, b):
    """Similarity in [0, 1]: ``1 - distance / max(len(a), len(b))``."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1.0 - distance(a, b) / longest


class Vocabulary:
    """A fixed list of words prepared for repeated fuzzy lookups.

    ``casefold=True`` makes every comparison case-insensitive (queries are
    folded the same way as the words).
    """

    def __init__(self, words, casefold=False):
        self.words = list(words)
        self.casefold = casefold
        self._buf, self._off = pack(self._prepare(self.words))

    def __len__(self):
        return len(self.words)

    def __contains__(self, word):
        return word in self.words

    def _prepare(self, strings):
        return [normalize(s, casefold=self.casefold) for s in strings]

    def distances(self, queries):
        """int32 matrix of shape (len(queries), len(self)) of edit distances."""
        queries = list(queries)
        out = np.zeros((len(queries), len(self.words)), dtype=np.int32)
        if out.size:
            qbuf, qoff = pack(self._prepare(queries))
            check(lib.ed_distance_matrix(qbuf, qoff, len(queries),
                                         self._buf, self._off, len(self.words), out))
        return out

    def nearest_indices(self, queries, max_distance=None):
        """(indices, distances) arrays of the closest word for every query.

        Queries with no word within ``max_distance`` get index -1 and
        distance -1.
        """
        queries = list(queries)
        idx = np.full(len(queries), -1, dtype=np.int64)
        dist = np.full(len(queries), -1, dtype=np.int32)
        if queries and self.words:
            limit = -1 if max_distance is None else int(max_distance)
            if max_distance is not None and limit < 0:
                raise ValueError("max_distance must be non-negative")
            qbuf, qoff = pack(self._prepare(queries))
            check(lib.ed_nearest(qbuf, qoff, len(queries), self._buf, self._off,
                                 len(self.words), limit, idx, dist))
        return idx, dist

    def nearest(self, queries, max_distance=None):
        """For every query, ``(word, distance)`` of the closest word, or None."""
        idx, dist = self.nearest_indices(queries, max_distance)
        return [None if i < 0 else (self.words[i], int(d)) for i, d in zip(idx, dist)]

    def correct(self, text, max_distance=2):
        """Replace every whitespace-separated token by its nearest word, if any."""
        tokens = text.split()
        best = self.nearest(tokens, max_distance)
        return " ".join(t if b is None else b[0] for t, b in zip(tokens, best))

    def search(self, query, max_distance):
        """All ``(word, distance)`` within ``max_distance``, closest first.

        Equal distances keep vocabulary order.
        """
        if max_distance < 0:
            raise ValueError("max_distance must be non-negative")
        n = len(self.words)
        if n == 0:
            return []
        q = codepoints(self._prepare([query])[0])
        if q.size == 0:
            q = np.zeros(1, dtype=np.int32)
            qlen = 0
        else:
            qlen = q.size
        idx = np.empty(n, dtype=np.int64)
        dist = np.empty(n, dtype=np.int32)
        count = check(lib.ed_within(q, qlen, self._buf, self._off, n,
                                    int(max_distance), idx, dist))
        order = np.argsort(dist[:count], kind="stable")
        return [(self.words[idx[i]], int(dist[i])) for i in order]
