"""Post-processors: special tokens, type ids and offset trimming.

``process(cfg, encodings, add_special_tokens)`` takes the encodings of the
sequence (and pair) and returns the final merged ``Encoding``.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional

import numpy as np

from .. import config as C
from ..encoding import Encoding
from .byte_level import SPACE_CHAR
from .unicode_props import is_whitespace


def trim_offsets(enc: Encoding, add_prefix_space: bool) -> None:
    """ByteLevel offset trimming: leading/trailing spaces of a token leave its offsets."""
    offsets = enc.offsets
    for i, tok in enumerate(enc.tokens):
        lead, trail = _space_counts(tok)
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


def _space_counts(tok: str):
    """``trim_offsets``' leading and trailing counts of one token string."""
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
    return lead, trail


_TRIM_TABLES: dict = {}  # id(vocab) -> (vocab, lead, trail)


def _trim_table(vocab: np.ndarray):
    """``(lead, trail)``: ``_space_counts`` of every string of ``vocab`` (an object array of
    token strings by id), as ``int64`` arrays, made once per vocabulary."""
    hit = _TRIM_TABLES.get(id(vocab))
    if hit is not None and hit[0] is vocab:
        return hit[1], hit[2]
    n = vocab.shape[0]
    lead, trail = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for i, tok in enumerate(vocab.tolist()):
        if tok and (tok[0] == SPACE_CHAR or tok[-1] == SPACE_CHAR or is_whitespace(tok[0])
                    or is_whitespace(tok[-1])):
            lead[i], trail[i] = _space_counts(tok)
    if len(_TRIM_TABLES) >= 16:
        _TRIM_TABLES.clear()
    _TRIM_TABLES[id(vocab)] = (vocab, lead, trail)
    return lead, trail


def trim_rows(rows, add_prefix_space: bool):
    """``trim_offsets`` of every row of ``rows`` (an ``encoding.EncodingRows`` without a
    layout, each row one encoding: its first token is its index 0) at once: the same rows
    with the trimmed offsets, or None where the token strings are not a ``TokenStrings``
    (then the caller trims each encoding)."""
    from ..encoding import EncodingRows, TokenStrings

    toks = rows.tokens
    if not isinstance(toks, TokenStrings) or rows.starts is None or rows.before["ids"] or rows.after["ids"]:
        return None
    ids = np.asarray(toks.ids, np.int64)
    N = ids.shape[0]
    lead_t, trail_t = _trim_table(toks.vocab)
    ok = (ids >= 0) & (ids < lead_t.shape[0])
    safe = np.where(ok, ids, 0)
    lead, trail = np.where(ok, lead_t[safe], 0), np.where(ok, trail_t[safe], 0)
    for j, k in enumerate(toks.pos.tolist()):  # an added token's or unknown token's text
        lead[k], trail[k] = _space_counts(toks.text[j])
    s = np.asarray(rows.starts, np.int64)
    e = np.asarray(rows.ends, np.int64)
    first = s == 0
    heads = rows.bounds[:-1]
    first[heads[heads < N]] = True
    if add_prefix_space:
        lead = np.where(first & (lead == 1), 0, lead)
    s2 = np.where(lead > 0, np.minimum(s + lead, e), s)
    e2 = np.where((trail > 0) & (e >= trail), np.maximum(e - trail, s2), e)
    out = EncodingRows(rows.ids, toks, s2, e2, rows.words, rows.bounds, rows.type_id)
    out.added = rows.added
    return out


def _offset_trim(cfg):
    if isinstance(cfg, (C.ByteLevel, C.RobertaProcessing)) and cfg.trim_offsets:
        return cfg.add_prefix_space, dataclasses.replace(cfg, trim_offsets=False)
    if isinstance(cfg, C.ProcessorSequence) and cfg.processors:
        got = _offset_trim(cfg.processors[0])
        if got is not None and all(_layout_safe(p) for p in cfg.processors[1:]):
            return got[0], dataclasses.replace(cfg, processors=(got[1],) + tuple(cfg.processors[1:]))
    return None


