"""Splitting text into word and punctuation tokens.

Token rules
-----------
* A *word* is a maximal run of word characters (letters, digits and the
  underscore, in any script).  An apostrophe (``'`` or ``\u2019``) directly
  between two word characters is part of the word, so ``don't`` and
  ``rock'n'roll`` are single tokens.
* Three consecutive full stops form one ``...`` token.
* Every other character that is neither a word character nor whitespace is
  a punctuation token of its own.
* Whitespace separates tokens and is discarded.
"""
from .normalize import normalize

APOSTROPHES = ("'", "\u2019")


# character classes
WORD = "word"
SPACE = "space"
PUNCT = "punct"

# scanner states
_OUTSIDE = 0
_IN_WORD = 1


def char_class(ch):
    """Classify one character as WORD, SPACE or PUNCT."""
    if ch.isalnum() or ch == "_":
        return WORD
    if ch.isspace():
        return SPACE
    return PUNCT


def is_word(token):
    """True if ``token`` is a word token (as opposed to punctuation)."""
    return bool(token) and char_class(token[0]) == WORD


class Tokenizer:
    """Configurable word/punctuation tokenizer.

    Parameters
    ----------
    lowercase, accents:
        Passed to :func:`wordtok.normalize.normalize`.
    keep_punct:
        If False, punctuation tokens (including ``...``) are dropped.
    """

    def __init__(self, lowercase=True, accents=True, keep_punct=True):
        self.lowercase = lowercase
        self.accents = accents
        self.keep_punct = keep_punct

    def __repr__(self):
        return "Tokenizer(lowercase=%r, accents=%r, keep_punct=%r)" % (
            self.lowercase,
            self.accents,
            self.keep_punct,
        )

    def tokenize(self, text):
        """Return the list of tokens of ``text`` after normalisation."""
        text = normalize(text, lowercase=self.lowercase, accents=self.accents)
        return self._split(text)

    def _emit(self, tokens, token):
        if self.keep_punct or is_word(token):
            tokens.append(token)

    def _split(self, text):
        """Scan ``text`` left to right with a two-state machine."""
        tokens = []
        state = _OUTSIDE
        current = ""
        i = 0
        n = len(text)
        while i < n:
            ch = text[i]
            cls = char_class(ch)
            if state == _IN_WORD:
                if cls == WORD:
                    current += ch
                    i += 1
                    continue
                if ch in APOSTROPHES and i + 1 < n and char_class(text[i + 1]) == WORD:
                    current += ch
                    i += 1
                    continue
                # the word ends here; ``ch`` is handled below
                self._emit(tokens, current)
                current = ""
                state = _OUTSIDE
            if cls == WORD:
                current = ch
                state = _IN_WORD
            elif cls == PUNCT:
                if ch == "." and text.startswith("...", i):
                    self._emit(tokens, "...")
                    i += 3
                    continue
                self._emit(tokens, ch)
            i += 1
        if state == _IN_WORD:
            self._emit(tokens, current)
        return tokens

    def tokenize_batch(self, texts):
        """Tokenize every text of an iterable; returns a list of token lists."""
        return [self.tokenize(t) for t in texts]


_DEFAULT = Tokenizer()


def tokenize(text):
    """Tokenize with the default settings (lower-cased, punctuation kept)."""
    return _DEFAULT.tokenize(text)
