"""Post-processors: special tokens, type ids and offset trimming.

``process(cfg, encodings, add_special_tokens)`` takes the encodings of the
sequence (and pair) and returns the final merged ``Encoding``.
"""

from __future__ import annotations

from typing import List

from .. import config as C
from ..encoding import Encoding
from .byte_level import SPACE_CHAR
from .unicode_props import is_whitespace


def trim_offsets(enc: Encoding, add_prefix_space: bool) -> None:
    """ByteLevel offset trimming: leading/trailing spaces of a token leave its offsets."""
    offsets = enc.offsets
    for i, tok in enumerate(enc.tokens):
        lead = 0
        for c in tok:
            if c == SPACE_CHAR or is_whitespace(c):
                lead += 1
            else:
                break
        trail = 0
        for c in reversed(tok):
            if c == SPACE_CHAR or is_whitespace(c):
                trail += 1
            else:
                break
        if lead == 0 and trail == 0:
            continue
        s, e = offsets[i]
        if lead > 0:
            is_first = i == 0 or s == 0
            if is_first and add_prefix_space and lead == 1:
                lead = 0
            s = min(s + lead, e)
        if trail > 0 and e >= trail:
            e = max(e - trail, s)
        offsets[i] = (s, e)


def _special(ids, tokens, type_id) -> Encoding:
    n = len(ids)
    return Encoding(list(ids), [type_id] * n, list(tokens), [(0, 0)] * n, [1] * n, [None] * n, [None] * n)


def _wrap(enc: Encoding, before, after, type_id_before, type_id_after) -> Encoding:
    out = Encoding()
    if before:
        out.extend(_special([x[1] for x in before], [x[0] for x in before], type_id_before))
    out.extend(enc)
    if after:
        out.extend(_special([x[1] for x in after], [x[0] for x in after], type_id_after))
    return out


def process_encodings(cfg, encodings: List[Encoding], add_special_tokens: bool) -> List[Encoding]:
    if isinstance(cfg, C.ByteLevel):
        if cfg.trim_offsets:
            for e in encodings:
                trim_offsets(e, cfg.add_prefix_space)
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
        return encodings
    if isinstance(cfg, C.ProcessorSequence):
        for sub in cfg.processors:
            encodings = process_encodings(sub, encodings, add_special_tokens)
        return encodings
    if isinstance(cfg, C.TemplateProcessing):
        template = cfg.single if len(encodings) == 1 else cfg.pair
        out: List[Encoding] = []
        for piece in template:
            if piece.kind == "Sequence":
                i = 0 if piece.id == "A" else 1
                e = encodings[i]
                e.type_ids = [piece.type_id] * len(e.ids)
                e.set_sequence_id(i)
                out.append(e.copy())
            elif add_special_tokens:
                spec = cfg.special_tokens[piece.id]
                out.append(_special(spec.ids, spec.tokens, piece.type_id))
        return out
    if isinstance(cfg, C.RobertaProcessing):
        if cfg.trim_offsets:
            for e in encodings:
                trim_offsets(e, cfg.add_prefix_space)
        for e in encodings:
            e.type_ids = [0] * len(e.ids)
        if not add_special_tokens:
            return encodings
        out = []
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
            if i == 0:
                out.append(_wrap(e, [cfg.cls], [cfg.sep], 0, 0))
            else:
                out.append(_wrap(e, [cfg.sep], [cfg.sep], 0, 0))
        return out
    if isinstance(cfg, C.BertProcessing):
        if not add_special_tokens:
            return encodings
        out = []
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
            if i == 0:
                out.append(_wrap(e, [cfg.cls], [cfg.sep], 0, 0))
            else:
                out.append(_wrap(e, [], [cfg.sep], 1, 1))
        return out
    raise TypeError(f"unknown post-processor {cfg!r}")  # pragma: no cover


def process(cfg, encodings: List[Encoding], add_special_tokens: bool) -> Encoding:
    if cfg is None:
        if len(encodings) > 1:
            for i, e in enumerate(encodings):
                e.set_sequence_id(i)
        return Encoding.merge(encodings)
    return Encoding.merge(process_encodings(cfg, encodings, add_special_tokens))
