"""Pre-tokenization on the GPU for byte-level files: shared source, compiled twice.

Executed by ``gpu_tok.kernels.twins.load(kind)`` after ``bpe_cuda.py`` and
``dedupe_cuda.py`` into the same namespace (it uses ``dev``, ``kernel``, ``SHORT``). Do not
import this module directly.

DESIGN.md section 3: "On the GPU, the same scanner runs as a kernel so text goes to the
device once and ids come back." The same scanner it is: the per-piece functions of
``pretok_cpu`` (``_piece_gpt2``, ``_piece_cl100k``, ``_piece_o200k`` and their helpers,
``_next_piece``, ``_sync_point``) are compiled here from their own Python code, with their
module's globals but for three names: ``_U`` (an index cast that is a CPU intrinsic) is the
index itself, ``_ascii_run`` (eight bytes at a time with CPU intrinsics) is ``ascii_run``
below, one byte at a time, and the ``*_inline`` twins are the functions themselves. The
64-byte windows of the CPU scanner (``_gpt2_window`` and the others) are left out: they only find the
same starts faster on a CPU. So a cut here is ``pretok_cpu``'s cut by construction, and the
tests compare them on the parity and bench texts (twins) and on small inputs (simulator).

Plan (``pretok_cpu``'s parallel plan with small units): every segment (the gaps the
host's added-token pass left, ``ByteBPEEngine._segments``) is cut into chunks of
``CUT_CHUNK`` bytes. Chunk 0 of a segment starts at the segment's start; chunk ``k > 0`` at
its first sync point (``_sync_point``: a piece always starts there), or not at all (the
chunk before runs through it). One thread per chunk (``k_sync``) finds it; one thread per
chunk (``k_cut``) then cuts from there to the next chunk's start (or the segment's end),
with the segment's end as the limit of look-ahead, and marks each piece's first byte.

Array layout (``N`` bytes of one batch, ``Q`` chunks, ``J`` fixed pieces, ``n`` documents)
-----------------------------------------------------------------------------------------
* ``data: uint8[N]``: the batch's packed UTF-8 (the same array the BPE kernels read).
* chunks: ``ch_lo, ch_hi, ch_end: int64[Q]`` (the chunk's nominal bytes ``[lo, hi)`` and its
  segment's end), ``ch_first: uint8[Q]`` (1 for a segment's first chunk), in text order;
  ``sync: int64[Q]`` where each chunk's cut starts (-1: none).
* ``mark: uint8[N]`` (zeroed first): 1 at the first byte of every piece: the model pieces
  ``k_cut`` marks and the fixed ones (``k_mark``: ``fx_pos: int64[J]`` their first bytes,
  an added token's match or a document left to the reference path).
* ``pos: int64[N+1]``: ``mark``'s exclusive prefix sums (``dedupe_cuda``'s scan), so piece
  ``pos[i]`` starts at byte ``i``; ``pos[N] = P``.
* out: ``starts: int32[P+1]``, ``special: int32[P]`` (-1, or ``fx_id: int32[J]``'s id at its
  piece), ``first: int64[n+1]`` (``pos`` at each document's first byte: the pieces before
  it, ``gpu_host.assemble``'s ``searchsorted``), the layout ``bpe_cuda`` takes;
  ``stats: int64[5]``: ``gpu_host.piece_terms`` summed over the pieces (model pieces, long
  ones, their bytes, huge ones) and ``P`` (``k_piece_stats`` per ``STATS_CHUNK`` bytes into
  ``part: int64[4 * chunks]``, ``k_stats_total`` one thread).

Numba's on-disk cache (``GPU_TOK_CUDA_CACHE=1`` on the GPU machine; the twins' cache)
keys a kernel by this file: a change to ``pretok_cpu``'s scanner alone does not make the
cached kernels here stale-proof, as for every cached Numba function that calls into
another file.
"""

import types as _types

import numpy as np

_KIND = globals().get("_KIND")
if _KIND not in ("cpu", "cuda") or "dev" not in globals() or "SHORT" not in globals():
    raise ImportError("gpu_tok.kernels.pretok_cuda is shared source: load it with gpu_tok.kernels.twins.load(kind)")

CUT_CHUNK = 256  # bytes per chunk of a segment (a thread's cut)
STATS_CHUNK = 1024  # bytes per thread of k_piece_stats


