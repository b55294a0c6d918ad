"""Unigram ids over packed text: the compiled path of ``fast_unigram`` (decision 0028).

Array layouts
-------------
Text: ``data: uint8[N]`` the UTF-8 of all texts back to back, ``doc_offsets: int64[n+1]``.

Precompiled normalizer (``cpu_ref.precompiled``): ``da: int64[U]`` the double array's
units, ``crep: int32[0x110000]`` the value of each code point's own rule (-1 none:
``single_values``), ``blob: uint8[B]`` the replacement strings (each ended by a NUL byte);
``use_pc`` false when the file has no normalizer. ``gprops: uint8[0x110000]``: the grapheme classes
of ``cpu_ref.graphemes.props`` (class in bits 0-3, InCB in bits 4-5, ExtPict bit 7).

Pre-tokenizer: ``ws: uint8[0x110000]`` 1 for white space (Rust ``char::is_whitespace``);
``mode``: 0 ``WhitespaceSplit`` then ``Metaspace`` (prepend always), 1 ``Metaspace`` alone
(prepend always), 2 ``Metaspace`` alone (prepend never); ``split`` true in all three. Either way the document comes out as
one byte string ("pre-tokenized") whose pieces start at each "▁" (E2 96 81): under mode 0
every white-space-free run gets a "▁" unless it starts with one and the white space
goes; under modes 1-2 a space becomes "▁" (other white space stays).

Model: ``trie``, a byte trie of the vocabulary (``build_vocab_trie``: children as sorted
label runs or a dense row, ``term[node]`` the id of the entry ending there, else -1;
duplicate entries resolved to the last id before building), ``scores: float64[V]`` by id,
``unk`` the unknown id (-1: none), ``unk_score`` (lowest score - 10), ``byte_ids: int32[256]``
the ``<0xXX>`` ids (-1 where missing; all -1 without byte fallback).

``status: uint8[n]`` per document: 0 encoded here, 1 the reference path (set by the
caller), 2 a piece needs the unknown token and there is none (the reference path raises
the reference's error), 3 its ids did not fit its slot (``uni_ids``).

Output: ``out: int32[...]`` document ``d``'s ids at ``out[ostart[d]:ostart[d] + counts[d]]``,
in a slot of ``ocap[d]`` ids the caller chose (``uni_ids``).
"""

from __future__ import annotations

import numpy as np
from numba import get_thread_id, prange

from ._intrinsics import prefetch3 as _prefetch3
from .engine_cpu import _LONG_IDS, _LONG_MAX, _long_find, _long_insert, _long_set, bytes_hash, short_key, trie_nodes
from .hash_table import njit_cached, njit_noalloc
from .pretok_cpu import _dec
from .wordpiece_cpu import cache_get, cache_put
from .workqueue import take

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
    white-space-free run). Returns the new ``(o, st)``. Bytes past the end of ``pt`` are
    counted, not written (the caller sees ``o`` beyond it)."""
    meta = False  # a "▁" before the character
    if mode == 0:
        if ws[c]:
            return o, 0
        if st == 0:
            st = 1
            meta = c != 0x2581
    else:
        if st == 0:
            st = 1
            meta = mode == 1 and not (c == 0x2581 or c == 0x20)  # (a space becomes "▁" first)
        if c == 0x20:  # the space itself becomes "▁"
            if meta:
                o = _put_meta(pt, o, write)
            return _put_meta(pt, o, write), st
    if meta:
        o = _put_meta(pt, o, write)
    if write and o + n <= pt.shape[0]:
        for j in range(n):
            pt[o + j] = src[p + j]
    return o + n, st


@njit_noalloc(inline="always")
def _put_meta(pt, o, write):
    if write and o + 3 <= pt.shape[0]:
        pt[o] = 0xE2
        pt[o + 1] = 0x96
        pt[o + 2] = 0x81
    return o + 3


@njit_noalloc
def _settle(sr, write):
    """The pending normalized character of ``sr`` (see ``_entry``) gets its span: the
    reference's ``transform`` rule (``cpu_ref.normalized.NormalizedString.transform_range``)
    for a change ``ch``: an insertion (``ch > 0``) copies the span of the original character
    before the position reached (none at the start: the empty span, written -1), any
    other takes the original character at the position, which then moves on ``1 - ch``."""
    span, stt = sr
    pos = stt[0]
    if stt[1] > 0:
        p = pos - 1 if pos >= 1 else -1
    else:
        p = pos
        stt[0] = pos + 1 - stt[1]
    if write:
        for q in range(stt[2], min(stt[3], span.shape[0])):
            span[q] = p
    stt[4] = 0


@njit_noalloc(inline="always")
def _entry(sr, ch, a, b, write):
    """A normalized character enters with the change ``ch`` (0: it replaces the next original
    character; 1: inserted; below 0: it replaces one and removes ``-ch`` more), its
    pre-tokenized bytes at ``pt[a:b]``; the one before it is settled now, as a later
    replacement can still change the last character's change (``cpu_ref.precompiled._replace``).
    ``sr = (span, stt)``: ``span: int64[len(pt)]`` each pre-tokenized byte's original
    character (-1: the empty span at 0), ``stt: int64[5]`` the original characters consumed,
    and the pending character's change, bytes and presence."""
    stt = sr[1]
    if stt[4]:
        _settle(sr, write)
    stt[1] = ch
    stt[2] = a
    stt[3] = b
    stt[4] = 1


