"""SentencePiece pieces cut on the GPU (``prepend`` 0/1): shared source, compiled twice.

Executed by ``gpu_tok.kernels.twins.load(kind)`` after ``pretok_cuda.py`` into the same
namespace (it uses ``dev``, ``kernel``, ``_index``, ``_njit_plain``). Do not import this
module directly.

What the host step (``sp_host._sp_docs``) makes of a batch for a normalizer that turns every
" " into "▁" and, with ``prepend`` 1, puts a "▁" before every non-empty gap, made here from
the raw text: the host runs the raw added-token pass and cuts the batch into *items*, in
text order (``sp_host.sp_items_parallel``): each non-empty gap, and each added token's
match (a fixed piece). The host has checked that the normalized added-token pass can find
nothing in these gaps (``sp_host``), so each gap is one piece, cut before every "▁" whose
previous character no vocabulary token holds right before a "▁"
(``engine_cpu._sp_nocut_before``, the same function compiled here), as ``_emit_piece``
cuts it.

Array layout (``N`` raw bytes, ``Q`` chunks, ``I`` items, ``M`` normalized bytes, ``n`` documents)
---------------------------------------------------------------------------------------------
* ``data: uint8[N]``: the batch's packed UTF-8.
* items: ``it_x, it_y: int64[I]`` raw bytes ``[x, y)``; ``it_id: int32[I]`` the fixed id, or
  -1 for a gap; ``it_c0, it_c1: int64[I]`` the gap's chunks (``c0 == c1`` for a fixed one);
  ``doc_item: int64[n+1]`` each document's first item (``I`` at the end).
* chunks: each gap in chunks of ``CUT_CHUNK`` raw bytes, in text order: ``ch_lo, ch_hi:
  int64[Q]``, ``ch_item: int64[Q]`` its item; ``ch_sp: int64[Q]`` its spaces
  (``k_sp_count``), whose exclusive prefix sums ``csc: int64[Q+1]`` (the scan) give the
  spaces of any run of whole chunks.
* ``ilen: int64[I]`` each item's normalized bytes (``k_sp_len``: a gap's bytes, two more per
  space, three for the "▁" put before it; one placeholder byte, 0, for a fixed piece, so that
  every piece has a first byte of its own); its exclusive prefix sums ``ioff: int64[I+1]``,
  ``M = ioff[I]``.
* ``out: uint8[M]``: the normalized text (``k_sp_items`` the "▁" before each gap and the
  placeholders, ``k_sp_write`` each chunk's bytes), the array the BPE kernels read;
  ``mark: uint8[M]`` (zeroed first) 1 at each item's first byte (``k_sp_items``) and at each
  cut before a "▁" (``k_sp_cut``, one thread per byte, when ``held`` is not empty). From
  there ``pretok_cuda``'s kernels: the scan of ``mark``, ``k_compact``, ``k_sp_fixed`` (each
  fixed item's id at its piece: ``fx_item: int64[J]``, ``fx_id: int32[J]``), ``k_sp_docs``
  (``doff: int64[n+1]``, each document's first normalized byte) then ``k_first``,
  ``k_piece_stats``, ``k_stats_total``.
"""

import types as _types

import numpy as np

_KIND = globals().get("_KIND")
if _KIND not in ("cpu", "cuda") or "dev" not in globals() or "_njit_plain" not in globals():
    raise ImportError("gpu_tok.kernels.sp_cuda is shared source: load it with gpu_tok.kernels.twins.load(kind)")


def _nocut():
    """``engine_cpu._sp_nocut_before`` compiled with ``dev`` (``_U`` the index itself)."""
    from gpu_tok.kernels import engine_cpu as _ec

    sdev = dev if _KIND == "cuda" else _njit_plain
    ns = dict(_ec.__dict__)
    ns["_U"] = sdev(_index)
    py = _ec._sp_nocut_before.py_func
    for ref in py.__code__.co_names:  # a compiled CPU function left in would fail only on a card
        if hasattr(ns.get(ref), "py_func") and ref != "_U":
            raise ImportError(f"sp_cuda: engine_cpu._sp_nocut_before calls {ref}, which is not compiled for the device")
    return sdev(_types.FunctionType(py.__code__, ns, py.__name__, py.__defaults__, py.__closure__))


sp_nocut_before = _nocut()


@dev
def sp_count_one(q, data, ch_lo, ch_hi, cnt):
    c = np.int64(0)
    for i in range(ch_lo[q], ch_hi[q]):
        if data[i] == 32:
            c += 1
    cnt[q] = c


