"""Unicode data exactly as the reference uses it, whatever Python runs us.

The reference's Rust crates carry their own Unicode tables, of other versions
than Python's ``unicodedata`` (which differs between Python versions too) and
the ``regex`` module's. Every Unicode-dependent decision of ``cpu_ref`` is
therefore taken from ``gpu_tok/data/unicode_norm.json``, measured on every
code point from the pinned reference by ``scripts/gen_unicode_norm_tables.py``:

- decompositions (NFD, NFKD), canonical combining classes (as ranks: only
  their order is observable), composition pairs: see ``normalizers.py``;
- ``Lowercase`` (Rust ``char::to_lowercase``, per character);
- character classes: ``is_combining_mark`` (StripAccents), ``is_whitespace``
  (Rust ``char::is_whitespace``: WhitespaceSplit, Strip, offset trimming),
  ``is_numeric`` (Digits), ``is_punctuation`` (Punctuation), and the Rust
  ``regex`` crate's ``\\w`` / ``\\s`` (Whitespace pre-tokenizer, added tokens'
  ``single_word`` / ``lstrip`` / ``rstrip``);
- ``BertNormalizer``'s own classes (``bert_flags``): what ``clean_text`` removes
  and what it makes a space, the marks ``strip_accents`` removes (the crate's
  Mn, not StripAccents' combining marks), and the CJK ideographs
  ``handle_chinese_chars`` puts spaces around.

The table is read once, on first use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np

_TABLE = Path(__file__).resolve().parents[1] / "data" / "unicode_norm.json"

# bits of the per-code-point flag table
_MARK, _WS, _NUM, _PUNCT, _RWORD, _RSPACE = 1, 2, 4, 8, 16, 32
_CLASS_BITS = {
    "combining_mark": _MARK,
    "white_space": _WS,
    "numeric": _NUM,
    "punctuation": _PUNCT,
    "rust_word": _RWORD,
    "rust_space": _RSPACE,
}

# bits of the BertNormalizer flag table (``NormTables.bert_flags``)
BERT_REMOVED, BERT_SPACE, BERT_MARK, BERT_CHINESE = 1, 2, 4, 8
_BERT_BITS = {"removed": BERT_REMOVED, "space": BERT_SPACE, "mark": BERT_MARK, "chinese": BERT_CHINESE}

# Hangul syllables: Unicode's arithmetic (the generator checks the reference follows it)
S_BASE, L_BASE, V_BASE, T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
L_COUNT, V_COUNT, T_COUNT = 19, 21, 28
N_COUNT = V_COUNT * T_COUNT
S_COUNT = L_COUNT * N_COUNT


class NormTables:
    """The measured tables, in the shapes the hot loops want."""

    __slots__ = ("meta", "nfd", "nfkd", "ccc", "compose", "lower_1to1", "lower_multi", "flags",
                 "class_ranges", "ascii_stable", "special_nfd", "special_nfkd", "bert_flags")

    def __init__(self, data: dict):
        self.meta = {k: data[k] for k in ("reference", "reference_version", "generated", "generator")}
        self.nfd: Dict[str, str] = {e[0]: e[1:] for e in data["nfd"]}
        nfkd = dict(self.nfd)
        nfkd.update((e[0], e[1:]) for e in data["nfkd"])
        self.nfkd: Dict[str, str] = {k: v for k, v in nfkd.items() if v != k}
        self.ccc: Dict[str, int] = {}
        for a, b, r in data["ccc"]:
            for c in range(a, b + 1):
                self.ccc[chr(c)] = r
        self.compose: Dict[str, str] = {e[:2]: e[2] for e in data["compose"]}
        self.lower_1to1: Dict[int, str] = {}
        self.lower_multi: Dict[str, str] = {}
        for e in data["lower"]:
            if len(e) == 2:
                self.lower_1to1[ord(e[0])] = e[1]
            else:
                self.lower_multi[e[0]] = e[1:]
        flags = bytearray(0x110000)
        self.class_ranges: Dict[str, List[Tuple[int, int]]] = {}
        for name, bit in _CLASS_BITS.items():
            rs = [(a, b) for a, b in data["classes"][name]]
            self.class_ranges[name] = rs
            for a, b in rs:
                for c in range(a, b + 1):
                    flags[c] |= bit
        self.flags = flags
        bert = bytearray(0x110000)
        for name, bit in _BERT_BITS.items():
            self.class_ranges["bert_" + name] = rs = [(a, b) for a, b in data["bert_classes"][name]]
            for a, b in rs:
                for c in range(a, b + 1):
                    bert[c] |= bit
        self.bert_flags = bert
        # characters that need the slow path of the decomposition loop
        self.special_nfd = frozenset(self.nfd) | frozenset(self.ccc)
        self.special_nfkd = frozenset(self.nfkd) | frozenset(self.ccc)
        # pure-ASCII text is left alone by every normalization form iff no ASCII
        # character decomposes, is a non-starter, or composes with another ASCII one
        self.ascii_stable = not any(
            k.isascii() for k in list(self.nfkd) + list(self.ccc)
        ) and not any(k.isascii() for k in self.compose)


_TABLES: Optional[NormTables] = None
_FLAGS: Optional[bytearray] = None


def tables() -> NormTables:
    """The measured tables (read on first use)."""
    global _TABLES, _FLAGS
    if _TABLES is None:
        _TABLES = NormTables(json.loads(_TABLE.read_text(encoding="utf-8")))
        _FLAGS = _TABLES.flags
    return _TABLES


def _flags() -> bytearray:
    return _FLAGS if _FLAGS is not None else tables().flags


# ------------------------------------------------------------- properties
def is_whitespace(c: str) -> bool:
    """Rust's ``char::is_whitespace`` as the reference was built with it."""
    return bool((_FLAGS or _flags())[ord(c)] & _WS)


