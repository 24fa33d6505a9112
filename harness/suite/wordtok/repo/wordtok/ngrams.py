"""N-gram helpers.  N-grams are represented as their tokens joined by a separator."""

SEP = " "


def ngrams(tokens, n, sep=SEP):
    """List of the ``n``-grams of ``tokens`` in order, each joined with ``sep``.

    >>> ngrams(["a", "b", "c"], 2)
    ['a b', 'b c']
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    out = []
    for i in range(len(tokens) - n + 1):
        gram = tokens[i]
        for k in range(1, n):
            gram = gram + sep + tokens[i + k]
        out.append(gram)
    return out


def everygrams(tokens, min_n=1, max_n=2, sep=SEP):
    """All n-grams for ``min_n <= n <= max_n``, grouped by increasing ``n``."""
    if min_n < 1 or max_n < min_n:
        raise ValueError("need 1 <= min_n <= max_n")
    out = []
    for n in range(min_n, max_n + 1):
        out.extend(ngrams(tokens, n, sep))
    return out


def split_gram(gram, sep=SEP):
    """Inverse of the joining: ``"new york" -> ["new", "york"]``."""
    return gram.split(sep)
