"""minilz: a small LZ77-style compressor with a C core.

>>> import minilz
>>> blob = minilz.compress(b"abcabcabcabc")
>>> minilz.decompress(blob)
b'abcabcabcabc'
"""
from .codec import (
    DEFAULT_WINDOW_BITS,
    MAX_WINDOW_BITS,
    MIN_WINDOW_BITS,
    MinilzError,
    compress,
    decompress,
    read_header,
)
from .analysis import ratio, roundtrip, token_stats

__all__ = [
    "compress",
    "decompress",
    "read_header",
    "roundtrip",
    "ratio",
    "token_stats",
    "MinilzError",
    "DEFAULT_WINDOW_BITS",
    "MIN_WINDOW_BITS",
    "MAX_WINDOW_BITS",
]
__version__ = "0.3.1"
