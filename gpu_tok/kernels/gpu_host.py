"""Host side of the GPU path for byte-level files: the pieces of packed text as the arrays
the device takes, in parallel (Numba ``prange``), with no pass over the text but the scan.

``fast_cpu.ByteBPEEngine.pieces`` marks piece starts in a byte mask and collects them with
``np.flatnonzero`` (one thread, a pass over every byte) into ``int64`` arrays; here each work
unit of ``pretok_cpu._plan`` (whole segments, or cuts of a long one at sync points, as the
fused CPU path) writes the starts of its pieces straight into ``out: int32[N]`` from the
first byte of each segment or cut (a piece has at least one byte, so they never overlap).
Records (per segment, per cut of a long segment, per added token, per skipped document;
not per unit, since added tokens and skipped documents lie between a unit's segments) are
put in text order by their first byte, and one parallel gather writes:

* ``starts: int32[P+1]``: piece ``p`` is ``data[starts[p]:starts[p+1]]``, ``starts[P] = N``;
* ``special: int32[P]``: an added token's id, -1 for a piece to encode, -2 for a document
  left to the reference path (``ByteBPEEngine._nfc_skip``);
* ``first: int64[n+1]``: the first piece of each document (``P`` at the end);
* ``stats``: ``(model pieces of 2 bytes or more, long ones (> SHORT bytes), their bytes,
  huge ones)``, which size the device's work lists and heap scratch (huge pieces: below).

The same pieces as ``ByteBPEEngine.pieces`` (the tests compare them).
"""

from __future__ import annotations

import time

import numpy as np
from numba import prange

from .engine_cpu import _SHORT, _bpe_long, _copy_bytes, _heap_scratch, _sp_word, bytes_lookup
from .hash_table import njit_cached, njit_noalloc
from .hash_table import uidx as _U
from ._intrinsics import ctz64
from .pretok_cpu import (_F_GPT2, _F_O200K, _F_QWEN, _cl100k_window, _gpt2_window, _o200k_window, _piece_cl100k_inline,
                         _piece_gpt2_inline, _piece_o200k_inline, _plan, unit_stop, unit_sync)
from .workqueue import take

SHORT = 64  # bpe_cuda.SHORT


@njit_noalloc
def _cut_range(data, start, stop, end, fam, end_whole, tab, fold, out, o):
    """Starts of the pieces that start in ``[start, stop)`` of the segment ending at ``end``
    into ``out[o:]`` (``pretok_cpu._scan_range``); returns the new ``o``."""
    code = len(fam)  # the family's code, a constant here (pretok_cpu.family_marker)
    i = start
    n = data.shape[0]
    while i < stop:
        if i + 64 <= n:  # pure-ASCII stretches 64 bytes at a time
            if code == _F_GPT2:  # the family's scanner only (pretok_cpu, the note above _gpt2_window)
                m = _gpt2_window(data, i, end, stop)
            elif code == _F_O200K:
                m = _o200k_window(data, i, end, stop)
            else:
                m = _cl100k_window(data, i, end, stop, 1 if code == _F_QWEN else 3)
            m >>= np.uint64(1)
            if m != 0:
                base = i + 1
                while m != 0:
                    out[_U(o)] = i
                    o += 1
                    i = base + np.int64(ctz64(m))
                    m &= m - np.uint64(1)
                continue
        out[_U(o)] = i
        o += 1
        if code == _F_GPT2:
            i = _piece_gpt2_inline(data, i, end, tab, fold)
        elif code == _F_O200K:
            i = _piece_o200k_inline(data, i, end, tab, fold)
        else:
            i = _piece_cl100k_inline(data, i, end, tab, fold, 1 if code == _F_QWEN else 3, end_whole)
    return o


