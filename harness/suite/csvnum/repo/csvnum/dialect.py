"""Small helpers for figuring out the shape of a delimited text buffer."""

CANDIDATE_DELIMITERS = (",", "\t", ";", "|")


def _lines(text, limit):
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        out.append(line)
        if len(out) >= limit:
            break
    return out


def sniff_delimiter(text, sample_lines=20):
    """Guess the delimiter of ``text`` (str) from its first data lines.

    Picks the candidate that appears the same, non-zero number of times on the
    most lines. Falls back to ``","``.
    """
    lines = _lines(text, sample_lines)
    best, best_score = ",", 0
    for delim in CANDIDATE_DELIMITERS:
        counts = [line.count(delim) for line in lines]
        if not counts or max(counts) == 0:
            continue
        mode = max(set(counts), key=counts.count)
        score = counts.count(mode) if mode else 0
        if score > best_score:
            best, best_score = delim, score
    return best


def first_record(text, delimiter=",", skip=0):
    """Return the fields of the first non-blank, non-comment line of ``text``.

    ``skip`` such lines are passed over first (e.g. 1 to skip a header); if the
    text has fewer lines, the last one available is used.
    """
    lines = _lines(text, skip + 1)
    if not lines:
        return []
    return [f.strip() for f in lines[-1].rstrip("\r").split(delimiter)]


def count_columns(text, delimiter=","):
    """Number of fields on the first data line of ``text`` (0 if there is none)."""
    return len(first_record(text, delimiter))
