"""Dedupe, counts, scan and scatter on the GPU: shared source, compiled twice.

Executed by ``gpu_tok.kernels.twins.load(kind)`` after ``bpe_cuda.py`` into the same
namespace (it uses ``dev``, ``bytes_hash``, ``bucket_of``, ... from there); see that file for
the batch's array layout. Do not import this module directly.

Dedupe (each distinct piece is encoded once per batch)
------------------------------------------------------
``tkeys: uint64[C]`` (``EMPTY`` when free) and ``towner: int32[C]`` (``INT32_MAX`` when
free), ``C`` a power of two at least ``2 P``; the key of a piece is its ``bytes_hash`` and
``kmask`` (all ones; the tests narrow it to force collisions), ``EMPTY`` itself stored as
``EMPTY - 1``; its slot ``key & (C - 1)``, linear probing.

1. ``k_insert``: every model piece of at least two bytes claims the slot of its key
   (``atomic.cas``) and lowers the slot's owner to its own index (``atomic.min``): the owner
   is the first piece with that hash, whatever the threads' order.
2. ``k_resolve``: a piece whose owner has the same bytes is a duplicate (``rep[p]`` = the
   owner); a different piece behind the same 64-bit hash is never merged with it, it is
   encoded on its own (``rep[p] = p``), so a hash collision cannot change an id. Distinct
   pieces are counted per length bucket (``bucket_of``).
3. ``k_bounds`` turns the bucket counts into ``bounds`` (one thread), ``k_fill`` lists the
   distinct pieces bucket by bucket in ``work`` and gives each long one its scratch offset
   ``loff`` (the order inside a bucket depends on the threads; the ids do not).
4. BPE (``k_short``, ``k_medium``, ``k_long``), then ``k_counts``: pieces of one byte, fixed ids, pieces
   the host encoded (``special = -3 - count``; their ids, copied to the device in one array,
   put in ``out`` by ``k_place``, one thread per id), and every duplicate
   take their count (``cnt[rep[p]]``); ``scan`` gives ``pos: int64[P+1]``;
   ``k_scatter`` copies each piece's ids from its representative's scratch to ``ids[pos[p]:]``;
   ``k_rows`` gives ``row_splits[d] = pos[first[d]]`` (``first``: the first piece of each
   document, ``P`` at the end).

Atomics: ``atomic_cas``/``atomic_min``/``atomic_add`` are ``numba.cuda.atomic`` on the device
and plain read-modify-writes in the (serial) CPU twins.
"""

import numpy as np

_KIND = globals().get("_KIND")
if _KIND not in ("cpu", "cuda") or "dev" not in globals() or (_KIND == "cuda" and "kernel" not in globals()):
    raise ImportError("gpu_tok.kernels.dedupe_cuda is shared source: load it with gpu_tok.kernels.twins.load(kind)")

INT32_MAX = np.int32(0x7FFFFFFF)
SCAN_CHUNK = 64  # items per thread in the scan

if _KIND == "cuda":
    @dev
    def atomic_cas(arr, i, old, new):
        return cuda.atomic.cas(arr, i, old, new)

    @dev
    def atomic_min(arr, i, v):
        return cuda.atomic.min(arr, i, v)

    @dev
    def atomic_add(arr, i, v):
        return cuda.atomic.add(arr, i, v)
else:
    @dev
    def atomic_cas(arr, i, old, new):
        cur = arr[i]
        if cur == old:
            arr[i] = new
        return cur

    @dev
    def atomic_min(arr, i, v):
        cur = arr[i]
        if v < cur:
            arr[i] = v
        return cur

    @dev
    def atomic_add(arr, i, v):
        cur = arr[i]
        arr[i] = cur + v
        return cur


@dev
def is_model(special, starts, p):
    """A piece the model encodes with BPE and that may repeat (two bytes or more)."""
    return special[p] == -1 and starts[p + 1] - starts[p] >= 2


@dev
def dedupe_key(h):
    if h == EMPTY:
        return EMPTY - np.uint64(1)
    return h


