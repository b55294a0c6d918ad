"""Regular expressions as tiktoken runs them (Rust ``fancy-regex`` / ``regex`` crate).

The sibling of ``regex_util`` (Oniguruma) for the other dialect gpu_tok meets:
tiktoken compiles ``pat_str`` with ``fancy-regex``. Where the two dialects and
the ``regex`` module we run patterns with disagree, this is settled by
measurement (docs/decisions/0014-tiktoken-regex-dialect.md):

- **Character classes** (``\\p{..}``, ``\\P{..}``, ``\\w \\W \\s \\S \\d \\D``) are
  rewritten into explicit code-point ranges measured from tiktoken on every
  code point (``gpu_tok/data/tiktoken_classes.json``, written by
  ``scripts/gen_tiktoken_tables.py``). A property the table lacks is refused.
- **Anchors**: ``$`` is the end of the text (no multi-line mode), so it becomes
  ``\\Z``; ``\\z`` likewise. ``^``/``\\A`` mean the start in both.
- **Case-insensitive groups** ``(?i:...)``: each ASCII character inside is
  replaced by the exact set of code points tiktoken matches for it (measured:
  ``(?i:s)`` also matches U+017F ``ſ``); the group itself becomes ``(?:...)``.
  Anything whose case folding was not measured (a class escape, a range,
  a non-ASCII character) inside such a group is refused.
- Word boundaries, inline flag changes (``(?m)``, ``(?s)``, ``(?x)``, ``(?i)``
  outside a group, ``(?-i:``), POSIX brackets, nested classes and class set
  operations (``&&``, ``--``, ``~~``) are refused with the position.

Possessive quantifiers (``++``, ``?+``, ``{1,3}+``), atomic groups and
look-arounds mean the same in both and pass through.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Tuple

import regex

from .regex_util import _complement, _render, parse_property

_TABLE = Path(__file__).resolve().parents[1] / "data" / "tiktoken_classes.json"


class UnsupportedPattern(ValueError):
    """A tiktoken pattern construct gpu_tok does not reproduce exactly."""

    def __init__(self, pattern: str, pos: int, what: str):
        self.pattern = pattern
        self.pos = pos
        super().__init__(f"pat_str[{pos}]: {what} is not supported (pattern {pattern!r})")


@lru_cache(maxsize=1)
def _table():
    data = json.loads(_TABLE.read_text())
    classes = {k: [tuple(r) for r in v] for k, v in data["classes"].items()}
    casefold = {k: [c for c in v] for k, v in data["casefold"].items()}
    return classes, casefold, data["reference_version"]


def reference_version() -> str:
    return _table()[2]


@lru_cache(maxsize=None)
def _class_body(name: str, negated: bool) -> str:
    classes = _table()[0]
    if name not in classes:
        raise KeyError(name)
    rs = classes[name]
    return _render(_complement(rs) if negated else rs)


def _fold_body(ch: str) -> str:
    """Code points (rendered for a class body) that ``(?i:ch)`` matches in tiktoken."""
    cps = _table()[1].get(ch)
    if cps is None:
        return _render([(ord(ch), ord(ch))])
    return _render([(c, c) for c in sorted(cps)])


_HEX = frozenset("0123456789abcdefABCDEF")
_SIMPLE = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_CLASS_ESCAPES = frozenset("wWsSdD")
_REPEAT = regex.compile(r"\{[0-9]+(?:,[0-9]*)?\}")


def translate(pattern: str) -> str:
    """Rewrite a tiktoken (``fancy-regex``) pattern for the ``regex`` module."""
    out: List[str] = []
    n = len(pattern)
    i = 0
    in_class = False
    class_start = 0  # index in out of the first item of the current class body
    # one entry per open group: is the group case-insensitive?
    groups: List[bool] = []

    def ci() -> bool:
        return bool(groups) and groups[-1]

    def bad(pos: int, what: str):
        raise UnsupportedPattern(pattern, pos, what)

    def literal(ch: str, pos: int) -> str:
        """A literal character, rendered for inside or outside a class."""
        if ci():
            if ord(ch) >= 0x80:
                bad(pos, f"non-ASCII character {ch!r} inside (?i:...)")
            body = _fold_body(ch)
            return body if in_class else f"[{body}]"
        if ch.isascii() and ch.isalnum():
            return ch
        body = _render([(ord(ch), ord(ch))])  # "\\U0000002c": unambiguous in and out of a class
        return body

    def read_hex(j: int, fixed: int) -> Tuple[int, int]:
        """Parse ``{h..}`` or ``fixed`` hex digits at pattern[j:]; return (code point, end)."""
        if j < n and pattern[j] == "{":
            k = pattern.find("}", j)
            digits = pattern[j + 1:k] if k > 0 else ""
            if k < 0 or not digits or not all(c in _HEX for c in digits):
                bad(j, "malformed hex escape")
            return int(digits, 16), k + 1
        digits = pattern[j:j + fixed]
        if len(digits) != fixed or not all(c in _HEX for c in digits):
            bad(j, "malformed hex escape")
        return int(digits, 16), j + fixed

    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                bad(i, "trailing backslash")
            e = pattern[i + 1]
            if e in "pP":
                if ci():
                    bad(i, f"\\{e} inside (?i:...)")
                prop = parse_property(pattern, i)
                if prop is None:
                    bad(i, "unterminated property")
                name, negated, end = prop
                try:
                    body = _class_body(name, negated)
                except KeyError:
                    bad(i, f"Unicode property \\p{{{name}}} (not in the measured table)")
                out.append(body if in_class else f"[{body}]")
                i = end
                continue
            if e in _CLASS_ESCAPES:
                if ci():
                    bad(i, f"\\{e} inside (?i:...)")
                body = _class_body(f"[\\{e}]" if in_class else f"\\{e}", False)
                out.append(body if in_class else f"[{body}]")
                i += 2
                continue
            if e in "xuU":
                cp, end = read_hex(i + 2, {"x": 2, "u": 4, "U": 8}[e])
                if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                    bad(i, "escape of a non-scalar value")
                out.append(literal(chr(cp), i))
                i = end
                continue
            if e in _SIMPLE:
                out.append(literal(_SIMPLE[e], i))
                i += 2
                continue
            if not in_class and e == "A":
                out.append(r"\A")
                i += 2
                continue
            if not in_class and e == "z":
                out.append(r"\Z")
                i += 2
                continue
            if e.isascii() and not e.isalnum() and e not in " \t\n":
                out.append(literal(e, i))  # an escaped meta character: a literal
                i += 2
                continue
            bad(i, f"escape \\{e}")
        if in_class:
            if c == "[":
                bad(i, "POSIX bracket class" if pattern.startswith("[:", i) else "nested character class")
            if pattern.startswith(("&&", "--", "~~"), i):
                bad(i, f"class set operation {pattern[i:i + 2]!r}")
            if c == "]":
                in_class = False
                out.append("]")
                i += 1
                continue
            if c == "-" and len(out) > class_start and i + 1 < n and pattern[i + 1] != "]":
                if ci():
                    bad(i, "a range inside (?i:...)")
                out.append("-")
                i += 1
                continue
            out.append(literal(c, i))
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append("[")
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            class_start = len(out)
            if i < n and pattern[i] == "]":  # a "]" right after "[" or "[^" is a literal
                out.append(literal("]", i))
                i += 1
            continue
        if c == "(":
            if pattern.startswith("(?", i):
                if pattern.startswith("(?i:", i):
                    groups.append(True)
                    out.append("(?:")
                    i += 4
                    continue
                for opener in ("(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>"):
                    if pattern.startswith(opener, i):
                        groups.append(ci())
                        out.append(opener)
                        i += len(opener)
                        break
                else:
                    m = regex.match(r"\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>", pattern[i:])
                    if m is None:
                        bad(i, f"group or flag {pattern[i:i + 5]!r}")
                    groups.append(ci())
                    out.append(f"(?P<{m.group(1)}>")
                    i += m.end()
                continue
            groups.append(ci())
            out.append("(")
            i += 1
            continue
        if c == ")":
            if not groups:
                bad(i, "unbalanced ')'")
            groups.pop()
            out.append(")")
            i += 1
            continue
        if c == "$":
            out.append(r"\Z")
            i += 1
            continue
        if c == "{":
            m = _REPEAT.match(pattern, i)
            if m is None:
                bad(i, "'{' that is not a counted repetition")
            out.append(m.group())
            i = m.end()
            continue
        if c in "^.|*+?":
            out.append(c)
            i += 1
            continue
        out.append(literal(c, i))
        i += 1
    if in_class:
        bad(n, "unterminated character class")
    if groups:
        bad(n, "unterminated group")
    return "".join(out)


@lru_cache(maxsize=64)
def compile_tiktoken_pattern(pat_str: str):
    """Compile ``pat_str`` as tiktoken's ``fancy-regex`` reads it (``regex`` module object)."""
    return regex.compile(translate(pat_str))


def check_classes_table() -> Dict[str, int]:
    """Number of code points per class in the measured table (for tests/diagnostics)."""
    return {k: sum(b - a + 1 for a, b in v) for k, v in _table()[0].items()}