@njit_cached(parallel=True, nogil=True)
def cut_parallel(data, seg_s, seg_e, chunk, nw, fam, end_whole, tab, fold, out):
    """``(seg_count, ustart, ucount)``: the pieces of segment ``s`` start at
    ``out[seg_s[s]:seg_s[s] + seg_count[s]]`` (0 for a segment cut between units); those of
    the cut unit ``u`` at ``out[ustart[u]:ustart[u] + ucount[u]]`` (``ustart = -1`` for a cut
    with no sync point, which the previous cut runs through). Records per segment, not per
    unit: added tokens and skipped documents may lie between the segments of a unit. The
    units go to the ``nw`` workers as they free up (``workqueue``)."""
    ua, ub, uc = _plan(seg_s, seg_e, chunk)
    U = ua.shape[0]
    sync = np.empty(U, np.int64)
    for u in prange(U):
        sync[u] = unit_sync(data, seg_s, seg_e, ua, ub, uc, chunk, tab, u)
    seg_count = np.zeros(seg_s.shape[0], np.int64)
    ustart = np.full(U, -1, np.int64)
    ucount = np.zeros(U, np.int64)
    flags = np.zeros(U, np.int64)
    for t in prange(nw):
        for c in range(U):
            u = take(flags, c, np.int64(t), nw, U)
            if u < 0:
                continue
            if uc[u] < 0:
                for s in range(ua[u], ub[u]):
                    a = seg_s[s]
                    seg_count[s] = _cut_range(data, a, seg_e[s], seg_e[s], fam, end_whole, tab, fold, out, a) - a
            elif sync[u] >= 0:
                a = sync[u]
                o = _cut_range(data, a, unit_stop(seg_e, ua, uc, sync, u), seg_e[ua[u]], fam, end_whole, tab, fold,
                               out, a)
                ustart[u] = a
                ucount[u] = o - a
    return seg_count, ustart, ucount


@njit_cached
def cut_serial(data, seg_s, seg_e, fam, end_whole, tab, fold, out):
    """``seg_count`` (``cut_parallel``) on one thread."""
    S = seg_s.shape[0]
    seg_count = np.zeros(S, np.int64)
    for s in range(S):
        seg_count[s] = _cut_range(data, seg_s[s], seg_e[s], seg_e[s], fam, end_whole, tab, fold, out, seg_s[s]) - seg_s[s]
    return seg_count


@njit_noalloc(inline="always")
def _gather_one(r, rec_start, rec_count, rec_id, pos, out, starts, special, fill):
    """Record ``r``'s pieces into ``starts`` from ``pos[r]``, and their ``special`` where
    ``fill`` (with no fixed piece in the batch every ``special`` is -1: the GPU engine sets it
    on the device, ``HostPieces.model_only``, and the copy of the starts is all that is left)."""
    o = pos[_U(r)]
    if rec_id[_U(r)] == -1:
        a = rec_start[_U(r)]
        for k in range(rec_count[_U(r)]):
            starts[_U(o + k)] = out[_U(a + k)]
        if fill:
            for k in range(rec_count[_U(r)]):
                special[_U(o + k)] = -1
    else:
        starts[_U(o)] = np.int32(rec_start[_U(r)])
        special[_U(o)] = rec_id[_U(r)]


@njit_noalloc(inline="always")
def piece_terms(sp, n, short, huge):
    """A piece's terms of the host step's counts ``(n_model, n_long, long_bytes, n_huge)``
    (``sp``: its fixed id or -1, ``n``: its bytes; long: over ``short``), as 0/1 (no branch: whether a piece is a
    model piece of two bytes or more is data no predictor follows). Shared by the byte-level,
    SentencePiece (``sp_host``) and CLIP host steps."""
    model = np.int64(sp == -1) & np.int64(n >= 2)
    h = model & np.int64(n > huge)
    mm = model & (1 - h)
    lg = mm & np.int64(n > short)
    return mm, lg, lg * n, h


@njit_noalloc(inline="always")
def _stats_one(p, starts, special, huge, fill):
    """Piece ``p``'s ``piece_terms`` from the assembled arrays (its ``special`` -1 where not
    ``fill``)."""
    sp = special[_U(p)] if fill else np.int32(-1)
    return piece_terms(sp, np.int64(starts[_U(p + 1)]) - np.int64(starts[_U(p)]), SHORT, huge)


