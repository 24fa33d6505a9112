"""Per-chromosome interval indexes and BED-style input."""
import numpy as np

from .index import IntervalIndex
from .intervals import IntervalError


class GenomeIndex:
    """One :class:`IntervalIndex` per chromosome (or any other sequence name)."""

    def __init__(self):
        self._by_chrom = {}

    def __len__(self):
        return sum(len(ix) for ix in self._by_chrom.values())

    def chromosomes(self):
        return sorted(self._by_chrom)

    def index(self, chrom):
        """The index of ``chrom``, created on first use."""
        ix = self._by_chrom.get(chrom)
        if ix is None:
            ix = self._by_chrom[chrom] = IntervalIndex()
        return ix

    def add(self, chrom, start, end, ident=None):
        return self.index(chrom).add(start, end, ident)

    def add_many(self, chroms, starts, ends, ids=None):
        """Bulk insert; ``chroms`` is a sequence of names, one per interval."""
        chroms = np.asarray(chroms)
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        ids = None if ids is None else np.asarray(ids, dtype=np.int64)
        for name in np.unique(chroms):
            sel = chroms == name
            self.index(str(name)).add_many(starts[sel], ends[sel],
                                           None if ids is None else ids[sel])

    def count_overlaps(self, chroms, qstarts, qends):
        """Overlap counts for queries given as (chrom, start, end) columns."""
        chroms = np.asarray(chroms)
        qs = np.asarray(qstarts, dtype=np.int64)
        qe = np.asarray(qends, dtype=np.int64)
        if not (chroms.shape == qs.shape == qe.shape):
            raise IntervalError("query columns differ in length")
        out = np.zeros(qs.shape, dtype=np.int64)
        for name in np.unique(chroms):
            ix = self._by_chrom.get(str(name))
            if ix is None:
                continue
            sel = chroms == name
            out[sel] = ix.count_overlaps(qs[sel], qe[sel])
        return out

    @classmethod
    def from_bed(cls, lines):
        """Build from BED lines (0-based, half-open ``chrom start end [name]``).

        Intervals are stored closed, so BED ``start end`` becomes
        ``[start, end - 1]``.  Header, track and comment lines are skipped.
        """
        gi = cls()
        for n, line in enumerate(lines, start=1):
            line = line.strip()
            if not line or line.startswith(("#", "track", "browser")):
                continue
            fields = line.split()
            if len(fields) < 3:
                raise IntervalError(f"line {n}: expected at least 3 columns")
            start, end = int(fields[1]), int(fields[2])
            if end <= start:
                raise IntervalError(f"line {n}: empty or reversed BED interval")
            gi.add(fields[0], start, end - 1)
        return gi
