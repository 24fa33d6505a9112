"""csvnum: fast-path parsing of numeric CSV/TSV text into numpy float64 arrays.

>>> import csvnum
>>> csvnum.parse("a,b\\n1,2\\n3,NA\\n", header=True)
array([[ 1.,  2.],
       [ 3., nan]])
"""
from .dialect import count_columns, sniff_delimiter
from .reader import column_stats, parse, parse_header, read

__all__ = ["parse", "read", "parse_header", "column_stats", "sniff_delimiter", "count_columns"]
__version__ = "0.4.0"