@dev
def sp_len_one(g, it_x, it_y, it_id, it_c0, it_c1, csc, lead, ilen):
    if it_id[g] >= 0:
        ilen[g] = 1
    else:
        ilen[g] = (it_y[g] - it_x[g]) + 2 * (csc[it_c1[g]] - csc[it_c0[g]]) + 3 * lead


@dev
def sp_items_one(g, it_id, ioff, lead, out, mark):
    o = ioff[g]
    mark[o] = 1
    if it_id[g] >= 0:
        out[o] = 0
    elif lead != 0:
        out[o] = 0xE2
        out[o + 1] = 0x96
        out[o + 2] = 0x81


@dev
def sp_write_one(q, data, ch_lo, ch_hi, ch_item, it_x, it_c0, csc, ioff, lead, out):
    g = ch_item[q]
    lo = ch_lo[q]
    o = ioff[g] + 3 * lead + (lo - it_x[g]) + 2 * (csc[q] - csc[it_c0[g]])
    for i in range(lo, ch_hi[q]):
        c = data[i]
        if c == 32:
            out[o] = 0xE2
            out[o + 1] = 0x96
            out[o + 2] = 0x81
            o += 3
        else:
            out[o] = c
            o += 1


@dev
def sp_cut_one(o, M, out, mark, held):
    # a "▁" past its item's first byte (the items' first bytes are marked already; a
    # placeholder is 0): a cut unless held holds the character before it right before a "▁"
    if out[o] == 0xE2 and mark[o] == 0 and o + 2 < M and out[o + 1] == 0x96 and out[o + 2] == 0x81:
        if not sp_nocut_before(out, o, held):
            mark[o] = 1


if _KIND == "cuda":
    @kernel
    def k_sp_count(Q, data, ch_lo, ch_hi, cnt):
        q = cuda.grid(1)
        if q < Q:
            sp_count_one(q, data, ch_lo, ch_hi, cnt)

    @kernel
    def k_sp_len(I, it_x, it_y, it_id, it_c0, it_c1, csc, lead, ilen):
        g = cuda.grid(1)
        if g < I:
            sp_len_one(g, it_x, it_y, it_id, it_c0, it_c1, csc, lead, ilen)

    @kernel
    def k_sp_items(I, it_id, ioff, lead, out, mark):
        g = cuda.grid(1)
        if g < I:
            sp_items_one(g, it_id, ioff, lead, out, mark)

    @kernel
    def k_sp_write(Q, data, ch_lo, ch_hi, ch_item, it_x, it_c0, csc, ioff, lead, out):
        q = cuda.grid(1)
        if q < Q:
            sp_write_one(q, data, ch_lo, ch_hi, ch_item, it_x, it_c0, csc, ioff, lead, out)

    @kernel
    def k_sp_cut(M, out, mark, held):
        o = cuda.grid(1)
        if o < M:
            sp_cut_one(o, M, out, mark, held)

    @kernel
    def k_sp_fixed(J, fx_item, fx_id, ioff, pos, special):
        j = cuda.grid(1)
        if j < J:
            special[pos[ioff[fx_item[j]]]] = fx_id[j]

    @kernel
    def k_sp_docs(n1, doc_item, ioff, doff):
        d = cuda.grid(1)
        if d < n1:
            doff[d] = ioff[doc_item[d]]
else:
    from gpu_tok.kernels.hash_table import njit_cached as _njit

    @_njit
    def k_sp_count(Q, data, ch_lo, ch_hi, cnt):
        for q in range(Q):
            sp_count_one(q, data, ch_lo, ch_hi, cnt)

    @_njit
    def k_sp_len(I, it_x, it_y, it_id, it_c0, it_c1, csc, lead, ilen):
        for g in range(I):
            sp_len_one(g, it_x, it_y, it_id, it_c0, it_c1, csc, lead, ilen)

    @_njit
    def k_sp_items(I, it_id, ioff, lead, out, mark):
        for g in range(I):
            sp_items_one(g, it_id, ioff, lead, out, mark)

    @_njit
    def k_sp_write(Q, data, ch_lo, ch_hi, ch_item, it_x, it_c0, csc, ioff, lead, out):
        for q in range(Q):
            sp_write_one(q, data, ch_lo, ch_hi, ch_item, it_x, it_c0, csc, ioff, lead, out)

    @_njit
    def k_sp_cut(M, out, mark, held):
        for o in range(M):
            sp_cut_one(o, M, out, mark, held)

    @_njit
    def k_sp_fixed(J, fx_item, fx_id, ioff, pos, special):
        for j in range(J):
            special[pos[ioff[fx_item[j]]]] = fx_id[j]

    @_njit
    def k_sp_docs(n1, doc_item, ioff, doff):
        for d in range(n1):
            doff[d] = ioff[doc_item[d]]
