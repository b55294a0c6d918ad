"""Pre-tokenizers: cut the pieces of a ``PreTokenizedString`` further."""

from __future__ import annotations

from .. import config as C
from .byte_level import BYTE_TO_CHAR, GPT2_PATTERN
from .normalized import (
    CONTIGUOUS,
    ISOLATED,
    MERGED_WITH_NEXT,
    REMOVED,
    NormalizedString,
    PreTokenizedString,
    invert,
    matches_from_predicate,
    matches_from_spans,
)
from .regex_util import compile_pattern, find_spans
from .unicode_props import is_numeric, is_punctuation, is_whitespace, whitespace_pretokenizer_spans

# The Whitespace pre-tokenizer is the Rust regex ``\w+|[^\w\s]+``; its classes are the
# Rust regex crate's, measured (``unicode_props.whitespace_pretokenizer_spans``).


def _regex_matches(rx, text: str):
    return matches_from_spans(len(text), find_spans(rx, text))


def byte_level_pieces(cfg: C.ByteLevel, ns: NormalizedString):
    if cfg.add_prefix_space and not ns.text.startswith(" "):
        ns.prepend(" ")
    if cfg.use_regex:
        return ns.split(_regex_matches(GPT2_PATTERN, ns.text), ISOLATED)
    return [ns]


def byte_level_map(ns: NormalizedString) -> None:
    """Replace every character by the characters of its UTF-8 bytes."""
    text = ns.text
    if text.isascii():
        chars = [BYTE_TO_CHAR[b] for b in text.encode("ascii")]
        ns.text = "".join(chars)
        return
    pairs = []
    for ch in text:
        for i, b in enumerate(ch.encode("utf-8", "surrogatepass")):
            pairs.append((BYTE_TO_CHAR[b], 0 if i == 0 else 1))
    ns.transform(pairs)


def metaspace_pieces(cfg: C.Metaspace, ns: NormalizedString):
    """Spaces become the replacement; prefix per ``prepend_scheme``; split before each replacement."""
    rep = cfg.replacement
    if " " in ns.text:
        ns.replace_matches([(i, i + 1) for i, c in enumerate(ns.text) if c == " "], rep)
    if cfg.prepend_scheme != "never" and not ns.text.startswith(rep):
        # "first": only the piece that starts the original text (its shift is 0)
        if cfg.prepend_scheme == "always" or ns.shift == 0:
            ns.prepend(rep)
    if cfg.split:
        return ns.split(matches_from_predicate(ns.text, lambda c: c == rep), MERGED_WITH_NEXT)
    return [ns]


def pre_tokenize(cfg, pts: PreTokenizedString) -> None:
    if isinstance(cfg, C.PreTokenizerSequence):
        for sub in cfg.pretokenizers:
            pre_tokenize(sub, pts)
    elif isinstance(cfg, C.Metaspace):
        pts.split(lambda _i, ns: metaspace_pieces(cfg, ns))
    elif isinstance(cfg, C.ByteLevel):
        pts.split(lambda _i, ns: byte_level_pieces(cfg, ns))
        pts.normalize(byte_level_map)
    elif isinstance(cfg, C.Split):
        rx = compile_pattern(cfg.pattern)

        def cut(_i, ns):
            m = _regex_matches(rx, ns.text)
            if cfg.invert:
                m = invert(m)
            return ns.split(m, cfg.behavior)

        pts.split(cut)
    elif isinstance(cfg, C.Digits):
        behaviour = ISOLATED if cfg.individual_digits else CONTIGUOUS
        pts.split(lambda _i, ns: ns.split(matches_from_predicate(ns.text, is_numeric), behaviour))
    elif isinstance(cfg, C.Punctuation):
        pts.split(lambda _i, ns: ns.split(matches_from_predicate(ns.text, is_punctuation), cfg.behavior))
    elif isinstance(cfg, C.Whitespace):
        pts.split(lambda _i, ns: ns.split(
            invert(matches_from_spans(len(ns.text), whitespace_pretokenizer_spans(ns.text))), REMOVED))
    elif isinstance(cfg, C.WhitespaceSplit):
        pts.split(lambda _i, ns: ns.split(matches_from_predicate(ns.text, is_whitespace), REMOVED))
    elif isinstance(cfg, C.BertPreTokenizer):
        # the reference's two splits; its classes are WhitespaceSplit's and Punctuation's
        # (measured on every code point: scripts/gen_unicode_norm_tables.py)
        pts.split(lambda _i, ns: ns.split(matches_from_predicate(ns.text, is_whitespace), REMOVED))
        pts.split(lambda _i, ns: ns.split(matches_from_predicate(ns.text, is_punctuation), ISOLATED))
    else:  # pragma: no cover - the loader refuses everything else
        raise TypeError(f"unknown pre-tokenizer {cfg!r}")
