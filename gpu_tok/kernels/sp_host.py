"""Host side of the GPU path for SentencePiece-style BPE files (``byte_fallback``): the
normalized buffer and the pieces the model sees, as ``kernels.engine_cpu._sp_doc`` walks
them, without encoding them.

Per document (``engine_cpu._sp_doc``): the raw added-token pass; each gap normalized
(``prepend`` 1: "▁" before a non-empty gap; 0/1: every " " becomes "▁"); the normalized
added-token pass on it; each remaining piece (2/3, ``Metaspace``: spaces replaced and "▁"
in front unless it starts with one, "first" only at the start of the text) is one piece,
cut into words before every "▁" whose previous character no vocabulary token holds right
before a "▁" (the engine's ``held``: no merge can cross such a place; ``_sp_piece``).
``whole_first`` (``ignore_merges``) looks the whole piece up first: a hit becomes a fixed
id, as an added token.

Output (``sp_pieces``): ``buf: uint8[M]`` the model pieces' bytes back to back;
``starts: int64[P+1]`` piece ``p`` is ``buf[starts[p]:starts[p+1]]`` (fixed ids take no
bytes); ``special: int32[P]`` a fixed id or -1; ``first: int64[n+1]`` the first piece of each
document (``P`` at the end). The device encodes each ``-1`` piece with SentencePiece initial
symbols (``bpe_cuda.sp_symbols``) and BPE; the ids equal ``CpuSentencePieceEngine``'s.
``sp_pieces_parallel`` makes the same in blocks of documents on the host's threads, each
block into a region of its own (``sp_blocks``), then the regions back to back into the
caller's arrays (``sp_gather``: ``int32`` starts, and the model pieces' counts). The walk is
compiled without reference counting and with unsigned indices (``_sp_docs``, ``_emit_piece``);
counted and signed, one thread took 30 ms for 4 MB of llama2's code here, 10 ms without
(``benchmarks/host_pieces.py``; RESULTS 2026-12-05).
"""

from __future__ import annotations

import time

import numba
import numpy as np
from numba import prange

from ._intrinsics import ctz64 as _ctz64
from ._intrinsics import range_mask64 as _range_mask64
from .engine_cpu import (_sp_gap_bytes, _sp_marks, _sp_nocut_before, _sp_runs_held, _sp_spaces, _split_added,
                         bytes_lookup, sp_form_marker)
from .gpu_host import _alloc, lap, piece_terms
from .hash_table import njit_cached, njit_noalloc
from .hash_table import uidx as _U
from .workqueue import take


@njit_noalloc(inline="always")
def _sp_cut(src, i, x, m, starts, special, p, held):
    """The "▁" at ``src[i]`` (``i > x``) of the piece from ``x`` copied to ``m``: a new piece
    starts there unless ``held`` holds the character before it right before a "▁" (the CPU
    engine's test, ``engine_cpu._sp_nocut_before``); returns the pieces' new count."""
    if not _sp_nocut_before(src, i, held):
        starts[_U(p)] = m + i - x
        special[_U(p)] = -1
        p += 1
    return p


@njit_noalloc(inline="always")
def _emit_piece(src, x, y, buf, m, starts, special, p, whole_first, held, arena, tok_off, bkeys, bvals, copy=True):
    """Append the piece ``src[x:y]`` (``engine_cpu._sp_piece``); returns ``(m, p)``.
    ``copy`` False: the piece is in place already (``src`` is ``buf`` and ``x`` is ``m``).

    ``held``: empty, or the CPU engine's table (``fast_cpu._held_pairs``): the piece is then
    cut before every "▁" whose previous character no token holds right before a "▁"."""
    if y <= x:
        return m, p
    if whole_first:
        t = bytes_lookup(src, x, y, arena, tok_off, bkeys, bvals)
        if t >= 0:
            starts[p] = m
            special[p] = t
            return m, p + 1
    if copy:
        for k in range(x, y):  # the words tile the piece: its bytes copied once
            buf[_U(m + k - x)] = src[_U(k)]
    starts[_U(p)] = m
    special[_U(p)] = -1
    p += 1
    if held.shape[0] > 0:
        N = src.shape[0]
        runs = _sp_runs_held(held)
        i = x + 1
        while i + 2 < y:
            if i + 66 <= N:  # 64 places at a time: where a "▁" that may be a cut may start
                wm = _sp_marks(src, i, runs, False)
                while wm != 0:
                    j = i + np.int64(_ctz64(wm))
                    wm &= wm - np.uint64(1)
                    if j + 2 >= y:
                        break
                    if src[_U(j + 1)] == 0x96:
                        p = _sp_cut(src, j, x, m, starts, special, p, held)
                i += 64
                continue
            if src[_U(i)] == 0xE2 and src[_U(i + 1)] == 0x96 and src[_U(i + 2)] == 0x81:
                p = _sp_cut(src, i, x, m, starts, special, p, held)
                i += 3
            else:
                i += 1
    m += y - x
    return m, p