@njit_noalloc
def _emit_blob(blob, v, k_old, ws, mode, st, pt, o, write, sr):
    """The replacement string at ``blob[v:]`` (to its NUL), character by character, for
    ``k_old`` original characters; with ``sr``, each character's change as
    ``cpu_ref.precompiled._replace`` gives it."""
    if sr is not None:
        n_new = 0
        p = v
        while p < blob.shape[0] and blob[p] != 0:
            n_new += 1
            p += _dec(blob, p)[1]
        if n_new == 0 and sr[1][4]:  # nothing written: the last character removes the rest
            sr[1][1] -= k_old
    p = v
    j = 0
    while p < blob.shape[0] and blob[p] != 0:
        c, n = _dec(blob, p)
        o0 = o
        o, st = _emit_char(c, n, blob, p, ws, mode, st, pt, o, write)
        if sr is not None:
            ch = 0 if j < k_old else 1
            if j == n_new - 1 and n_new < k_old:
                ch = n_new - k_old
            _entry(sr, ch, o0, o, write)
        j += 1
        p += n
    return o, st


@njit_noalloc(inline="always")
def _plain(c, n, data, p, ws, mode, st, pt, o, write, sr):
    """A character kept as it is."""
    o0 = o
    o, st = _emit_char(c, n, data, p, ws, mode, st, pt, o, write)
    if sr is not None:
        _entry(sr, 0, o0, o, write)
    return o, st


@njit_noalloc(inline="always")
def _single(c, n, data, p, crep, blob, ws, mode, st, pt, o, write, sr):
    """One character alone (its own cluster, or one of a cluster read character by
    character): its rule's replacement (``crep``), else itself."""
    v = crep[c]
    if v >= 0:
        return _emit_blob(blob, v, 1, ws, mode, st, pt, o, write, sr)
    return _plain(c, n, data, p, ws, mode, st, pt, o, write, sr)


@njit_noalloc
def _cluster(data, a, b, nchars, da, crep, blob, ws, mode, st, pt, o, write, sr):
    """A grapheme cluster of ``nchars`` > 1 characters, ``data[a:b]``, normalized
    (``cpu_ref.precompiled``) and pre-tokenized."""
    if b - a < 6:
        v = _transform(da, data, a, b)
        if v >= 0:
            return _emit_blob(blob, v, nchars, ws, mode, st, pt, o, write, sr)
    p = a
    while p < b:
        c, n = _dec(data, p)
        o, st = _single(c, n, data, p, crep, blob, ws, mode, st, pt, o, write, sr)
        p += n
    return o, st