@dev
def insert_one(p, data, starts, special, ph, kmask, tkeys, towner):
    if not is_model(special, starts, p):
        return
    h = bytes_hash(data, np.int64(starts[p]), np.int64(starts[p + 1]))
    ph[p] = h
    key = dedupe_key(h & kmask)
    mask = np.int64(tkeys.shape[0] - 1)
    i = np.int64(key & np.uint64(mask))
    while True:
        old = atomic_cas(tkeys, i, EMPTY, key)
        if old == EMPTY or old == key:
            atomic_min(towner, i, np.int32(p))
            return
        i = (i + 1) & mask


@dev
def same_bytes(data, a, b, n):
    for k in range(n):
        if data[a + k] != data[b + k]:
            return False
    return True


@dev
def resolve_one(p, data, starts, special, ph, kmask, tkeys, towner, rep, bcount, medium):
    rep[p] = p
    if not is_model(special, starts, p):
        return
    key = dedupe_key(ph[p] & kmask)
    mask = np.int64(tkeys.shape[0] - 1)
    i = np.int64(key & np.uint64(mask))
    while tkeys[i] != key:
        i = (i + 1) & mask
    r = towner[i]
    s = np.int64(starts[p])
    n = np.int64(starts[p + 1]) - s
    if r != p:
        rs = np.int64(starts[r])
        if np.int64(starts[r + 1]) - rs == n and same_bytes(data, rs, s, n):
            rep[p] = r
            return
    atomic_add(bcount, bucket_of(n, medium), np.int64(1))


@dev
def bounds_one(bcount, bounds, bcur):
    bounds[0] = 0
    for b in range(NBUCKETS):
        bounds[b + 1] = bounds[b] + bcount[b]
        bcur[b] = 0


@dev
def fill_one(p, starts, special, rep, bounds, bcur, work, loff, lcur, medium):
    if not is_model(special, starts, p) or rep[p] != p:
        return
    n = np.int64(starts[p + 1]) - np.int64(starts[p])
    b = bucket_of(n, medium)
    k = atomic_add(bcur, b, np.int64(1))
    work[bounds[b] + k] = p
    if b == LONG_BUCKET:
        loff[p] = atomic_add(lcur, 0, n)


@dev
def counts_one(p, data, starts, special, rep, mode, init_ids, char_id, byte_id, out, cnt):
    sp = special[p]
    if sp >= 0:
        cnt[p] = 1
        return
    if sp <= -3:  # encoded on the host (a huge piece): its ids are in out already
        cnt[p] = -3 - sp
        return
    s = np.int64(starts[p])
    n = np.int64(starts[p + 1]) - s
    if sp == -2 or n == 0:
        cnt[p] = 0
        return
    if n == 1:
        b = data[s]
        if mode == MODE_BYTE:
            out[s] = init_ids[b]
        else:
            t = char_id[np.int64(b)]
            out[s] = t if t >= 0 else byte_id[b]
        cnt[p] = 1
        return
    r = rep[p]
    if r != p:
        cnt[p] = cnt[r]


@dev
def chunk_sum_one(c, n, x, sums):
    a = c * SCAN_CHUNK
    e = min(n, a + SCAN_CHUNK)
    t = np.int64(0)
    for i in range(a, e):
        t += np.int64(x[i])
    sums[c] = t


@dev
def chunk_scan_one(c, n, x, base, out):
    """Exclusive prefix sums of ``x[c*CH:(c+1)*CH]`` from ``base[c]`` into ``out``; the last
    chunk writes the total at ``out[n]``."""
    a = c * SCAN_CHUNK
    e = min(n, a + SCAN_CHUNK)
    run = np.int64(base[c])
    for i in range(a, e):
        out[i] = run
        run += np.int64(x[i])
    if e == n:
        out[n] = run


@dev
def scatter_one(p, starts, special, rep, cnt, pos, out, ids):
    o = pos[p]
    sp = special[p]
    if sp >= 0:
        ids[o] = sp
        return
    src = np.int64(starts[rep[p]])
    for k in range(cnt[p]):
        ids[o + k] = out[src + k]


