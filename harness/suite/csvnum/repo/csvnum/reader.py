"""Parse numeric CSV/TSV text into float64 matrices."""
import ctypes

import numpy as np

from . import _lib
from .dialect import first_record


def _to_bytes(text):
    if isinstance(text, str):
        return text.encode("utf-8")
    if isinstance(text, (bytearray, memoryview)):
        return bytes(text)
    if isinstance(text, bytes):
        return text
    raise TypeError(f"expected str or bytes, got {type(text).__name__}")


def _head_text(raw, limit=65536):
    return raw[:limit].decode("utf-8", errors="replace")


def parse_header(text, delimiter=","):
    """Return the column names on the first non-blank line of ``text``."""
    return first_record(_head_text(_to_bytes(text)), delimiter)


def _column_map(usecols, nfields):
    """Build the field -> output column map for ``usecols``."""
    if usecols is None:
        return np.arange(nfields, dtype=np.int64), nfields
    cols = []
    for c in usecols:
        c = int(c)
        if c < 0:
            c += nfields
        if c < 0:
            raise IndexError(f"column {c - nfields} out of range for {nfields} columns")
        cols.append(c)
    if len(set(cols)) != len(cols):
        raise ValueError("usecols contains duplicate columns")
    if not cols:
        return np.zeros(0, dtype=np.int64), 0
    mapping = np.full(max(cols) + 1, -1, dtype=np.int64)
    for out_col, field in enumerate(cols):
        mapping[field] = out_col
    return mapping, len(cols)


def parse(text, delimiter=",", header=False, usecols=None):
    """Parse delimited numeric text into a 2-D float64 array.

    Parameters
    ----------
    text : str or bytes
        The whole file contents.
    delimiter : str
        One-character field separator (``","`` for CSV, ``"\\t"`` for TSV).
    header : bool
        If true, the first non-blank line holds column names and is skipped.
    usecols : sequence of int, optional
        Input columns to keep, in output order; negative indices count from the
        end of the first data line. By default every column of the first data
        line is kept.

    Each field is read as the number it starts with, after leading blanks
    (``"12.5ms"`` gives 12.5). Missing values -- empty fields, fields that do
    not start with a number such as ``NA``, and fields absent from short rows --
    become NaN. Blank lines and lines starting with ``#`` are skipped.
    """
    if len(delimiter) != 1:
        raise ValueError("delimiter must be a single character")
    raw = _to_bytes(text)
    # the column count comes from the first data line, not the header
    first = first_record(_head_text(raw), delimiter, skip=1 if header else 0)
    mapping, ncols = _column_map(usecols, len(first))
    if ncols == 0:
        return np.zeros((0, 0), dtype=np.float64)

    nrows = ctypes.c_size_t(0)
    status = ctypes.c_int(0)
    ptr = _lib.lib.csvnum_parse(
        raw, len(raw), delimiter.encode("ascii"), int(bool(header)),
        mapping.ctypes.data_as(_lib.c_int64_p), len(mapping), ncols,
        ctypes.byref(nrows), ctypes.byref(status),
    )
    if status.value == _lib.STATUS_ENOMEM:
        raise MemoryError("csvnum: out of memory while parsing")
    if nrows.value == 0:
        return np.zeros((0, ncols), dtype=np.float64)
    try:
        out = np.ctypeslib.as_array(ptr, shape=(nrows.value, ncols)).copy()
    finally:
        _lib.lib.csvnum_free(ptr)
    return out


def read(path, delimiter=",", header=False, usecols=None):
    """Read a file from disk and :func:`parse` it."""
    with open(path, "rb") as fh:
        return parse(fh.read(), delimiter=delimiter, header=header, usecols=usecols)


def column_stats(matrix):
    """Per-column count of non-missing values, mean, min and max (NaN-aware)."""
    matrix = np.asarray(matrix, dtype=np.float64)
    valid = ~np.isnan(matrix)
    count = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, np.nansum(matrix, axis=0) / np.maximum(count, 1), np.nan)
    lo = np.array([np.nanmin(c) if n else np.nan for c, n in zip(matrix.T, count)])
    hi = np.array([np.nanmax(c) if n else np.nan for c, n in zip(matrix.T, count)])
    return {"count": count, "mean": mean, "min": lo, "max": hi}
