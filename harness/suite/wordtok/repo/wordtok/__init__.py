"""wordtok: a small word/punctuation tokenizer and vocabulary builder.

Example::

    from wordtok import Tokenizer, Vocabulary

    tok = Tokenizer()
    tok.tokenize("Don't panic... it's fine!")
    # ["don't", 'panic', '...', "it's", 'fine', '!']

    vocab = Vocabulary.build(["a rose is a rose"], ngram_range=(1, 2))
    vocab.encode(tok.tokenize("a rose is red"))
"""
from .ngrams import everygrams, ngrams, split_gram
from .normalize import normalize, strip_accents
from .tokenize import Tokenizer, is_word, tokenize
from .vocab import DEFAULT_SPECIALS, Vocabulary

__all__ = [
    "Tokenizer",
    "Vocabulary",
    "DEFAULT_SPECIALS",
    "tokenize",
    "is_word",
    "normalize",
    "strip_accents",
    "ngrams",
    "everygrams",
    "split_gram",
]

__version__ = "0.4.0"