@njit_cached
def _sp_block(data, doc_offsets, d0, d1, rt, nt, cls, prepend, arena, tok_off, bkeys, bvals, whole_first, held,
              buf, m, starts, p, special, first):
    """The pieces of documents ``d0..d1`` (module docstring) into ``buf[m:]``, ``starts[p:]``,
    ``special[p:]`` (``starts`` and ``first`` count from the start of these arrays);
    returns the ``(m, p)`` after them. Room: ``6 b + 8 k + 8`` bytes and ``2 b + 2 k + 2``
    pieces for ``k`` documents of ``b`` bytes."""
    big = 1
    for d in range(d0, d1):
        ln = doc_offsets[d + 1] - doc_offsets[d]
        if ln > big:
            big = ln
    cap = big + 2
    gs = np.empty(cap, np.int64)
    ge = np.empty(cap, np.int64)
    ms = np.empty(cap, np.int64)
    me = np.empty(cap, np.int64)
    mi = np.empty(cap, np.int32)
    ncap = 3 * big + 8
    nbuf = np.empty(ncap, np.uint8)
    pbuf = np.empty(ncap + 3, np.uint8)
    s2 = np.empty(ncap, np.int64)
    e2 = np.empty(ncap, np.int64)
    ms2 = np.empty(ncap, np.int64)
    me2 = np.empty(ncap, np.int64)
    mi2 = np.empty(ncap, np.int32)
    return _sp_docs(data, doc_offsets, d0, d1, rt, nt, cls, prepend, arena, tok_off, bkeys, bvals, whole_first,
                    held, buf, m, starts, p, special, first, gs, ge, ms, me, mi, nbuf, pbuf, s2, e2, ms2, me2, mi2)


