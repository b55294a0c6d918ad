"""Unigram ids over packed text: the compiled path of ``fast_unigram`` (decision 0028).

Array layouts
-------------
Text: ``data: uint8[N]`` the UTF-8 of all texts back to back, ``doc_offsets: int64[n+1]``.

Precompiled normalizer (``cpu_ref.precompiled``): ``da: int64[U]`` the double array's
units, ``blob: uint8[B]`` the replacement strings (each ended by a NUL byte); ``use_pc``
false when the file has no normalizer. ``gprops: uint8[0x110000]``: the grapheme classes
of ``cpu_ref.graphemes.props`` (class in bits 0-3, InCB in bits 4-5, ExtPict bit 7).

Pre-tokenizer: ``ws: uint8[0x110000]`` 1 for white space (Rust ``char::is_whitespace``);
``mode``: 0 ``WhitespaceSplit`` then ``Metaspace`` (prepend always), 1 ``Metaspace`` alone
(prepend always), 2 ``Metaspace`` alone (prepend never); ``split`` true in all three. Either way the document comes out as
one byte string ("pre-tokenized") whose pieces start at each "▁" (E2 96 81): under mode 0
every white-space-free run gets a "▁" unless it starts with one and the white space
goes; under modes 1-2 a space becomes "▁" (other white space stays).

Model: a byte trie of the vocabulary (``engine_cpu.build_trie``, interleaved: ``(node << 8)
| byte`` -> child in ``tab``, ``term[node]`` the id of the entry ending there, else -1;
duplicate entries resolved to the last id before building), ``scores: float64[V]`` by id,
``unk`` the unknown id (-1: none), ``unk_score`` (lowest score - 10), ``byte_ids: int32[256]``
the ``<0xXX>`` ids (-1 where missing; all -1 without byte fallback).

``status: uint8[n]`` per document: 0 encoded here, 1 the reference path (set by the
caller), 2 a piece needs the unknown token and there is none (the reference path raises
the reference's error).

Output: ``pt: uint8[M]`` document ``d`` pre-tokenized at ``poff[d]:poff[d + 1]``; ``out:
int32[M]`` its ids at ``out[poff[d]:poff[d] + counts[d]]`` (every id covers at least one
byte of ``pt``).
"""

from __future__ import annotations

import numpy as np
from numba import get_thread_id, prange

from .engine_cpu import short_key
from .hash_table import EMPTY, lookup2, njit_cached, njit_noalloc
from .pretok_cpu import _dec
from .wordpiece_cpu import cache_get, cache_put

_U8 = np.uint64(8)
_LEAF_MASK = (1 << 31) | 0xFF
_VALUE_MASK = (1 << 31) - 1
# grapheme classes (cpu_ref.graphemes)
_CR, _LF, _CONTROL, _EXTEND, _ZWJ, _RI, _PREPEND, _SPACING, _L, _V, _T, _LV, _LVT = range(1, 14)


@njit_noalloc(inline="always")
def _offset(u):
    return (u >> 10) << ((u & (1 << 9)) >> 6)


@njit_noalloc
def _transform(da, data, a, b):
    """The value (byte offset in the blob) of the shortest rule that is a prefix of
    ``data[a:b]``, or -1 (``cpu_ref.precompiled.Charsmap.transform``)."""
    pos = _offset(da[0])
    for p in range(a, b):
        c = np.int64(data[p])
        if c == 0:
            return -1
        pos ^= c
        unit = da[pos]
        if (unit & _LEAF_MASK) != c:
            return -1
        pos ^= _offset(unit)
        if (unit >> 8) & 1:
            return da[pos] & _VALUE_MASK
    return -1