def offset_trim(cfg) -> Optional[tuple]:
    """``(add_prefix_space, rest)`` where ``process(cfg, encodings)`` is ``process(rest, ...)``
    of the encodings with their offsets (and their windows') trimmed first (``_trim_all``):
    ``cfg`` a ``ByteLevel`` or ``RobertaProcessing`` that trims offsets, or a ``Sequence``
    whose first processor is one and whose others trim nothing; ``rest``: the same with that
    trim off (one object per processor). None for every other processor."""
    return _layout(_offset_trim, cfg)


def _special(ids, tokens, type_id) -> Encoding:
    n = len(ids)
    return Encoding(list(ids), [type_id] * n, list(tokens), [(0, 0)] * n, [1] * n, [None] * n)


def _trim_all(encodings: List[Encoding], add_prefix_space: bool) -> None:
    for e in encodings:
        trim_offsets(e, add_prefix_space)
        for o in e.overflowing:
            trim_offsets(o, add_prefix_space)


def _wrap(e: Encoding, before, after, type_ids, seq: int) -> Encoding:
    """``before + e + after`` as BertProcessing / RobertaProcessing build it: the mask and
    attention rebuilt, the sequence's range covering ``e`` only, no overflowing."""
    n = len(e.ids)
    b, a = len(before), len(after)
    return Encoding([x[1] for x in before] + e.ids + [x[1] for x in after], type_ids,
                    [x[0] for x in before] + e.tokens + [x[0] for x in after],
                    [(0, 0)] * b + e.offsets + [(0, 0)] * a, [1] * b + [0] * n + [1] * a,
                    [None] * b + e.word_ids + [None] * a, {seq: (b, b + n)})


def _bert(cfg, i: int, e: Encoding) -> Encoding:
    if i == 0:
        def one(x):
            return _wrap(x, [cfg.cls], [cfg.sep], [0] + x.type_ids + [0], 0)
    else:
        def one(x):
            return _wrap(x, [], [cfg.sep], x.type_ids + [1], 1)
    out = one(e)
    out.overflowing = [one(o) for o in e.overflowing]
    return out


def _roberta(cfg, i: int, e: Encoding) -> Encoding:
    before = [cfg.cls] if i == 0 else [cfg.sep]

    def one(x):
        return _wrap(x, before, [cfg.sep], [0] * (len(x.ids) + 2), i)
    out = one(e)
    out.overflowing = [one(o) for o in e.overflowing]
    return out


def process_encodings(cfg, encodings: List[Encoding], add_special_tokens: bool) -> List[Encoding]:
    """Each post-processor's ``process_encodings`` (overflowing windows included)."""
    if isinstance(cfg, C.ByteLevel):
        if cfg.trim_offsets:
            _trim_all(encodings, cfg.add_prefix_space)
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
            _trim_all(encodings, cfg.add_prefix_space)
        for e in encodings:
            e.type_ids = [0] * len(e.ids)
        if not add_special_tokens:
            return encodings
        return [_roberta(cfg, i, e) for i, e in enumerate(encodings)]
    if isinstance(cfg, C.BertProcessing):
        if not add_special_tokens:
            return encodings
        return [_bert(cfg, i, e) for i, e in enumerate(encodings)]
    raise TypeError(f"unknown post-processor {cfg!r}")  # pragma: no cover


def added_tokens(cfg, is_pair: bool) -> int:
    """How many tokens the post-processor adds (the reference's ``added_tokens``): what
    truncation keeps room for."""
    if cfg is None or isinstance(cfg, C.ByteLevel):
        return 0
    if isinstance(cfg, C.ProcessorSequence):
        return sum(added_tokens(sub, is_pair) for sub in cfg.processors)
    if isinstance(cfg, C.TemplateProcessing):
        template = cfg.pair if is_pair else cfg.single
        return sum(len(cfg.special_tokens[p.id].ids) for p in template if p.kind != "Sequence")
    if isinstance(cfg, C.RobertaProcessing):
        return 4 if is_pair else 2
    if isinstance(cfg, C.BertProcessing):
        return 3 if is_pair else 2
    raise TypeError(f"unknown post-processor {cfg!r}")  # pragma: no cover