@njit_noalloc
def _pretokenize(data, a, b, da, crep, blob, use_pc, gprops, ws, mode, pt, o, write, sr):
    """Document ``data[a:b]`` normalized and pre-tokenized to ``pt[o:]`` (only counted
    when not ``write``); returns the new ``o``. Clusters are cut only under a normalizer;
    a character of class Other (``gprops`` 0, most letters) joins nothing before it but
    a Prepend, which spares the state machine. ``sr`` (None, or ``_entry``'s) records
    each byte's original character."""
    st = 0
    if a >= b:
        return o
    if not use_pc:
        p = a
        while p < b:
            c, n = _dec(data, p)
            o, st = _plain(c, n, data, p, ws, mode, st, pt, o, write, sr)
            p += n
        if sr is not None and sr[1][4]:
            _settle(sr, write)
        return o
    c, n = _dec(data, a)
    v = gprops[c]
    prev = v & 0x0F
    ri_run = 1 if prev == _RI else 0
    emoji = 1 if (v & 0x80) != 0 else 0
    incb = 1 if ((v >> 4) & 3) == 2 else 0
    start = a
    nchars = 1
    c0 = c
    n0 = n
    p = a + n
    while p < b:
        c, n = _dec(data, p)
        v = gprops[c]
        cur = v & 0x0F
        if v == 0:
            brk = prev != _PREPEND
            ri_run = 0
            emoji = 0
            incb = 0
        else:
            ib = (v >> 4) & 3
            brk = _is_break(prev, cur, v, ri_run, emoji, incb)
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
        if brk:
            if nchars == 1:
                o, st = _single(c0, n0, data, start, crep, blob, ws, mode, st, pt, o, write, sr)
            else:
                o, st = _cluster(data, start, p, nchars, da, crep, blob, ws, mode, st, pt, o, write, sr)
            start = p
            nchars = 0
            c0 = c
            n0 = n
        nchars += 1
        prev = cur
        p += n
    if nchars == 1:
        o, st = _single(c0, n0, data, start, crep, blob, ws, mode, st, pt, o, write, sr)
    else:
        o, st = _cluster(data, start, b, nchars, da, crep, blob, ws, mode, st, pt, o, write, sr)
    if sr is not None and sr[1][4]:
        _settle(sr, write)
    return o


@njit_cached(nogil=True)
def single_values(da, crep):
    """``crep[c]``: the value of the rule for code point ``c`` alone (``_transform`` of its
    UTF-8), -1 without one; surrogates -1."""
    buf = np.zeros(4, np.uint8)
    for c in range(crep.shape[0]):
        if 0xD800 <= c <= 0xDFFF:
            crep[c] = -1
            continue
        if c < 0x80:
            buf[0] = c
            n = 1
        elif c < 0x800:
            buf[0] = 0xC0 | (c >> 6)
            buf[1] = 0x80 | (c & 0x3F)
            n = 2
        elif c < 0x10000:
            buf[0] = 0xE0 | (c >> 12)
            buf[1] = 0x80 | ((c >> 6) & 0x3F)
            buf[2] = 0x80 | (c & 0x3F)
            n = 3
        else:
            buf[0] = 0xF0 | (c >> 18)
            buf[1] = 0x80 | ((c >> 12) & 0x3F)
            buf[2] = 0x80 | ((c >> 6) & 0x3F)
            buf[3] = 0x80 | (c & 0x3F)
            n = 4
        crep[c] = _transform(da, buf, 0, n)


_DENSE = 8  # a node with more children than this gets a 256-entry row


def build_vocab_trie(entries):
    """``(info, edges, dense, term)`` for ``entries``: list of ``(bytes, id)`` with distinct
    bytes. Node 0 is the root. ``info[k]``: for a node of at most ``_DENSE`` children,
    ``first | count << 32`` with its children ``edges[first:first + count]``, each
    ``child << 8 | label``, labels increasing; for a node of more, ``row | 1 << 62`` with
    ``dense[row, byte]`` its child by ``byte`` (-1: none). ``term[k]``: the id of the
    entry ending at node ``k``, else -1."""
    children, term = trie_nodes(entries)
    info = np.zeros(len(children), np.int64)
    edges = []
    rows = []
    for k, ch in enumerate(children):
        if len(ch) > _DENSE:
            row = np.full(256, -1, np.int32)
            for b, c in ch.items():
                row[b] = c
            info[k] = len(rows) | (1 << 62)
            rows.append(row)
        else:
            info[k] = len(edges) | (len(ch) << 32)
            edges += [(ch[b] << 8) | b for b in sorted(ch)]
    dense = np.stack(rows) if rows else np.full((1, 256), -1, np.int32)
    return info, np.array(edges + [0], np.int64), dense, np.array(term, np.int32)