@njit_noalloc(inline="always")
def _is_break(prev, cur, v, ri_run, emoji, incb):
    """UAX #29 between two characters (``cpu_ref.graphemes.grapheme_bounds``)."""
    if prev == _CR and cur == _LF:
        return False
    if prev == _CR or prev == _LF or prev == _CONTROL or cur == _CR or cur == _LF or cur == _CONTROL:
        return True
    if prev == _L and (cur == _L or cur == _V or cur == _LV or cur == _LVT):
        return False
    if (prev == _LV or prev == _V) and (cur == _V or cur == _T):
        return False
    if (prev == _LVT or prev == _T) and cur == _T:
        return False
    if cur == _EXTEND or cur == _ZWJ or cur == _SPACING or prev == _PREPEND:
        return False
    if incb == 2 and ((v >> 4) & 3) == 2:
        return False
    if emoji == 2 and (v & 0x80) != 0:
        return False
    if prev == _RI and cur == _RI and ri_run % 2 == 1:
        return False
    return True


@njit_noalloc(inline="always")
def _emit_char(c, n, src, p, ws, mode, st, pt, o, write):
    """One normalized character (``src[p:p + n]``, code point ``c``) into the
    pre-tokenized output at ``o``; ``st``: 1 once a character is out (mode 0: inside a
    white-space-free run). Returns the new ``(o, st)``."""
    if mode == 0:
        if ws[c]:
            return o, 0
        if st == 0:
            st = 1
            if not (c == 0x2581):
                if write:
                    pt[o] = 0xE2
                    pt[o + 1] = 0x96
                    pt[o + 2] = 0x81
                o += 3
    else:
        if st == 0:
            st = 1
            if mode == 1 and not (c == 0x2581 or c == 0x20):  # (a space becomes "▁" first)
                if write:
                    pt[o] = 0xE2
                    pt[o + 1] = 0x96
                    pt[o + 2] = 0x81
                o += 3
        if c == 0x20:
            if write:
                pt[o] = 0xE2
                pt[o + 1] = 0x96
                pt[o + 2] = 0x81
            return o + 3, st
    if write:
        for j in range(n):
            pt[o + j] = src[p + j]
    return o + n, st


@njit_noalloc
def _emit_blob(blob, v, ws, mode, st, pt, o, write):
    """The replacement string at ``blob[v:]`` (to its NUL), character by character."""
    p = v
    while p < blob.shape[0] and blob[p] != 0:
        c, n = _dec(blob, p)
        o, st = _emit_char(c, n, blob, p, ws, mode, st, pt, o, write)
        p += n
    return o, st


@njit_noalloc
def _cluster(data, a, b, nchars, da, blob, use_pc, ws, mode, st, pt, o, write):
    """One grapheme cluster ``data[a:b]`` normalized (``cpu_ref.precompiled``) and
    pre-tokenized."""
    if use_pc and nchars > 1 and b - a < 6:
        v = _transform(da, data, a, b)
        if v >= 0:
            return _emit_blob(blob, v, ws, mode, st, pt, o, write)
    p = a
    while p < b:
        c, n = _dec(data, p)
        v = _transform(da, data, p, p + n) if use_pc else -1
        if v >= 0:
            o, st = _emit_blob(blob, v, ws, mode, st, pt, o, write)
        else:
            o, st = _emit_char(c, n, data, p, ws, mode, st, pt, o, write)
        p += n
    return o, st


@njit_noalloc
def _pretokenize(data, a, b, da, blob, use_pc, gprops, ws, mode, pt, o, write):
    """Document ``data[a:b]`` normalized and pre-tokenized to ``pt[o:]`` (only counted
    when not ``write``); returns the new ``o``. Clusters are cut only under a normalizer."""
    st = 0
    if a >= b:
        return o
    if not use_pc:
        p = a
        while p < b:
            c, n = _dec(data, p)
            o, st = _emit_char(c, n, data, p, ws, mode, st, pt, o, write)
            p += n
        return o
    c, n = _dec(data, a)
    v = gprops[c]
    prev = v & 0x0F
    ri_run = 1 if prev == _RI else 0
    emoji = 1 if (v & 0x80) != 0 else 0
    incb = 1 if ((v >> 4) & 3) == 2 else 0
    start = a
    nchars = 1
    p = a + n
    while p < b:
        c, n = _dec(data, p)
        v = gprops[c]
        cur = v & 0x0F
        ib = (v >> 4) & 3
        if _is_break(prev, cur, v, ri_run, emoji, incb):
            o, st = _cluster(data, start, p, nchars, da, blob, use_pc, ws, mode, st, pt, o, write)
            start = p
            nchars = 0
        nchars += 1
        ri_run = ri_run + 1 if cur == _RI else 0
        if (v & 0x80) != 0:
            emoji = 1
        elif emoji == 1 and cur == _EXTEND:
            emoji = 1
        elif emoji == 1 and cur == _ZWJ:
            emoji = 2
        else:
            emoji = 0
        if ib == 2:
            incb = 1
        elif incb != 0 and ib == 1:
            incb = 2
        elif incb != 0 and ib == 3:
            pass
        else:
            incb = 0
        prev = cur
        p += n
    o, st = _cluster(data, start, b, nchars, da, blob, use_pc, ws, mode, st, pt, o, write)
    return o


