"""Regular expressions as the reference runs them.

The reference compiles ``Split``/``Replace`` patterns with Oniguruma and walks
matches with the ``onig`` crate's iterator: after a match ending at ``e``, the
next search starts at ``e``; an empty match right where the previous match
ended is skipped by moving one character on. ``find_spans`` reproduces that
walk on top of the ``regex`` module (which shares the syntax used by real
files: ``\\p{L}``, ``(?i:...)``, possessive quantifiers, look-ahead).
"""

from __future__ import annotations

from functools import lru_cache
from typing import List, Tuple

import regex

from ..config import Pattern


@lru_cache(maxsize=256)
def _compile(kind: str, value: str):
    if kind == "String":
        return regex.compile(regex.escape(value))
    return regex.compile(value)


def compile_pattern(p: Pattern):
    return _compile(p.kind, p.value)


def find_spans(rx, text: str) -> List[Tuple[int, int]]:
    """Match spans in ``text``, walked the way the reference walks them."""
    out: List[Tuple[int, int]] = []
    n = len(text)
    pos = 0
    last_end = -1
    search = rx.search
    while pos <= n:
        m = search(text, pos)
        if m is None:
            break
        s, e = m.span()
        if s == e and e == last_end:
            pos += 1
            continue
        out.append((s, e))
        pos = e
        last_end = e
    return out