@njit_noalloc(inline="always")
def _child(trie, node, byte):
    """The child of ``node`` by ``byte`` in ``build_vocab_trie``'s trie, or -1."""
    info, edges, dense, _term = trie
    x = info[node]
    if x >= (1 << 62):
        return np.int64(dense[x & 0xFFFFFFFF, byte])
    f = x & 0xFFFFFFFF
    for j in range(f, f + (x >> 32)):
        e = edges[j]
        lb = e & 0xFF
        if lb == byte:
            return e >> 8
        if lb > byte:
            return -1
    return -1


@njit_noalloc
def _lookup_whole(trie, buf, s, e):
    """The id of the entry equal to ``buf[s:e]``, or -1."""
    node = 0
    for p in range(s, e):
        node = _child(trie, node, buf[p])
        if node < 0:
            return -1
    return np.int64(trie[3][node])


@njit_noalloc(inline="always")
def _rec_token(rec, o, s, e, text):
    """With ``rec`` (``(tb, te, own)``, per token): token ``o`` stands for ``buf[s:e]``;
    ``own`` 1 when its token string is that text rather than its id's (an unknown token)."""
    if rec is not None:
        rec[0][o] = s
        rec[1][o] = e
        rec[2][o] = text


@njit_noalloc
def _emit_unknown(buf, s, e, trie, unk, byte_ids, out, o, rec):
    """The ids of a (fused) unknown string of the best path
    (``cpu_ref.models.UnigramModel._tokens``): the entry it equals, else its byte tokens,
    else the unknown id; -1 when that is needed and there is none. Each of them stands
    for the whole string (``rec``)."""
    i = _lookup_whole(trie, buf, s, e)
    if i >= 0:
        out[o] = i
        _rec_token(rec, o, s, e, 0)
        return o + 1
    ok = True  # its <0xXX> tokens, when all of them exist
    for p in range(s, e):
        if byte_ids[buf[p]] < 0:
            ok = False
            break
    if ok:
        for p in range(s, e):
            out[o] = byte_ids[buf[p]]
            _rec_token(rec, o, s, e, 0)
            o += 1
        return o
    if unk < 0:
        return -1
    out[o] = unk
    _rec_token(rec, o, s, e, 1)
    return o + 1


@njit_noalloc
def _piece(buf, s, e, trie, scores, unk, unk_score, byte_ids, best, start_of, id_of, out, o, rec):
    """The ids of the piece ``buf[s:e]`` to ``out[o:]`` (the reference's best path, see
    ``cpu_ref.models.UnigramModel``); the new ``o``, or -1 when the unknown token is needed
    and there is none. ``best``/``start_of``/``id_of``: scratch of at least ``e - s + 1``.
    ``rec``: None, or ``_rec_token``'s arrays (each token's bytes in ``buf``)."""
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
        node = 0
        end = pos
        term = trie[3]
        while end < size:
            node = _child(trie, node, buf[s + end])
            if node < 0:
                break
            end += 1
            i = term[node]
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
                o = _emit_reversed(buf, s + end, s + fused_end, trie, unk, byte_ids, out, o, rec)
                if o < 0:
                    return -1
                fused_end = -1
            out[o] = id_of[end]
            _rec_token(rec, o, s + st, s + end, 0)
            o += 1
        end = st
    if fused_end >= 0:
        o = _emit_reversed(buf, s, s + fused_end, trie, unk, byte_ids, out, o, rec)
        if o < 0:
            return -1
    _reverse(out, o0, o, rec)
    return o


@njit_noalloc(inline="always")
def _swap(a, i, j):
    t = a[i]
    a[i] = a[j]
    a[j] = t


