"""Validation of records against a schema.

Errors are reported in a fixed order: for each value, a failed ``type`` check
stops further checks on it; otherwise ``enum`` is checked, then the keywords
for the value's kind (strings: length, pattern, format; numbers: bounds,
multipleOf; arrays: length, items, uniqueItems; objects: required,
properties in schema order, then additional properties in sorted order).
"""
import json
import re

from .errors import ValidationError
from .formats import FORMATS
from .schema import normalize_schema

_IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _matches_type(value, type_name: str) -> bool:
    actual = _type_name(value)
    if type_name == "number":
        return actual in ("integer", "number")
    return actual == type_name


def _json_key(value) -> str:
    return json.dumps(value, sort_keys=True)


def _short(value, limit: int = 40) -> str:
    text = json.dumps(value, sort_keys=True, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _child_path(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.match(_IDENTIFIER, key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _not_multiple(value, step) -> bool:
    if isinstance(value, int) and isinstance(step, int):
        return value % step != 0
    quotient = value / step
    return abs(quotient - round(quotient)) > 1e-9


def _check_string(value, node, path, errors):
    messages = {
        "minLength": f"string shorter than {node.get('minLength')} characters",
        "maxLength": f"string longer than {node.get('maxLength')} characters",
        "pattern": f"string does not match pattern {node.get('pattern')!r}",
        "format": f"string is not a valid {node.get('format')}",
    }
    if "minLength" in node and len(value) < node["minLength"]:
        errors.append(ValidationError(path, "minLength", messages["minLength"]))
    if "maxLength" in node and len(value) > node["maxLength"]:
        errors.append(ValidationError(path, "maxLength", messages["maxLength"]))
    if "pattern" in node:
        regex = re.compile(node["pattern"])
        if regex.search(value) is None:
            errors.append(ValidationError(path, "pattern", messages["pattern"]))
    if "format" in node:
        regex = re.compile(FORMATS[node["format"]])
        if regex.fullmatch(value) is None:
            errors.append(ValidationError(path, "format", messages["format"]))


def _check_number(value, node, path, errors):
    messages = {
        "minimum": f"{value} is less than the minimum {node.get('minimum')}",
        "maximum": f"{value} is greater than the maximum {node.get('maximum')}",
        "exclusiveMinimum": f"{value} is not greater than {node.get('exclusiveMinimum')}",
        "exclusiveMaximum": f"{value} is not less than {node.get('exclusiveMaximum')}",
        "multipleOf": f"{value} is not a multiple of {node.get('multipleOf')}",
    }
    if "minimum" in node and value < node["minimum"]:
        errors.append(ValidationError(path, "minimum", messages["minimum"]))
    if "maximum" in node and value > node["maximum"]:
        errors.append(ValidationError(path, "maximum", messages["maximum"]))
    if "exclusiveMinimum" in node and value <= node["exclusiveMinimum"]:
        errors.append(ValidationError(path, "exclusiveMinimum", messages["exclusiveMinimum"]))
    if "exclusiveMaximum" in node and value >= node["exclusiveMaximum"]:
        errors.append(ValidationError(path, "exclusiveMaximum", messages["exclusiveMaximum"]))
    if "multipleOf" in node and _not_multiple(value, node["multipleOf"]):
        errors.append(ValidationError(path, "multipleOf", messages["multipleOf"]))


def _check_array(value, node, path, errors):
    n = len(value)
    if "minItems" in node and n < node["minItems"]:
        errors.append(ValidationError(path, "minItems", f"array has {n} items, fewer than {node['minItems']}"))
    if "maxItems" in node and n > node["maxItems"]:
        errors.append(ValidationError(path, "maxItems", f"array has {n} items, more than {node['maxItems']}"))
    if "items" in node:
        for i, item in enumerate(value):
            _check_node(item, node["items"], _child_path(path, i), errors)
    if node["uniqueItems"]:
        seen = set()
        for i, item in enumerate(value):
            key = _json_key(item)
            if key in seen:
                errors.append(ValidationError(
                    path, "uniqueItems", f"array items are not unique (first repeat at index {i})"))
                break
            seen.add(key)


def _check_object(value, node, path, errors):
    for name in node["required"]:
        if name not in value:
            errors.append(ValidationError(path, "required", f"missing required property {name!r}"))
    properties = node.get("properties", {})
    for name, sub in properties.items():
        if name in value:
            _check_node(value[name], sub, _child_path(path, name), errors)
    extra = node["additionalProperties"]
    if extra is True:
        return
    for name in sorted(k for k in value if k not in properties):
        child = _child_path(path, name)
        if extra is False:
            errors.append(ValidationError(child, "additionalProperties", f"unexpected property {name!r}"))
        else:
            _check_node(value[name], extra, child, errors)


def _check_node(value, node, path, errors):
    if "type" in node:
        types = node["type"]
        if not any(_matches_type(value, t) for t in types):
            message = f"expected {' or '.join(types)}, got {_type_name(value)}"
            errors.append(ValidationError(path, "type", message))
            return
    if "enum" in node:
        allowed = [_json_key(v) for v in node["enum"]]
        message = f"{_short(value)} is not one of {', '.join(allowed)}"
        if _json_key(value) not in allowed:
            errors.append(ValidationError(path, "enum", message))

    kind = _type_name(value)
    if kind == "string":
        _check_string(value, node, path, errors)
    elif kind in ("integer", "number"):
        _check_number(value, node, path, errors)
    elif kind == "array":
        _check_array(value, node, path, errors)
    elif kind == "object":
        _check_object(value, node, path, errors)


def validate(record, schema):
    """Validate one record; return the list of :class:`ValidationError` (empty if valid).

    Raises :class:`~schemacheck.SchemaError` if the schema is malformed.
    """
    node = normalize_schema(schema)
    errors = []
    _check_node(record, node, "$", errors)
    return errors


def validate_batch(records, schema):
    """Validate many records against one schema; return one error list per record."""
    return [validate(record, schema) for record in records]


def is_valid(record, schema) -> bool:
    """True if ``record`` has no validation errors."""
    return not validate(record, schema)