@njit_noalloc
def _sp_docs(data, doc_offsets, d0, d1, rt, nt, cls, prepend, arena, tok_off, bkeys, bvals, whole_first, held,
             buf, m, starts, p, special, first, gs, ge, ms, me, mi, nbuf, pbuf, s2, e2, ms2, me2, mi2):
    """``_sp_block``'s loop over its documents, with the scratch it made, compiled without
    reference counting (``engine_cpu._sp_docs``): counted, the piece walk took and dropped
    references to its arrays in its loops (module docstring). ``prepend``: the form as
    ``engine_cpu.sp_form_marker``'s tuple, a compiled copy per form; the branches between
    the normalizer's paths and Metaspace's are written on ``len(prepend)``, a constant Numba
    prunes before it inlines ``_emit_piece`` (twice for a normalizer form, once for
    Metaspace, not three times; decision 0036)."""
    form = len(prepend) - 1
    for d in range(d0, d1):
        first[_U(d)] = p
        a = doc_offsets[_U(d)]
        b = doc_offsets[_U(d + 1)]
        ng, nm = _split_added(data, a, b, rt, cls, gs, ge, ms, me, mi)
        gi = 0
        mk = 0
        while gi < ng or mk < nm:
            if mk < nm and (gi >= ng or ms[_U(mk)] < gs[_U(gi)]):
                starts[_U(p)] = m
                special[_U(p)] = mi[_U(mk)]
                p += 1
                mk += 1
                continue
            x = gs[_U(gi)]
            y = ge[_U(gi)]
            gi += 1
            if len(prepend) < 3 and not whole_first:  # form < 2
                # the gap normalized straight into buf; where the normalized added-token pass
                # finds nothing in it (nearly always), it is one piece, in place (not normalized
                # into nbuf, then copied); else it goes to nbuf and the general path below
                q = m
                if form == 1 and y > x:
                    buf[_U(m)] = 0xE2
                    buf[_U(m + 1)] = 0x96
                    buf[_U(m + 2)] = 0x81
                    q = m + 3
                q = _sp_spaces(data, x, y, buf, q)
                n2, nm2 = _split_added(buf, m, q, nt, cls, s2, e2, ms2, me2, mi2)
                if nm2 == 0 and (n2 == 0 or (s2[0] == m and e2[0] == q)):
                    m, p = _emit_piece(buf, m, q, buf, m, starts, special, p, whole_first, held, arena, tok_off,
                                       bkeys, bvals, False)
                    continue
                ln = q - m
                for k in range(ln):
                    nbuf[_U(k)] = buf[_U(m + k)]
            else:
                ln = 0
                if form == 1 and y > x:
                    nbuf[0] = 0xE2
                    nbuf[1] = 0x96
                    nbuf[2] = 0x81
                    ln = 3
                ln = _sp_gap_bytes(data, x, y, form, nbuf, ln)
            n2, nm2 = _split_added(nbuf, 0, ln, nt, cls, s2, e2, ms2, me2, mi2)
            g2 = 0
            k2 = 0
            while g2 < n2 or k2 < nm2:
                if k2 < nm2 and (g2 >= n2 or ms2[_U(k2)] < s2[_U(g2)]):
                    starts[_U(p)] = m
                    special[_U(p)] = mi2[_U(k2)]
                    p += 1
                    k2 += 1
                    continue
                p0 = s2[_U(g2)]
                p1 = e2[_U(g2)]
                g2 += 1
                if len(prepend) < 3:  # form < 2
                    m, p = _emit_piece(nbuf, p0, p1, buf, m, starts, special, p, whole_first, held, arena,
                                       tok_off, bkeys, bvals)
                else:  # Metaspace on this piece
                    q = 0
                    starts_sp = nbuf[_U(p0)] == 32 or (p1 - p0 >= 3 and nbuf[_U(p0)] == 0xE2
                                                   and nbuf[_U(p0 + 1)] == 0x96 and nbuf[_U(p0 + 2)] == 0x81)
                    if not starts_sp and (form == 3 or x + p0 == a):
                        pbuf[0] = 0xE2
                        pbuf[1] = 0x96
                        pbuf[2] = 0x81
                        q = 3
                    q = _sp_spaces(nbuf, p0, p1, pbuf, q)
                    m, p = _emit_piece(pbuf, 0, q, buf, m, starts, special, p, whole_first, held, arena,
                                       tok_off, bkeys, bvals)
    return m, p


def sp_pieces(data, doc_offsets, rt, nt, cls, prepend, arena, tok_off, bkeys, bvals, whole_first, held):
    """``(buf, starts, special, first)`` for the packed documents (module docstring), in one
    thread (``sp_pieces_parallel``: in blocks of documents). ``prepend``: the form (0-3)."""
    return _sp_pieces(data, doc_offsets, rt, nt, cls, sp_form_marker(int(prepend)), arena, tok_off, bkeys, bvals,
                      whole_first, held)


@njit_cached
def _sp_pieces(data, doc_offsets, rt, nt, cls, prepend, arena, tok_off, bkeys, bvals, whole_first, held):
    n = doc_offsets.shape[0] - 1
    N = data.shape[0]
    buf = np.empty(6 * N + 8 * n + 8, np.uint8)
    starts = np.empty(2 * N + 2 * n + 3, np.int64)
    special = np.empty(2 * N + 2 * n + 2, np.int32)
    first = np.empty(n + 1, np.int64)
    m, p = _sp_block(data, doc_offsets, 0, n, rt, nt, cls, prepend, arena, tok_off, bkeys, bvals, whole_first,
                     held, buf, 0, starts, 0, special, first)
    first[n] = p
    starts[p] = m
    return buf[:m], starts[:p + 1], special[:p], first


