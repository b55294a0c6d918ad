"""Normalizers: edit a ``NormalizedString`` in place, keeping its alignments.

Each function follows the reference's description of the edit as a stream of
``(char, change)`` pairs (see ``normalized.py``), so offsets point into the
original text exactly as the reference's do.
"""

from __future__ import annotations

from typing import List, Tuple

from .. import config as C
from .normalized import NormalizedString
from .precompiled import precompiled_normalize
from .regex_util import compile_pattern, find_spans
from .unicode_props import (
    BERT_CHINESE,
    BERT_MARK,
    BERT_REMOVED,
    BERT_SPACE,
    L_BASE,
    L_COUNT,
    N_COUNT,
    S_BASE,
    S_COUNT,
    T_BASE,
    T_COUNT,
    V_BASE,
    V_COUNT,
    is_combining_mark,
    is_whitespace,
    tables,
)


# ----------------------------------------------------- Unicode normalization
# Decompositions, combining classes and composition pairs are the reference's,
# measured on every code point (``unicode_props``); nothing here consults the
# running Python's ``unicodedata``.
def _hangul_decomposition(o: int) -> str:
    i = o - S_BASE
    d = chr(L_BASE + i // N_COUNT) + chr(V_BASE + (i % N_COUNT) // T_COUNT)
    t = i % T_COUNT
    return d + chr(T_BASE + t) if t else d


def _decompose(text: str, compat: bool) -> List[Tuple[str, int]]:
    """Full decomposition with canonical reordering; each char carries its change.

    The first character of a character's decomposition replaces it (change 0),
    the others are inserted (change +1); canonical reordering (a stable sort of
    each run of non-starters by combining class) moves the pairs, not just the
    characters.
    """
    T = tables()
    dec = T.nfkd if compat else T.nfd
    special = T.special_nfkd if compat else T.special_nfd
    ccc = T.ccc
    out: List[Tuple[str, int]] = []
    append = out.append
    run_start = -1  # start of the current run of non-starters in `out`
    for ch in text:
        if ch in special:
            d = dec.get(ch, ch)
        else:
            o = ord(ch)
            if S_BASE <= o < S_BASE + S_COUNT:
                d = _hangul_decomposition(o)
            else:  # a starter that stays itself
                if run_start >= 0:
                    if len(out) - run_start > 1:
                        _reorder(out, run_start, ccc)
                    run_start = -1
                append((ch, 0))
                continue
        for i, c in enumerate(d):
            if c in ccc:
                if run_start < 0:
                    run_start = len(out)
            elif run_start >= 0:
                if len(out) - run_start > 1:
                    _reorder(out, run_start, ccc)
                run_start = -1
            append((c, 0 if i == 0 else 1))
    if run_start >= 0 and len(out) - run_start > 1:
        _reorder(out, run_start, ccc)
    return out


def _reorder(out: List[Tuple[str, int]], start: int, ccc) -> None:
    out[start:] = sorted(out[start:], key=lambda p: ccc[p[0]])


def _compose(pairs: List[Tuple[str, int]]) -> List[Tuple[str, int]]:
    """Canonical composition; a character absorbed into its starter removes one position.

    The composite takes the starter's place with ``change += absorbed_change - 1``.
    """
    comp = tables().compose
    ccc_of = tables().ccc.get
    out: List[List] = []
    starter = -1
    last_ccc = None  # ccc of the last char kept after the starter (None: adjacent)
    for c, change in pairs:
        ccc = ccc_of(c, 0)
        if starter >= 0 and (last_ccc is None or (last_ccc != 0 and last_ccc < ccc)):
            s = out[starter][0]
            r = comp.get(s + c)
            if r is None:
                a, b = ord(s), ord(c)
                if L_BASE <= a < L_BASE + L_COUNT and V_BASE <= b < V_BASE + V_COUNT:
                    r = chr(S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT)
                elif (S_BASE <= a < S_BASE + S_COUNT and (a - S_BASE) % T_COUNT == 0
                      and T_BASE < b < T_BASE + T_COUNT):
                    r = chr(a + b - T_BASE)
            if r is not None:
                out[starter][0] = r
                out[starter][1] += change - 1
                continue
        if ccc == 0:
            starter = len(out)
            last_ccc = None
        else:
            last_ccc = ccc
        out.append([c, change])
    return [(c, ch) for c, ch in out]


def unicode_normalize(ns: NormalizedString, form: str) -> None:
    text = ns.text
    if text.isascii() and tables().ascii_stable:
        return
    pairs = _decompose(text, compat=form in ("NFKC", "NFKD"))
    if form in ("NFC", "NFKC"):
        pairs = _compose(pairs)
    ns.transform(pairs)


# ------------------------------------------------------------------- others
def lowercase(ns: NormalizedString) -> None:
    """Rust ``char::to_lowercase`` per character (no final-sigma context), as measured."""
    T = tables()
    text = ns.text
    multi = T.lower_multi
    if not text.isascii() and any(m in text for m in multi):
        pairs: List[Tuple[str, int]] = []
        one = T.lower_1to1
        for ch in text:
            low = multi.get(ch)
            if low is None:
                pairs.append((one.get(ord(ch), ch), 0))
            else:
                for i, c in enumerate(low):
                    pairs.append((c, 0 if i == 0 else 1))
        ns.transform(pairs)
        return
    # one character for one: the spans stay as they are
    ns.text = text.translate(T.lower_1to1)


def strip(ns: NormalizedString, left: bool, right: bool) -> None:
    text = ns.text
    lead = 0
    if left:
        while lead < len(text) and is_whitespace(text[lead]):
            lead += 1
    trail = 0
    if right:
        while trail < len(text) - lead and is_whitespace(text[len(text) - 1 - trail]):
            trail += 1
    if lead or trail:
        ns.strip_chars(lead, trail)


def bert_normalize(cfg: C.BertNormalizer, ns: NormalizedString) -> None:
    """HF's BertNormalizer, step by step in its order, with its own measured classes
    (``unicode_props.BERT_*``): ``clean_text`` drops some characters, then makes others a
    space (one for one); ``handle_chinese_chars`` turns each CJK ideograph ``c`` into
    ``" c "`` (the first space replaces it, ``c`` and the second space are inserted: all
    three keep its span); ``strip_accents`` (when None: ``lowercase``) is NFD, then the
    crate's nonspacing marks dropped; ``lowercase`` as the Lowercase normalizer."""
    flags = tables().bert_flags
    if cfg.clean_text:
        ns.filter(lambda c: not flags[ord(c)] & BERT_REMOVED)
        text = ns.text
        if not text.isascii() or "\t" in text or "\n" in text or "\r" in text:
            ns.text = "".join(" " if flags[ord(c)] & BERT_SPACE else c for c in text)
    if cfg.handle_chinese_chars and not ns.text.isascii():
        text = ns.text
        if any(flags[ord(c)] & BERT_CHINESE for c in text):
            pairs: List[Tuple[str, int]] = []
            for c in text:
                if flags[ord(c)] & BERT_CHINESE:
                    pairs += ((" ", 0), (c, 1), (" ", 1))
                else:
                    pairs.append((c, 0))
            ns.transform(pairs)
    if cfg.strip_accents if cfg.strip_accents is not None else cfg.lowercase:
        unicode_normalize(ns, "NFD")
        ns.filter(lambda c: not flags[ord(c)] & BERT_MARK)
    if cfg.lowercase:
        lowercase(ns)


def normalize(cfg, ns: NormalizedString) -> None:
    """Apply normalizer ``cfg`` (a ``gpu_tok.config`` object) to ``ns``."""
    if isinstance(cfg, C.NormalizerSequence):
        for sub in cfg.normalizers:
            normalize(sub, ns)
    elif isinstance(cfg, C.UnicodeNormalizer):
        unicode_normalize(ns, cfg.form)
    elif isinstance(cfg, C.Lowercase):
        lowercase(ns)
    elif isinstance(cfg, C.Strip):
        strip(ns, cfg.left, cfg.right)
    elif isinstance(cfg, C.StripAccents):
        ns.filter(lambda c: not is_combining_mark(c))
    elif isinstance(cfg, C.BertNormalizer):
        bert_normalize(cfg, ns)
    elif isinstance(cfg, C.Replace):
        ns.replace_matches(find_spans(compile_pattern(cfg.pattern), ns.text), cfg.content)
    elif isinstance(cfg, C.Prepend):
        if ns.text:
            ns.prepend(cfg.prepend)
    elif isinstance(cfg, C.Precompiled):
        precompiled_normalize(cfg.charsmap, ns)
    else:  # pragma: no cover - the loader refuses everything else
        raise TypeError(f"unknown normalizer {cfg!r}")


def normalize_str(cfg, text: str) -> str:
    ns = NormalizedString.from_original(text)
    normalize(cfg, ns)
    return ns.text
