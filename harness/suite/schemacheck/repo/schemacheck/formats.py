"""Named string formats usable with the ``format`` keyword.

Each entry is a regular expression that must match the *whole* string.
"""

_OCTET = r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DATE = r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"

FORMATS = {
    "email": r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}",
    "date": _DATE,
    "date-time": _DATE + r"T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "ipv4": rf"({_OCTET}\.){{3}}{_OCTET}",
    "hostname": rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*",
}
