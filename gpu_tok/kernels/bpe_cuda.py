"""BPE on the GPU: device functions and kernels, written once, compiled twice.

This file is *shared source*: ``gpu_tok.kernels.twins.load(kind)`` executes it (and then
``dedupe_cuda.py``) into a fresh namespace whose decorator ``dev`` is
``numba.cuda.jit(device=True)`` for ``kind="cuda"`` (a real device, or the simulator under
``NUMBA_ENABLE_CUDASIM=1``) and ``numba.njit`` for ``kind="cpu"`` (the CPU twins). The
kernels themselves are thin loops around one-item functions (``*_one``): a CUDA kernel runs
item ``cuda.grid(1)``, its twin a ``for`` loop over every item. Do not import this module
directly.

Array layouts (all on the device; ``P`` pieces, ``N`` bytes of one batch)
--------------------------------------------------------------------------
* ``data: uint8[N]``: the packed UTF-8 of the batch (the normalized buffer for
  SentencePiece-style files, ``kernels.sp_host``).
* ``starts: int32[P+1]``: piece ``p`` is ``data[starts[p]:starts[p+1]]`` (pieces tile the
  buffer; an added token's piece may be empty).
* ``special: int32[P]``: ``>= 0`` a fixed id (an added token, or a whole SentencePiece piece
  found in the vocabulary), ``-1`` a piece the model encodes, ``-2`` a piece that yields
  nothing (a document the reference path encodes, ``fast_cpu.ByteBPEEngine.pieces``),
  ``-3 - c`` a huge piece whose ``c`` ids the host computed and copied to ``out``
  (``gpu_host.huge_byte_level``).
* merge table ``mtab: uint64[2C]``: ``hash_table.interleave`` of the open-addressing table
  keyed ``(left << 32) | right`` with values ``(rank << 32) | merged`` (DESIGN.md section 3).
* byte-level first round ``grid: uint64[65536]`` (``engine_cpu.byte_pair_grid``),
  ``init_ids: int32[256]`` the id of each byte.
* SentencePiece initial symbols: ``char_id: int32[0x110000]`` (-1: none, then one
  ``byte_id[b]`` per UTF-8 byte, ``byte_fallback``).
* vocabulary by bytes (``whole_first``: ``ignore_merges`` / tiktoken): ``arena, tok_off,
  bkeys, bvals`` of ``engine_cpu.build_bytes_table``; a hit is confirmed byte by byte.
* ``out: int32[N]``: scratch; a distinct piece writes its ids at ``out[starts[p]:]`` (a piece
  never has more ids than bytes).
* long pieces (more than ``medium`` bytes: ``SHORT`` unless ``k_medium`` takes those up to
  ``medium``): per piece a region at ``loff[p]`` of ``lsym,
  llen, lprv, lnxt: int32[LB]`` and ``3 * loff[p]`` of the heap ``hkey: uint64[3 LB]``,
  ``hnew: int32[3 LB]`` (``LB``: the bytes of all long pieces).

Semantics are the CPU engine's (``kernels.engine_cpu``): short pieces by rescanning
(lowest rank, leftmost on ties: ``_merge_ranked``), long ones with the heap of
``bpe_cpu.merge_piece`` (``(rank << 32) | position`` keys, the merged id breaking ties,
an entry valid while its pair still merges into the queued id): O(n log n), never quadratic.
"""

import numpy as np

_KIND = globals().get("_KIND")
if _KIND not in ("cpu", "cuda"):
    raise ImportError("gpu_tok.kernels.bpe_cuda is shared source: load it with gpu_tok.kernels.twins.load(kind)")

if _KIND == "cuda":
    import os

    from numba import cuda

    def dev(fn):
        return cuda.jit(device=True)(fn)

    # the kernels' decorator (this file's and dedupe_cuda.py's): GPU_TOK_CUDA_CACHE=1 keeps
    # their machine code in Numba's on-disk cache (__pycache__ beside the sources, one entry
    # per compute capability), so a second process on the same machine loads them instead
    # of compiling them again (benchmarks/gpu_check.sh sets it for all its steps)
    kernel = cuda.jit(cache=os.environ.get("GPU_TOK_CUDA_CACHE") == "1")
