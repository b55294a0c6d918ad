"""Character properties with the reference's (Rust) definitions."""

from __future__ import annotations

import unicodedata

# Rust's char::is_whitespace: the Unicode White_Space property.
WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def is_whitespace(c: str) -> bool:
    return c in WHITE_SPACE


def is_numeric(c: str) -> bool:
    """Rust's char::is_numeric: general categories Nd, Nl, No."""
    return unicodedata.category(c) in ("Nd", "Nl", "No")


def is_punctuation(c: str) -> bool:
    """The reference's Punctuation pre-tokenizer: ASCII punctuation or a P* category."""
    o = ord(c)
    if o < 128:
        return (33 <= o <= 47) or (58 <= o <= 64) or (91 <= o <= 96) or (123 <= o <= 126)
    return unicodedata.category(c).startswith("P")


def is_combining_mark(c: str) -> bool:
    return unicodedata.category(c) in ("Mn", "Mc", "Me")
