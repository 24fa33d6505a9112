"""schemacheck: validate JSON-like records against small declarative schemas."""
from .errors import SchemaError, ValidationError
from .formats import FORMATS
from .schema import TYPES, check_schema, normalize_schema
from .validator import is_valid, validate, validate_batch

__all__ = [
    "FORMATS",
    "SchemaError",
    "TYPES",
    "ValidationError",
    "check_schema",
    "is_valid",
    "normalize_schema",
    "validate",
    "validate_batch",
]
__version__ = "1.2.0"
