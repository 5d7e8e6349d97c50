"""Text helpers: tokenizing, slugifying, case conversion, wrapping."""

import string

WORD_CHARS = string.ascii_letters + string.digits + "_'"
DEFAULT_ELLIPSIS = "..."


def tokenize(text, keep_punct=False):
    """Split text into words (and optionally punctuation tokens).

    Apostrophes inside words are kept ("don't" is one token).
    """
    tokens = []
    current = ""
    for ch in text:
        if ch in WORD_CHARS:
            current += ch
            continue
        if current:
            tokens.append(current)
            current = ""
        if keep_punct and not ch.isspace():
            tokens.append(ch)
    if current:
        tokens.append(current)
    return tokens


def word_count(text, ignore_case=True):
    """Return a dict mapping each word to the number of its occurrences."""
    counts = {}
    for token in tokenize(text):
        key = token.lower() if ignore_case else token
        counts[key] = counts.get(key, 0) + 1
    return counts


def most_common(text, n=1):
    """Return the n most common words as (word, count), ties broken alphabetically."""
    if n < 0:
        raise ValueError("n must be non-negative")
    items = sorted(word_count(text).items(), key=lambda kv: (-kv[1], kv[0]))
    return items[:n]


def slugify(text, sep="-", max_length=None):
    """Turn arbitrary text into a lowercase URL slug."""
    words = []
    current = ""
    for ch in text.lower():
        if ch.isascii() and ch.isalnum():
            current += ch
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    slug = sep.join(words)
    if max_length is not None and len(slug) > max_length:
        slug = slug[:max_length].rstrip(sep)
    return slug


def snake_case(name):
    """Convert CamelCase / mixedCase / kebab-case to snake_case."""
    out = []
    prev = ""
    for i, ch in enumerate(name):
        nxt = name[i + 1] if i + 1 < len(name) else ""
        if ch in "- ":
            out.append("_")
        elif ch.isupper():
            if prev.islower() or prev.isdigit():
                out.append("_")
            elif prev.isupper() and nxt.islower():
                out.append("_")
            out.append(ch.lower())
        else:
            out.append(ch)
        prev = ch
    return "".join(out)


def camel_case(name, upper_first=False):
    """Convert snake_case or kebab-case to camelCase (or PascalCase)."""
    parts = [p for p in name.replace("-", "_").split("_") if p]
    if not parts:
        return ""
    head = parts[0].capitalize() if upper_first else parts[0].lower()
    return head + "".join(p.capitalize() for p in parts[1:])


def truncate(text, width, ellipsis=DEFAULT_ELLIPSIS):
    """Shorten text to at most `width` characters, ending with `ellipsis`."""
    if width < len(ellipsis):
        raise ValueError("width is smaller than the ellipsis")
    if len(text) <= width:
        return text
    return text[: width - len(ellipsis)] + ellipsis


def wrap(text, width=20):
    """Greedy word wrap; words longer than width are put on their own line."""
    assert width > 0, "width must be positive"
    lines = []
    line = ""
    for word in text.split():
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line = line + " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def is_palindrome(text):
    """True if the alphanumeric characters read the same both ways."""
    cleaned = [ch.lower() for ch in text if ch.isalnum()]
    return len(cleaned) > 0 and cleaned == cleaned[::-1]
