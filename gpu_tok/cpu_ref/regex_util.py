"""Regular expressions as the reference runs them (Oniguruma, Ruby syntax).

Two things differ between Oniguruma (what the reference compiles ``Split``,
``Replace`` and ``ByteLevel`` patterns with) and the ``regex`` module, and both
are settled here by measurement (docs/decisions/0005-regex-dialect.md):

- **Character classes.** Oniguruma's Unicode tables are older than ``regex``'s,
  and its ``\\w``/``\\h`` mean other things. Every class escape (``\\p{..}``,
  ``\\P{..}``, ``\\w \\W \\s \\S \\d \\D \\h \\H``) is rewritten into explicit
  code-point ranges measured from the reference on every code point
  (``gpu_tok/data/onig_classes.json``, written by
  ``scripts/gen_unicode_tables.py``). A property the table lacks is refused.
- **Anchors.** In Ruby syntax ``^``/``$`` are line anchors (``regex.MULTILINE``)
  and ``\\Z`` also matches before a final newline.

``find_spans`` walks matches the way the ``onig`` crate's iterator does: the
next search starts where the last match ended; an empty match right where the
previous match ended is skipped by moving one character on.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Tuple

import regex

from ..config import Pattern

_TABLE = Path(__file__).resolve().parents[1] / "data" / "onig_classes.json"
_MAX = 0x10FFFF


@lru_cache(maxsize=1)
def _classes() -> Dict[str, List[Tuple[int, int]]]:
    data = json.loads(_TABLE.read_text())
    return {k: [tuple(r) for r in v] for k, v in data["classes"].items()}


def _complement(rs: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    out = []
    nxt = 0
    for a, b in rs:
        if a > nxt:
            out.append((nxt, a - 1))
        nxt = b + 1
    if nxt <= _MAX:
        out.append((nxt, _MAX))
    return out


def _render(rs: List[Tuple[int, int]]) -> str:
    parts = []
    for a, b in rs:
        parts.append("\\U%08x" % a if a == b else "\\U%08x-\\U%08x" % (a, b))
    return "".join(parts)


@lru_cache(maxsize=None)
def _class_body(name: str, negated: bool) -> str:
    table = _classes()
    if name not in table:
        raise KeyError(name)
    rs = table[name]
    return _render(_complement(rs) if negated else rs)


_ESCAPES = frozenset("wWsSdDhH")


def parse_property(pattern: str, i: int):
    """Parse ``\\p{Name}``, ``\\P{Name}``, ``\\p{^Name}`` or ``\\pL`` at ``i``.

    Returns ``(name, negated, end)`` or ``None`` when the braces are not closed.
    """
    n = len(pattern)
    if i + 2 < n and pattern[i + 2] == "{":
        j = pattern.find("}", i + 3)
        if j < 0:
            return None
        name, end = pattern[i + 3:j], j + 1
    else:
        name, end = pattern[i + 2:i + 3], i + 3
    negated = pattern[i + 1] == "P"
    if name.startswith("^"):
        name, negated = name[1:], not negated
    return name, negated, end


def translate(pattern: str) -> str:
    """Rewrite an Oniguruma (Ruby syntax) pattern for the ``regex`` module."""
    out: List[str] = []
    i = 0
    n = len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e in "pP":
                prop = parse_property(pattern, i)
                if prop is None:
                    raise ValueError(f"unterminated property at {i}")
                name, negated, end = prop
                try:
                    body = _class_body(name, negated)
                except KeyError:
                    raise ValueError(f"Unicode property \\p{{{name}}} is not in the measured table") from None
                out.append(body if in_class else f"[{body}]")
                i = end
                continue
            if e in _ESCAPES:
                # measured separately inside and outside brackets: they differ for \w
                body = _class_body(f"[\\{e}]" if in_class else f"\\{e}", False)
                out.append(body if in_class else f"[{body}]")
                i += 2
                continue
            if e == "Z" and not in_class:
                out.append(r"(?=\n?\Z)")
                i += 2
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "[" and i + 1 < n and pattern[i + 1] == ":":
                raise ValueError("POSIX bracket classes are not supported")
            if c == "[":
                raise ValueError("nested character classes are not supported")
            if c == "&" and pattern[i:i + 2] == "&&":
                raise ValueError("class intersection (&&) is not supported")
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":  # a "]" right after "[" or "[^" is a literal
                out.append("\\]")
                i += 1
            continue
        out.append(c)
        i += 1
    if in_class:
        raise ValueError("unterminated character class")
    return "".join(out)


@lru_cache(maxsize=256)
def compile_onig(pattern: str):
    """Compile a pattern as the reference's Oniguruma would read it."""
    return regex.compile(translate(pattern), regex.MULTILINE)


def compile_pattern(p: Pattern):
    """Compile a ``{"String"}``/``{"Regex"}`` pattern of a tokenizer.json component.

    Raises ``regex.error``/``ValueError`` when the pattern cannot be reproduced.
    """
    if p.kind == "String":
        return regex.compile(regex.escape(p.value))
    return compile_onig(p.value)


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