def _layout_safe(cfg) -> bool:
    """Whether ``process`` treats a sequence's tokens alike whatever they are (no offsets
    trimmed by the token strings)."""
    if cfg is None or isinstance(cfg, (C.TemplateProcessing, C.BertProcessing)):
        return True
    if isinstance(cfg, (C.ByteLevel, C.RobertaProcessing)):
        return not cfg.trim_offsets
    if isinstance(cfg, C.ProcessorSequence):
        return all(_layout_safe(sub) for sub in cfg.processors)
    return False


_LAYOUT_FIELDS = ("ids", "type_ids", "tokens", "offsets", "attention_mask", "special_tokens_mask", "word_ids")


def _probe(n: int) -> Encoding:
    return Encoding([-1 - k for k in range(n)], [0] * n, [f"\0probe{k}" for k in range(n)],
                    [(2 * k + 1, 2 * k + 2) for k in range(n)], [0] * n, list(range(n)))


def _single_layout(cfg, add_special_tokens: bool):
    """What ``process`` puts around one sequence's tokens (first input, no pair, no
    overflowing windows), as ``(type_id, (before, after, ranges))`` for
    ``encoding.EncodingRows``: found by running ``process`` on probe encodings of 0, 1
    and 3 tokens, and used only where each of them came out as that layout says. None
    where the processor's output depends on the tokens themselves (offsets trimmed)."""
    if not _layout_safe(cfg):
        return None
    got = _split_single(process(cfg, [_probe(1)], add_special_tokens))
    if got is None:
        return None
    if not all(_laid_out_as(process(cfg, [_probe(n)], add_special_tokens), n, got[0], *got[1]) for n in (0, 1, 3)):
        return None
    return got


def _split_single(one: Encoding):
    """``(type_id, (before, after, ranges))`` of ``one``, a processed ``_probe(1)``: what lies
    before and after the probe's token, its type id, and each sequence's start; None where
    the token is not found once."""
    if one.ids.count(-1) != 1:
        return None
    p = one.ids.index(-1)
    before = {f: getattr(one, f)[:p] for f in _LAYOUT_FIELDS}
    after = {f: getattr(one, f)[p + 1:] for f in _LAYOUT_FIELDS}
    return one.type_ids[p], (before, after, [(seq, a) for seq, (a, _b) in one.sequence_ranges.items()])


def _laid_out_as(out: Encoding, n: int, type_id: int, before, after, ranges) -> bool:
    """Whether ``out`` (a processed ``_probe(n)``, no windows of its own) is that probe's
    tokens with ``type_id`` between ``before`` and ``after``, its sequence ranges ``ranges``."""
    probe = _probe(n)
    mid = {"ids": list(probe.ids), "type_ids": [type_id] * n, "tokens": list(probe.tokens),
           "offsets": list(probe.offsets), "attention_mask": [1] * n, "special_tokens_mask": [0] * n,
           "word_ids": list(probe.word_ids)}
    if out.overflowing or list(out.sequence_ranges.items()) != [(seq, (a, a + n)) for seq, a in ranges]:
        return False
    return all(list(getattr(out, f)) == before[f] + mid[f] + after[f] for f in _LAYOUT_FIELDS)


_WINDOW_SIZES = (1, 0, 3, 2)


def _window_layout(cfg, add_special_tokens: bool):
    """What ``process`` puts around each overflowing window of one sequence (first input,
    no pair) that truncation cut into windows, as ``_single_layout``'s ``(type_id, (before,
    after, ranges))``: found by running ``process`` on a probe of 3 tokens holding windows
    of 1, 0, 3 and 2 tokens (each as ``Encoding.truncate`` makes them: type id 0, no ranges),
    and used only where the windows came out in order, each as that layout says, and the
    probe itself as ``_single_layout`` says. None where they did not, or where the
    processor's output depends on the tokens themselves."""
    if not _layout_safe(cfg):
        return None
    single = _single_layout(cfg, add_special_tokens)
    if single is None:
        return None
    main = _probe(3)
    main.overflowing = [_probe(n) for n in _WINDOW_SIZES]
    out = process(cfg, [main], add_special_tokens)
    windows, out.overflowing = out.overflowing, []
    if len(windows) != len(_WINDOW_SIZES) or not _laid_out_as(out, 3, single[0], *single[1]):
        return None
    got = _split_single(windows[0])
    if got is None or not all(_laid_out_as(w, n, got[0], *got[1]) for n, w in zip(_WINDOW_SIZES, windows)):
        return None
    return got