def sp_regions(doc_offsets, blocks):
    """``(bo, so)``: where each block of documents (``blocks``: bounds) has its region in
    ``sp_blocks``' arrays, bytes ``bo[k]:bo[k + 1]`` and pieces ``so[k]:so[k + 1]``, sized by
    ``_sp_block``'s room (``6 b + 8 k + 8`` bytes, ``2 b + 2 k + 2`` pieces and one more)."""
    nd = np.diff(blocks)
    nbytes = doc_offsets[blocks[1:]] - doc_offsets[blocks[:-1]]
    bo = np.zeros(blocks.shape[0], np.int64)
    so = np.zeros(blocks.shape[0], np.int64)
    np.cumsum(6 * nbytes + 8 * nd + 8, out=bo[1:])
    np.cumsum(2 * nbytes + 2 * nd + 3, out=so[1:])
    return bo, so


@njit_cached(parallel=True, nogil=True)
def sp_blocks(data, doc_offsets, blocks, nw, rt, nt, cls, prepend, arena, tok_off, bkeys, bvals, whole_first, held,
              bo, so, buf, starts, special):
    """The first half of ``sp_pieces_parallel``: each block of documents (``blocks``: bounds)
    into its region (``sp_regions``' ``bo``, ``so``) of ``buf`` (``uint8[bo[-1]]`` at
    least), ``starts`` (``int64[so[-1]]``, positions in ``buf``) and ``special``
    (``int32[so[-1]]``), in parallel. Returns ``(first, cm, cp)``: block ``k``'s bytes at
    ``buf[bo[k]:bo[k] + cm[k]]``, its pieces at ``so[k]:so[k] + cp[k]``; ``first`` the first
    piece of each document (an index into those arrays). The blocks go to the ``nw`` workers
    as they free up (``workqueue``). What lies past each region's part is never read."""
    nb = blocks.shape[0] - 1
    first = np.empty(doc_offsets.shape[0], np.int64)
    cm = np.zeros(nb, np.int64)
    cp = np.zeros(nb, np.int64)
    flags = np.zeros(nb, np.int64)
    for t in prange(nw):
        for c in range(nb):
            k = take(flags, c, np.int64(t), nw, nb)
            if k < 0:
                continue
            m, p = _sp_block(data, doc_offsets, blocks[k], blocks[k + 1], rt, nt, cls, prepend, arena, tok_off, bkeys,
                             bvals, whole_first, held, buf, bo[k], starts, so[k], special, first)
            cm[k] = m - bo[k]
            cp[k] = p - so[k]
    return first, cm, cp


@njit_noalloc
def _gather_pieces(rstarts, rspecial, s0, c, end, shift, starts, special, p0, short, huge):
    """One block's ``c`` pieces from its region (``rstarts[s0:]``, ``rspecial[s0:]``; the last
    ends at ``end``) to ``starts[p0:]`` (``int32``, moved by ``shift``) and ``special[p0:]``;
    returns its ``sp_gather`` counts. The counts are sums of 0/1 terms, not branches: whether
    a piece is a model piece, long or huge is data no predictor follows (the branches took
    most of the loop: llama2, 8 MB of English prose, one thread, 4.8 of the step's 15.8 ms)."""
    nm = np.int64(0)
    nl = np.int64(0)
    lbs = np.int64(0)
    nhh = np.int64(0)
    nf = np.int64(0)
    for j in range(c):
        a = rstarts[_U(s0 + j)]
        e = rstarts[_U(s0 + j + 1)] if j + 1 < c else end
        starts[_U(p0 + j)] = np.int32(a + shift)
        sp = rspecial[_U(s0 + j)]
        special[_U(p0 + j)] = sp
        a0, a1, a2, a3 = piece_terms(sp, e - a, short, huge)
        nm += a0
        nl += a1
        lbs += a2
        nhh += a3
        nf += np.int64(sp != -1)
    return nm, nl, lbs, nhh, nf


