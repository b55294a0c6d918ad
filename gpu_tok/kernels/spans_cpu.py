"""Each token's characters and word for ``Encoding`` offsets, in one pass over the text.

``token_char_spans`` takes the byte-level engine's pieces and ids (``ByteBPEEngine.run(...,
want_pieces=True)``) and gives, per token, what ``fast_cpu.CpuTokenizerEngine._encoding_arrays``
needs: the characters ``[c_start, c_end)`` of its document it covers, its word (the index of
its piece in the document) and whether it is an added token. Layout:

* ``data: uint8[N]`` the packed UTF-8 text, documents ``[offsets[d], offsets[d + 1])``;
* pieces ``p`` in text order: bytes ``[starts[p], ends[p])``, ``special[p] >= 0`` for an
  added token's match (one token, the whole piece), tokens ``pts[p]..pts[p + 1]`` of ``ids``;
  ``first_piece[d]``: the first piece of document ``d`` (``first_piece[D] = P``);
* a model token's bytes: ``tok_len[id]``; the tokens of a piece follow each other from its
  first byte;
* characters counted as the reference does for byte-level tokens (decision 0004): a token
  starts at the character holding its first byte and ends after the character holding its
  last one.

The documents run in blocks (``blocks``, ``int64[n + 1]`` bounds of about equal bytes) on a
work queue (``workqueue.take_range``); each walks its text once, counting character starts
as it goes, instead of a character index of the whole text (an ``int64`` per byte) and
gathers from it.

``mask_pieces`` turns the byte-level engine's piece mask (``ByteBPEEngine.pieces``: per byte
0, or the kind of piece starting there) into the pieces' arrays in two passes over the
mask, eight bytes a step, in parallel blocks (instead of ``np.flatnonzero`` and gathers).
"""
from __future__ import annotations

import numpy as np
from numba import prange

from ._intrinsics import ctz64 as _ctz64
from ._intrinsics import load64 as _load64
from .hash_table import njit_cached, njit_noalloc
from .hash_table import uidx as _U
from .workqueue import take_range

_HIGH8 = np.uint64(0x8080808080808080)
_ONES8 = np.uint64(0x0101010101010101)


@njit_noalloc(inline="always")
def _starts8(w, m):
    """Characters starting among the bytes of ``w`` (eight text bytes, little-endian) that
    ``m`` keeps (``0xFF`` per byte kept): the bytes that are not ``10xxxxxx``."""
    lead = ~(w & ~(w << np.uint64(1))) & _HIGH8 & m  # bit 7 of a byte: set, bit 6 clear
    return np.int64((((lead >> np.uint64(7)) * _ONES8) >> np.uint64(56)))


@njit_noalloc(inline="always")
def _char_starts(data, x, y):
    """Characters starting in ``data[x:y]`` (eight bytes a step; no branch on the text)."""
    c = np.int64(0)
    while x + 8 <= y:
        c += _starts8(_load64(data, x), ~np.uint64(0))
        x += 8
    if x < y:
        if x + 8 <= data.shape[0]:
            c += _starts8(_load64(data, x), (np.uint64(1) << np.uint64(8 * (y - x))) - np.uint64(1))
        else:
            while x < y:
                c += np.int64((data[_U(x)] & 0xC0) != 0x80)
                x += 1
    return c


@njit_cached
def _token_arrays(T):
    """Per token: first character, end character, word (``int64``) and a flag (``bool``)."""
    return np.empty(T, np.int64), np.empty(T, np.int64), np.empty(T, np.int64), np.empty(T, np.bool_)


@njit_cached(parallel=True, nogil=True)
def token_char_spans(data, offsets, first_piece, starts, ends, special, pts, ids, tok_len, blocks, nw):
    """``(c_start, c_end, word, is_sp)`` per token (``int64``, ``int64``, ``int64``, ``bool``);
    see the module's docstring."""
    c_s, c_e, word, is_sp = _token_arrays(ids.shape[0])
    nb = blocks.shape[0] - 1
    flags = np.zeros(nb, np.int64)
    for t in prange(nw):
        for c in range(nb):
            d0, d1 = take_range(flags, c, np.int64(t), nw, blocks)
            for d in range(d0, d1):
                a = offsets[_U(d)]
                x = a  # characters starting in [a, x): cnt
                cnt = np.int64(0)
                p0 = first_piece[_U(d)]
                for p in range(p0, first_piece[_U(d + 1)]):
                    pos = starts[_U(p)]
                    sp = special[_U(p)] >= 0
                    for k in range(pts[_U(p)], pts[_U(p + 1)]):
                        n = ends[_U(p)] - starts[_U(p)] if sp else tok_len[_U(ids[_U(k)])]
                        if x > pos + 1:  # a piece inside the one before (a match that took the
                            # whitespace after it, ``ByteBPEEngine.pieces``): counted back
                            cnt -= _char_starts(data, pos + 1, x)
                            x = pos + 1
                        cnt += _char_starts(data, x, pos + 1)
                        c_s[_U(k)] = cnt - 1
                        end = pos + n
                        cnt += _char_starts(data, pos + 1, end)
                        x = max(end, pos + 1)
                        c_e[_U(k)] = cnt
                        word[_U(k)] = p - p0
                        is_sp[_U(k)] = sp
                        pos = end
    return c_s, c_e, word, is_sp


