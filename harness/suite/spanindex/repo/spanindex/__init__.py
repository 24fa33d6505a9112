"""spanindex: overlap queries on closed integer intervals (genomic ranges)."""
from .genome import GenomeIndex
from .index import IntervalIndex
from .intervals import IntervalError, clip, merge, total_length

__all__ = ["IntervalIndex", "GenomeIndex", "IntervalError", "merge", "clip", "total_length"]
__version__ = "0.4.0"
