"""Compiled (Numba ``njit``) pre-tokenization scanners for the four common split patterns.

Each scanner cuts text exactly where the reference regex does (docs/decisions/0018):

=========  ==========================================================================
family     patterns (``dialect``: where they come from)
=========  ==========================================================================
gpt2       ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``
           (onig: GPT-2/RoBERTa ``ByteLevel`` with ``use_regex``; tiktoken: accepted too)
           and r50k/p50k's ``'(?:[sdmt]|ll|ve|re)| ?\\p{L}++| ... |\\s++$|\\s+(?!\\S)|\\s``
           (tiktoken). Both cut identically.
cl100k     onig: Llama-3's ``(?i:'s|...)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|``
           `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``;
           tiktoken: cl100k_base's ``'(?i:[sdmt]|ll|ve|re)|...|\\s++$|\\s*[\\r\\n]|\\s+(?!\\S)|\\s``.
           They differ in one place: white space that starts a piece, runs to the end
           of the segment and holds ``\\r``/``\\n`` before its last character (``"a\\n  "``)
           is one piece in cl100k_base (``\\s++$``), two in Llama-3 (``"\\n"``, ``"  "``).
qwen       onig: Qwen2/3's pattern, Llama-3's with ``\\p{N}`` (one digit per piece);
           tiktoken: the same string, accepted too.
o200k      o200k_base / o200k_harmony / gpt-4o / gpt-oss, the same string in both dialects:
           ``[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|...)?``
           ``|...|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+``
=========  ==========================================================================

``family_of_pattern(pattern, dialect)`` recognises exactly these strings (``PATTERNS``);
``(family, dialect)`` then names one pattern's semantics. Any other pattern is the
caller's to run with the ``regex`` module (``cpu_ref.regex_util`` / ``cpu_ref.rust_regex``).

Classes
-------
``class_table(dialect)`` is a ``uint8[0x110000]`` of class bits built from the measured
tables (``gpu_tok/data/onig_classes.json`` / ``tiktoken_classes.json``), never from
Python's or ``regex``'s Unicode data: ``C_WS`` (``\\s``), ``C_L`` (``\\p{L}``), ``C_N``
(``\\p{N}``), ``C_UP`` (``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]``), ``C_LO``
(``[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]``), ``C_NL`` (``\\r``, ``\\n``) and ``C_M`` (``\\p{M}``).
The two dialects' tables are identical today (0014); they are still kept apart.

Case folding of ``(?i:'s|'t|'re|'ve|'m|'ll|'d)`` is a small ``uint8`` array
(``fold_table``) mapping a code point to the contraction letter it matches (0: none), per
dialect: tiktoken's from the measured ``casefold`` of tiktoken_classes.json; Oniguruma's
from the reference translator (``regex_util.compile_onig``; onig_classes.json has no fold
data), which ``tests/test_kernels_pretok.py --full`` holds against tokenizers on every
code point. In both, ``s`` also matches U+017F (so ``'ſ`` is a contraction) and the
other letters their two cases. The gpt2 family's contractions are case-sensitive.

Matching
--------
The scanners decode UTF-8 on the fly and walk the alternatives of the pattern in order,
with the backtracking of the reference worked out per alternative (all linear):

* ``\\s+(?!\\S)``: a white-space run followed by a non-space gives its last character to
  the next piece (a run of one character then falls to ``\\s+``/``\\s``);
* ``\\s*[\\r\\n]+`` ends right after the last ``\\r``/``\\n`` of the run;
* o200k's ``P?U*L+`` (U/L: the ``C_UP``/``C_LO`` classes, which overlap on Lm, Lo and
  marks) ends at the end of the L-run that follows the U-run, else right after the last
  character of the U-run that is also in L, else fails; the optional prefix ``P`` is
  tried taken first, then not taken, before the next alternative.

Kernels
-------
``_piece_gpt2(data, i, e, tab, fold)``, ``_piece_cl100k(data, i, e, tab, fold,
max_digits, end_whole)`` and ``_piece_o200k(data, i, e, tab, fold)`` return the end of
the piece that starts at byte ``i`` of a segment ending at ``e``; ``_prepare(family,
dialect)`` gives ``(family marker, end_whole, tab, fold)`` for the kernels that loop over
them (``family_marker``: one compiled copy per family). They are compiled
without NRT (see the note above them) so that other kernels can call them per piece
cheaply; ``_scan_range`` loops over them to fill the mask.

Parallel plan (``scan_mask(parallel=True)``)
--------------------------------------------
Work is cut into units of about ``chunk`` bytes (``max(16 KiB, total / (8 * threads))``):
runs of consecutive small segments are grouped into one unit; a segment of at least
``2 * chunk`` bytes is cut at nominal offsets ``k * chunk`` and each cut is moved forward
to the first *sync point* before the next nominal offset: a position whose previous
character is a letter (``\\p{L}``) and whose own character is neither a letter, a mark nor
``'``. In all four families a piece always starts there (the piece holding that letter is
a letter run or a contraction and cannot extend over such a character), so each unit can
be scanned on its own, with the segment's true end as the limit of look-ahead and of
``$``. A cut without a sync point before the next nominal offset is dropped (its bytes
go to the unit before). A huge segment of prose therefore uses every thread; a huge
segment of digits or spaces only one. ``prange`` runs the sync search and the units.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
from numba import njit, prange

from ._intrinsics import ctz64, load64, opaque64, range_mask64
from .hash_table import kernel_bytes, njit_cached, njit_noalloc
from .hash_table import uidx as _U

__all__ = [
    "FAMILIES", "DIALECTS", "PATTERNS", "family_of_pattern", "class_table", "fold_table", "scan_mask",
    "pieces", "piece_spans",
    "C_WS", "C_L", "C_N", "C_UP", "C_LO", "C_NL", "C_M",
]

FAMILIES = ("gpt2", "cl100k", "qwen", "o200k")
DIALECTS = ("onig", "tiktoken")

# ------------------------------------------------------------------ the recognised patterns
GPT2_HF = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
GPT2_TIKTOKEN = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"
LLAMA3_HF = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")
CL100K_TIKTOKEN = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"
                   r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s")
QWEN_HF = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
           r"|\s*[\r\n]+|\s+(?!\S)|\s+")
O200K = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# (dialect, pattern) -> family. Only strings whose cuts the (family, dialect) scanner
# reproduces: Llama-3's string under tiktoken would need Llama-3's semantics with the
# tiktoken dialect, which ("cl100k", "tiktoken") is not (it is cl100k_base's), so it is
# left to the regex fallback; the tiktoken strings with `$` are not taken as Oniguruma
# patterns (there `$` is a line anchor).
PATTERNS: Dict[Tuple[str, str], str] = {
    ("onig", GPT2_HF): "gpt2",
    ("onig", LLAMA3_HF): "cl100k",
    ("onig", QWEN_HF): "qwen",
    ("onig", O200K): "o200k",
    ("tiktoken", GPT2_TIKTOKEN): "gpt2",
    ("tiktoken", GPT2_HF): "gpt2",
    ("tiktoken", CL100K_TIKTOKEN): "cl100k",
    ("tiktoken", QWEN_HF): "qwen",
    ("tiktoken", O200K): "o200k",
}


def family_of_pattern(pattern: str, dialect: str) -> Optional[str]:
    """The family whose scanner cuts exactly like ``pattern`` in ``dialect``, else ``None``.

    ``dialect``: ``"onig"`` (a tokenizer.json ``Split`` regex or ``ByteLevel`` with
    ``use_regex``) or ``"tiktoken"`` (a ``pat_str``).
    """
    _check_dialect(dialect)
    return PATTERNS.get((dialect, pattern))


def _check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {DIALECTS}, not {dialect!r}")


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, not {family!r}")


# ------------------------------------------------------------------ class and fold tables
C_WS = 1    # \s
C_L = 2     # \p{L}
C_N = 4     # \p{N}
C_UP = 8    # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
C_LO = 16   # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
C_NL = 32   # \r \n
C_M = 64    # \p{M}
_WLN = C_WS | C_L | C_N

_N_CP = 0x110000
_DATA = Path(__file__).resolve().parents[1] / "data"
_JSON = {"onig": _DATA / "onig_classes.json", "tiktoken": _DATA / "tiktoken_classes.json"}
_TABLES: Dict[str, np.ndarray] = {}
_FOLDS: Dict[str, np.ndarray] = {}
_RAW: Dict[str, dict] = {}


def _raw(dialect: str) -> dict:
    if dialect not in _RAW:
        _RAW[dialect] = json.loads(_JSON[dialect].read_text())
    return _RAW[dialect]


def _members(ranges) -> np.ndarray:
    """bool[0x110000]: the code points of a list of inclusive ``[a, b]`` ranges."""
    r = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    d = np.zeros(_N_CP + 1, dtype=np.int32)
    np.add.at(d, r[:, 0], 1)
    np.add.at(d, r[:, 1] + 1, -1)
    return np.cumsum(d[:-1]) > 0


def class_table(dialect: str) -> np.ndarray:
    """``uint8[0x110000]`` of the ``C_*`` class bits of every code point (cached, read-only)."""
    _check_dialect(dialect)
    tab = _TABLES.get(dialect)
    if tab is None:
        cls = _raw(dialect)["classes"]
        if cls["\\s"] != cls["[\\s]"]:  # both spellings occur in the patterns
            raise ValueError(f"{_JSON[dialect].name}: \\s differs inside and outside brackets")
        m = {name: _members(cls[name]) for name in ("\\s", "L", "N", "Lu", "Ll", "Lt", "Lm", "Lo", "M")}
        tab = np.zeros(_N_CP, dtype=np.uint8)
        tab[m["\\s"]] |= C_WS
        tab[m["L"]] |= C_L
        tab[m["N"]] |= C_N
        tab[m["Lu"] | m["Lt"] | m["Lm"] | m["Lo"] | m["M"]] |= C_UP
        tab[m["Ll"] | m["Lm"] | m["Lo"] | m["M"]] |= C_LO
        tab[m["M"]] |= C_M
        tab[[10, 13]] |= C_NL
        k = tab & _WLN
        if ((k & (k - 1)) != 0).any():  # the scanners rely on \s, \p{L}, \p{N} being disjoint
            raise ValueError(f"{_JSON[dialect].name}: \\s, \\p{{L}} and \\p{{N}} overlap")
        tab.setflags(write=False)
        _TABLES[dialect] = tab
    return tab


_CONTRACTION_LETTERS = "dlmrstv" + "e"  # the letters of 's 't 're 've 'm 'll 'd


def _onig_casefold() -> Dict[str, List[int]]:
    """Code points that Oniguruma's ``(?i:x)`` matches, per contraction letter, as the
    reference translator compiles it (checked against tokenizers on every code point by
    ``tests/test_kernels_pretok.py --full``; for other letters the translator's ``regex``
    folding is not the reference's: ``(?i:i)`` matches U+0130 there, not in Oniguruma)."""
    from ..cpu_ref.regex_util import compile_onig

    every = "".join(chr(c) for c in range(_N_CP) if not 0xD800 <= c <= 0xDFFF)
    candidates = set(compile_onig(f"(?i:[{_CONTRACTION_LETTERS}])").findall(every))
    out = {}
    for x in _CONTRACTION_LETTERS:
        rx = compile_onig(f"(?i:{x})")
        out[x] = sorted(ord(c) for c in candidates if rx.fullmatch(c))
    return out


def _casefold(dialect: str) -> Dict[str, List[int]]:
    if dialect == "tiktoken":
        return {x: list(_raw("tiktoken")["casefold"][x]) for x in _CONTRACTION_LETTERS}
    return _onig_casefold()


def fold_table(dialect: Optional[str]) -> np.ndarray:
    """``uint8[K]``: ``fold[c]`` is the contraction letter (``d e l m r s t v``, lower case)
    that code point ``c`` matches inside ``(?i:...)`` in ``dialect``, else 0;
    ``dialect=None``: case-sensitive (the gpt2 family's contractions)."""
    key = dialect or "sensitive"
    f = _FOLDS.get(key)
    if f is None:
        if dialect is None:
            cf = {x: [ord(x)] for x in _CONTRACTION_LETTERS}
        else:
            _check_dialect(dialect)
            cf = _casefold(dialect)
        size = max(128, max(c for v in cf.values() for c in v) + 1)
        f = np.zeros(size, dtype=np.uint8)
        for x, cps in cf.items():
            for c in cps:
                if f[c] and f[c] != ord(x):
                    raise ValueError(f"code point U+{c:04X} folds to two letters")
                f[c] = ord(x)
        f.setflags(write=False)
        _FOLDS[key] = f
    return f


# ------------------------------------------------------------------ njit helpers
_piece_jit = njit_noalloc


def _inline_twin(dispatcher):
    try:
        return njit(_nrt=False, inline="always")(dispatcher.py_func)
    except (KeyError, TypeError, ValueError):  # pragma: no cover
        return dispatcher


_APOS = 39
_SPACE = 32


@njit_noalloc(inline="always")
def _dec(data, p):
    """(code point, byte length) of the UTF-8 character at ``p`` (valid UTF-8 assumed)."""
    b0 = np.int64(data[_U(p)])
    if b0 < 0x80:
        return b0, 1
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | (np.int64(data[_U(p + 1)]) & 0x3F), 2
    if b0 < 0xF0:
        return (((b0 & 0x0F) << 12) | ((np.int64(data[_U(p + 1)]) & 0x3F) << 6)
                | (np.int64(data[_U(p + 2)]) & 0x3F)), 3
    return (((b0 & 0x07) << 18) | ((np.int64(data[_U(p + 1)]) & 0x3F) << 12)
            | ((np.int64(data[_U(p + 2)]) & 0x3F) << 6) | (np.int64(data[_U(p + 3)]) & 0x3F)), 4


@_piece_jit
def _fold(fold, c):
    if c < fold.shape[0]:
        return fold[_U(c)]
    return 0


@_piece_jit
def _contraction(data, p, e, fold):
    """Byte length of ``'s|'t|'re|'ve|'m|'ll|'d`` (letters through ``fold``) at ``p``, else 0."""
    if p + 1 >= e or data[_U(p)] != _APOS:
        return 0
    c, n = _dec(data, p + 1)
    f = _fold(fold, c)
    if f == 115 or f == 116 or f == 109 or f == 100:  # s t m d
        return 1 + n
    if f == 114 or f == 118 or f == 108:  # r v l
        q = p + 1 + n
        if q >= e:
            return 0
        c2, n2 = _dec(data, q)
        f2 = _fold(fold, c2)
        if (f == 108 and f2 == 108) or (f != 108 and f2 == 101):  # ll, re, ve
            return 1 + n + n2
    return 0


# One function per family returns the end of the piece that starts at ``i`` (a piece
# start of the segment that ends at ``e``). They take arrays and loop, and Numba does not
# prune the reference-count updates of array arguments around loops, neither in a called
# helper nor in an inlined one: about 30 ns per call, more than the piece itself. So they
# are compiled without NRT (``_nrt=False``: nothing here allocates), which removes them.
# ``_scan_range`` (also without NRT) inlines a twin of each (``_inline_twin``), which saves
# the call per piece (~20 %); other kernels (the fused engine) call ``_piece_*`` directly.
# The small helpers (``_dec``, ``_contraction``) are compiled the same way; LLVM inlines them.


# ASCII runs eight bytes at a time (SWAR): a mask with bit 7 of each byte set where the
# byte is in a range, then the first byte out of it by counting trailing zeros. Only
# ASCII bytes (< 0x80) are ever in a range, so a run stops at the first non-ASCII byte
# and the caller's general loop (which decodes UTF-8) goes on from there.
_H = np.uint64(0x8080808080808080)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_ONES = np.uint64(0x0101010101010101)
_CASE = np.uint64(0x2020202020202020)


@njit_noalloc(inline="always")
def _in_range(x, lo, hi):
    """Bit 7 of each byte of ``x`` that is an ASCII byte in ``[lo, hi]`` (``0 < lo <= hi < 0x80``)."""
    x7 = x & _LOW7
    ge = (x7 | _H) - np.uint64(lo) * _ONES
    le = np.uint64(hi | 0x80) * _ONES - x7
    return ge & le & ~x & _H


@_piece_jit
def _ascii_run(data, p, e, kind):
    """End of the run of ASCII letters (``kind`` 0: ``[A-Za-z]``), capitals (1: ``[A-Z]``),
    small letters (2: ``[a-z]``) or digits (3: ``[0-9]``) that starts at ``p``, at most ``e``."""
    n = data.shape[0]
    while p < e:
        if p + 8 <= n:
            x = load64(data, p)
            if kind == 0:
                m = _in_range(x | _CASE, 0x61, 0x7A)
            elif kind == 1:
                m = _in_range(x, 0x41, 0x5A)
            elif kind == 2:
                m = _in_range(x, 0x61, 0x7A)
            else:
                m = _in_range(x, 0x30, 0x39)
            if m == _H:
                p += 8
                continue
            p += np.int64(ctz64(~m & _H) >> np.uint64(3))
            return p if p < e else e
        b = data[_U(p)]
        if kind == 0:
            ok = 0x61 <= (b | 0x20) <= 0x7A
        elif kind == 1:
            ok = 0x41 <= b <= 0x5A
        elif kind == 2:
            ok = 0x61 <= b <= 0x7A
        else:
            ok = 0x30 <= b <= 0x39
        if not ok:
            return p
        p += 1
    return e


@_piece_jit
def _piece_gpt2(data, i, e, tab, fold):
    # the common pieces first: ' ?[A-Za-z]+' ending before an ASCII byte
    b0 = data[_U(i)]
    q = i + 1 if b0 == _SPACE and i + 1 < e else i
    if 0x61 <= (data[_U(q)] | 0x20) <= 0x7A:
        p = _ascii_run(data, q + 1, e, 0)
        if p >= e or data[_U(p)] < 0x80:
            return p
    c, n = _dec(data, i)
    if c == _APOS:
        m = _contraction(data, i, e, fold)
        if m > 0:
            return i + m
    k = tab[_U(c)]
    p = i + n
    if c == _SPACE and p < e:  # ' ?' before \p{L}+, \p{N}+ or [^\s\p{L}\p{N}]+
        c2, n2 = _dec(data, p)
        k2 = tab[_U(c2)]
        if k2 & C_WS == 0:
            k = k2
            p += n2
    if k & C_WS == 0:
        want = k & _WLN  # C_L, C_N or 0 (the other characters)
        if want == C_L:
            p = _ascii_run(data, p, e, 0)
        elif want == C_N:
            p = _ascii_run(data, p, e, 3)
        while p < e:
            b = data[_U(p)]
            if b < 0x80:
                if tab[_U(b)] & _WLN != want:
                    break
                p += 1
            else:
                c2, n2 = _dec(data, p)
                if tab[_U(c2)] & _WLN != want:
                    break
                p += n2
        return p
    # \s+(?!\S) | \s+
    return _ws_run(data, i, e, tab, False, False)


@njit_noalloc(inline="always")
def _window_limit(data, i, e, stop, reach, high):
    """The last bit a 64-byte window at ``i`` may settle: bit ``k`` is read from bytes
    ``<= k + reach``, which must be ASCII or the window's two-byte letters (before the
    first bit of ``high``, ``_window_pairs``'s), inside the segment (``< e``) and in the
    window; and no piece may start past ``stop``."""
    lim = min(np.int64(63 - reach), e - i - 1 - reach, stop - i)
    if high != 0:
        lim = min(lim, np.int64(ctz64(high)) - 1 - reach)
    return lim


# Two-byte letters in the windows. Text in Latin scripts with accents and in Cyrillic went
# one piece at a time through the scalar code from each non-ASCII character on (8 MB of the
# multilingual bench file, gpt2: its mostly-Latin documents, 40% of the bytes, took 54% of
# the scan). The windows also read, as letters, the two-byte characters of a few lead
# bytes whose 64 code points are all letters (``_PAIR_LEADS``: Latin-1's and Latin
# Extended-A/B's, IPA, basic Cyrillic) but for the exceptions (``_PAIR_EXCEPTIONS``:
# Latin-1's multiplication and division signs, and U+017F, which ``(?i:'s)`` matches); for
# o200k, whose words split at case, only those that are upper case or lower case alone,
# in ranges (``_PAIR_O200K_UPPER``/``_LOWER``: not Latin Extended-A/B, whose cases
# alternate). Both bytes of such a character take its class, so the masks' rules (runs,
# transitions) hold byte by byte; ``_check_pairs`` verifies these ranges against the class
# and fold tables when a scanner is prepared.
_PAIR_LEADS = ((0xC3, 0xCA), (0xD0, 0xD1))
_PAIR_EXCEPTIONS = ((0xC3, 0x97), (0xC3, 0xB7), (0xC5, 0xBF))
_PAIR_O200K_UPPER = ((0xC3, 0x80, 0x96), (0xC3, 0x98, 0x9E), (0xD0, 0x80, 0xAF))
_PAIR_O200K_LOWER = ((0xC3, 0x9F, 0xB6), (0xC3, 0xB8, 0xBF), (0xC9, 0x8F, 0xBF), (0xCA, 0x80, 0x93), (0xCA, 0x95, 0xAF),
                     (0xD0, 0xB0, 0xBF), (0xD1, 0x80, 0x9F))


@njit_noalloc(inline="always")
def _pair_masks(data, i, fam, lead):
    """``(letters, upper, lower)``: the bits of both bytes of the two-byte characters of
    ``data[i:i + 64]`` that the window reads as letters (upper and lower: o200k's, else
    equal to letters), given ``lead`` (``_pair_leads``); a lead byte in the last position
    is left out (its second byte is not in the window). The constants are ``_PAIR_*``'s."""
    one = np.uint64(1)
    lead &= ~(one << np.uint64(63))
    c3 = range_mask64(data, i, 0xC3, 0xC3)
    if fam == _F_O200K:
        d0 = range_mask64(data, i, 0xD0, 0xD0)
        up = (((c3 & ((range_mask64(data, i, 0x80, 0x96) | range_mask64(data, i, 0x98, 0x9E)) >> one))
               | (d0 & (range_mask64(data, i, 0x80, 0xAF) >> one))) & lead)
        low = (((c3 & ((range_mask64(data, i, 0x9F, 0xB6) | range_mask64(data, i, 0xB8, 0xBF)) >> one))
                | (range_mask64(data, i, 0xC9, 0xC9) & (range_mask64(data, i, 0x8F, 0xBF) >> one))
                | (range_mask64(data, i, 0xCA, 0xCA)
                   & ((range_mask64(data, i, 0x80, 0x93) | range_mask64(data, i, 0x95, 0xAF)) >> one))
                | (d0 & (range_mask64(data, i, 0xB0, 0xBF) >> one))
                | (range_mask64(data, i, 0xD1, 0xD1) & (range_mask64(data, i, 0x80, 0x9F) >> one))) & lead)
        up |= up << one
        low |= low << one
        return up | low, up, low
    ex = ((c3 & ((range_mask64(data, i, 0x97, 0x97) | range_mask64(data, i, 0xB7, 0xB7)) >> one))
          | (range_mask64(data, i, 0xC5, 0xC5) & (range_mask64(data, i, 0xBF, 0xBF) >> one)))
    lead &= ~ex
    m = lead | (lead << one)
    return m, m, m


@njit_noalloc(inline="always")
def _pair_leads(data, i, fam):
    """The bytes of ``data[i:i + 64]`` that are lead bytes of the window's two-byte letters."""
    if fam == _F_O200K:
        return range_mask64(data, i, 0xC3, 0xC3) | range_mask64(data, i, 0xC9, 0xCA) | range_mask64(data, i, 0xD0, 0xD1)
    return range_mask64(data, i, 0xC3, 0xCA) | range_mask64(data, i, 0xD0, 0xD1)


@njit_noalloc(inline="always")
def _window_pairs(data, i, fam):
    """``(high, letters, upper, lower)``: the bytes >= 0x80 of ``data[i:i + 64]`` that
    are not the window's two-byte letters, and ``_pair_masks``; the latter only computed
    when there is a lead byte of one (pure-ASCII windows, most of English text and code,
    cost 7-10% more with them: 8 MB, gpt2 pattern, serial scan)."""
    z = np.uint64(0)
    high = range_mask64(data, i, 0x80, 0xFF)
    if high == z:
        return high, z, z, z
    lead = _pair_leads(data, i, fam)
    if lead == z:
        return high, z, z, z
    acc, up, low = _pair_masks(data, i, fam, lead)
    return high & ~acc, acc, up, low


def _check_pairs(family: str, tab: np.ndarray, fold: np.ndarray) -> None:
    """Raise when the window's two-byte letters (``_PAIR_*``) are not, in these tables,
    letters (o200k: upper case alone or lower case alone) that no contraction letter
    folds to: the windows would then cut otherwise than the scalar code."""
    def cp(lead, cont):
        return ((lead & 0x1F) << 6) | (cont & 0x3F)

    def plain(c, want):
        k = int(tab[c])
        return k & _WLN == C_L and (c >= fold.shape[0] or fold[c] == 0) and (want == 0 or k & (C_UP | C_LO) == want)

    if family == "o200k":
        ranges = [(lead, lo, hi, C_UP) for lead, lo, hi in _PAIR_O200K_UPPER]
        ranges += [(lead, lo, hi, C_LO) for lead, lo, hi in _PAIR_O200K_LOWER]
    else:
        ranges = [(lead, 0x80, 0xBF, 0) for a, b in _PAIR_LEADS for lead in range(a, b + 1)]
    for lead, lo, hi, want in ranges:
        for cont in range(lo, hi + 1):
            if (lead, cont) in _PAIR_EXCEPTIONS and family != "o200k":
                continue
            c = cp(lead, cont)
            if not plain(c, want):
                raise ValueError(f"pre-tokenizer windows: U+{c:04X} is not a plain letter in this class table; "
                                 f"the two-byte letter ranges need updating")


@njit_noalloc(inline="always")
def _ascii_classes(data, i, opaque=False):
    r"""``(letters, digits, space, 
, other white space or space)`` masks of ``data[i:i + 64]``
    (the ASCII classes of every family: ``\s`` is ``[	
 ]`` over ASCII in both dialects)."""
    lett = _mask(data, i, 0x41, 0x5A, opaque) | _mask(data, i, 0x61, 0x7A, opaque)
    dig = _mask(data, i, 0x30, 0x39, opaque)
    sp = _mask(data, i, 0x20, 0x20, opaque)
    nl = _mask(data, i, 10, 10, opaque) | _mask(data, i, 13, 13, opaque)
    wnn = _mask(data, i, 9, 9, opaque) | _mask(data, i, 11, 12, opaque) | sp
    return lett, dig, sp, nl, wnn


@njit_noalloc(inline="always")
def _mask(data, i, lo, hi, opaque):
    """``range_mask64``; with ``opaque`` (a constant) through ``opaque64``, so that LLVM
    keeps the operations on it on the 64-bit word: gpt2's window needs it, the other
    families' are slower with it (decision 0018, addendum of 2026-12-02, has the
    measurements)."""
    m = range_mask64(data, i, lo, hi)
    if opaque:
        return opaque64(m)
    return m


@njit_noalloc(inline="always")
def _settled(st, lim):
    """The bits of ``st`` up to ``lim`` (bit 0 alone when the window settles nothing more)."""
    if lim < 1:
        return np.uint64(1)
    return st & ((np.uint64(2) << np.uint64(lim)) - np.uint64(1))


@njit_noalloc(inline="always")
def _ci_mask(data, i, c):
    """Bits of the bytes equal to the ASCII letter ``c`` (lower case) in either case."""
    return range_mask64(data, i, c, c) | range_mask64(data, i, c - 32, c - 32)


@njit_noalloc(inline="always")
def _letter_mask(data, i, c, ci):
    """Bits of the bytes equal to the small ASCII letter ``c``, either case when ``ci``."""
    if ci:
        return _ci_mask(data, i, c)
    return range_mask64(data, i, c, c)


@njit_noalloc(inline="always")
def _contraction_masks(data, i, aps, ci):
    """``(two, three)``: the apostrophes of ``aps`` followed by ``s t m d`` (a two-byte
    contraction) and by ``re ve ll`` (three bytes); letters in either case when ``ci``."""
    one = np.uint64(1)
    ell = _letter_mask(data, i, 0x6C, ci)
    two = ((_letter_mask(data, i, 0x73, ci) | _letter_mask(data, i, 0x74, ci) | _letter_mask(data, i, 0x6D, ci)
            | _letter_mask(data, i, 0x64, ci)) >> one) & aps
    rv = _letter_mask(data, i, 0x72, ci) | _letter_mask(data, i, 0x76, ci)
    three = (((rv >> one) & (_letter_mask(data, i, 0x65, ci) >> np.uint64(2)))
             | ((ell >> one) & (ell >> np.uint64(2)))) & aps
    return two, three


@njit_noalloc(inline="always")
def _digit_groups(dig, max_digits):
    r"""Starts of ``\p{N}{1,max_digits}`` pieces (``max_digits`` 1 or 3) in the digit mask:
    each run's first digit, then every third while the run goes on."""
    one = np.uint64(1)
    if max_digits == 1:
        return dig
    ds = dig & ~(dig << one)
    full = dig & (dig << one) & (dig << np.uint64(2))
    t = ds
    while True:
        t = (t << np.uint64(3)) & full
        if t == 0:
            break
        ds |= t
    return ds


# Sixty-four bytes at a time (SIMD, ``range_mask64``): the piece starts of pure-ASCII text as
# a bit mask, from masks of the byte classes, for the gpt2 pattern. Bit ``k`` of a mask is
# byte ``i + k``; ``x << 1`` moves each bit to the next byte ("the previous byte is x").
# Over ASCII the pattern reads: a run of letters, of digits or of other characters
# (``[^\s\p{L}\p{N}]``) is a piece, with one space before it joined to it; a run of
# whitespace followed by a non-space is cut before its last character (which joins the next
# piece when it is a space, else stands alone); a contraction (``'s 't 're 've 'm 'll 'd``)
# that starts a piece is a piece. Which bits the window settles: bit ``k`` depends on bytes
# ``k - 3 .. k + 1``, so the bits up to the one before the first non-ASCII byte, the byte
# before the segment's end, and byte 62 (the caller's ``i`` is a piece start: bit 0).
@njit_noalloc(inline="always")
def _gpt2_starts(data, i, e, stop):
    """Bit mask of the gpt2 pattern's piece starts in ``data[i:i + 64]`` that this window
    settles (bit 0, ``i``, is a piece start; bits past ``stop - i`` are left out, so a piece
    that starts at or after ``stop`` is never implied). Needs ``i + 64 <= data.shape[0]``."""
    lett, dig, sp, nl, wnn = _ascii_classes(data, i, True)
    high, acc, _, _ = _window_pairs(data, i, _F_GPT2)
    lett |= acc
    ws = wnn | nl
    oth = ~(lett | dig | ws)
    one = np.uint64(1)
    cs = (lett & ~(lett << one)) | (dig & ~(dig << one)) | (oth & ~(oth << one)) | (ws & ~(ws << one))
    nws = ~ws >> one  # bit k: byte k + 1 is not whitespace
    st = (cs & ~((sp & nws) << one)) | (ws & nws) | one
    aps = range_mask64(data, i, 0x27, 0x27) & st  # apostrophes that start a piece
    if aps != 0:
        two, three = _contraction_masks(data, i, aps, False)  # case-sensitive here
        st = (st & ~((two | three) << one)) | (two << np.uint64(2)) | (three << np.uint64(3))
    return _settled(st, _window_limit(data, i, e, stop, 1, high))


@_piece_jit
def _digit_run(data, p, e, tab, max_digits):
    r"""``\p{N}{1,max_digits}`` after a first digit that ends at ``p``."""
    cnt = 1
    while cnt < max_digits and p < e:
        c2, n2 = _dec(data, p)
        if tab[_U(c2)] & C_N == 0:
            break
        p += n2
        cnt += 1
    return p


@_piece_jit
def _other_run(data, c, k, p, e, tab, slash):
    r"""`` ?[^\s\p{L}\p{N}]+[\r\n]*`` (``[\r\n/]*`` with ``slash``) from the character ``c``
    (classes ``k``) that ends at ``p``; -1 when it does not match there."""
    other = -1
    if k & _WLN == 0:
        other = p
    elif c == _SPACE and p < e:
        c2, n2 = _dec(data, p)
        if tab[_U(c2)] & _WLN == 0:
            other = p + n2
    if other < 0:
        return -1
    p = other
    while p < e:
        b = data[_U(p)]
        if b < 0x80:
            if tab[_U(b)] & _WLN != 0:
                break
            p += 1
        else:
            c2, n2 = _dec(data, p)
            if tab[_U(c2)] & _WLN != 0:
                break
            p += n2
    while p < e and (data[_U(p)] == 10 or data[_U(p)] == 13 or (slash and data[_U(p)] == 47)):
        p += 1
    return p


@_piece_jit
def _ws_run(data, i, e, tab, newlines, end_whole):
    r"""``\s*[\r\n]+ | \s+(?!\S) | \s+`` at ``i`` (a white-space character; without
    ``newlines`` only ``\s+(?!\S) | \s+``, GPT-2's), preceded by cl100k_base's ``\s++$`` when
    ``end_whole``: the run reaching the segment's end is one piece."""
    q = i
    last = i
    nl_end = -1
    cnt = 0
    while q < e:
        c2, n2 = _dec(data, q)
        k2 = tab[_U(c2)]
        if k2 & C_WS == 0:
            break
        if newlines and k2 & C_NL:
            nl_end = q + n2
        last = q
        q += n2
        cnt += 1
    if q == e and end_whole:
        return e
    elif nl_end > 0:
        return nl_end
    elif q == e:
        return e
    elif cnt >= 2:
        return last
    else:
        return q


@njit_noalloc(inline="always")
def _newline_runs(data, i, ws, nl, st, lim):
    r"""``\s*[\r\n]+``: a run of whitespace holding ``\r`` or ``\n`` ends a piece after its
    last one. Adds those starts to ``st``; a run whose end the window cannot see lowers the
    limit to its first undecided newline (the bits up to there do not depend on it).
    Returns ``(st, lim)``."""
    one = np.uint64(1)
    m = nl & ((np.uint64(2) << np.uint64(lim)) - one)
    while m != 0:
        p = np.int64(ctz64(m))
        m &= m - one
        r = p + 1 + np.int64(ctz64(~ws >> np.uint64(p + 1)))  # the first byte after the run
        if r > lim + 1:
            return st, p
        if p + 1 + np.int64(ctz64(nl >> np.uint64(p + 1))) >= r:  # no newline after p in the run
            st |= one << np.uint64(p + 1)
    return st, lim


@njit_noalloc(inline="always")
def _cl100k_starts(data, i, e, stop, max_digits):
    r"""``_gpt2_starts`` for the cl100k / Llama-3 pattern (``max_digits`` 3) and Qwen's (1).
    Over ASCII: a contraction (any case) that starts a piece; a run of letters with one
    character before it that is neither a letter, a digit, ``\r`` nor ``\n`` when that
    character starts a piece; digits in groups of ``max_digits``; a run of other characters
    with one space before it, then the newlines that follow it; whitespace to its last
    newline, else cut before its last character (which may join the next piece)."""
    one = np.uint64(1)
    high, acc, _, _ = _window_pairs(data, i, _F_CL100K)
    lim = _window_limit(data, i, e, stop, 1, high)
    if lim < 1:
        return one
    lett, dig, sp, nl, wnn = _ascii_classes(data, i)  # wnn: \s but \r \n
    lett |= acc
    ws = wnn | nl
    oth = ~(lett | dig | ws)
    # the newlines right after a run of other characters belong to its piece ([\r\n]*):
    # adding each chain's first bit carries through the chain and clears it
    ab = nl & ~(nl + (((oth & ~(oth >> one)) << one) & nl))
    nl &= ~ab
    w2 = ws & ~ab
    ds = _digit_groups(dig, max_digits)
    os_ = oth & ~(oth << one)
    lastw = wnn & (~ws >> one)  # white space (not \r \n) before a non-space: starts a piece
    st = (lett & ~(lett << one)) | ds | os_ | (w2 & ~(w2 << one)) | lastw | one
    st, lim = _newline_runs(data, i, ws, nl, st, lim)
    sp_o = sp & lastw & (oth >> one)  # ' ?[^\s\p{L}\p{N}]+'
    pre = ((lastw & ~sp_o) | (os_ & ~(sp_o << one))) & (lett >> one)  # [^\r\n\p{L}\p{N}]?\p{L}+
    aps = range_mask64(data, i, 0x27, 0x27) & os_ & ~(sp_o << one)  # apostrophes starting a piece
    if aps != 0:
        two, three = _contraction_masks(data, i, aps, True)
        pre &= ~(two | three)
        st = (st & ~((two | three) << one)) | (two << np.uint64(2)) | (three << np.uint64(3))
    return _settled(st & ~((sp_o | pre) << one), lim)


@_piece_jit
def _piece_cl100k(data, i, e, tab, fold, max_digits, end_whole):
    c, n = _dec(data, i)
    if c == _APOS:
        m = _contraction(data, i, e, fold)
        if m > 0:
            return i + m
    k = tab[_U(c)]
    p = i + n
    # [^\r\n\p{L}\p{N}]?\p{L}+
    letters = -1
    if k & C_L:
        letters = p
    elif k & (C_L | C_N | C_NL) == 0 and p < e:
        c2, n2 = _dec(data, p)
        if tab[_U(c2)] & C_L:
            letters = p + n2
    if letters >= 0:
        p = _ascii_run(data, letters, e, 0)
        while p < e:
            b = data[_U(p)]
            if b < 0x80:
                if tab[_U(b)] & C_L == 0:
                    break
                p += 1
            else:
                c2, n2 = _dec(data, p)
                if tab[_U(c2)] & C_L == 0:
                    break
                p += n2
        return p
    # \p{N}{1,3} (\p{N} for qwen)
    if k & C_N:
        return _digit_run(data, p, e, tab, max_digits)
    # ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    r = _other_run(data, c, k, p, e, tab, False)
    if r >= 0:
        return r
    # (\s++$ for cl100k_base) | \s*[\r\n]+ | \s+(?!\S) | \s+
    return _ws_run(data, i, e, tab, True, end_whole)


@njit_noalloc(inline="always")
def _o200k_ascii_word(data, i, e):
    """The end of o200k's letter piece at ``i`` when it is decided by ASCII alone: an
    optional ASCII prefix (not a letter, digit, ``\r`` or ``\n``), then ``[A-Z]*[a-z]*``
    (at least one letter) ending before an ASCII byte or the segment's end. Then the first
    alternative matched (``[a-z]+`` after the capitals) or, with no small letter, the second
    (``[A-Z]+``); both end there. -1 when not decided (the general code runs)."""
    b = data[_U(i)]
    if b >= 0x80:
        return -1
    q = i
    if not 0x61 <= (b | 0x20) <= 0x7A:
        if b == 10 or b == 13 or 0x30 <= b <= 0x39 or i + 1 >= e:
            return -1
        q = i + 1
        b = data[_U(q)]
        if not 0x61 <= (b | 0x20) <= 0x7A:
            return -1
    q = _ascii_run(data, q, e, 1)
    if q < e and data[_U(q)] >= 0x80:
        return -1
    q = _ascii_run(data, q, e, 2)
    if q < e and data[_U(q)] >= 0x80:
        return -1
    return q


@njit_noalloc(inline="always")
def _o200k_starts(data, i, e, stop):
    r"""``_gpt2_starts`` for the o200k pattern. Over ASCII: a word is ``[A-Z]*[a-z]*`` (a new
    one at each capital after a small letter) with one character before it that is neither
    a letter, a digit, ``\r`` nor ``\n`` when that character starts a piece, and a
    contraction (any case) right after it; digits in groups of three; a run of other
    characters with one space before it, then the ``\r``, ``\n`` and ``/`` that follow it;
    whitespace as in ``_cl100k_starts``. Bit ``k`` reads bytes up to ``k + 2`` here (an
    apostrophe is a piece start unless ``'ll`` ``'re`` ``'ve`` follows a word)."""
    one = np.uint64(1)
    high, acc, pup, plow = _window_pairs(data, i, _F_O200K)
    lim = _window_limit(data, i, e, stop, 2, high)
    if lim < 1:
        return one
    lett, dig, sp, nl, wnn = _ascii_classes(data, i)
    up = range_mask64(data, i, 0x41, 0x5A)
    low = (lett & ~up) | plow
    up |= pup
    lett |= acc
    ws = wnn | nl
    oth = ~(lett | dig | ws)
    # [\r\n/]* after a run of other characters: a chain starts at a newline after one
    # (a "/" right after the run is in the run). A "/" of the chain is a character of
    # the other class too, so a newline after it seeds the same chain again: the sum
    # carries from the first seed, and the later seeds (left set by it) are added back.
    tail = nl | range_mask64(data, i, 0x2F, 0x2F)
    seed = (oth << one) & nl
    ab = (tail & ~(tail + seed)) | seed
    nl &= ~ab
    w2 = ws & ~ab
    oth &= ~ab
    ds = _digit_groups(dig, 3)
    os_ = oth & ~(oth << one)
    lastw = wnn & (~ws >> one)
    st = ((lett & ~(lett << one)) | (up & (low << one)) | ds | os_ | (w2 & ~(w2 << one)) | lastw
          | one)
    st, lim = _newline_runs(data, i, ws, nl, st, lim)
    sp_o = sp & lastw & (oth >> one)
    pre = ((lastw & ~sp_o) | (os_ & ~(sp_o << one))) & (lett >> one)
    st &= ~((sp_o | pre) << one)
    aps = range_mask64(data, i, 0x27, 0x27) & (lett << one)  # apostrophes right after a letter
    if aps != 0:
        two, three = _contraction_masks(data, i, aps, True)
        ends = (two << np.uint64(2)) | (three << np.uint64(3))
        clash = ends & (two | three)  # a contraction right after a contraction: left to the scalar code
        if clash != 0:
            lim = min(lim, np.int64(ctz64(clash)) - 1)
        k = two | three
        st = (st & ~(k | (k << one) | (three << np.uint64(2)))) | ends
    return _settled(st, lim)


@_piece_jit
def _piece_o200k(data, i, e, tab, fold):
    r = _o200k_ascii_word(data, i, e)
    if r >= 0:
        if r < e and data[_U(r)] == _APOS:
            return r + _contraction(data, r, e, fold)
        return r
    c, n = _dec(data, i)
    k = tab[_U(c)]
    p = i + n
    prefix = k & (C_L | C_N | C_NL) == 0 and p < e  # [^\r\n\p{L}\p{N}]? is tried taken first
    # alternative 1: P?[UP]*[LO]+ ; alternative 2: P?[UP]+[LO]* ; each then (?i:'s|...)?
    r = -1
    q = i
    for attempt in range(4):
        if attempt == 0 or attempt == 2:
            if not prefix:
                continue
            q = p
        else:
            if k & (C_UP | C_LO) == 0:
                continue
            q = i
        if attempt < 2:
            # [UP]*[LO]+: the L-run after the U-run, else up to the last U character
            # that is also L, else no match
            last_both = -1
            r = -2
            while q < e:
                c2, n2 = _dec(data, q)
                k2 = tab[_U(c2)]
                if k2 & C_UP == 0:
                    if k2 & C_LO:
                        q += n2
                        while q < e:
                            c3, n3 = _dec(data, q)
                            if tab[_U(c3)] & C_LO == 0:
                                break
                            q += n3
                        r = q
                    break
                q += n2
                if k2 & C_LO:
                    last_both = q
            if r == -2:
                r = last_both
        else:
            # [UP]+[LO]*
            r = -1
            if q < e:
                c2, n2 = _dec(data, q)
                if tab[_U(c2)] & C_UP:
                    q += n2
                    while q < e:
                        c3, n3 = _dec(data, q)
                        if tab[_U(c3)] & C_UP == 0:
                            break
                        q += n3
                    while q < e:
                        c3, n3 = _dec(data, q)
                        if tab[_U(c3)] & C_LO == 0:
                            break
                        q += n3
                    r = q
        if r >= 0:
            break
    if r >= 0:
        if r < e and data[_U(r)] == _APOS:
            return r + _contraction(data, r, e, fold)
        return r
    # \p{N}{1,3}
    if k & C_N:
        return _digit_run(data, p, e, tab, 3)
    # ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
    r = _other_run(data, c, k, p, e, tab, True)
    if r >= 0:
        return r
    # \s*[\r\n]+ | \s+(?!\S) | \s+
    return _ws_run(data, i, e, tab, True, False)


# family codes inside the kernels (1..4: a family marker's length, ``family_marker``)
_F_GPT2, _F_CL100K, _F_QWEN, _F_O200K = 1, 2, 3, 4
_FAMILY_CODE = {"gpt2": _F_GPT2, "cl100k": _F_CL100K, "qwen": _F_QWEN, "o200k": _F_O200K}


def family_marker(code: int) -> tuple:
    """The family as the CPU kernels take it: a tuple of ``code`` zeros, so each family is
    a distinct argument type and Numba compiles a copy of every kernel that takes it per
    family. A kernel that scans reads its code as ``code = len(fam)`` (a constant of the
    compiled copy: Numba rewrites ``len`` of a tuple argument to its length) and names the
    families' scanners in an ``if`` on it (the note above ``_gpt2_window``), which Numba
    prunes to the copy's own family before it inlines them (decision 0036). Where Numba did
    not prune, the ``if`` stays a runtime test: the same pieces, a slower compile."""
    return (0,) * code


_piece_gpt2_inline = _inline_twin(_piece_gpt2)
_piece_cl100k_inline = _inline_twin(_piece_cl100k)
_piece_o200k_inline = _inline_twin(_piece_o200k)


@njit_noalloc(inline="always")
def _mixed_start(data, i):
    """Whether a 64-byte window at ``i`` settles bit 0 alone: a byte >= 0x80 among its
    first three.

    A window settles bit ``k`` only when the bytes up to ``k + 1`` at least are ASCII (or
    its two-byte letters, ``_pair_masks``), so with a byte >= 0x80 among the first three it
    settles bit 0 alone: that answer at once, without the class masks (text in other
    scripts, where nearly every piece starts so, went through a whole window per piece:
    8 MB of the multilingual file, gpt2, serial scan, 25.7 -> 20.4 ms; cl100k 20.4 -> 18.5;
    the fused engine, where the window is not the bottleneck, unchanged within noise).
    Letting a two-byte letter's lead byte through here (so that Cyrillic words start
    windows too) was measured slower: in-process paired against the code before the
    two-byte letters, gpt2 multilingual 1.31x instead of 1.36x, prose 0.98x instead of
    1.02x; letting only Cyrillic's D0/D1 through: 0.99x against leaving it as it is."""
    return (load64(data, i) & np.uint64(0x808080)) != 0


# Each family's 64-byte window at ``i`` (``_gpt2_starts`` and the others; needs ``i + 64 <=
# data.shape[0]``) and its next piece one character at a time (``_piece_*``). A kernel that
# scans names all of them in an ``if`` on ``code = len(fam)`` (``family_marker``) written in
# its own body: Numba prunes that ``if`` before it inlines them, so each family's compiled
# copy holds its own scanner only. (An inlined helper holding the ``if`` was inlined whole,
# every family in it, before the pruning: decision 0036.)
@njit_noalloc(inline="always")
def _gpt2_window(data, i, e, stop):
    return np.uint64(1) if _mixed_start(data, i) else _gpt2_starts(data, i, e, stop)


@njit_noalloc(inline="always")
def _o200k_window(data, i, e, stop):
    return np.uint64(1) if _mixed_start(data, i) else _o200k_starts(data, i, e, stop)


@njit_noalloc(inline="always")
def _cl100k_window(data, i, e, stop, max_digits):
    return np.uint64(1) if _mixed_start(data, i) else _cl100k_starts(data, i, e, stop, max_digits)


@njit_noalloc(inline="always")
def _next_piece(data, i, e, fam, end_whole, tab, fold):
    """The end of the piece at ``i``, one character at a time (the family's ``_piece_*``),
    ``fam`` a family's code: the GPU's cut (``pretok_cuda``), where it stays a runtime
    value; the CPU kernels name the ``_piece_*`` in their own ``if`` (above)."""
    if fam == _F_GPT2:
        return _piece_gpt2_inline(data, i, e, tab, fold)
    if fam == _F_O200K:
        return _piece_o200k_inline(data, i, e, tab, fold)
    return _piece_cl100k_inline(data, i, e, tab, fold, 1 if fam == _F_QWEN else 3, end_whole)


@_piece_jit
def _scan_range(data, start, stop, end, fam, end_whole, tab, fold, mask):
    """Mark the pieces that start in ``[start, stop)``: ``start`` is a piece start of the
    segment that ends at ``end``, ``stop`` another one (or ``end``). Pure-ASCII stretches
    go 64 bytes at a time (``_gpt2_window`` and the others), the rest one piece at a time."""
    code = len(fam)  # the family's code, a constant of each compiled copy (family_marker)
    i = start
    n = data.shape[0]
    while i < stop:
        if i + 64 <= n:
            if code == _F_GPT2:  # the family's scanner only (the note above _gpt2_window)
                m = _gpt2_window(data, i, end, stop)
            elif code == _F_O200K:
                m = _o200k_window(data, i, end, stop)
            else:
                m = _cl100k_window(data, i, end, stop, 1 if code == _F_QWEN else 3)
            m >>= np.uint64(1)
            if m != 0:
                base = i + 1
                while m != 0:
                    mask[_U(i)] = 1
                    i = base + np.int64(ctz64(m))
                    m &= m - np.uint64(1)
                continue
        mask[_U(i)] = 1
        if code == _F_GPT2:
            i = _piece_gpt2_inline(data, i, end, tab, fold)
        elif code == _F_O200K:
            i = _piece_o200k_inline(data, i, end, tab, fold)
        else:
            i = _piece_cl100k_inline(data, i, end, tab, fold, 1 if code == _F_QWEN else 3, end_whole)


@njit_cached
def _scan_serial(data, seg_starts, seg_ends, fam, end_whole, tab, fold, mask):
    for s in range(seg_starts.shape[0]):
        _scan_range(data, seg_starts[s], seg_ends[s], seg_ends[s], fam, end_whole, tab, fold, mask)


@njit_cached
def _sync_point(data, lo, hi, end, tab):
    """First position ``p`` in ``[lo, hi)`` (``p < end``) whose previous character is a letter
    and whose character is neither a letter, a mark nor ``'``; -1 if none. ``lo`` may
    point into a character."""
    p = lo
    while p < hi and (data[p] & 0xC0) == 0x80:
        p += 1
    if p >= hi or p >= end:
        return -1
    c, n = _dec(data, p)
    prev_letter = tab[c] & C_L != 0
    p += n
    while p < hi and p < end:
        c, n = _dec(data, p)
        k = tab[c]
        if prev_letter and k & (C_L | C_M) == 0 and c != _APOS:
            return p
        prev_letter = k & C_L != 0
        p += n
    return -1


@njit_cached
def _plan(seg_starts, seg_ends, chunk):
    """Work units: ``(a, b, c)`` = ``(seg_lo, seg_hi, -1)`` for a group of whole segments,
    ``(seg, k, n)`` for the ``k``-th of ``n`` cuts of a big segment."""
    S = seg_starts.shape[0]
    cap = 16
    for s in range(S):
        cap += 1 + (seg_ends[s] - seg_starts[s]) // chunk
    ua = np.empty(cap, np.int64)
    ub = np.empty(cap, np.int64)
    uc = np.empty(cap, np.int64)
    u = 0
    g0 = 0
    gbytes = 0
    for s in range(S):
        ln = seg_ends[s] - seg_starts[s]
        if ln >= 2 * chunk:
            if s > g0:
                ua[u] = g0
                ub[u] = s
                uc[u] = -1
                u += 1
            nc = ln // chunk
            for k in range(nc):
                ua[u] = s
                ub[u] = k
                uc[u] = nc
                u += 1
            g0 = s + 1
            gbytes = 0
        else:
            gbytes += ln
            if gbytes >= chunk:
                ua[u] = g0
                ub[u] = s + 1
                uc[u] = -1
                u += 1
                g0 = s + 1
                gbytes = 0
    if S > g0:
        ua[u] = g0
        ub[u] = S
        uc[u] = -1
        u += 1
    return ua[:u], ub[:u], uc[:u]


@njit_cached
def unit_sync(data, seg_starts, seg_ends, ua, ub, uc, chunk, tab, u):
    """Where unit ``u`` of ``_plan`` starts: -1 for a group of whole segments; for the
    ``k``-th cut of a long segment its first sync point (-1 when the cut has none: the
    previous cut then runs through it)."""
    if uc[u] < 0:
        return -1
    s = ua[u]
    k = ub[u]
    s0 = seg_starts[s]
    e = seg_ends[s]
    if k == 0:
        return s0
    hi = e if k == uc[u] - 1 else s0 + (k + 1) * chunk
    return _sync_point(data, s0 + k * chunk, hi, e, tab)


@njit_cached
def unit_stop(seg_ends, ua, uc, sync, u):
    """Where the cut unit ``u`` stops: the next cut of its segment that has a sync point, or
    the segment's end."""
    s = ua[u]
    v = u + 1
    while v < ua.shape[0] and uc[v] >= 0 and ua[v] == s:
        if sync[v] >= 0:
            return sync[v]
        v += 1
    return seg_ends[s]


@njit_cached(parallel=True)
def _scan_parallel(data, seg_starts, seg_ends, fam, end_whole, tab, fold, mask, chunk):
    ua, ub, uc = _plan(seg_starts, seg_ends, chunk)
    U = ua.shape[0]
    sync = np.empty(U, np.int64)
    for u in prange(U):
        sync[u] = unit_sync(data, seg_starts, seg_ends, ua, ub, uc, chunk, tab, u)
    for u in prange(U):
        if uc[u] < 0:
            for s in range(ua[u], ub[u]):
                _scan_range(data, seg_starts[s], seg_ends[s], seg_ends[s], fam, end_whole, tab, fold, mask)
        elif sync[u] >= 0:
            s = ua[u]
            _scan_range(data, sync[u], unit_stop(seg_ends, ua, uc, sync, u), seg_ends[s], fam, end_whole, tab,
                        fold, mask)


_MIN_CHUNK = 1 << 14  # the smallest unit (64 KiB left a 16 MiB batch 16 units a thread on 16 threads)
_CHECKED: set = set()


def _prepare(family: str, dialect: str):
    _check_family(family)
    _check_dialect(dialect)
    tab = class_table(dialect)
    fold = fold_table(None if family == "gpt2" else dialect)
    if (family, dialect) not in _CHECKED:
        _check_pairs(family, tab, fold)
        _CHECKED.add((family, dialect))
    end_whole = family == "cl100k" and dialect == "tiktoken"  # cl100k_base's \s++$
    return family_marker(_FAMILY_CODE[family]), end_whole, tab, fold


def scan_mask(data: np.ndarray, seg_starts: np.ndarray, seg_ends: np.ndarray, family: str, dialect: str,
              mask: np.ndarray, parallel: bool = True, chunk: Optional[int] = None) -> None:
    """Set ``mask[p] = 1`` at the first byte of every piece that ``family``'s pattern in
    ``dialect`` cuts from each segment ``data[seg_starts[s]:seg_ends[s]]`` (run alone).

    ``data``: ``uint8[N]``, valid UTF-8 (not checked); segments: ``int64[S]`` disjoint
    ascending byte ranges on character boundaries; ``mask``: ``uint8[N]`` (only written
    where pieces start). ``parallel``: ``prange`` over units of about ``chunk`` bytes
    (default ``max(16 KiB, total / (8 * threads))``; see the module docstring); else one
    thread, which is much cheaper for small inputs.
    """
    fam, end_whole, tab, fold = _prepare(family, dialect)
    if not (isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1):
        raise TypeError("data must be a 1-D uint8 array")
    if not (isinstance(mask, np.ndarray) and mask.dtype == np.uint8 and mask.shape == data.shape):
        raise TypeError("mask must be a uint8 array of the shape of data")
    data = kernel_bytes(data)
    if not mask.flags.c_contiguous:
        raise ValueError("mask must be contiguous")
    seg_starts = np.ascontiguousarray(seg_starts, dtype=np.int64)
    seg_ends = np.ascontiguousarray(seg_ends, dtype=np.int64)
    if seg_starts.shape != seg_ends.shape or seg_starts.ndim != 1:
        raise ValueError("seg_starts and seg_ends must be 1-D arrays of the same length")
    if seg_starts.size:
        if (seg_starts < 0).any() or (seg_ends < seg_starts).any() or seg_ends[-1] > data.shape[0] \
                or (seg_starts[1:] < seg_ends[:-1]).any():
            raise ValueError("segments must be disjoint ascending ranges inside data")
    if not parallel:
        _scan_serial(data, seg_starts, seg_ends, fam, end_whole, tab, fold, mask)
        return
    if chunk is None:
        import numba

        total = int((seg_ends - seg_starts).sum())
        chunk = max(_MIN_CHUNK, total // (8 * numba.get_num_threads()))
    if chunk < 1:
        raise ValueError("chunk must be positive")
    _scan_parallel(data, seg_starts, seg_ends, fam, end_whole, tab, fold, mask, int(chunk))


def piece_spans(text: str, family: str, dialect: str) -> List[Tuple[int, int]]:
    """Character spans of the pieces of ``text`` (one segment), by the serial scanner."""
    b = text.encode("utf-8")
    data = np.frombuffer(bytearray(b), dtype=np.uint8)  # writable (kernel_bytes)
    mask = np.zeros(len(b), dtype=np.uint8)
    scan_mask(data, np.array([0], np.int64), np.array([len(b)], np.int64), family, dialect, mask, parallel=False)
    starts = np.flatnonzero(mask)
    if not len(starts):
        return []
    # byte offset -> character offset: count the non-continuation bytes before it
    char_idx = np.cumsum((data & 0xC0) != 0x80) - 1
    cs = char_idx[starts].tolist() + [len(text)]
    return list(zip(cs[:-1], cs[1:]))


def pieces(text: str, family: str, dialect: str) -> List[str]:
    """The pieces the scanner cuts ``text`` into (``text`` as one segment)."""
    return [text[a:b] for a, b in piece_spans(text, family, dialect)]
