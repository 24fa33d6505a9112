"""Error types."""
from typing import NamedTuple


class SchemaError(ValueError):
    """Raised when a schema itself is malformed."""


class ValidationError(NamedTuple):
    """One problem found in a record.

    ``path`` locates the offending value (``$`` is the record itself, e.g.
    ``$.items[2].sku``), ``code`` is the schema keyword that failed and
    ``message`` is a human readable explanation.
    """

    path: str
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