def _ascii_run_bytes(data, p, e, kind):
    """``pretok_cpu._ascii_run`` one byte at a time: the end of the run of ASCII letters
    (``kind`` 0), capitals (1), small letters (2) or digits (3) that starts at ``p``, at most
    ``e``."""
    while p < e:
        b = data[p]
        if kind == 0:
            ok = 0x61 <= (b | 0x20) <= 0x7A
        elif kind == 1:
            ok = 0x41 <= b <= 0x5A
        elif kind == 2:
            ok = 0x61 <= b <= 0x7A
        else:
            ok = 0x30 <= b <= 0x39
        if not ok:
            return p
        p += 1
    return e


def _index(i):
    return i


def _njit_plain(fn):
    from numba import njit

    return njit(fn)


def _scanner():
    """``pretok_cpu``'s per-piece functions compiled with ``dev`` (module docstring)."""
    from gpu_tok.kernels import gpu_host as _gh
    from gpu_tok.kernels import pretok_cpu as _pc

    # compiled without Numba's on-disk cache on the CPU: these functions carry pretok_cpu's
    # file and names, under which its own (cached) compilations are indexed
    sdev = dev if _KIND == "cuda" else _njit_plain
    ns = dict(_pc.__dict__)
    ns["_U"] = sdev(_index)
    ns["_ascii_run"] = sdev(_ascii_run_bytes)
    names = ("_dec", "_fold", "_contraction", "_digit_run", "_other_run", "_ws_run", "_o200k_ascii_word",
             "_piece_gpt2", "_piece_cl100k", "_piece_o200k", "_next_piece", "_sync_point")
    for name in names:
        f = getattr(_pc, name)
        py = getattr(f, "py_func", f)
        ns[name] = sdev(_types.FunctionType(py.__code__, ns, py.__name__, py.__defaults__, py.__closure__))
    for fam in ("gpt2", "cl100k", "o200k"):
        ns[f"_piece_{fam}_inline"] = ns[f"_piece_{fam}"]
    # every compiled function these call must be one of the above: a CPU function left in
    # would run under the simulator and on the twins, and fail only on a card
    ours = {id(ns[k]) for k in names + ("_U", "_ascii_run")}
    for name in names:
        for ref in getattr(_pc, name).py_func.__code__.co_names:
            v = ns.get(ref)
            if hasattr(v, "py_func") and id(v) not in ours:
                raise ImportError(f"pretok_cuda: pretok_cpu.{name} calls {ref}, which is not compiled for the device")
    gns = dict(_gh.__dict__)
    py = _gh.piece_terms.py_func
    terms = sdev(_types.FunctionType(py.__code__, gns, py.__name__, py.__defaults__, py.__closure__))
    return ns["_next_piece"], ns["_sync_point"], terms


next_piece, sync_point, piece_terms = _scanner()


@dev
def sync_one(q, data, ch_lo, ch_hi, ch_end, ch_first, tab, sync):
    if ch_first[q] != 0:
        sync[q] = ch_lo[q]
    else:
        sync[q] = sync_point(data, ch_lo[q], ch_hi[q], ch_end[q], tab)


@dev
def cut_one(q, Q, data, ch_end, ch_first, sync, fam, end_whole, tab, fold, mark):
    """Mark the pieces of chunk ``q``: from its sync point to the next chunk's of its segment
    that has one (the segment's end when none)."""
    i = sync[q]
    if i < 0:
        return
    e = ch_end[q]
    stop = e
    v = q + 1
    while v < Q and ch_first[v] == 0:
        if sync[v] >= 0:
            stop = sync[v]
            break
        v += 1
    while i < stop:
        mark[i] = 1
        i = next_piece(data, i, e, fam, end_whole, tab, fold)


@dev
def compact_one(i, mark, pos, starts, special):
    if mark[i] != 0:
        p = pos[i]
        starts[p] = np.int32(i)
        special[p] = np.int32(-1)


@dev
def first_one(d, n, N, doc_off, pos, starts, first):
    first[d] = pos[doc_off[d]]
    if d == n:
        starts[pos[N]] = np.int32(N)