else:
    from gpu_tok.kernels.hash_table import njit_cached

    def dev(fn):
        return njit_cached(fn)

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW = np.uint64(0xFFFFFFFF)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S8 = np.uint64(8)
_S27 = np.uint64(27)
_S30 = np.uint64(30)
_S31 = np.uint64(31)
_S32 = np.uint64(32)

SHORT = 64  # pieces of at most this many bytes: one thread, rescanning in local arrays
LOCAL_N = 65  # SHORT + 1: the per-thread local arrays (a plain constant, as cuda.local.array needs)
# pieces of SHORT + 1 .. ``medium`` bytes (a kernel argument, at most MEDIUM; ``medium = SHORT``:
# none) are rescanned too, by ``k_medium`` in local arrays of MEDIUM_N, rather than by the heap
# of ``k_long``: a long piece's heap is one thread's serial chain of global-memory loads
# (sift-down per merge), the bucket's longest piece setting k_long's time; a bounded rescan
# touches only its thread's local arrays (at most MEDIUM^2 / 2 steps a piece: a constant)
MEDIUM = 256
MEDIUM_N = 257
MODE_BYTE = 0  # byte-level BPE (tokenizer.json ByteLevel, tiktoken)
MODE_SP = 1  # SentencePiece-style BPE with byte_fallback


# ------------------------------------------------------------------ hashing
@dev
def mix64(x):
    """splitmix64's finalizer (``hash_table.mix64``)."""
    z = x
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@dev
def lookup2(mtab, key):
    """``hash_table.lookup2``: the value of ``key`` in the interleaved table, or ``EMPTY``."""
    mask = np.int64((mtab.shape[0] >> 1) - 1)
    i = np.int64(mix64(key) & np.uint64(mask))
    while True:
        k = mtab[2 * i]
        if k == key:
            return mtab[2 * i + 1]
        if k == EMPTY:
            return EMPTY
        i = (i + 1) & mask


@dev
def pair_key(a, b):
    return (np.uint64(a) << _S32) | np.uint64(b)


@dev
def bytes_hash(buf, s, e):
    """``engine_cpu.bytes_hash`` of ``buf[s:e]`` (the vocabulary table's and the dedupe key)."""
    h = mix64(np.uint64(e - s) + _GOLD)
    i = s
    while i < e:
        w = np.uint64(0)
        k = 0
        while k < 8 and i < e:
            w |= np.uint64(buf[i]) << np.uint64(8 * k)
            i += 1
            k += 1
        h = mix64(h ^ w)
    return h


@dev
def bytes_lookup(buf, s, e, h, arena, tok_off, bkeys, bvals):
    """The id whose bytes are ``buf[s:e]`` (hash ``h``), or -1 (``engine_cpu.bytes_lookup``)."""
    mask = np.int64(bkeys.shape[0] - 1)
    i = np.int64(h & np.uint64(mask))
    n = e - s
    while True:
        k = bkeys[i]
        if k == EMPTY:
            return -1
        if k == h:
            t = bvals[i]
            a = tok_off[t]
            if tok_off[t + 1] - a == n:
                same = True
                for j in range(n):
                    if arena[a + j] != buf[s + j]:
                        same = False
                        break
                if same:
                    return np.int64(t)
        i = (i + 1) & mask


# ---------------------------------------------------------- initial symbols
@dev
def utf8_len(b):
    if b < 0x80:
        return 1
    if b < 0xE0:
        return 2
    if b < 0xF0:
        return 3
    return 4


@dev
def decode_at(buf, i, ln):
    b = np.int64(buf[i])
    if ln == 1:
        return b
    if ln == 2:
        return ((b & 0x1F) << 6) | (np.int64(buf[i + 1]) & 0x3F)
    if ln == 3:
        return ((b & 0x0F) << 12) | ((np.int64(buf[i + 1]) & 0x3F) << 6) | (np.int64(buf[i + 2]) & 0x3F)
    return (((b & 0x07) << 18) | ((np.int64(buf[i + 1]) & 0x3F) << 12) | ((np.int64(buf[i + 2]) & 0x3F) << 6)
            | (np.int64(buf[i + 3]) & 0x3F))