@njit_cached(parallel=True, nogil=True)
def assemble_parallel(rec_start, rec_count, rec_id, pos, out, N, doc_offsets, starts, special, first, huge, fill):
    """Fill ``starts: int32[P+1]``, ``special: int32[P]`` (where ``fill``: ``_gather_one``),
    ``first: int64[n+1]`` from the records (``rec_id`` -1: pieces cut into ``out``; else one
    piece with that id) in text order; returns ``(n_model, n_long, long_bytes, n_huge)``:
    model pieces of ``huge`` bytes or less (2 bytes or more), the long ones among them and
    their bytes, and the pieces over ``huge``. (Counting as the records are gathered, each
    piece's end the next one's start, was slower: 1.2-2x on this host's two threads, the
    copy and the count no longer two plain loops.)"""
    R = rec_start.shape[0]
    P = pos[R]
    for r in prange(R):
        _gather_one(r, rec_start, rec_count, rec_id, pos, out, starts, special, fill)
    starts[P] = N
    n_model = 0
    n_long = 0
    lb = 0
    nh = 0
    for p in prange(P):
        a, b, c, h = _stats_one(p, starts, special, huge, fill)
        n_model += a
        n_long += b
        lb += c
        nh += h
    n = doc_offsets.shape[0] - 1
    for d in prange(n):
        first[d] = np.searchsorted(starts[:P], doc_offsets[d])
    first[n] = P
    return n_model, n_long, lb, nh


@njit_cached
def assemble_serial(rec_start, rec_count, rec_id, pos, out, N, doc_offsets, starts, special, first, huge, fill):
    R = rec_start.shape[0]
    P = pos[R]
    for r in range(R):
        _gather_one(r, rec_start, rec_count, rec_id, pos, out, starts, special, fill)
    starts[P] = N
    n_model = 0
    n_long = 0
    lb = 0
    nh = 0
    for p in range(P):
        a, b, c, h = _stats_one(p, starts, special, huge, fill)
        n_model += a
        n_long += b
        lb += c
        nh += h
    n = doc_offsets.shape[0] - 1
    for d in range(n):
        first[d] = np.searchsorted(starts[:P], doc_offsets[d])
    first[n] = P
    return n_model, n_long, lb, nh


@njit_cached(parallel=True, nogil=True)
def copy_parallel(src, dst, nblocks):
    """``dst[:] = src`` in ``nblocks`` parts on Numba's threads (the GPU engine's ids, from
    the pinned buffer the device wrote them to, into the call's result: its pages, new to
    the process, are faulted in by all threads, not one)."""
    n = src.shape[0]
    step = (n + nblocks - 1) // nblocks
    for b in prange(nblocks):
        lo = b * step
        hi = min(n, lo + step)
        for i in range(lo, hi):
            dst[i] = src[i]


def lap(times, key: str, t0: float) -> float:
    """Add the seconds since ``t0`` to ``times[key]`` (a dict, or None: nothing is timed) and
    return now: the host step's parts, timed in the GPU engine's profiled runs."""
    if times is None:
        return t0
    t = time.perf_counter()
    times[key] = times.get(key, 0.0) + t - t0
    return t