@njit_cached(parallel=True, nogil=True)
def uni_lengths(data, doc_offsets, da, blob, use_pc, gprops, ws, mode, status, plen):
    """``plen[d]``: bytes of document ``d`` pre-tokenized (0 for one the reference encodes)."""
    dummy = np.zeros(1, np.uint8)
    for d in prange(doc_offsets.shape[0] - 1):
        plen[d] = 0
        if status[d] == 0:
            plen[d] = _pretokenize(data, doc_offsets[d], doc_offsets[d + 1], da, blob, use_pc, gprops, ws, mode,
                                   dummy, 0, False)


@njit_cached(parallel=True, nogil=True)
def uni_pretokenize(data, doc_offsets, da, blob, use_pc, gprops, ws, mode, status, poff, pt):
    """Document ``d`` pre-tokenized into ``pt[poff[d]:poff[d + 1]]``."""
    for d in prange(doc_offsets.shape[0] - 1):
        if status[d] == 0:
            _pretokenize(data, doc_offsets[d], doc_offsets[d + 1], da, blob, use_pc, gprops, ws, mode, pt, poff[d],
                         True)


@njit_noalloc
def _lookup_whole(tab, term, buf, s, e):
    """The id of the entry equal to ``buf[s:e]``, or -1."""
    node = np.uint64(0)
    for p in range(s, e):
        node = lookup2(tab, (node << _U8) | np.uint64(buf[p]))
        if node == EMPTY:
            return -1
    return term[np.int64(node)]


@njit_noalloc
def _emit_unknown(buf, s, e, tab, term, unk, byte_ids, out, o):
    """The ids of a (fused) unknown string of the best path
    (``cpu_ref.models.UnigramModel._tokens``): the entry it equals, else its byte tokens,
    else the unknown id; -1 when that is needed and there is none."""
    i = _lookup_whole(tab, term, buf, s, e)
    if i >= 0:
        out[o] = i
        return o + 1
    ok = True  # its <0xXX> tokens, when all of them exist
    for p in range(s, e):
        if byte_ids[buf[p]] < 0:
            ok = False
            break
    if ok:
        for p in range(s, e):
            out[o] = byte_ids[buf[p]]
            o += 1
        return o
    if unk < 0:
        return -1
    out[o] = unk
    return o + 1


