"""textkit: small pure-Python utilities."""

from . import cache, durations, expr, intervals, parsing, stats, text, vector

__version__ = "0.1.0"

__all__ = [
    "cache",
    "durations",
    "expr",
    "intervals",
    "parsing",
    "stats",
    "text",
    "vector",
    "__version__",
]