def byte_level_pieces(eng, data, doc_offsets, skip, parallel: bool, threads: int, alloc=None, scratch=None,
                      huge: int = 2 ** 62, times=None, hint=None, fill_special: bool = True):
    """``(starts, special, first, (n_model, n_long, long_bytes, n_huge, n_fixed))`` for a
    ``ByteBPEEngine`` (module docstring; ``huge``: see ``huge_byte_level``; ``n_fixed``: the
    pieces whose ``special`` is not -1, added tokens and documents left to the reference
    path); ``skip``: documents left to the reference path, or None.
    ``alloc(name, n, dtype)`` gives the output arrays (the GPU engine's pinned staging
    buffers, so nothing is copied again before the transfer); ``scratch(n)`` an ``int32``
    work array of at least ``n`` items kept between calls (fresh arrays by default).
    ``times``: a dict its parts' seconds are added to (``lap``), or None; ``hint``:
    ``fast_cpu.pack_probed``'s flags of these documents (``ByteBPEEngine._segments``), or None.
    ``fill_special=False``: where every piece's ``special`` is -1 (no fixed piece, no huge
    one: ``n_fixed == 0`` and ``n_huge == 0``), it is left unwritten (the GPU engine sets it
    on the device, ``HostPieces.model_only``)."""
    if data.shape[0] >= 2 ** 31:
        raise ValueError("a batch must stay below 2**31 bytes")
    if alloc is None:
        alloc = _alloc
    t0 = time.perf_counter() if times is not None else 0.0
    # the added-token passes (the documents shared between the threads, as the CPU engine does)
    seg_s, seg_e, m_s, _m_e, m_id = eng._segments(data, doc_offsets, skip, parallel, hint)
    t0 = lap(times, "added", t0)
    fam, end_whole, tab, fold = eng._pretok._prepare(eng.spec.family, eng.spec.dialect)
    out = scratch(max(data.shape[0], 1)) if scratch is not None else np.empty(max(data.shape[0], 1), np.int32)
    if parallel:
        from ..fast_cpu import _UNITS_PER_THREAD

        total = int((seg_e - seg_s).sum())
        chunk = max(eng._pretok._MIN_CHUNK, total // (_UNITS_PER_THREAD * threads))
        seg_count, ustart, ucount = cut_parallel(data, seg_s, seg_e, chunk, np.int64(threads), fam, end_whole, tab,
                                                 fold, out)
        keep = ucount > 0
        ustart, ucount = ustart[keep], ucount[keep]
    else:
        seg_count = cut_serial(data, seg_s, seg_e, fam, end_whole, tab, fold, out)
        ustart = np.zeros(0, np.int64)
        ucount = ustart
    t0 = lap(times, "cut", t0)
    keep = seg_count > 0
    rec_start = [seg_s[keep]]
    rec_count = [seg_count[keep]]
    rec_id = [np.full(rec_start[0].shape[0], -1, np.int32)]
    if ustart.shape[0]:
        rec_start.append(ustart)
        rec_count.append(ucount)
        rec_id.append(np.full(ustart.shape[0], -1, np.int32))
    if m_s.shape[0]:
        rec_start.append(m_s)
        rec_count.append(np.ones(m_s.shape[0], np.int64))
        rec_id.append(m_id.astype(np.int32))
    sk = skipped_starts(skip, doc_offsets)
    if sk.shape[0]:
        rec_start.append(sk)
        rec_count.append(np.ones(sk.shape[0], np.int64))
        rec_id.append(np.full(sk.shape[0], -2, np.int32))
    if len(rec_start) > 1:
        rs = np.concatenate(rec_start)
        order = np.argsort(rs, kind="stable")
        rec_start, rec_count, rec_id = rs[order], np.concatenate(rec_count)[order], np.concatenate(rec_id)[order]
    else:
        rec_start, rec_count, rec_id = rec_start[0], rec_count[0], rec_id[0]
    pos = np.zeros(rec_start.shape[0] + 1, np.int64)
    np.cumsum(rec_count, out=pos[1:])
    P = int(pos[-1])
    n = doc_offsets.shape[0] - 1
    starts = alloc("starts", P + 1, np.int32)
    special = alloc("special", P, np.int32)
    first = alloc("first", n + 1, np.int64)
    n_fixed = int(m_s.shape[0] + sk.shape[0])
    fill = fill_special or n_fixed > 0
    fn = assemble_parallel if parallel else assemble_serial
    stats = fn(rec_start, rec_count, rec_id, pos, out, data.shape[0], doc_offsets, starts, special, first,
               np.int64(huge), fill)
    if not fill and stats[3]:  # huge pieces: marked in special (huge_byte_level), the rest -1
        special[:] = -1
    lap(times, "assemble", t0)
    return starts, special, first, tuple(int(x) for x in stats) + (n_fixed,)


def skipped_starts(skip, doc_offsets):
    """The first bytes of the non-empty documents ``skip`` leaves to the reference path (one
    piece each, id -2, in the host step's and the device cut's layouts); empty when ``skip``
    is None."""
    if skip is None:
        return np.zeros(0, np.int64)
    return doc_offsets[:-1][np.flatnonzero((skip != 0) & (doc_offsets[1:] > doc_offsets[:-1]))]


def _alloc(name, n, dtype):
    return np.empty(n, dtype)


@njit_cached(parallel=True, nogil=True)
def clip_counts(starts, ends, special, doc, nb):
    """The first pass of ``clip_fill`` over ``fast_clip.CpuClipEngine._pieces(runs=False)``'
    items (``special`` -1: the piece ``buf[starts:ends]``, else an added token, one byte; no
    -2 items) in ``nb`` chunks of items, in parallel: ``(nbytes, last)`` per chunk, its
    items' bytes and the last one's document (-1 when none)."""
    R = special.shape[0]
    nbytes = np.zeros(nb, np.int64)
    last = np.full(nb, -1, np.int64)
    for c in prange(nb):
        m = 0
        r0, r1 = c * R // nb, (c + 1) * R // nb
        for r in range(r0, r1):
            m += ends[_U(r)] - starts[_U(r)] if special[_U(r)] == -1 else 1
        nbytes[c] = m
        if r1 > r0:
            last[c] = doc[_U(r1 - 1)]
    return nbytes, last


@njit_cached(parallel=True, nogil=True)
def clip_fill(buf, starts, ends, special, doc, nbytes, last, packed, ostarts, ospecial, first, huge):
    """The items of ``clip_counts`` (same chunks) as the device takes them: their bytes back
    to back in ``packed: uint8[M]`` (an added token: one byte, 0, which no kernel reads),
    ``ostarts: int32[P+1]``, ``ospecial: int32[P]``, ``first: int64[n+1]`` (the first item of
    each document, ``P`` at the end); returns the sums of ``piece_terms`` ``(n_model, n_long,
    long_bytes, n_huge)`` and the items whose ``special`` is not -1."""
    nb = nbytes.shape[0]
    R = special.shape[0]
    mo = np.zeros(nb + 1, np.int64)
    prev = np.full(nb, -1, np.int64)  # the document of the last item before each chunk
    d = -1
    for c in range(nb):
        mo[c + 1] = mo[c] + nbytes[c]
        prev[c] = d
        if last[c] >= 0:
            d = last[c]
    n_model = np.zeros(nb, np.int64)
    n_long = np.zeros(nb, np.int64)
    lb = np.zeros(nb, np.int64)
    nh = np.zeros(nb, np.int64)
    nf = np.zeros(nb, np.int64)
    for c in prange(nb):
        m = mo[c]
        pd = prev[c]
        t0 = t1 = t2 = t3 = t4 = 0
        for r in range(c * R // nb, (c + 1) * R // nb):
            sp = special[_U(r)]
            dr = doc[_U(r)]
            while pd < dr:  # the documents up to this item's start here
                pd += 1
                first[_U(pd)] = r
            a = starts[_U(r)]
            ln = ends[_U(r)] - a if sp == -1 else 1
            if sp == -1:
                _copy_bytes(packed, m, buf, a, ln)
            else:  # (its slot in buf is where the CPU engine would write its id: not text)
                packed[_U(m)] = 0
            ostarts[_U(r)] = np.int32(m)
            ospecial[_U(r)] = sp
            a0, a1, a2, a3 = piece_terms(sp, ln, SHORT, huge)
            t0 += a0
            t1 += a1
            t2 += a2
            t3 += a3
            t4 += np.int64(sp != -1)
            m += ln
        n_model[c], n_long[c], lb[c], nh[c], nf[c] = t0, t1, t2, t3, t4
    ostarts[R] = np.int32(mo[nb])
    for e in range(d + 1, first.shape[0]):
        first[e] = R
    return n_model.sum(), n_long.sum(), lb.sum(), nh.sum(), nf.sum()


# ------------------------------------------------------------ huge pieces
# A piece of more than ``huge`` bytes (8 KiB by default; one ``\p{L}+`` run of a megabyte,
# gemma3's whole gaps) would run as one GPU thread's heap, thousands of times slower than a
# CPU core on such serial work: the host encodes it with the CPU engine's own BPE
# (``engine_cpu._bpe_long`` / ``_sp_word``), workers in parallel, and the device copies the
# ids in. Such a piece is marked ``special = -3 - count`` (its ``count`` ids are put in the
# device's scratch at the piece's first byte).

@njit_cached(parallel=True, nogil=True)
def huge_byte_level(data, starts, special, huge, init_ids, mtab, pc0, arena, tok_off, bkeys, bvals, whole_first,
                    workers):
    """Ids of the pieces ``huge`` (indices): ``(ids, off)``, piece ``huge[k]``'s ids at
    ``ids[off[k]:off[k+1]]``; marks them in ``special``. ``workers`` (the threads): each has
    its own pair cache, a copy of ``pc0`` (``hash_table.new_pair_cache``, with the merge
    table's pair filter), and takes every ``workers``-th piece."""
    K = huge.shape[0]
    room = np.zeros(K + 1, np.int64)
    for k in range(K):
        room[k + 1] = room[k] + starts[huge[k] + 1] - starts[huge[k]]
    buf = np.empty(max(room[K], 1), np.int32)
    cnt = np.zeros(K, np.int64)
    W = max(min(K, workers), 1)
    for w in prange(W):  # each worker its own pair cache, its pieces every W-th
        pc = pc0.copy()
        for k in range(w, K, W):
            p = huge[k]
            a = np.int64(starts[p])
            b = np.int64(starts[p + 1])
            c = -1
            if whole_first:
                t = bytes_lookup(data, a, b, arena, tok_off, bkeys, bvals)
                if t >= 0:
                    buf[room[k]] = t
                    c = 1
            if c < 0:
                c = _bpe_long(data, a, b, init_ids, mtab, pc, buf, room[k])
            cnt[k] = c
    return _pack_huge(starts, special, huge, buf, room, cnt)


@njit_cached(parallel=True, nogil=True)
def huge_sentencepiece(data, starts, special, huge, char_id, byte_id, mtab, pc0, workers):
    """``huge_byte_level`` for SentencePiece-style pieces (``engine_cpu._sp_word``: initial
    symbols per character, else ``<0xXX>`` per byte; ``whole_first`` was applied on the host
    to the whole piece before words were cut)."""
    K = huge.shape[0]
    room = np.zeros(K + 1, np.int64)
    for k in range(K):
        room[k + 1] = room[k] + starts[huge[k] + 1] - starts[huge[k]]
    buf = np.empty(max(room[K], 1), np.int32)
    cnt = np.zeros(K, np.int64)
    W = max(min(K, workers), 1)
    for w in prange(W):  # each worker its own pair cache (``pc0``'s copy) and scratch, its pieces every W-th
        pc = pc0.copy()
        cap = np.int64(_SHORT)
        hs = _heap_scratch(cap + 8)
        rank = np.empty(_SHORT + 1, np.uint64)
        for k in range(w, K, W):
            if room[k + 1] - room[k] > cap:  # grown for the longest piece so far
                cap = room[k + 1] - room[k]
                hs = _heap_scratch(cap + 8)
            p = huge[k]
            cnt[k] = _sp_word(data, np.int64(starts[p]), np.int64(starts[p + 1]), char_id, byte_id, mtab, pc, hs,
                              rank, buf, room[k])
    return _pack_huge(starts, special, huge, buf, room, cnt)


@njit_cached
def _pack_huge(starts, special, huge, buf, room, cnt):
    K = huge.shape[0]
    off = np.zeros(K + 1, np.int64)
    for k in range(K):
        off[k + 1] = off[k] + cnt[k]
        special[huge[k]] = np.int32(-3 - cnt[k])
    ids = np.empty(off[K], np.int32)
    for k in range(K):
        for j in range(cnt[k]):
            ids[off[k] + j] = buf[room[k] + j]
    return ids, off


@njit_noalloc
def _huge_in(starts, special, threshold, lo, hi, idx, k):
    """The model pieces ``lo <= p < hi`` longer than ``threshold`` bytes: how many, and
    written to ``idx[k:]`` when ``idx`` is not empty. (Unsigned indices: with signed ones
    from an unknown ``lo``, in the ``prange`` body, the pass was slower than the one-thread
    loop it replaced.)"""
    c = 0
    if idx.shape[0] == 0:
        for p in range(lo, hi):
            c += (special[_U(p)] == -1) & (starts[_U(p + 1)] - starts[_U(p)] > threshold)
        return c
    for p in range(lo, hi):
        if special[_U(p)] == -1 and starts[_U(p + 1)] - starts[_U(p)] > threshold:
            idx[_U(k + c)] = p
            c += 1
    return c


@njit_cached(parallel=True, nogil=True)
def huge_pieces(starts, special, threshold, nblocks):
    """Indices of the model pieces longer than ``threshold`` bytes, in order: ``nblocks``
    blocks of pieces in parallel, counted, then written (no temporary arrays of the
    pieces' size: those were page faults each batch)."""
    P = special.shape[0]
    cnt = np.zeros(nblocks + 1, np.int64)
    none = np.empty(0, np.int64)
    for b in prange(nblocks):
        cnt[b + 1] = _huge_in(starts, special, threshold, b * P // nblocks, (b + 1) * P // nblocks, none, 0)
    for b in range(nblocks):
        cnt[b + 1] += cnt[b]
    idx = np.empty(cnt[nblocks], np.int64)
    for b in prange(nblocks):
        _huge_in(starts, special, threshold, b * P // nblocks, (b + 1) * P // nblocks, idx, cnt[b])
    return idx
