"""Normalizers: edit a ``NormalizedString`` in place, keeping its alignments.

Each function follows the reference's description of the edit as a stream of
``(char, change)`` pairs (see ``normalized.py``), so offsets point into the
original text exactly as the reference's do.
"""

from __future__ import annotations

import unicodedata
from typing import List, Tuple

from .. import config as C
from .normalized import NormalizedString
from .regex_util import compile_pattern, find_spans
from .unicode_props import is_combining_mark, is_whitespace


# ----------------------------------------------------- Unicode normalization
def _decompose(text: str, compat: bool) -> List[Tuple[str, int]]:
    """Full decomposition with canonical reordering; each char carries its change.

    The first character of a character's decomposition replaces it (change 0),
    the others are inserted (change +1); canonical reordering moves the pairs,
    not just the characters.
    """
    form = "NFKD" if compat else "NFD"
    out: List[Tuple[str, int]] = []
    combining = unicodedata.combining
    run_start = -1  # start of the current run of non-starters in `out`
    for ch in text:
        d = unicodedata.normalize(form, ch) if ord(ch) > 0x7F else ch
        for i, c in enumerate(d):
            ccc = combining(c)
            if ccc == 0:
                if run_start >= 0 and len(out) - run_start > 1:
                    _reorder(out, run_start)
                run_start = -1
            elif run_start < 0:
                run_start = len(out)
            out.append((c, 0 if i == 0 else 1))
    if run_start >= 0 and len(out) - run_start > 1:
        _reorder(out, run_start)
    return out


def _reorder(out: List[Tuple[str, int]], start: int) -> None:
    combining = unicodedata.combining
    out[start:] = sorted(out[start:], key=lambda p: combining(p[0]))


def _compose_pair(a: str, b: str):
    s = unicodedata.normalize("NFC", a + b)
    return s if len(s) == 1 else None


def _compose(pairs: List[Tuple[str, int]]) -> List[Tuple[str, int]]:
    """Canonical composition; a character absorbed into its starter removes one position."""
    out: List[List] = []
    combining = unicodedata.combining
    starter = -1
    last_ccc = None  # ccc of the last char kept after the starter (None: adjacent)
    for c, change in pairs:
        ccc = combining(c)
        if starter >= 0 and (last_ccc is None or (last_ccc != 0 and last_ccc < ccc)):
            comp = _compose_pair(out[starter][0], c)
            if comp is not None:
                out[starter][0] = comp
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
    if text.isascii():
        return
    pairs = _decompose(text, compat=form in ("NFKC", "NFKD"))
    if form in ("NFC", "NFKC"):
        pairs = _compose(pairs)
    ns.transform(pairs)


# ------------------------------------------------------------------- others
def lowercase(ns: NormalizedString) -> None:
    pairs: List[Tuple[str, int]] = []
    changed = False
    for ch in ns.text:
        low = ch.lower()  # per character, as the reference: no final-sigma context
        if low != ch:
            changed = True
        for i, c in enumerate(low):
            pairs.append((c, 0 if i == 0 else 1))
    if changed:
        ns.transform(pairs)


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
    elif isinstance(cfg, C.Replace):
        ns.replace_matches(find_spans(compile_pattern(cfg.pattern), ns.text), cfg.content)
    elif isinstance(cfg, C.Prepend):
        if ns.text:
            ns.prepend(cfg.prepend)
    else:  # pragma: no cover - the loader refuses everything else
        raise TypeError(f"unknown normalizer {cfg!r}")


def normalize_str(cfg, text: str) -> str:
    ns = NormalizedString.from_original(text)
    normalize(cfg, ns)
    return ns.text
