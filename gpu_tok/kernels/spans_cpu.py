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
"""
from __future__ import annotations

import numpy as np
from numba import prange

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


@njit_cached(parallel=True, nogil=True)
def token_char_spans(data, offsets, first_piece, starts, ends, special, pts, ids, tok_len, blocks, nw):
    """``(c_start, c_end, word, is_sp)`` per token (``int64``, ``int64``, ``int64``, ``bool``);
    see the module's docstring."""
    T = ids.shape[0]
    c_s = np.empty(T, np.int64)
    c_e = np.empty(T, np.int64)
    word = np.empty(T, np.int64)
    is_sp = np.empty(T, np.bool_)
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