_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)


@njit_noalloc(inline="always")
def _nonzero8(w):
    """Bit 7 of each byte of ``w`` set where that byte is not 0."""
    return (((w & _LOW7) + _LOW7) | w) & _HIGH8


@njit_noalloc
def _mask_count(mask, x, y):
    """``(pieces, matches)``: the bytes of ``mask[x:y]`` that are not 0, and those that are 2."""
    c = np.int64(0)
    c2 = np.int64(0)
    while x + 8 <= y:
        w = _load64(mask, x)
        if w != np.uint64(0):
            c += np.int64(_popcount8(_nonzero8(w)))
            c2 += 8 - np.int64(_popcount8(_nonzero8(w ^ np.uint64(0x0202020202020202))))
        x += 8
    while x < y:
        v = mask[_U(x)]
        c += np.int64(v != 0)
        c2 += np.int64(v == 2)
        x += 1
    return c, c2


@njit_noalloc(inline="always")
def _popcount8(h):
    """Bytes of ``h`` whose bit 7 is set (``h`` has no other bits)."""
    return ((h >> np.uint64(7)) * _ONES8) >> np.uint64(56)


@njit_noalloc(inline="always")
def _put_piece(mask, pos, o, k2, m_id, m_e, starts, ends, special):
    """Piece ``o`` starts at ``pos``; returns the next match index."""
    v = mask[_U(pos)]
    starts[_U(o)] = pos
    if v == 2:
        special[_U(o)] = m_id[_U(k2)]
        ends[_U(o)] = m_e[_U(k2)]
        return k2 + 1
    special[_U(o)] = np.int32(-2) if v == 3 else np.int32(-1)
    return k2


@njit_noalloc
def _mask_block(mask, x, y, o, k2, m_id, m_e, starts, ends, special):
    """Pieces of ``mask[x:y]`` from piece ``o`` and match ``k2`` on (``_put_piece``); the end
    of each but a block's last that is not a match: the next one's start."""
    o0 = o
    while x + 8 <= y:
        w = _load64(mask, x)
        if w != np.uint64(0):
            h = _nonzero8(w)
            while h != np.uint64(0):
                pos = x + np.int64(_ctz64(h) >> np.uint64(3))
                if o > o0 and special[_U(o - 1)] < np.int32(0):
                    ends[_U(o - 1)] = pos
                k2 = _put_piece(mask, pos, o, k2, m_id, m_e, starts, ends, special)
                o += 1
                h &= h - np.uint64(1)
        x += 8
    while x < y:
        if mask[_U(x)] != 0:
            if o > o0 and special[_U(o - 1)] < np.int32(0):
                ends[_U(o - 1)] = x
            k2 = _put_piece(mask, x, o, k2, m_id, m_e, starts, ends, special)
            o += 1
        x += 1


@njit_noalloc
def _mask_ends(bounds, po, starts, ends, special, N):
    """The end of each block's last piece that is not a match: the next piece's start (the
    text's end for the last)."""
    P = starts.shape[0]
    for b in range(bounds.shape[0] - 1):
        o = po[_U(b + 1)] - 1
        if o >= po[_U(b)] and special[_U(o)] < np.int32(0):
            ends[_U(o)] = starts[_U(o + 1)] if o + 1 < P else N