@njit_noalloc
def _piece(buf, s, e, tab, term, scores, unk, unk_score, byte_ids, best, start_of, id_of, out, o):
    """The ids of the piece ``buf[s:e]`` to ``out[o:]`` (the reference's best path, see
    ``cpu_ref.models.UnigramModel``); the new ``o``, or -1 when the unknown token is needed
    and there is none. ``best``/``start_of``/``id_of``: scratch of at least ``e - s + 1``."""
    size = e - s
    for k in range(size + 1):
        start_of[k] = -1
        best[k] = 0.0
    pos = 0
    while pos < size:
        here = best[pos]
        b0 = buf[s + pos]
        mblen = 1 if b0 < 0x80 else (2 if b0 < 0xE0 else (3 if b0 < 0xF0 else 4))
        single = False
        node = np.uint64(0)
        end = pos
        while end < size:
            node = lookup2(tab, (node << _U8) | np.uint64(buf[s + end]))
            if node == EMPTY:
                break
            end += 1
            i = term[np.int64(node)]
            if i >= 0:
                cand = scores[i] + here
                if start_of[end] < 0 or cand > best[end]:
                    best[end] = cand
                    start_of[end] = pos
                    id_of[end] = i
                if end - pos == mblen:
                    single = True
        if not single:
            end = pos + mblen
            cand = unk_score + here
            if start_of[end] < 0 or cand > best[end]:
                if unk < 0:
                    return -1
                best[end] = cand
                start_of[end] = pos
                id_of[end] = unk
        pos += mblen
    # read the path back (reversed into out[o:], then turned round), fusing unknowns
    o0 = o
    end = size
    fused_end = -1
    while end > 0:
        st = start_of[end]
        if unk >= 0 and id_of[end] == unk:
            if fused_end < 0:
                fused_end = end
        else:
            if fused_end >= 0:
                o = _emit_reversed(buf, s + end, s + fused_end, tab, term, unk, byte_ids, out, o)
                if o < 0:
                    return -1
                fused_end = -1
            out[o] = id_of[end]
            o += 1
        end = st
    if fused_end >= 0:
        o = _emit_reversed(buf, s, s + fused_end, tab, term, unk, byte_ids, out, o)
        if o < 0:
            return -1
    _reverse(out, o0, o)
    return o


@njit_noalloc(inline="always")
def _reverse(out, a, b):
    """``out[a:b]`` turned round in place."""
    i = a
    j = b - 1
    while i < j:
        t = out[i]
        out[i] = out[j]
        out[j] = t
        i += 1
        j -= 1


@njit_noalloc
def _emit_reversed(buf, s, e, tab, term, unk, byte_ids, out, o):
    """``_emit_unknown``, its ids written last first (the path is read back from the end
    and turned round at the end)."""
    o2 = _emit_unknown(buf, s, e, tab, term, unk, byte_ids, out, o)
    if o2 >= 0:
        _reverse(out, o, o2)
    return o2


@njit_noalloc
def _cached(buf, s, e, tab, term, scores, unk, unk_score, byte_ids, best, start_of, id_of, wc, w, out, o):
    n = e - s
    if n > 15:
        return _piece(buf, s, e, tab, term, scores, unk, unk_score, byte_ids, best, start_of, id_of, out, o)
    w0, w1, h = short_key(buf, s, n)
    slot = np.int64(h & np.uint64(wc.shape[1] - 1))
    k = cache_get(wc, w, slot, w0, w1, out, o)
    if k >= 0:
        return o + k
    o2 = _piece(buf, s, e, tab, term, scores, unk, unk_score, byte_ids, best, start_of, id_of, out, o)
    if o2 > o:
        cache_put(wc, w, slot, w0, w1, out, o, o2 - o)
    return o2


@njit_noalloc(inline="always")
def _is_meta(pt, p, b):
    return p + 2 < b and pt[p] == 0xE2 and pt[p + 1] == 0x96 and pt[p + 2] == 0x81


@njit_cached(parallel=True, nogil=True)
def uni_encode(pt, poff, tab, term, scores, unk, unk_score, byte_ids, wc, status, out, counts):
    """Each document's pieces (cut before every "▁") through the model: ``counts[d]`` ids
    at ``out[poff[d]:]``."""
    for d in prange(poff.shape[0] - 1):
        counts[d] = 0
        if status[d] != 0:
            continue
        w = get_thread_id()
        a = poff[d]
        b = poff[d + 1]
        if a == b:
            continue
        # scratch for the best path of any piece of the document
        best = np.empty(b - a + 1, np.float64)
        start_of = np.empty(b - a + 1, np.int64)
        id_of = np.empty(b - a + 1, np.int64)
        o = a
        s = a
        p = a + 3 if _is_meta(pt, a, b) else a + 1
        while p <= b and o >= 0:
            if p == b or _is_meta(pt, p, b):
                o = _cached(pt, s, p, tab, term, scores, unk, unk_score, byte_ids, best, start_of, id_of, wc, w,
                            out, o)
                s = p
                p += 3
            else:
                p += 1
        if o < 0:
            status[d] = 2
        else:
            counts[d] = o - a
