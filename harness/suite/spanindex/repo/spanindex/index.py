"""A mutable collection of closed intervals answering overlap queries."""
import numpy as np

from .intervals import IntervalError, as_bounds, clip, total_length


class IntervalIndex:
    """Closed integer intervals ``[start, end]`` with integer ids.

    Intervals can be added one at a time or in bulk; queries see everything
    added so far.  Unless given explicitly, ids are insertion positions
    (0, 1, 2, ...).
    """

    def __init__(self):
        self._chunks = []          # list of (starts, ends, ids) int64 arrays
        self._pending = ([], [], [])
        self._count = 0
        self._cache = None         # concatenated (starts, ends, ids)

    def __len__(self):
        return self._count

    def __repr__(self):
        return f"IntervalIndex({self._count} intervals)"

    # -- building -----------------------------------------------------------

    def add(self, start, end, ident=None):
        """Add one interval; returns its id."""
        start, end = int(start), int(end)
        if end < start:
            raise IntervalError(f"interval ends before it starts: ({start}, {end})")
        ident = self._count if ident is None else int(ident)
        ps, pe, pi = self._pending
        ps.append(start)
        pe.append(end)
        pi.append(ident)
        self._count += 1
        self._cache = None
        return ident

    def add_many(self, starts, ends, ids=None):
        """Add intervals in bulk; returns their ids as an array."""
        s, e = as_bounds(starts, ends)
        if ids is None:
            ids = np.arange(self._count, self._count + s.size, dtype=np.int64)
        else:
            ids = np.asarray(ids, dtype=np.int64).ravel()
            if ids.shape != s.shape:
                raise IntervalError("ids must have one entry per interval")
        self._flush_pending()
        self._chunks.append((s.copy(), e.copy(), ids.copy()))
        self._count += s.size
        self._cache = None
        return ids

    def _flush_pending(self):
        ps, pe, pi = self._pending
        if ps:
            self._chunks.append((np.array(ps, dtype=np.int64),
                                 np.array(pe, dtype=np.int64),
                                 np.array(pi, dtype=np.int64)))
            self._pending = ([], [], [])

    def arrays(self):
        """(starts, ends, ids) of all intervals in insertion order (read-only)."""
        if self._cache is None:
            self._flush_pending()
            if self._chunks:
                parts = [np.concatenate(col) for col in zip(*self._chunks)]
            else:
                parts = [np.zeros(0, dtype=np.int64) for _ in range(3)]
            for p in parts:
                p.flags.writeable = False
            self._chunks = [tuple(parts)] if self._count else []
            self._cache = tuple(parts)
        return self._cache

    # -- queries ------------------------------------------------------------

    def count_overlaps(self, qstarts, qends):
        """Number of intervals overlapping each query ``[qstarts[i], qends[i]]``."""
        qs, qe = as_bounds(qstarts, qends, what="query")
        starts, ends, _ = self.arrays()
        out = np.zeros(qs.size, dtype=np.int64)
        for i in range(qs.size):
            out[i] = np.count_nonzero((starts <= qe[i]) & (ends >= qs[i]))
        return out

    def depth_at(self, positions):
        """Number of intervals containing each position."""
        p = np.asarray(positions, dtype=np.int64).ravel()
        return self.count_overlaps(p, p)

    def overlapping_ids(self, qstart, qend):
        """Sorted ids of the intervals overlapping ``[qstart, qend]``."""
        qs, qe = as_bounds([qstart], [qend], what="query")
        starts, ends, ids = self.arrays()
        hit = (starts <= qe[0]) & (ends >= qs[0])
        return np.sort(ids[hit])

    def coverage(self, qstart, qend):
        """Positions of ``[qstart, qend]`` covered by at least one interval."""
        qs, qe = as_bounds([qstart], [qend], what="query")
        starts, ends, _ = self.arrays()
        s, e = clip(starts, ends, int(qs[0]), int(qe[0]))
        return total_length(s, e)

    def span(self):
        """(min start, max end) over all intervals, or None when empty."""
        starts, ends, _ = self.arrays()
        if starts.size == 0:
            return None
        return int(starts.min()), int(ends.max())