def mask_bounds(N: int, n: int) -> np.ndarray:
    """``int64[n + 1]``: ``n`` blocks of about equal bytes of a mask of ``N`` bytes for
    ``mask_pieces``, each starting at a multiple of 8."""
    step = -(-(-(-N // n)) // 8) * 8
    return np.minimum(np.arange(n + 1, dtype=np.int64) * step, N)


@njit_cached(parallel=True, nogil=True)
def mask_pieces(mask, m_id, m_e, bounds):
    """``(starts, ends, special)`` of the pieces the mask marks (``uint8[N]``: 0, or the
    start of a piece: 1 a pre-tokenizer's piece, 2 an added token's match, 3 a document
    left out), in text order: ``special`` -1 for a piece, the match's id for a match (the
    ``k``-th 2 is match ``k``: ``m_id[k]``, ending at ``m_e[k]``), -2 for a document left
    out; a piece that is not a match ends where the next starts (the text's end for the
    last). The mask is read in the blocks ``bounds`` (``int64[n + 1]``, multiples of 8 but
    the last), counted in parallel, then written in parallel."""
    nb = bounds.shape[0] - 1
    cnt = np.zeros(nb + 1, np.int64)
    cnt2 = np.zeros(nb + 1, np.int64)
    for b in prange(nb):
        c, c2 = _mask_count(mask, bounds[_U(b)], bounds[_U(b + 1)])
        cnt[_U(b + 1)] = c
        cnt2[_U(b + 1)] = c2
    for b in range(nb):
        cnt[_U(b + 1)] += cnt[_U(b)]
        cnt2[_U(b + 1)] += cnt2[_U(b)]
    P = cnt[_U(nb)]
    starts = np.empty(P, np.int64)
    ends = np.empty(P, np.int64)
    special = np.empty(P, np.int32)
    for b in prange(nb):
        _mask_block(mask, bounds[_U(b)], bounds[_U(b + 1)], cnt[_U(b)], cnt2[_U(b)], m_id, m_e, starts, ends, special)
    _mask_ends(bounds, cnt, starts, ends, special, mask.shape[0])
    return starts, ends, special


@njit_cached(nogil=True)
def mask_pieces_serial(mask, m_id, m_e):
    """``mask_pieces`` in one block on one thread (small batches)."""
    N = mask.shape[0]
    c, _ = _mask_count(mask, 0, N)
    starts = np.empty(c, np.int64)
    ends = np.empty(c, np.int64)
    special = np.empty(c, np.int32)
    _mask_block(mask, 0, N, np.int64(0), np.int64(0), m_id, m_e, starts, ends, special)
    if c > 0 and special[_U(c - 1)] < np.int32(0):
        ends[_U(c - 1)] = N
    return starts, ends, special


@njit_noalloc(inline="always")
def _count_to(data, x, q, cnt):
    """``cnt`` (characters starting before byte ``x`` of a document) moved to byte ``q``."""
    if q >= x:
        return cnt + _char_starts(data, x, q)
    return cnt - _char_starts(data, q, x)


@njit_cached(parallel=True, nogil=True)
def sp_token_spans(data, offsets, dst, counts, out, tb, te, word, blocks, nw):
    """The SentencePiece engine's recorded tokens (``engine_cpu._sp_doc`` with ``rec``:
    document ``d``'s ``counts[d]`` tokens at ``out[dst[d]:]``, with their first and last
    text bytes ``tb``/``te`` there, ``te = -1`` for a normalized added token, and piece
    ``word``, ``-1 - piece`` for a raw added token) gathered back to back with their
    characters: ``(rs, ids, c_start, c_end, words, added, bad)``: ``rs`` the row splits,
    a token's characters ``[c_start, c_end)`` of its document (the one holding its first
    byte to the one after the one holding its last; a normalized added token's is its
    first byte's character only), ``words`` the piece, ``added`` whether a raw added
    token, ``bad[d]`` whether document ``d`` holds a normalized added token (the reference
    path's). Documents in ``blocks`` on a work queue, each walked once counting characters
    (counted back where a token starts before the end of the one before)."""
    n = counts.shape[0]
    rs = np.empty(n + 1, np.int64)
    rs[0] = 0
    for d in range(n):
        rs[_U(d + 1)] = rs[_U(d)] + counts[_U(d)]
    ids = np.empty(rs[_U(n)], np.int32)
    c_s, c_e, words, added = _token_arrays(rs[_U(n)])
    bad = np.zeros(n, np.bool_)
    nb = blocks.shape[0] - 1
    flags = np.zeros(nb, np.int64)
    for t in prange(nw):
        for c in range(nb):
            d0, d1 = take_range(flags, c, np.int64(t), nw, blocks)
            for d in range(d0, d1):
                x = offsets[_U(d)]  # characters starting in [offsets[d], x): cnt
                cnt = np.int64(0)
                o = rs[_U(d)]
                src = dst[_U(d)]
                for j in range(counts[_U(d)]):
                    k = src + j
                    b0 = tb[_U(k)]
                    e0 = te[_U(k)]
                    if e0 < 0:
                        bad[_U(d)] = True
                        e0 = b0
                    cnt = _count_to(data, x, b0 + 1, cnt)
                    c_s[_U(o + j)] = cnt - 1
                    cnt = _count_to(data, b0 + 1, e0 + 1, cnt)
                    x = e0 + 1
                    c_e[_U(o + j)] = cnt
                    w = word[_U(k)]
                    added[_U(o + j)] = w < 0
                    words[_U(o + j)] = -1 - w if w < 0 else w
                    ids[_U(o + j)] = out[_U(k)]
    return rs, ids, c_s, c_e, words, added, bad