def _probe_pair(m: int, type_id: int) -> Encoding:
    """A second sequence's probe: ids and token strings apart from ``_probe``'s."""
    return Encoding([-1001 - k for k in range(m)], [type_id] * m, [f"\0pair{k}" for k in range(m)],
                    [(2 * k + 1, 2 * k + 2) for k in range(m)], [0] * m, list(range(m)))


def _pair_layout(cfg, add_special_tokens: bool, second_type: int):
    """What ``process`` puts around and between a pair's tokens (no overflowing windows),
    as ``(ta, tb, before, mid, after, ranges)`` for ``encoding.PairRows``: found by running
    ``process`` on probe pairs of 0, 1 and 3 tokens each (the second's with type id
    ``second_type``, as the engines encode the second texts: 1, or 0 for
    ``encode_batch_fast``, as ``pipeline.without_offsets``), and used only where each of them
    came out as that layout says (the first's tokens before the second's, each sequence's
    fields but its type ids as they came in). None where it does not, or where the
    processor's output depends on the tokens themselves (offsets trimmed)."""
    if not _layout_safe(cfg):
        return None
    # (the second text first: None, as the probes below would find too)
    got = _split_pair(process(cfg, [_probe(1), _probe_pair(1, second_type)], add_special_tokens), 1)
    if got is None:
        return None
    for n in (0, 1, 3):
        for m in (0, 1, 3):
            out = process(cfg, [_probe(n), _probe_pair(m, second_type)], add_special_tokens)
            if not _pair_window_is(out, got[5], got, _probe(n), _probe_pair(m, second_type), []):
                return None
    return got


def _split_pair(one: Encoding, n: int):
    """``(ta, tb, before, mid, after, ranges)`` of ``one``, a processed pair of probes, the
    first of ``n`` tokens (``_probe``) and the second of one (``_probe_pair``): what lies
    before, between and after them, their type ids, and each sequence's range as
    ``(sequence, start, second)`` (the second's start less ``n``); None where the probes are
    not found once each, the first text's before the second's, or a range covers anything else."""
    if one.ids.count(-1) != 1 or one.ids.count(-1001) != 1:
        return None
    p, q = one.ids.index(-1), one.ids.index(-1001)
    if p + n > q:
        return None
    before = {f: getattr(one, f)[:p] for f in _LAYOUT_FIELDS}
    mid = {f: getattr(one, f)[p + n:q] for f in _LAYOUT_FIELDS}
    after = {f: getattr(one, f)[q + 1:] for f in _LAYOUT_FIELDS}
    ranges = []
    for seq, (a, b) in one.sequence_ranges.items():
        if (a, b) == (p, p + n):
            ranges.append((seq, a, False))
        elif (a, b) == (q, q + 1):
            ranges.append((seq, a - n, True))
        else:
            return None
    return one.type_ids[p], one.type_ids[q], before, mid, after, ranges


def _pair_fields(ta, tb, before, mid, after, pa: Encoding, pb: Encoding) -> dict:
    """The fields ``_pair_layout``'s layout makes of the probes ``pa`` and ``pb``."""
    fields = {}
    for f in _LAYOUT_FIELDS:
        x, y = list(getattr(pa, f)), list(getattr(pb, f))
        if f == "type_ids":
            x, y = [ta] * len(x), [tb] * len(y)
        fields[f] = before[f] + x + mid[f] + y + after[f]
    return fields


