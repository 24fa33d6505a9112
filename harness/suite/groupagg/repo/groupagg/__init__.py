"""groupagg: a small columnar table library on top of numpy."""
from .table import Table, concat
from .groupby import GroupBy, AGGREGATIONS
from .join import join

__all__ = ["Table", "concat", "GroupBy", "AGGREGATIONS", "join"]
__version__ = "0.3.1"
