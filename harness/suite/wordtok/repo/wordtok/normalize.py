"""Text normalisation applied before tokenisation."""
import unicodedata


def strip_accents(text):
    """Remove combining marks after canonical decomposition ("café" -> "cafe")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def normalize(text, lowercase=True, accents=True, form="NFKC"):
    """Normalise ``text`` for tokenisation.

    Parameters
    ----------
    lowercase:
        Convert to lower case (full Unicode case mapping).
    accents:
        Keep accents.  With ``accents=False`` combining marks are removed.
    form:
        Unicode normalisation form applied first (``None`` to skip).  NFKC
        folds compatibility characters such as full-width letters and
        ligatures into their plain equivalents.
    """
    if form:
        text = unicodedata.normalize(form, text)
    if not accents:
        text = strip_accents(text)
    if lowercase:
        text = text.lower()
    return text