def _pair_window_layout(cfg, add_special_tokens: bool, second_type: int = 1):
    """What ``process`` makes of each overflowing window of a pair's second sequence (the
    first not cut: truncation's ``only_second``), as ``_pair_layout``'s ``(ta, tb, before,
    mid, after, ranges)``: found by running ``process`` on a pair of probes, the second
    (type id ``second_type``, as the engines encode second texts: 1, or 0 for
    ``encode_batch_fast``) holding windows of 1, 0, 3 and 2 tokens
    (as ``Encoding.truncate`` makes them), and used only where the windows came out in
    order, each the first probe and the window in that layout, and the pair itself as
    ``_pair_layout`` says. None where they did not, or where the processor's output depends
    on the tokens themselves."""
    if not _layout_safe(cfg):
        return None
    main = _pair_layout(cfg, add_special_tokens, second_type)
    if main is None:
        return None
    pb = _probe_pair(2, second_type)
    pb.overflowing = [_probe_pair(m, second_type) for m in _WINDOW_SIZES]
    out = process(cfg, [_probe(3), pb], add_special_tokens)
    windows, out.overflowing = out.overflowing, []
    want = _pair_fields(*main[:5], _probe(3), _probe_pair(2, second_type))
    if len(windows) != len(_WINDOW_SIZES) or any(list(getattr(out, f)) != want[f] for f in _LAYOUT_FIELDS):
        return None
    got = _split_pair(windows[0], 3)
    if got is None:
        return None
    if not all(_pair_window_is(w, got[5], got, _probe(3), _probe_pair(m, second_type), [])
               for m, w in zip(_WINDOW_SIZES, windows)):
        return None
    return got


_CROSS_A = (1, 0, 2)  # the first probe's windows in _pair_cross_layout (the second's: _WINDOW_SIZES)


def _pair_cross_layout(cfg, add_special_tokens: bool, second_type: int = 1):
    """What ``process`` makes of a pair both of whose sequences truncation cut into windows
    (``longest_first``; ``only_first`` cuts the first alone), as four ``_pair_layout``
    layouts ``(main, wm, ww, mw)``: the pair itself (``main``), a window of the first with
    the second (``wm``), a window of each (``ww``), the first with a window of the second
    (``mw``). The reference's ``merge_with`` copies each encoding with its windows, so its
    windows nest one level: for each window ``i`` of the first, ``(i, second)`` holding the
    ``(i, j)`` of every window ``j`` of the second, then those ``(i, j)``; then for each
    ``j``, ``(first, j)`` holding the ``(i, j)`` of every ``i`` (measured on tokenizers
    0.23.1, bert-base-uncased). Found by running ``process`` on a pair of probes of 3 and 1
    tokens holding windows of 1, 0 and 2 tokens (the first's, type id 0) and of 1, 0, 3 and
    2 (the second's, type id ``second_type``: 1, or 0 for ``encode_batch_fast``), as
    ``Encoding.truncate`` makes them; used only where every window came out in that order
    and layout, nested so, the four layouts differing in the type ids alone. None where they
    did not, or where the processor's output depends on the tokens themselves."""
    if not _layout_safe(cfg):
        return None
    main = _pair_layout(cfg, add_special_tokens, second_type)
    if main is None:
        return None
    pa, pb = _probe(3), _probe_pair(1, second_type)  # (_split_pair reads a second sequence of one token)
    pa.overflowing = [_probe(n) for n in _CROSS_A]
    pb.overflowing = [_probe_pair(m, second_type) for m in _WINDOW_SIZES]
    out = process(cfg, [pa, pb], add_special_tokens)
    windows, out.overflowing = out.overflowing, []
    want = _pair_fields(*main[:5], _probe(3), _probe_pair(1, second_type))
    if any(list(getattr(out, f)) != v for f, v in want.items()):
        return None
    na, nb = len(_CROSS_A), len(_WINDOW_SIZES)
    if len(windows) != na * (1 + nb) + nb:
        return None
    wm, mw = _split_pair(windows[0], _CROSS_A[0]), _split_pair(windows[na * (1 + nb)], 3)
    if wm is None or mw is None or wm[2:] != main[2:] or mw[2:] != main[2:] or wm[1] != main[1] or mw[0] != main[0]:
        return None
    ww = (wm[0], mw[1]) + main[2:]
    # (wa_i, wb_j), i-major
    ws = [(ww, _probe(n), _probe_pair(m, second_type)) for n in _CROSS_A for m in _WINDOW_SIZES]
    combos = []  # (layout, first probe, second probe, its own windows) of each window, in the reference's order
    for i, n in enumerate(_CROSS_A):
        mine = ws[i * nb:(i + 1) * nb]
        combos.append((wm, _probe(n), _probe_pair(1, second_type), mine))
        combos.extend((lay, x, y, []) for lay, x, y in mine)
    combos.extend((mw, _probe(3), _probe_pair(m, second_type), ws[j::nb]) for j, m in enumerate(_WINDOW_SIZES))
    return (main, wm, ww, mw) if all(_pair_window_is(w, main[5], *c) for w, c in zip(windows, combos)) else None