@dev
def sp_symbols(buf, s, e, char_id, byte_id, sym, o):
    """SentencePiece initial symbols of ``buf[s:e]`` into ``sym[o:]`` (per character its id,
    else one ``<0xXX>`` per byte: ``engine_cpu._sp_word``); returns their number."""
    n = 0
    i = s
    while i < e:
        ln = utf8_len(buf[i])
        t = char_id[decode_at(buf, i, ln)]
        if t >= 0:
            sym[o + n] = t
            n += 1
        else:
            for k in range(ln):
                sym[o + n] = byte_id[buf[i + k]]
                n += 1
        i += ln
    return n


# --------------------------------------------------------------- short BPE
@dev
def merge_ranked(ids, rank, n, mtab):
    """``engine_cpu._merge_ranked``: with ``rank[k]`` the merge value of ``ids[k], ids[k+1]``,
    merge the lowest, leftmost first, until none is left; returns the ids left."""
    m = n
    while m > 1:
        best = 0
        bv = rank[0]
        for k in range(1, m - 1):
            if rank[k] < bv:
                bv = rank[k]
                best = k
        if bv == EMPTY:
            break
        ids[best] = np.int32(bv & _LOW)
        for k in range(best + 1, m - 1):
            ids[k] = ids[k + 1]
            rank[k] = rank[k + 1]
        m -= 1
        if best > 0:
            rank[best - 1] = lookup2(mtab, pair_key(ids[best - 1], ids[best]))
        if best < m - 1:
            rank[best] = lookup2(mtab, pair_key(ids[best], ids[best + 1]))
    return m


@dev
def encode_short(mode, data, s, n, init_ids, grid, char_id, byte_id, mtab, ids, rank, out, o):
    """BPE of the short piece ``data[s:s+n]`` (``n <= SHORT``) in the local arrays ``ids``,
    ``rank``; the ids to ``out[o:]``; returns their number."""
    if mode == MODE_BYTE:
        for k in range(n):
            ids[k] = init_ids[data[s + k]]
        for k in range(n - 1):
            rank[k] = grid[(np.int64(data[s + k]) << 8) | np.int64(data[s + k + 1])]
        m = n
    else:
        m = sp_symbols(data, s, s + n, char_id, byte_id, ids, 0)
        for k in range(m - 1):
            rank[k] = lookup2(mtab, pair_key(ids[k], ids[k + 1]))
    c = merge_ranked(ids, rank, m, mtab)
    for k in range(c):
        out[o + k] = ids[k]
    return c


# ---------------------------------------------------------------- long BPE
@dev
def heap_less(hkey, hnew, a, b):
    ka = hkey[a]
    kb = hkey[b]
    return ka < kb or (ka == kb and hnew[a] < hnew[b])


@dev
def heap_swap(hkey, hnew, a, b):
    t = hkey[a]
    hkey[a] = hkey[b]
    hkey[b] = t
    u = hnew[a]
    hnew[a] = hnew[b]
    hnew[b] = u


@dev
def sift_down(hkey, hnew, h0, i, size):
    while True:
        l = 2 * i + 1
        if l >= size:
            return
        m = l
        if l + 1 < size and heap_less(hkey, hnew, h0 + l + 1, h0 + l):
            m = l + 1
        if heap_less(hkey, hnew, h0 + m, h0 + i):
            heap_swap(hkey, hnew, h0 + i, h0 + m)
            i = m
        else:
            return


@dev
def heap_push(hkey, hnew, h0, size, key, nid):
    i = size
    hkey[h0 + i] = key
    hnew[h0 + i] = nid
    while i > 0:
        p = (i - 1) >> 1
        if heap_less(hkey, hnew, h0 + i, h0 + p):
            heap_swap(hkey, hnew, h0 + i, h0 + p)
            i = p
        else:
            break
    return size + 1