@njit_cached(parallel=True, nogil=True)
def sp_gather(blocks, rbuf, bo, rstarts, so, rspecial, rfirst, cm, cp, buf, starts, special, first, short, huge):
    """The second half of ``sp_pieces_parallel``: the blocks' regions back to back into
    ``buf`` (``uint8[M]``), ``starts`` (``int32[P+1]``), ``special`` (``int32[P]``), ``first``
    (``int64[n+1]``), in parallel; returns ``(model pieces of >= 2 bytes, those over
    ``short`` bytes, their bytes, model pieces over ``huge`` bytes, pieces whose ``special``
    is not -1)``, the first three without the pieces over ``huge`` (the host encodes those:
    ``gpu_host.byte_level_pieces``' counts)."""
    nb = blocks.shape[0] - 1
    mo = np.zeros(nb + 1, np.int64)
    po = np.zeros(nb + 1, np.int64)
    for k in range(nb):
        mo[k + 1] = mo[k] + cm[k]
        po[k + 1] = po[k] + cp[k]
    n_model = np.zeros(nb, np.int64)
    n_long = np.zeros(nb, np.int64)
    lb = np.zeros(nb, np.int64)
    nh = np.zeros(nb, np.int64)
    nf = np.zeros(nb, np.int64)
    for k in prange(nb):
        buf[mo[k]:mo[k + 1]] = rbuf[bo[k]:bo[k] + cm[k]]
        n_model[k], n_long[k], lb[k], nh[k], nf[k] = _gather_pieces(rstarts, rspecial, so[k], cp[k], bo[k] + cm[k],
                                                                    mo[k] - bo[k], starts, special, po[k], short, huge)
        for d in range(blocks[k], blocks[k + 1]):
            first[d] = rfirst[d] - so[k] + po[k]
    n = first.shape[0] - 1
    first[n] = po[nb]
    starts[po[nb]] = np.int32(mo[nb])
    return n_model.sum(), n_long.sum(), lb.sum(), nh.sum(), nf.sum()


def sp_pieces_parallel(data, doc_offsets, blocks, rt, nt, cls, prepend, arena, tok_off, bkeys, bvals, whole_first,
                       held, short, alloc=None, huge: int = 2 ** 62, regions=None, times=None):
    """``sp_pieces`` in blocks of documents (``blocks``), in parallel: ``(buf, starts: int32,
    special, first, stats)`` (``stats`` as ``sp_gather``'s, ``huge`` its threshold);
    ``alloc(name, n, dtype)`` gives the output arrays (the GPU engine's pinned staging
    buffers); ``regions``: ``(bytes, starts, special)``, ``fast_cpu.KeptArray``s the caller
    holds, where the blocks' regions go (fresh arrays by default: about 30 bytes per byte of
    text, mostly never written, whose written pages were faulted in on every call).
    ``times``: a dict the two halves' seconds are added to (``gpu_host.lap``), or None."""
    t0 = time.perf_counter() if times is not None else 0.0
    nw = np.int64(numba.get_num_threads())  # the workers of sp_blocks' queue: the caller's thread count
    bo, so = sp_regions(doc_offsets, blocks)
    if regions is None:
        rbuf, rstarts, rspecial = np.empty(bo[-1], np.uint8), np.empty(so[-1], np.int64), np.empty(so[-1], np.int32)
    else:
        rbuf, rstarts, rspecial = (k.take(int(n)) for k, n in zip(regions, (bo[-1], so[-1], so[-1])))
    rfirst, cm, cp = sp_blocks(data, doc_offsets, blocks, nw, rt, nt, cls, sp_form_marker(int(prepend)), arena,
                               tok_off, bkeys, bvals, whole_first, held, bo, so, rbuf, rstarts, rspecial)
    t0 = lap(times, "walk", t0)
    M, P = int(cm.sum()), int(cp.sum())
    if M >= 2 ** 31:
        raise ValueError("a batch's normalized text must stay below 2**31 bytes: lower GPU_TOK_CUDA_BATCH_MB")
    if alloc is None:
        alloc = _alloc
    n = doc_offsets.shape[0] - 1
    buf, starts = alloc("data", max(M, 1), np.uint8)[:M], alloc("starts", P + 1, np.int32)
    special, first = alloc("special", P, np.int32), alloc("first", n + 1, np.int64)
    stats = sp_gather(blocks, rbuf, bo, rstarts, so, rspecial, rfirst, cm, cp, buf, starts, special, first,
                      np.int64(short), np.int64(huge))
    lap(times, "gather", t0)
    return buf, starts, special, first, tuple(int(x) for x in stats)