@njit_noalloc(inline="always")
def _reverse(out, a, b, rec):
    """``out[a:b]`` (and ``rec``'s arrays) turned round in place."""
    i = a
    j = b - 1
    while i < j:
        _swap(out, i, j)
        if rec is not None:
            _swap(rec[0], i, j)
            _swap(rec[1], i, j)
            _swap(rec[2], i, j)
        i += 1
        j -= 1


@njit_noalloc
def _emit_reversed(buf, s, e, trie, unk, byte_ids, out, o, rec):
    """``_emit_unknown``, its ids written last first (the path is read back from the end
    and turned round at the end)."""
    o2 = _emit_unknown(buf, s, e, trie, unk, byte_ids, out, o, rec)
    if o2 >= 0:
        _reverse(out, o, o2, rec)
    return o2


@njit_noalloc(inline="always")
def _is_meta(pt, p, b):
    return p + 2 < b and pt[p] == 0xE2 and pt[p + 1] == 0x96 and pt[p + 2] == 0x81


_BATCH = 32  # pieces keyed (and their word cache slots prefetched) ahead of their encoding


@njit_noalloc
def _encode_pieces(pt, a, b, trie, scores, unk, unk_score, byte_ids, best, start_of, id_of, wc, lidx, lbytes, lids,
                   w, bk, out, o, rec):
    """The pieces of ``pt[a:b]`` (cut before every "▁") through the model, ids to
    ``out[o:]``; the new ``o``, or -1 (the unknown token needed and missing). Pieces go in
    batches of ``_BATCH``: their keys made and their word cache slots prefetched first
    (``bk: int64[_BATCH, 5]`` scratch: start, end, slot (-1: none, -2: the long cache),
    key words), so the slots' memory latency overlaps. Pieces of at most 15 bytes use the
    word cache ``wc``, those of 16.._LONG_MAX bytes the long cache ``lidx``/``lbytes``/
    ``lids`` (``engine_cpu``'s, keyed by ``bytes_hash``: a piece's ids depend on its bytes
    alone). ``rec``: None, or ``(tb, te, own, word)`` per token (see ``_rec_token``;
    ``word`` its piece's index): the caches are not used then."""
    mask = np.uint64(wc.shape[1] - 1)
    s = a
    p = a + 3 if _is_meta(pt, a, b) else a + 1
    piece = 0
    while p <= b:
        nb = 0
        while p <= b and nb < _BATCH:
            if p == b or _is_meta(pt, p, b):
                bk[nb, 0] = s
                bk[nb, 1] = p
                bk[nb, 2] = -1
                if p - s <= 15 and rec is None:
                    w0, w1, h = short_key(pt, s, p - s)
                    slot = np.int64(h & mask)
                    _prefetch3(wc, w, slot, 0)
                    bk[nb, 2] = slot
                    bk[nb, 3] = np.int64(w0)
                    bk[nb, 4] = np.int64(w1)
                elif p - s <= _LONG_MAX and rec is None:
                    lh = bytes_hash(pt, s, p)
                    _prefetch3(lidx, w, _long_set(lidx, lh), 0)
                    bk[nb, 2] = -2
                    bk[nb, 3] = np.int64(lh)
                nb += 1
                s = p
                p += 3
            else:
                p += 1
        for q in range(nb):
            ps = bk[q, 0]
            pe = bk[q, 1]
            slot = bk[q, 2]
            k = -1
            if slot >= 0:
                k = cache_get(wc, w, slot, np.uint64(bk[q, 3]), np.uint64(bk[q, 4]), out, o)
            elif slot == -2:
                k = _long_find(pt, ps, pe - ps, np.uint64(bk[q, 3]), _long_set(lidx, np.uint64(bk[q, 3])), lidx,
                               lbytes, lids, w, out, o)
            if k >= 0:
                o += k
                continue
            o2 = _piece(pt, ps, pe, trie, scores, unk, unk_score, byte_ids, best, start_of, id_of, out, o, rec)
            if o2 < 0:
                return -1
            if slot >= 0 and o2 > o:
                cache_put(wc, w, slot, np.uint64(bk[q, 3]), np.uint64(bk[q, 4]), out, o, o2 - o)
            elif slot == -2 and o2 - o <= _LONG_IDS:
                lh = np.uint64(bk[q, 3])
                _long_insert(pt, ps, pe - ps, o2 - o, lh, _long_set(lidx, lh), lidx, lbytes, lids, w, out, o)
            if rec is not None:
                for j in range(o, o2):
                    rec[3][j] = piece
                piece += 1
            o = o2
    return o


