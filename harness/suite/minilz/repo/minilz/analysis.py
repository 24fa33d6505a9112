"""Helpers for inspecting how well data compresses."""
from .codec import HEADER, DEFAULT_WINDOW_BITS, compress, decompress, read_header, _as_bytes

MIN_MATCH = 3


def roundtrip(data, window_bits=DEFAULT_WINDOW_BITS):
    """Compress and decompress ``data``; return True if the bytes survive unchanged."""
    raw = _as_bytes(data)
    return decompress(compress(raw, window_bits)) == raw


def ratio(data, window_bits=DEFAULT_WINDOW_BITS):
    """Compression ratio (original size / frame size); larger is better.

    Empty input has a ratio of 0.0 by convention.
    """
    raw = _as_bytes(data)
    if not raw:
        return 0.0
    return len(raw) / len(compress(raw, window_bits))


def token_stats(frame):
    """Walk the token stream of a frame and summarise it.

    Returns a dict with the number of literal runs, literal bytes, matches,
    bytes covered by matches and the mean match length and distance.
    """
    frame = _as_bytes(frame)
    read_header(frame)
    body = memoryview(frame)[HEADER.size:]
    runs = literals = matches = matched = dist_total = 0
    i = 0
    while i < len(body):
        c = body[i]
        i += 1
        if c < 0x80:
            runs += 1
            literals += c + 1
            i += c + 1
        else:
            matches += 1
            matched += (c & 0x7F) + MIN_MATCH
            dist_total += body[i] + (body[i + 1] << 8) + 1
            i += 2
    return {
        "literal_runs": runs,
        "literal_bytes": literals,
        "matches": matches,
        "matched_bytes": matched,
        "mean_match_length": matched / matches if matches else 0.0,
        "mean_distance": dist_total / matches if matches else 0.0,
    }