# ------------------------------------------------- the device cut's host part (``sp_cuda``)
@njit_noalloc
def _sp_item_docs(data, doc_offsets, d0, d1, rt, ct, cls, chunk, write, i, c, f, it_x, it_y, it_id, it_c0, it_c1,
                  doc_item, ch_lo, ch_hi, ch_item, fx_item, fx_id, gs, ge, ms, me, mi, s2, e2, ms2, me2, mi2):
    """The items of documents ``d0..d1`` (``sp_items_parallel``), the first one item ``i``,
    chunk ``c``, fixed piece ``f``; returns the counts after them and the matches of ``ct``
    in the gaps, ``(i, c, f, hits)``. ``write`` False: counted only (the arrays not touched)."""
    hits = np.int64(0)
    for d in range(d0, d1):
        if write:
            doc_item[_U(d)] = i
        a = doc_offsets[_U(d)]
        b = doc_offsets[_U(d + 1)]
        ng, nm = _split_added(data, a, b, rt, cls, gs, ge, ms, me, mi)
        gi = 0
        mk = 0
        while gi < ng or mk < nm:  # in text order, as _sp_docs takes them
            if mk < nm and (gi >= ng or ms[_U(mk)] < gs[_U(gi)]):
                if write:
                    it_x[_U(i)] = ms[_U(mk)]
                    it_y[_U(i)] = me[_U(mk)]
                    it_id[_U(i)] = mi[_U(mk)]
                    it_c0[_U(i)] = c
                    it_c1[_U(i)] = c
                    fx_item[_U(f)] = i
                    fx_id[_U(f)] = mi[_U(mk)]
                i += 1
                f += 1
                mk += 1
                continue
            x = gs[_U(gi)]
            y = ge[_U(gi)]
            gi += 1
            if y <= x:  # (an empty gap: no piece, no "▁" before it)
                continue
            nc = (y - x + chunk - 1) // chunk
            if write:
                it_x[_U(i)] = x
                it_y[_U(i)] = y
                it_id[_U(i)] = -1
                it_c0[_U(i)] = c
                it_c1[_U(i)] = c + nc
                for k in range(nc):
                    lo = x + k * chunk
                    ch_lo[_U(c + k)] = lo
                    ch_hi[_U(c + k)] = min(lo + chunk, y)
                    ch_item[_U(c + k)] = i
            elif ct[2].shape[0] > 0:
                _n2, nm2 = _split_added(data, x, y, ct, cls, s2, e2, ms2, me2, mi2)
                hits += nm2
            i += 1
            c += nc
    return i, c, f, hits


@njit_cached
def _sp_item_block(data, doc_offsets, d0, d1, rt, ct, cls, chunk, write, i, c, f, it_x, it_y, it_id, it_c0, it_c1,
                   doc_item, ch_lo, ch_hi, ch_item, fx_item, fx_id):
    """``_sp_item_docs`` with its scratch (room for the longest document's matches and gaps)."""
    big = 1
    for d in range(d0, d1):
        big = max(big, doc_offsets[d + 1] - doc_offsets[d])
    cap = big + 2
    gs, ge, ms, me = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64)
    mi = np.empty(cap, np.int32)
    s2, e2, ms2, me2 = np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64)
    mi2 = np.empty(cap, np.int32)
    return _sp_item_docs(data, doc_offsets, d0, d1, rt, ct, cls, chunk, write, i, c, f, it_x, it_y, it_id, it_c0,
                         it_c1, doc_item, ch_lo, ch_hi, ch_item, fx_item, fx_id, gs, ge, ms, me, mi, s2, e2, ms2, me2,
                         mi2)


