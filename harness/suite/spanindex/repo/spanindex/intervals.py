"""Validation and small set operations on closed integer intervals.

An interval ``(start, end)`` is closed: it contains every integer position
``p`` with ``start <= p <= end``.  A single base is ``(p, p)``.
"""
import numpy as np


class IntervalError(ValueError):
    """Raised for malformed intervals (end before start, shape mismatch...)."""


def as_bounds(starts, ends, what="interval"):
    """Validate two coordinate sequences and return them as int64 arrays."""
    s = np.asarray(starts, dtype=np.int64).ravel()
    e = np.asarray(ends, dtype=np.int64).ravel()
    if s.shape != e.shape:
        raise IntervalError(f"{what} starts and ends differ in length: {s.size} != {e.size}")
    bad = np.flatnonzero(e < s)
    if bad.size:
        i = int(bad[0])
        raise IntervalError(f"{what} {i} ends before it starts: ({s[i]}, {e[i]})")
    return s, e


def merge(starts, ends):
    """Union of intervals as sorted, disjoint, non-adjacent intervals.

    Intervals that overlap or touch (``end + 1 == next start``) are joined.
    """
    s, e = as_bounds(starts, ends)
    if s.size == 0:
        return s.copy(), e.copy()
    order = np.lexsort((e, s))
    s, e = s[order], e[order]
    out_s, out_e = [int(s[0])], [int(e[0])]
    for a, b in zip(s[1:].tolist(), e[1:].tolist()):
        if a <= out_e[-1] + 1:
            if b > out_e[-1]:
                out_e[-1] = b
        else:
            out_s.append(a)
            out_e.append(b)
    return np.array(out_s, dtype=np.int64), np.array(out_e, dtype=np.int64)


def total_length(starts, ends):
    """Number of distinct positions covered by the intervals."""
    s, e = merge(starts, ends)
    return int(np.sum(e - s + 1))


def clip(starts, ends, lo, hi):
    """Intersect every interval with ``[lo, hi]``, dropping the ones outside."""
    s, e = as_bounds(starts, ends)
    keep = (e >= lo) & (s <= hi)
    return np.maximum(s[keep], lo), np.minimum(e[keep], hi)
