"""Schema checking and normalization.

A schema is a plain dict, in a small subset of JSON Schema:

* ``type``: one type name or a list of them, from :data:`TYPES`
* ``enum``: list of allowed values (compared by their JSON representation)
* strings: ``minLength``, ``maxLength``, ``pattern`` (``re.search``), ``format``
* numbers: ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``
* arrays: ``items`` (a schema), ``minItems``, ``maxItems``, ``uniqueItems``
* objects: ``properties`` (name -> schema), ``required`` (list of names),
  ``additionalProperties`` (bool or schema, default ``True``)
* annotations that are ignored: ``title``, ``description``, ``default``, ``examples``
"""
import copy
import re

from .errors import SchemaError
from .formats import FORMATS

TYPES = ("string", "integer", "number", "boolean", "null", "array", "object")

_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_COUNT_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems")
_ANNOTATIONS = ("title", "description", "default", "examples")
KEYWORDS = frozenset(
    ("type", "enum", "pattern", "format", "uniqueItems", "items", "properties", "required",
     "additionalProperties") + _NUMBER_KEYWORDS + _COUNT_KEYWORDS + _ANNOTATIONS
)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _normalize_in_place(node, where):
    if not isinstance(node, dict):
        raise SchemaError(f"{where}: schema must be a dict, got {type(node).__name__}")
    unknown = sorted(set(node) - KEYWORDS)
    if unknown:
        raise SchemaError(f"{where}: unknown keyword(s) {', '.join(unknown)}")

    if "type" in node:
        types = node["type"]
        if isinstance(types, str):
            types = [types]
        if not isinstance(types, list) or not types:
            raise SchemaError(f"{where}: 'type' must be a type name or a non-empty list")
        for t in types:
            if t not in TYPES:
                raise SchemaError(f"{where}: unknown type {t!r}")
        node["type"] = list(types)

    if "enum" in node and not isinstance(node["enum"], list):
        raise SchemaError(f"{where}: 'enum' must be a list")
    for kw in _NUMBER_KEYWORDS:
        if kw in node and not _is_number(node[kw]):
            raise SchemaError(f"{where}: {kw!r} must be a number")
    if "multipleOf" in node and node["multipleOf"] <= 0:
        raise SchemaError(f"{where}: 'multipleOf' must be positive")
    for kw in _COUNT_KEYWORDS:
        if kw in node and (not isinstance(node[kw], int) or isinstance(node[kw], bool) or node[kw] < 0):
            raise SchemaError(f"{where}: {kw!r} must be a non-negative integer")
    if "pattern" in node:
        try:
            re.compile(node["pattern"])
        except (re.error, TypeError) as exc:
            raise SchemaError(f"{where}: invalid pattern: {exc}") from None
    if "format" in node and node["format"] not in FORMATS:
        raise SchemaError(f"{where}: unknown format {node['format']!r}")
    node.setdefault("uniqueItems", False)

    if "items" in node:
        _normalize_in_place(node["items"], where + ".items")
    if "properties" in node:
        if not isinstance(node["properties"], dict):
            raise SchemaError(f"{where}: 'properties' must be a dict")
        for name, sub in node["properties"].items():
            _normalize_in_place(sub, f"{where}.properties.{name}")
    required = node.setdefault("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise SchemaError(f"{where}: 'required' must be a list of property names")
    extra = node.setdefault("additionalProperties", True)
    if isinstance(extra, dict):
        _normalize_in_place(extra, where + ".additionalProperties")
    elif not isinstance(extra, bool):
        raise SchemaError(f"{where}: 'additionalProperties' must be a bool or a schema")


def normalize_schema(schema):
    """Return a checked copy of ``schema`` with defaults filled in.

    ``type`` becomes a list, and ``required``, ``uniqueItems`` and
    ``additionalProperties`` are always present. The input is not modified.
    Raises :class:`SchemaError` if the schema is malformed.
    """
    node = copy.deepcopy(schema)
    _normalize_in_place(node, "#")
    return node


def check_schema(schema) -> None:
    """Raise :class:`SchemaError` if ``schema`` is malformed."""
    normalize_schema(schema)