@dev
def rows_one(d, first, pos, rs):
    rs[d] = pos[first[d]]


@dev
def row_of(bounds, n, i):
    """The row ``k`` (``0 <= k < n``) with ``bounds[k] <= i < bounds[k + 1]`` (binary search;
    ``bounds`` non-decreasing, ``bounds[0] <= i``)."""
    lo = 0
    hi = n
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if bounds[mid] <= i:
            lo = mid
        else:
            hi = mid
    return lo


@dev
def place_one(i, K, idx, off, ids, starts, out):
    """Id ``i`` of the pieces the host encoded (``gpu_host.huge_*``: piece ``idx[k]``'s ids at
    ``ids[off[k]:off[k+1]]``) to its place in ``out``, at the piece's first byte and on."""
    k = row_of(off, K, i)
    out[np.int64(starts[idx[k]]) + i - off[k]] = ids[i]


@dev
def template_rows_one(d, rs, a, b, rs2):
    rs2[d] = rs[d] + d * (a + b)


@dev
def template_doc_one(d, rs2, prefix, suffix, n_in, ids2):
    """The template's ids around row ``d`` (``n_in`` = the row's own ids)."""
    o = rs2[d]
    for k in range(prefix.shape[0]):
        ids2[o + k] = prefix[k]
    o += prefix.shape[0] + n_in
    for k in range(suffix.shape[0]):
        ids2[o + k] = suffix[k]


@dev
def template_tok_one(t, ids, rs, n_docs, a, b, ids2):
    """Token ``t`` of the flat ids moves to its row's place after the template's ids."""
    d = row_of(rs, n_docs, t)
    ids2[t + d * (a + b) + a] = ids[t]


@dev
def clear_one(i, tkeys, towner, bcount, lcur):
    """A batch's tables cleared (one launch for what took four fills, one item per slot of
    the dedupe table): its keys and owners, the bucket counts (the pooled array, never longer
    than the table: 16 items, the table at least 16 slots) and the long pieces' cursor."""
    tkeys[i] = EMPTY
    towner[i] = INT32_MAX
    if i < bcount.shape[0]:
        bcount[i] = 0
    if i == 0:
        lcur[0] = 0


# ------------------------------------------------------------------ kernels
if _KIND == "cuda":
    @kernel
    def k_fill_i64(n, arr, v):
        i = cuda.grid(1)
        if i < n:
            arr[i] = v

    @kernel
    def k_clear(C, tkeys, towner, bcount, lcur):
        i = cuda.grid(1)
        if i < C:
            clear_one(i, tkeys, towner, bcount, lcur)

    @kernel
    def k_insert(P, data, starts, special, ph, kmask, tkeys, towner):
        p = cuda.grid(1)
        if p < P:
            insert_one(p, data, starts, special, ph, kmask, tkeys, towner)

    @kernel
    def k_resolve(P, data, starts, special, ph, kmask, tkeys, towner, rep, bcount, medium):
        p = cuda.grid(1)
        if p < P:
            resolve_one(p, data, starts, special, ph, kmask, tkeys, towner, rep, bcount, medium)

    @kernel
    def k_bounds(n, bcount, bounds, bcur):
        if cuda.grid(1) == 0:
            bounds_one(bcount, bounds, bcur)

    @kernel
    def k_fill(P, starts, special, rep, bounds, bcur, work, loff, lcur, medium):
        p = cuda.grid(1)
        if p < P:
            fill_one(p, starts, special, rep, bounds, bcur, work, loff, lcur, medium)

    @kernel
    def k_counts(P, data, starts, special, rep, mode, init_ids, char_id, byte_id, out, cnt):
        p = cuda.grid(1)
        if p < P:
            counts_one(p, data, starts, special, rep, mode, init_ids, char_id, byte_id, out, cnt)

    @kernel
    def k_chunk_sums(nc, n, x, sums):
        c = cuda.grid(1)
        if c < nc:
            chunk_sum_one(c, n, x, sums)

    @kernel
    def k_chunk_scan(nc, n, x, base, out):
        c = cuda.grid(1)
        if c < nc:
            chunk_scan_one(c, n, x, base, out)

    @kernel
    def k_scatter(P, starts, special, rep, cnt, pos, out, ids):
        p = cuda.grid(1)
        if p < P:
            scatter_one(p, starts, special, rep, cnt, pos, out, ids)

    @kernel
    def k_rows(n, first, pos, rs):
        d = cuda.grid(1)
        if d < n:
            rows_one(d, first, pos, rs)

    @kernel
    def k_place(T, K, idx, off, ids, starts, out):
        i = cuda.grid(1)
        if i < T:
            place_one(i, K, idx, off, ids, starts, out)

    @kernel
    def k_template_rows(n, rs, a, b, rs2):
        d = cuda.grid(1)
        if d < n:
            template_rows_one(d, rs, a, b, rs2)

    @kernel
    def k_template_docs(n, rs, rs2, prefix, suffix, ids2):
        d = cuda.grid(1)
        if d < n:
            template_doc_one(d, rs2, prefix, suffix, rs[d + 1] - rs[d], ids2)

    @kernel
    def k_template_toks(T, ids, rs, n_docs, a, b, ids2):
        t = cuda.grid(1)
        if t < T:
            template_tok_one(t, ids, rs, n_docs, a, b, ids2)