@dev
def piece_stats_one(c, N, mark, pos, starts, special, huge, part):
    a = c * STATS_CHUNK
    e = min(N, a + STATS_CHUNK)
    t0 = np.int64(0)
    t1 = np.int64(0)
    t2 = np.int64(0)
    t3 = np.int64(0)
    for i in range(a, e):
        if mark[i] != 0:
            p = pos[i]
            x0, x1, x2, x3 = piece_terms(special[p], np.int64(starts[p + 1]) - np.int64(starts[p]), SHORT, huge)
            t0 += x0
            t1 += x1
            t2 += x2
            t3 += x3
    part[4 * c] = t0
    part[4 * c + 1] = t1
    part[4 * c + 2] = t2
    part[4 * c + 3] = t3


@dev
def stats_total_one(nc, N, part, pos, stats):
    for k in range(4):
        t = np.int64(0)
        for c in range(nc):
            t += part[4 * c + k]
        stats[k] = t
    stats[4] = pos[N]


if _KIND == "cuda":
    @kernel
    def k_fill_u8(n, arr, v):
        i = cuda.grid(1)
        if i < n:
            arr[i] = v

    @kernel
    def k_sync(Q, data, ch_lo, ch_hi, ch_end, ch_first, tab, sync):
        q = cuda.grid(1)
        if q < Q:
            sync_one(q, data, ch_lo, ch_hi, ch_end, ch_first, tab, sync)

    @kernel
    def k_cut(Q, data, ch_end, ch_first, sync, fam, end_whole, tab, fold, mark):
        q = cuda.grid(1)
        if q < Q:
            cut_one(q, Q, data, ch_end, ch_first, sync, fam, end_whole, tab, fold, mark)

    @kernel
    def k_mark(J, fx_pos, mark):
        j = cuda.grid(1)
        if j < J:
            mark[fx_pos[j]] = 1

    @kernel
    def k_compact(N, mark, pos, starts, special):
        i = cuda.grid(1)
        if i < N:
            compact_one(i, mark, pos, starts, special)

    @kernel
    def k_fixed(J, fx_pos, fx_id, pos, special):
        j = cuda.grid(1)
        if j < J:
            special[pos[fx_pos[j]]] = fx_id[j]

    @kernel
    def k_first(n1, N, doc_off, pos, starts, first):
        d = cuda.grid(1)
        if d < n1:
            first_one(d, n1 - 1, N, doc_off, pos, starts, first)

    @kernel
    def k_piece_stats(nc, N, mark, pos, starts, special, huge, part):
        c = cuda.grid(1)
        if c < nc:
            piece_stats_one(c, N, mark, pos, starts, special, huge, part)

    @kernel
    def k_stats_total(n, nc, N, part, pos, stats):
        if cuda.grid(1) == 0:
            stats_total_one(nc, N, part, pos, stats)
else:
    from gpu_tok.kernels.hash_table import njit_cached as _njit

    @_njit
    def k_fill_u8(n, arr, v):
        for i in range(n):
            arr[i] = v

    @_njit
    def k_sync(Q, data, ch_lo, ch_hi, ch_end, ch_first, tab, sync):
        for q in range(Q):
            sync_one(q, data, ch_lo, ch_hi, ch_end, ch_first, tab, sync)

    @_njit
    def k_cut(Q, data, ch_end, ch_first, sync, fam, end_whole, tab, fold, mark):
        for q in range(Q):
            cut_one(q, Q, data, ch_end, ch_first, sync, fam, end_whole, tab, fold, mark)

    @_njit
    def k_mark(J, fx_pos, mark):
        for j in range(J):
            mark[fx_pos[j]] = 1

    @_njit
    def k_compact(N, mark, pos, starts, special):
        for i in range(N):
            compact_one(i, mark, pos, starts, special)

    @_njit
    def k_fixed(J, fx_pos, fx_id, pos, special):
        for j in range(J):
            special[pos[fx_pos[j]]] = fx_id[j]

    @_njit
    def k_first(n1, N, doc_off, pos, starts, first):
        for d in range(n1):
            first_one(d, n1 - 1, N, doc_off, pos, starts, first)

    @_njit
    def k_piece_stats(nc, N, mark, pos, starts, special, huge, part):
        for c in range(nc):
            piece_stats_one(c, N, mark, pos, starts, special, huge, part)

    @_njit
    def k_stats_total(n, nc, N, part, pos, stats):
        stats_total_one(nc, N, part, pos, stats)
