"""Vocabulary construction and id encoding."""
import json

from .ngrams import everygrams
from .tokenize import Tokenizer

DEFAULT_SPECIALS = ("<pad>", "<unk>")


class Vocabulary:
    """A frozen mapping between tokens (or n-grams) and integer ids.

    Ids ``0 .. len(specials) - 1`` are the special tokens; the remaining
    entries are ordered by decreasing corpus count, ties broken by the token
    string, so the same corpus always gives the same ids.

    Attributes
    ----------
    itos:
        List of entries indexed by id.
    counts:
        Corpus frequency of every non-special entry.
    doc_freq:
        Number of documents that contain each non-special entry.
    """

    def __init__(self, itos, counts=None, doc_freq=None, specials=DEFAULT_SPECIALS, unk="<unk>"):
        self.itos = list(itos)
        self.stoi = {tok: i for i, tok in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("duplicate entries in vocabulary")
        self.counts = dict(counts or {})
        self.doc_freq = dict(doc_freq or {})
        self.specials = tuple(specials)
        self.unk = unk
        self.unk_id = self.stoi.get(unk)

    # -- construction -------------------------------------------------------
    @classmethod
    def build(cls, texts, tokenizer=None, ngram_range=(1, 1), min_count=1, max_size=None,
              specials=DEFAULT_SPECIALS, unk="<unk>"):
        """Count the n-grams of ``texts`` and keep the frequent ones.

        Parameters
        ----------
        texts:
            Iterable of documents (strings).
        tokenizer:
            A :class:`Tokenizer`; defaults to ``Tokenizer()``.
        ngram_range:
            ``(min_n, max_n)``; n-grams of every length in the range are counted.
        min_count:
            Entries seen fewer times are dropped.
        max_size:
            Keep at most this many non-special entries (the most frequent ones).
        """
        tokenizer = tokenizer or Tokenizer()
        min_n, max_n = ngram_range
        counts = {}
        doc_freq = {}
        for text in texts:
            tokens = tokenizer.tokenize(text)
            seen = set()
            for gram in everygrams(tokens, min_n, max_n):
                if gram in counts:
                    counts[gram] += 1
                else:
                    counts[gram] = 1
                if gram not in seen:
                    seen.add(gram)
                    if gram in doc_freq:
                        doc_freq[gram] += 1
                    else:
                        doc_freq[gram] = 1

        kept = [g for g in counts if counts[g] >= min_count and g not in specials]
        kept.sort(key=lambda g: (-counts[g], g))
        if max_size is not None:
            kept = kept[:max_size]
        return cls(
            list(specials) + kept,
            counts={g: counts[g] for g in kept},
            doc_freq={g: doc_freq[g] for g in kept},
            specials=specials,
            unk=unk,
        )

    # -- lookup -------------------------------------------------------------
    def __len__(self):
        return len(self.itos)

    def __contains__(self, token):
        return token in self.stoi

    def encode(self, tokens):
        """Map tokens to ids; unknown tokens map to the ``unk`` id."""
        if self.unk_id is None:
            raise KeyError("vocabulary has no unknown-token entry")
        ids = []
        for tok in tokens:
            if tok in self.stoi:
                ids.append(self.stoi[tok])
            else:
                ids.append(self.unk_id)
        return ids

    def decode(self, ids):
        """Map ids back to tokens."""
        return [self.itos[i] for i in ids]

    def encode_text(self, text, tokenizer=None):
        """Tokenize ``text`` and encode the tokens."""
        tokenizer = tokenizer or Tokenizer()
        return self.encode(tokenizer.tokenize(text))

    def encode_batch(self, texts, tokenizer=None):
        """Encode every text of an iterable; returns a list of id lists."""
        tokenizer = tokenizer or Tokenizer()
        return [self.encode(tokenizer.tokenize(t)) for t in texts]

    # -- persistence --------------------------------------------------------
    def to_json(self):
        return json.dumps(
            {"itos": self.itos, "counts": self.counts, "doc_freq": self.doc_freq,
             "specials": list(self.specials), "unk": self.unk},
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, data):
        obj = json.loads(data)
        return cls(obj["itos"], obj["counts"], obj["doc_freq"], obj["specials"], obj["unk"])