def _pair_window_is(w: Encoding, ranges, lay, x: Encoding, y: Encoding, nested) -> bool:
    """Whether ``w`` (a processed pair of probes, or one of its windows) is ``x`` and ``y``
    laid out as ``lay`` (``_pair_layout``'s), its sequence ranges as ``ranges`` say, and its
    own windows ``nested``'s ``(layout, first, second)`` in order, with none of their own."""
    n, m = len(x.ids), len(y.ids)
    if w.sequence_ranges != {seq: (a + n, a + n + m) if second else (a, a + n) for seq, a, second in ranges}:
        return False
    if any(list(getattr(w, f)) != v for f, v in _pair_fields(*lay[:5], x, y).items()):
        return False
    return len(w.overflowing) == len(nested) and all(
        _pair_window_is(o, ranges, *c, []) for o, c in zip(w.overflowing, nested))


def pair_cross_layout(cfg, add_special_tokens: bool, second_type: int = 1):
    """``_pair_cross_layout``'s (see there), found once per processor."""
    return _layout(_pair_cross_layout, cfg, add_special_tokens, second_type)


_LAYOUTS: dict = {}  # (kind, id(cfg), arguments) -> (cfg, layout)


def _layout(find, cfg, *args):
    """``find(cfg, *args)``, once per processor object (the configs are frozen; the probes
    cost about as much as encoding a short text, on every ``encode_batch`` call)."""
    key = (find.__name__, id(cfg), args)
    hit = _LAYOUTS.get(key)
    if hit is not None and hit[0] is cfg:
        return hit[1]
    if len(_LAYOUTS) >= 256:
        _LAYOUTS.clear()
    got = find(cfg, *args)
    _LAYOUTS[key] = (cfg, got)
    return got


def single_layout(cfg, add_special_tokens: bool):
    """``_single_layout``'s (see there), found once per processor."""
    return _layout(_single_layout, cfg, add_special_tokens)


def window_layout(cfg, add_special_tokens: bool):
    """``_window_layout``'s (see there), found once per processor."""
    return _layout(_window_layout, cfg, add_special_tokens)


def pair_window_layout(cfg, add_special_tokens: bool, second_type: int = 1):
    """``_pair_window_layout``'s (see there), found once per processor."""
    return _layout(_pair_window_layout, cfg, add_special_tokens, second_type)


def pair_layout(cfg, add_special_tokens: bool, second_type: int = 1):
    """``_pair_layout``'s (see there), found once per processor."""
    return _layout(_pair_layout, cfg, add_special_tokens, second_type)


def process(cfg, encodings: List[Encoding], add_special_tokens: bool) -> Encoding:
    """The reference's ``PostProcessor::process`` (or its default without a post-processor)."""
    if cfg is None:
        if len(encodings) == 1:
            return encodings[0]
        out = Encoding()
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
            out.merge_with(e, False)
        return out
    for i, e in enumerate(encodings):
        e.set_sequence_id(i)
        for o in e.overflowing:
            o.set_sequence_id(i)
        e.type_ids = [i] * len(e.ids)
    return Encoding.merge(process_encodings(cfg, encodings, add_special_tokens), False)
