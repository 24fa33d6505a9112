"""editdist: Levenshtein distance and fuzzy vocabulary lookups."""
from .matching import Vocabulary, distance, ratio
from .packing import codepoints, normalize, pack

__all__ = ["Vocabulary", "distance", "ratio", "codepoints", "normalize", "pack"]
__version__ = "1.2.0"