@njit_cached
def _uni_scratch(big, record):
    """``uni_ids``'s scratch for documents of up to ``big`` bytes: the pre-tokenized text
    (``2 big + 16`` bytes), the model's ``best``/``start_of``/``id_of`` and the ids
    (``2 big + 17`` items), ``_encode_pieces``'s batch, and when ``record`` the byte spans,
    ``_pretokenize``'s state and the tokens' records (else empty)."""
    n = 2 * big + 16
    r = n + 1 if record else 0
    return (np.empty(n, np.uint8), np.empty(n + 1, np.float64), np.empty(n + 1, np.int64), np.empty(n + 1, np.int64),
            np.empty(n + 1, np.int32), np.empty((_BATCH, 5), np.int64), np.empty(n if record else 0, np.int64),
            np.zeros(5, np.int64), np.empty(r, np.int64), np.empty(r, np.int64), np.empty(r, np.uint8),
            np.empty(r, np.int64))


@njit_noalloc
def _uni_docs(d0, d1, data, doc_offsets, da, crep, blob, use_pc, gprops, ws, mode, trie, scores, unk, unk_score,
              byte_ids, wc, lidx, lbytes, lids, status, ostart, ocap, out, counts, rec, w, sc):
    """``_uni_doc`` of documents ``d0, d0 + 1, ...`` until ``d1`` or one that does not fit
    ``sc``; returns where it stopped and that one's pre-tokenized length (-1 at ``d1``).
    Without reference counting: in the counted caller each call took and dropped a
    reference to every array it passed."""
    for d in range(d0, d1):
        m = _uni_doc(d, data, doc_offsets, da, crep, blob, use_pc, gprops, ws, mode, trie, scores, unk, unk_score,
                     byte_ids, wc, lidx, lbytes, lids, status, ostart, ocap, out, counts, rec, w, sc)
        if m >= 0:
            return d, m
    return d1, -1


@njit_noalloc
def _uni_doc(d, data, doc_offsets, da, crep, blob, use_pc, gprops, ws, mode, trie, scores, unk, unk_score, byte_ids,
             wc, lidx, lbytes, lids, status, ostart, ocap, out, counts, rec, w, sc):
    """Document ``d`` of ``uni_ids`` (worker ``w``) in the scratch ``sc``
    (``_uni_scratch``); returns -1, or the pre-tokenized length when it does not fit
    ``sc`` (nothing written: the caller runs it again with a scratch of that size).
    Allocates nothing, so that it and its loop (``_uni_docs``) run without reference
    counting."""
    if status[d] != 0:
        return -1
    counts[d] = 0
    a = doc_offsets[d]
    b = doc_offsets[d + 1]
    if a == b:
        return -1
    pt = sc[0]
    if rec is None:
        m = _pretokenize(data, a, b, da, crep, blob, use_pc, gprops, ws, mode, pt, 0, True, None)
    else:
        span = sc[6]
        stt = sc[7]
        stt[:] = 0
        m = _pretokenize(data, a, b, da, crep, blob, use_pc, gprops, ws, mode, pt, 0, True, (span, stt))
    if m + 16 > pt.shape[0]:
        return m
    best = sc[1]
    start_of = sc[2]
    id_of = sc[3]
    ids = sc[4]
    bk = sc[5]
    if rec is None:
        k = _encode_pieces(pt, 0, m, trie, scores, unk, unk_score, byte_ids, best, start_of, id_of, wc, lidx, lbytes,
                           lids, w, bk, ids, 0, None)
        need = k
    else:
        tb = sc[8]
        te = sc[9]
        own = sc[10]
        wd = sc[11]
        k = _encode_pieces(pt, 0, m, trie, scores, unk, unk_score, byte_ids, best, start_of, id_of, wc, lidx, lbytes,
                           lids, w, bk, ids, 0, (tb, te, own, wd))
        need = k
        if k > 0:
            ub = 0
            for j in range(k):
                if own[j]:
                    ub += te[j] - tb[j]
            need = max(k, ub)
    if k < 0:
        status[d] = 2
    elif need > ocap[d]:
        status[d] = 3
        counts[d] = need
    else:
        o = ostart[d]
        for j in range(k):
            out[o + j] = ids[j]
        counts[d] = k
        if rec is not None:
            cs, ce, word, ua, ul, ubuf = rec
            u = o
            for j in range(k):
                p0 = span[tb[j]]
                p1 = span[te[j] - 1]
                cs[o + j] = p0 if p0 >= 0 else 0
                ce[o + j] = p1 + 1 if p1 >= 0 else 0
                word[o + j] = wd[j]
                if own[j]:
                    ua[o + j] = u
                    ul[o + j] = te[j] - tb[j]
                    for q in range(tb[j], te[j]):
                        ubuf[u] = pt[q]
                        u += 1
                else:
                    ua[o + j] = -1
    return -1