@njit_cached(parallel=True, nogil=True)
def sp_item_blocks(data, doc_offsets, blocks, nw, rt, ct, cls, chunk, write, at, it_x, it_y, it_id, it_c0, it_c1,
                   doc_item, ch_lo, ch_hi, ch_item, fx_item, fx_id):
    """Each block of documents (``blocks``: bounds) in parallel (the ``nw`` workers take the
    blocks as they free up): ``write`` False, counted: ``int64[blocks, 4]`` its items,
    chunks, fixed pieces and ``ct``'s matches in its gaps (``at`` not read); ``write`` True:
    written, block ``k``'s from item, chunk and fixed piece ``at[k]`` (the counts' exclusive
    prefix sums)."""
    nb = blocks.shape[0] - 1
    counts = np.zeros((nb, 4), np.int64)
    flags = np.zeros(nb, np.int64)
    for t in prange(nw):
        for q in range(nb):
            k = take(flags, q, np.int64(t), nw, nb)
            if k < 0:
                continue
            i0 = at[k, 0] if write else 0
            c0 = at[k, 1] if write else 0
            f0 = at[k, 2] if write else 0
            i, c, f, h = _sp_item_block(data, doc_offsets, blocks[k], blocks[k + 1], rt, ct, cls, chunk, write, i0,
                                        c0, f0, it_x, it_y, it_id, it_c0, it_c1, doc_item, ch_lo, ch_hi, ch_item,
                                        fx_item, fx_id)
            counts[k, 0] = i - i0
            counts[k, 1] = c - c0
            counts[k, 2] = f - f0
            counts[k, 3] = h
    return counts


def sp_items_parallel(data, doc_offsets, blocks, rt, ct, cls, chunk: int):
    """The host's part of the SentencePiece device cut (``kernels.sp_cuda``): the raw
    added-token pass (``rt``) over each document, in blocks of documents (``blocks``) on the
    caller's Numba threads, as ``_sp_docs`` makes it, giving the items in text order: each
    non-empty gap and each match. ``ct``: a trie of the normalized added tokens' contents
    less their leading "▁"s, matched anywhere (no word-boundary flags); None where it
    matches in a gap (the normalized added-token pass could then find something there: the
    caller uses the host step), else ``(it_x, it_y, it_id, it_c0, it_c1, doc_item, (ch_lo,
    ch_hi, ch_item), (fx_item, fx_id))`` in ``sp_cuda``'s layout, the gaps in chunks of
    ``chunk`` raw bytes. Two passes over the blocks: the counts, then the items written at
    their places (one pass into regions of each block's most items, 2 b + k + 1 for k
    documents of b bytes, faulted in pages of fresh memory spread over a region 20 times
    the text: 8 ms of 8.2 for 4 MB on two threads, this host)."""
    n = doc_offsets.shape[0] - 1
    nw = np.int64(numba.get_num_threads())
    ch = np.int64(chunk)
    i64, i32 = np.zeros(0, np.int64), np.zeros(0, np.int32)
    none = np.zeros((0, 4), np.int64)
    counts = sp_item_blocks(data, doc_offsets, blocks, nw, rt, ct, cls, ch, False, none, i64, i64, i32, i64, i64, i64,
                            i64, i64, i64, i64, i32)
    if counts[:, 3].any():
        return None
    at = np.zeros_like(counts)
    np.cumsum(counts[:-1], axis=0, out=at[1:])
    I, Q, J = (int(x) for x in counts[:, :3].sum(axis=0))
    it_x, it_y, it_id = np.empty(I, np.int64), np.empty(I, np.int64), np.empty(I, np.int32)
    it_c0, it_c1, doc_item = np.empty(I, np.int64), np.empty(I, np.int64), np.empty(n + 1, np.int64)
    ch_lo, ch_hi, ch_item = np.empty(Q, np.int64), np.empty(Q, np.int64), np.empty(Q, np.int64)
    fx_item, fx_id = np.empty(J, np.int64), np.empty(J, np.int32)
    sp_item_blocks(data, doc_offsets, blocks, nw, rt, ct, cls, ch, True, at, it_x, it_y, it_id, it_c0, it_c1,
                   doc_item, ch_lo, ch_hi, ch_item, fx_item, fx_id)
    doc_item[n] = I
    return it_x, it_y, it_id, it_c0, it_c1, doc_item, (ch_lo, ch_hi, ch_item), (fx_item, fx_id)
