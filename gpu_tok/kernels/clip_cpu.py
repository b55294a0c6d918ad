"""Numba kernels of the CLIP-style engine (``gpu_tok/fast_clip.py``): lowercasing the gaps
the raw added tokens leave, and cutting the lowercased text into the pieces of CLIP's
split pattern, each followed by the end-of-word byte 0xFF.

Array layouts
-------------
``lower_gaps(data, seg_s, seg_e, blocks, nw, low1, multi, out, out_s, out_e, orig)``
    ``data: uint8[N]`` packed UTF-8; gap ``k`` is ``data[seg_s[k]:seg_e[k]]``. ``low1:
    int32[0x110000]``: a code point's lowercase code point, or ``-1 - j`` when it lowercases
    to several: row ``j`` of ``multi: int32[M, 4]`` (count, then up to three code points).
    Writes gap ``k`` lowercased to ``out[2 * seg_s[k]:]`` (``out: uint8[2 * N]``; a
    lowercase mapping at most doubles a character's bytes, ``fast_clip`` checks that when
    it builds the tables) and sets ``out_s[k]``, ``out_e[k]``. ``orig: int64[2 * N]`` (or
    empty: not written): for each byte written, the ``data`` position of the character it
    comes from. ``blocks``: bounds into the gaps, runs of gaps of about equal bytes,
    handed to the ``nw`` workers as they free up (``workqueue``).
``clip_scan(text, seg_s, seg_e, blocks, nw, cls, out, p_s, p_e, p_l, counts, block_counts)``
    Segment ``k`` is ``text[seg_s[k]:seg_e[k]]`` (in text order); ``cls: uint8[0x110000]``
    the class bits of ``pretok_cpu.class_table("onig")``. The matches of
    ``'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|[^\\s\\p{L}\\p{N}]+`` (CLIP's pattern
    without its two literal alternatives, which ``fast_clip`` keeps away from this
    kernel), the white space between them dropped (``Split`` ``Removed``, ``invert``),
    each piece's bytes then 0xFF. The segments ``blocks[r]..blocks[r + 1]`` are one block
    (handed to the ``nw`` workers as they free up, ``workqueue``): its pieces are written
    back to back from ``out[2 * a]`` (``a``: the block's first ``seg_s``; ``out: uint8[2 *
    len(text)]``, a piece has a byte at least),
    and described from slot ``a`` on: piece ``j`` of the block is
    ``out[p_s[a + j]:p_e[a + j]]`` (the 0xFF included; ``p_s``/``p_e: int64[len(text)]``);
    ``counts[k]`` pieces of segment ``k``, ``block_counts[r]`` of block ``r``; ``p_l`` (or
    empty: not written) where each piece starts in ``text``.

0xFF never occurs in UTF-8, so a piece's bytes plus 0xFF are a key no text piece has: the
byte-level engine runs on them unchanged, its byte 0xFF standing for the suffix.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .hash_table import njit_cached, njit_noalloc
from .hash_table import uidx as _U
from .pretok_cpu import _dec as _decode
from .workqueue import take, take_range

__all__ = ["lower_gaps", "clip_scan", "EOW"]

EOW = 0xFF  # the end-of-word byte

_WS = 1  # pretok_cpu.C_WS
_L = 2  # pretok_cpu.C_L
_N = 4  # pretok_cpu.C_N


@njit_noalloc(inline="always")
def _encode(out, o, c):
    """Write code point ``c`` as UTF-8 at ``out[o]``; returns the new ``o``."""
    if c < 0x80:
        out[_U(o)] = np.uint8(c)
        return o + 1
    if c < 0x800:
        out[_U(o)] = np.uint8(0xC0 | (c >> 6))
        out[_U(o + 1)] = np.uint8(0x80 | (c & 0x3F))
        return o + 2
    if c < 0x10000:
        out[_U(o)] = np.uint8(0xE0 | (c >> 12))
        out[_U(o + 1)] = np.uint8(0x80 | ((c >> 6) & 0x3F))
        out[_U(o + 2)] = np.uint8(0x80 | (c & 0x3F))
        return o + 3
    out[_U(o)] = np.uint8(0xF0 | (c >> 18))
    out[_U(o + 1)] = np.uint8(0x80 | ((c >> 12) & 0x3F))
    out[_U(o + 2)] = np.uint8(0x80 | ((c >> 6) & 0x3F))
    out[_U(o + 3)] = np.uint8(0x80 | (c & 0x3F))
    return o + 4


@njit_noalloc
def _lower_gap(data, a, b, low1, multi, out, o, orig):
    rec = orig.shape[0] != 0
    i = a
    while i < b:
        x = data[_U(i)]
        if x < 0x80:  # ASCII: A-Z -> a-z (low1 agrees: fast_clip checks it)
            out[_U(o)] = x + np.uint8(32) if 0x41 <= x <= 0x5A else x
            if rec:
                orig[_U(o)] = i
            o += 1
            i += 1
            continue
        c, n = _decode(data, i)
        o0 = o
        m = np.int64(low1[_U(c)])
        if m >= 0:
            if m == c:
                for k in range(n):
                    out[_U(o + k)] = data[_U(i + k)]
                o += n
            else:
                o = _encode(out, o, m)
        else:
            j = -1 - m
            for k in range(multi[_U(j), 0]):
                o = _encode(out, o, np.int64(multi[_U(j), _U(k + 1)]))
        if rec:
            for q in range(o0, o):
                orig[_U(q)] = i
        i += n
    return o


@njit_cached(parallel=True, nogil=True)
def lower_gaps(data, seg_s, seg_e, blocks, nw, low1, multi, out, out_s, out_e, orig):
    """Gap ``k`` lowercased into ``out[2 * seg_s[k]:out_e[k]]`` (``out_s[k]``: its start);
    ``blocks``: bounds into the gaps, handed to the ``nw`` workers as they free up
    (``workqueue.take_range``)."""
    flags = np.zeros(blocks.shape[0] - 1, np.int64)
    for t in prange(nw):
        for c in range(blocks.shape[0] - 1):
            k0, k1 = take_range(flags, c, np.int64(t), nw, blocks)
            for k in range(k0, k1):
                o = 2 * seg_s[k]
                out_s[k] = o
                out_e[k] = _lower_gap(data, seg_s[k], seg_e[k], low1, multi, out, o, orig)


@njit_noalloc(inline="always")
def _cls_at(text, i, e, cls):
    """Class bits and byte length of the character at ``i`` (``0, 0`` at ``e``)."""
    if i >= e:
        return np.int64(0), np.int64(0)
    x = text[_U(i)]
    if x < 0x80:
        return np.int64(cls[_U(x)]), np.int64(1)
    c, n = _decode(text, i)
    return np.int64(cls[_U(c)]), np.int64(n)


@njit_noalloc(inline="always")
def _run_end(text, j, e, cls, want, stop):
    """End of the run from ``j`` of characters whose class bits meet ``want`` (``stop`` 0)
    or miss ``stop`` (``want`` 0)."""
    while j < e:
        x = text[_U(j)]
        if x < 0x80:
            k = np.int64(cls[_U(x)])
            n = 1
        else:
            c, n = _decode(text, j)
            k = np.int64(cls[_U(c)])
        if want != 0:
            if not (k & want):
                break
        elif k & stop:
            break
        j += n
    return j


@njit_noalloc
def _contraction(text, i, e):
    """Bytes of the contraction (``'s 't 're 've 'm 'll 'd``, case-sensitive) at ``i``, or 0."""
    if text[_U(i)] != 0x27 or i + 1 >= e:
        return 0
    x = text[_U(i + 1)]
    if x == 0x73 or x == 0x74 or x == 0x6D or x == 0x64:  # s t m d
        return 2
    if i + 2 < e:
        y = text[_U(i + 2)]
        if (x == 0x72 or x == 0x76) and y == 0x65:  # re ve
            return 3
        if x == 0x6C and y == 0x6C:  # ll
            return 3
    return 0


@njit_noalloc
def _scan_seg(text, a, b, cls, out, o, p_s, p_e, p_l, np_):
    i = a
    while i < b:
        k, n = _cls_at(text, i, b, cls)
        if k & _WS:  # white space: dropped
            i += n
            continue
        j = i + _contraction(text, i, b)
        if j == i:
            if k & _L:  # [\p{L}]+
                j = _run_end(text, i + n, b, cls, _L, 0)
            elif k & _N:  # [\p{N}]: one character
                j = i + n
            else:  # [^\s\p{L}\p{N}]+
                j = _run_end(text, i + n, b, cls, 0, _WS | _L | _N)
        p_s[_U(np_)] = o
        if p_l.shape[0] != 0:
            p_l[_U(np_)] = i
        for q in range(i, j):
            out[_U(o)] = text[_U(q)]
            o += 1
        out[_U(o)] = np.uint8(0xFF)
        o += 1
        p_e[_U(np_)] = o
        np_ += 1
        i = j
    return np_


@njit_cached(parallel=True, nogil=True)
def clip_scan(text, seg_s, seg_e, blocks, nw, cls, out, p_s, p_e, p_l, counts, block_counts):
    nb = blocks.shape[0] - 1
    flags = np.zeros(nb, np.int64)
    for t in prange(nw):
        for c in range(nb):
            r = take(flags, c, np.int64(t), nw, nb)
            if r < 0:
                continue
            k0 = blocks[r]
            a = seg_s[k0] if k0 < seg_s.shape[0] else 0
            np_ = a
            o = 2 * a
            for k in range(k0, blocks[r + 1]):
                m = _scan_seg(text, seg_s[k], seg_e[k], cls, out, o, p_s, p_e, p_l, np_)
                counts[k] = m - np_
                if m > np_:
                    o = p_e[m - 1]
                np_ = m
            block_counts[r] = np_ - a


@njit_cached(parallel=True, nogil=True)
def item_counts(p_s, p_e, ls, blocks, counts, seg_doc, skip):
    """The first pass of ``item_fill``, per block of ``clip_scan`` (in parallel): ``(kept,
    seps, first_s, last_e)``, the pieces of documents not in ``skip``, the places between
    two of them in a row that are not back to back, the first one's start and the last
    one's end (-1 when none)."""
    nb = blocks.shape[0] - 1
    S = ls.shape[0]
    kept = np.zeros(nb, np.int64)
    seps = np.zeros(nb, np.int64)
    first_s = np.full(nb, -1, np.int64)
    last_e = np.full(nb, -1, np.int64)
    for r in prange(nb):
        k0 = blocks[r]
        q = ls[k0] if k0 < S else 0
        c = 0
        sp = 0
        prev = np.int64(-1)
        for k in range(k0, blocks[r + 1]):
            cnt = counts[_U(k)]
            if skip[_U(seg_doc[_U(k)])] == 0:
                for j in range(q, q + cnt):
                    s0 = p_s[_U(j)]
                    if c == 0:
                        first_s[r] = s0
                    elif s0 != prev:
                        sp += 1
                    prev = p_e[_U(j)]
                    c += 1
            q += cnt
        kept[r] = c
        seps[r] = sp
        last_e[r] = prev
    return kept, seps, first_s, last_e


@njit_cached(parallel=True, nogil=True)
def item_fill(p_s, p_e, ls, blocks, counts, seg_doc, skip, off, before, runs, starts, ends, special, doc):
    """``clip_scan``'s pieces of the documents not in ``skip`` as items in text order, block
    ``r``'s from ``off[r]`` (in parallel): ``starts``/``ends`` in its ``out``, ``special``
    -1, ``doc`` the document; with ``runs``, a -2 item (start and end the next piece's
    start) before each piece that does not start where the previous one ended (``before[r]``:
    before block ``r``'s first one, against the blocks before it)."""
    nb = blocks.shape[0] - 1
    S = ls.shape[0]
    for r in prange(nb):
        k0 = blocks[r]
        q = ls[k0] if k0 < S else 0
        o = off[r]
        c = 0
        prev = np.int64(-1)
        for k in range(k0, blocks[r + 1]):
            cnt = counts[_U(k)]
            d = seg_doc[_U(k)]
            if skip[_U(d)] == 0:
                for j in range(q, q + cnt):
                    s0 = p_s[_U(j)]
                    if runs and ((c == 0 and before[r] != 0) or (c > 0 and s0 != prev)):
                        starts[_U(o)] = s0
                        ends[_U(o)] = s0
                        special[_U(o)] = -2
                        doc[_U(o)] = d
                        o += 1
                    prev = p_e[_U(j)]
                    starts[_U(o)] = s0
                    ends[_U(o)] = prev
                    special[_U(o)] = -1
                    doc[_U(o)] = d
                    o += 1
                    c += 1
            q += cnt