def is_numeric(c: str) -> bool:
    """Rust's ``char::is_numeric`` (the Digits pre-tokenizer)."""
    return bool((_FLAGS or _flags())[ord(c)] & _NUM)


def is_punctuation(c: str) -> bool:
    """The Punctuation pre-tokenizer's predicate (ASCII punctuation or the crate's P* tables)."""
    return bool((_FLAGS or _flags())[ord(c)] & _PUNCT)


def is_combining_mark(c: str) -> bool:
    """What StripAccents removes."""
    return bool((_FLAGS or _flags())[ord(c)] & _MARK)


class CharClass:
    """A measured Rust-regex class; ``match(s)`` tests the first character of ``s``.

    Stands in for a compiled one-character pattern (``rx.match(text[i])``).
    """

    __slots__ = ("bit", "name")

    def __init__(self, name: str):
        self.name = name
        self.bit = _CLASS_BITS[name]

    def match(self, s: str) -> bool:
        return bool(s) and bool((_FLAGS or _flags())[ord(s[0])] & self.bit)

    def __contains__(self, c: str) -> bool:
        return bool((_FLAGS or _flags())[ord(c)] & self.bit)


RUST_WORD = CharClass("rust_word")  # Rust regex \w
RUST_SPACE = CharClass("rust_space")  # Rust regex \s


def whitespace_pretokenizer_spans(text: str) -> List[Tuple[int, int]]:
    """Match spans of the Whitespace pre-tokenizer's ``\\w+|[^\\w\\s]+`` (Rust regex classes).

    The matches of that pattern are exactly the maximal runs of word characters
    and the maximal runs of characters that are neither word nor space, so they
    are found as runs of a per-character kind (vectorized; no regex needed).
    """
    n = len(text)
    if n == 0:
        return []
    flags = _np_flags()
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    f = flags[cps]
    # kind: 1 word, 2 other, 0 space (not word)
    kind = np.where(f & _RWORD, 1, np.where(f & _RSPACE, 0, 2)).astype(np.int8)
    cuts = np.flatnonzero(kind[1:] != kind[:-1]) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [n]))
    keep = kind[starts] != 0
    return list(zip(starts[keep].tolist(), ends[keep].tolist()))


_NP_FLAGS = None


def _np_flags():
    global _NP_FLAGS
    if _NP_FLAGS is None:
        _NP_FLAGS = np.frombuffer(bytes(tables().flags), dtype=np.uint8)
    return _NP_FLAGS