else:
    @njit_cached
    def k_fill_i64(n, arr, v):
        for i in range(n):
            arr[i] = v

    @njit_cached
    def k_clear(C, tkeys, towner, bcount, lcur):
        for i in range(C):
            clear_one(i, tkeys, towner, bcount, lcur)

    @njit_cached
    def k_insert(P, data, starts, special, ph, kmask, tkeys, towner):
        for p in range(P):
            insert_one(p, data, starts, special, ph, kmask, tkeys, towner)

    @njit_cached
    def k_resolve(P, data, starts, special, ph, kmask, tkeys, towner, rep, bcount, medium):
        for p in range(P):
            resolve_one(p, data, starts, special, ph, kmask, tkeys, towner, rep, bcount, medium)

    @njit_cached
    def k_bounds(n, bcount, bounds, bcur):
        bounds_one(bcount, bounds, bcur)

    @njit_cached
    def k_fill(P, starts, special, rep, bounds, bcur, work, loff, lcur, medium):
        for p in range(P):
            fill_one(p, starts, special, rep, bounds, bcur, work, loff, lcur, medium)

    @njit_cached
    def k_counts(P, data, starts, special, rep, mode, init_ids, char_id, byte_id, out, cnt):
        for p in range(P):
            counts_one(p, data, starts, special, rep, mode, init_ids, char_id, byte_id, out, cnt)

    @njit_cached
    def k_chunk_sums(nc, n, x, sums):
        for c in range(nc):
            chunk_sum_one(c, n, x, sums)

    @njit_cached
    def k_chunk_scan(nc, n, x, base, out):
        for c in range(nc):
            chunk_scan_one(c, n, x, base, out)

    @njit_cached
    def k_scatter(P, starts, special, rep, cnt, pos, out, ids):
        for p in range(P):
            scatter_one(p, starts, special, rep, cnt, pos, out, ids)

    @njit_cached
    def k_rows(n, first, pos, rs):
        for d in range(n):
            rows_one(d, first, pos, rs)

    @njit_cached
    def k_place(T, K, idx, off, ids, starts, out):
        for i in range(T):
            place_one(i, K, idx, off, ids, starts, out)

    @njit_cached
    def k_template_rows(n, rs, a, b, rs2):
        for d in range(n):
            template_rows_one(d, rs, a, b, rs2)

    @njit_cached
    def k_template_docs(n, rs, rs2, prefix, suffix, ids2):
        for d in range(n):
            template_doc_one(d, rs2, prefix, suffix, rs[d + 1] - rs[d], ids2)

    @njit_cached
    def k_template_toks(T, ids, rs, n_docs, a, b, ids2):
        for t in range(T):
            template_tok_one(t, ids, rs, n_docs, a, b, ids2)