@njit_cached(parallel=True, nogil=True)
def uni_ids(data, doc_offsets, blocks, nw, da, crep, blob, use_pc, gprops, ws, mode, trie, scores, unk, unk_score,
            byte_ids, wc, lidx, lbytes, lids, status, ostart, ocap, out, counts, rec):
    """The whole pipeline, one document at a time: normalized and pre-tokenized into a
    scratch buffer (twice its block's longest document's bytes; a longer result is
    counted, then written into one of its size), then its pieces through the model; ``counts[d]`` ids at
    ``out[ostart[d]:]``. A document with more ids than its slot (``ocap[d]``) writes none:
    it gets ``status[d] = 3`` and ``counts[d]`` the number it needs (the caller runs it
    again into a slot of that size).

    ``rec`` (``encode_batch``; None for ids): ``(cs, ce, word, ua, ul, ubuf)``, per id
    slot of ``out``: the original characters ``[cs, ce)`` its token stands for (the
    reference's offsets: the spans of its first and last normalized characters, see
    ``_settle``), its word (piece) index, and for an unknown token (whose token string is
    its normalized text) that text's bytes at ``ubuf[ua:ua + ul]`` (``ubuf`` has the
    slots of ``out``; ``ua`` -1 for the others). A document whose unknown tokens' text
    does not fit its slot gets ``status[d] = 3`` too, ``counts[d]`` the larger need.

    ``blocks``: bounds into the document list, handed to the ``nw`` workers as they free up
    (``workqueue``); a block's scratch is made once, sized for its longest document
    (``_uni_scratch``), not per document (t5-small, 4 MB as 40k documents of 100 characters,
    one thread: the allocations were about a third of the time)."""
    nb = blocks.shape[0] - 1
    flags = np.zeros(nb, np.int64)
    for t in prange(nw):
        for c in range(nb):
            k = take(flags, c, np.int64(t), nw, nb)
            if k >= 0:
                d0 = blocks[k]
                d1 = blocks[k + 1]
                big = 0
                for d in range(d0, d1):
                    big = max(big, doc_offsets[d + 1] - doc_offsets[d])
                sc = _uni_scratch(big, rec is not None)
                w = get_thread_id()
                d = d0
                while d < d1:  # a document whose pre-tokenized text outgrows the scratch: again with its own
                    d, m = _uni_docs(d, d1, data, doc_offsets, da, crep, blob, use_pc, gprops, ws, mode, trie,
                                     scores, unk, unk_score, byte_ids, wc, lidx, lbytes, lids, status, ostart, ocap,
                                     out, counts, rec, w, sc)
                    if d < d1:
                        _uni_doc(d, data, doc_offsets, da, crep, blob, use_pc, gprops, ws, mode, trie, scores, unk,
                                 unk_score, byte_ids, wc, lidx, lbytes, lids, status, ostart, ocap, out, counts, rec,
                                 w, _uni_scratch((m + 1) // 2, rec is not None))
                        d += 1