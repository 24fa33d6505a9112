"""Conversion of Python strings to the int32 code point buffers used in C."""
import unicodedata

import numpy as np


def normalize(text, casefold=False, form="NFC"):
    """Unicode-normalise ``text`` (and optionally casefold it)."""
    if form:
        text = unicodedata.normalize(form, text)
    return text.casefold() if casefold else text


def codepoints(text):
    """Code points of ``text`` as a contiguous int32 array."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.int32).copy()


def pack(strings):
    """Pack strings into (buffer, offsets) with ``len(offsets) == len(strings) + 1``."""
    strings = list(strings)
    offsets = np.zeros(len(strings) + 1, dtype=np.int64)
    for i, s in enumerate(strings):
        if not isinstance(s, str):
            raise TypeError(f"item {i}: expected str, got {type(s).__name__}")
        offsets[i + 1] = offsets[i] + len(s)
    joined = "".join(strings)
    buf = np.frombuffer(joined.encode("utf-32-le"), dtype=np.int32).copy()
    if buf.size == 0:
        buf = np.zeros(1, dtype=np.int32)  # ctypes wants a real pointer
    return buf, offsets