@dev
def merge_long(sym, lens, prv, nxt, s0, n, hkey, hnew, h0, mtab, out, o):
    """``bpe_cpu.merge_piece`` on the ``n`` symbols at ``sym[s0:]`` (scratch ``lens, prv, nxt``
    at ``s0``, the heap at ``h0``: at most ``3 n`` entries); the ids to ``out[o:]``."""
    for i in range(n):
        lens[s0 + i] = 1
        prv[s0 + i] = i - 1
        nxt[s0 + i] = i + 1
    size = 0
    if n > 1:
        nxt[s0 + n - 1] = -1
        for i in range(n - 1):
            v = lookup2(mtab, pair_key(sym[s0 + i], sym[s0 + i + 1]))
            if v != EMPTY:
                hkey[h0 + size] = (v & ~_LOW) | np.uint64(i)
                hnew[h0 + size] = np.int32(v & _LOW)
                size += 1
        for i in range(size // 2 - 1, -1, -1):
            sift_down(hkey, hnew, h0, i, size)
    while size > 0:
        top = hkey[h0]
        new_id = hnew[h0]
        size -= 1
        if size > 0:
            hkey[h0] = hkey[h0 + size]
            hnew[h0] = hnew[h0 + size]
            sift_down(hkey, hnew, h0, 0, size)
        pos = np.int64(top & _LOW)
        if lens[s0 + pos] == 0:
            continue
        j = np.int64(nxt[s0 + pos])
        if j == -1:
            continue
        v = lookup2(mtab, pair_key(sym[s0 + pos], sym[s0 + j]))
        if v == EMPTY or np.int32(v & _LOW) != new_id:
            continue  # a stale entry: the pair changed since it was queued
        sym[s0 + pos] = new_id
        lens[s0 + pos] += lens[s0 + j]
        lens[s0 + j] = 0
        k = np.int64(nxt[s0 + j])
        nxt[s0 + pos] = k
        if k != -1:
            prv[s0 + k] = pos
        p = np.int64(prv[s0 + pos])
        if p >= 0:
            v = lookup2(mtab, pair_key(sym[s0 + p], new_id))
            if v != EMPTY:
                size = heap_push(hkey, hnew, h0, size, (v & ~_LOW) | np.uint64(p), np.int32(v & _LOW))
        if k != -1:
            v = lookup2(mtab, pair_key(new_id, sym[s0 + k]))
            if v != EMPTY:
                size = heap_push(hkey, hnew, h0, size, (v & ~_LOW) | np.uint64(pos), np.int32(v & _LOW))
    c = 0
    for i in range(n):
        if lens[s0 + i] != 0:
            out[o + c] = sym[s0 + i]
            c += 1
    return c


# ------------------------------------------------- one distinct piece, whole
@dev
def whole_hit(data, s, e, h, whole_first, arena, tok_off, bkeys, bvals, out):
    """``whole_first`` (``ignore_merges``, tiktoken): a piece found in the vocabulary is one
    token, written at ``out[s]``; returns 1, else 0."""
    if whole_first:
        t = bytes_lookup(data, s, e, h, arena, tok_off, bkeys, bvals)
        if t >= 0:
            out[s] = np.int32(t)
            return 1
    return 0


@dev
def short_one(i, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
              arena, tok_off, bkeys, bvals, ids, rank, out, cnt):
    """Work item ``i`` of the short buckets: the distinct piece ``work[i]``."""
    if i >= bounds[MEDIUM_BUCKET]:
        return
    rescan_one(work[i], data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
               arena, tok_off, bkeys, bvals, ids, rank, out, cnt)


@dev
def medium_one(i, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
               arena, tok_off, bkeys, bvals, ids, rank, out, cnt):
    """Work item ``i`` of the medium bucket: the distinct piece ``work[bounds[MEDIUM_BUCKET] + i]``."""
    j = bounds[MEDIUM_BUCKET] + i
    if j >= bounds[MEDIUM_BUCKET + 1]:
        return
    rescan_one(work[j], data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
               arena, tok_off, bkeys, bvals, ids, rank, out, cnt)


@dev
def rescan_one(p, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
               arena, tok_off, bkeys, bvals, ids, rank, out, cnt):
    """The distinct piece ``p`` by rescanning (``encode_short``) in the local arrays ``ids``,
    ``rank`` (longer than the piece)."""
    s = np.int64(starts[p])
    e = np.int64(starts[p + 1])
    if whole_hit(data, s, e, ph[p], whole_first, arena, tok_off, bkeys, bvals, out):
        cnt[p] = 1
        return
    cnt[p] = encode_short(mode, data, s, e - s, init_ids, grid, char_id, byte_id, mtab, ids, rank, out, s)


@dev
def long_one(i, work, bounds, data, starts, ph, loff, mode, init_ids, char_id, byte_id, mtab, whole_first,
             arena, tok_off, bkeys, bvals, lsym, llen, lprv, lnxt, hkey, hnew, out, cnt):
    """Work item ``i`` of the long bucket: the distinct piece ``work[bounds[LONG_BUCKET] + i]``
    with the heap in its scratch region."""
    j = bounds[LONG_BUCKET] + i
    if j >= bounds[LONG_BUCKET + 1]:
        return
    p = work[j]
    s = np.int64(starts[p])
    e = np.int64(starts[p + 1])
    if whole_hit(data, s, e, ph[p], whole_first, arena, tok_off, bkeys, bvals, out):
        cnt[p] = 1
        return
    s0 = loff[p]
    if mode == MODE_BYTE:
        for k in range(e - s):
            lsym[s0 + k] = init_ids[data[s + k]]
        n = e - s
    else:
        n = sp_symbols(data, s, e, char_id, byte_id, lsym, s0)
    cnt[p] = merge_long(lsym, llen, lprv, lnxt, s0, n, hkey, hnew, 3 * s0, mtab, out, s)


# Buckets of distinct pieces by length (bytes), so that a warp's threads do alike work:
# 2-4, 5-8, 9-16, 17-32, 33-SHORT, SHORT+1-medium, long. ``bounds[b]:bounds[b+1]`` is bucket b
# in ``work``.
NBUCKETS = 7
MEDIUM_BUCKET = 5
LONG_BUCKET = 6


@dev
def bucket_of(n, medium):
    if n <= 4:
        return 0
    if n <= 8:
        return 1
    if n <= 16:
        return 2
    if n <= 32:
        return 3
    if n <= SHORT:
        return 4
    if n <= medium:
        return MEDIUM_BUCKET
    return LONG_BUCKET


# ------------------------------------------------------------------ kernels
if _KIND == "cuda":
    @kernel
    def k_short(n_items, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
                arena, tok_off, bkeys, bvals, out, cnt):
        i = cuda.grid(1)
        if i < n_items:
            ids = cuda.local.array(LOCAL_N, np.int32)
            rank = cuda.local.array(LOCAL_N, np.uint64)
            short_one(i, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
                      arena, tok_off, bkeys, bvals, ids, rank, out, cnt)

    @kernel
    def k_medium(n_items, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
                 arena, tok_off, bkeys, bvals, out, cnt):
        i = cuda.grid(1)
        if i < n_items:
            ids = cuda.local.array(MEDIUM_N, np.int32)
            rank = cuda.local.array(MEDIUM_N, np.uint64)
            medium_one(i, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
                       arena, tok_off, bkeys, bvals, ids, rank, out, cnt)

    @kernel
    def k_long(n_items, work, bounds, data, starts, ph, loff, mode, init_ids, char_id, byte_id, mtab, whole_first,
               arena, tok_off, bkeys, bvals, lsym, llen, lprv, lnxt, hkey, hnew, out, cnt):
        i = cuda.grid(1)
        if i < n_items:
            long_one(i, work, bounds, data, starts, ph, loff, mode, init_ids, char_id, byte_id, mtab, whole_first,
                     arena, tok_off, bkeys, bvals, lsym, llen, lprv, lnxt, hkey, hnew, out, cnt)
else:
    @njit_cached
    def k_short(n_items, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
                arena, tok_off, bkeys, bvals, out, cnt):
        ids = np.empty(LOCAL_N, np.int32)
        rank = np.empty(LOCAL_N, np.uint64)
        for i in range(n_items):
            short_one(i, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
                      arena, tok_off, bkeys, bvals, ids, rank, out, cnt)

    @njit_cached
    def k_medium(n_items, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
                 arena, tok_off, bkeys, bvals, out, cnt):
        ids = np.empty(MEDIUM_N, np.int32)
        rank = np.empty(MEDIUM_N, np.uint64)
        for i in range(n_items):
            medium_one(i, work, bounds, data, starts, ph, mode, init_ids, grid, char_id, byte_id, mtab, whole_first,
                       arena, tok_off, bkeys, bvals, ids, rank, out, cnt)

    @njit_cached
    def k_long(n_items, work, bounds, data, starts, ph, loff, mode, init_ids, char_id, byte_id, mtab, whole_first,
               arena, tok_off, bkeys, bvals, lsym, llen, lprv, lnxt, hkey, hnew, out, cnt):
        for i in range(n_items):
            long_one(i, work, bounds, data, starts, ph, loff, mode, init_ids, char_id, byte_id, mtab, whole_first,
                     arena, tok_off, bkeys, bvals, lsym, llen, lprv, lnxt, hkey, hnew, out, cnt)
