"""The BPE merge table as an open-addressing hash table in two NumPy arrays (DESIGN.md section 3).

Layout
------
``keys: uint64[C]`` and ``values: uint64[C]``, ``C`` a power of two (at least 8),
chosen so that the load factor ``n / C`` is at most 0.5.

* key of the merge ``(left_id, right_id)``:   ``(left_id << 32) | right_id``
* value:                                      ``(rank << 32) | merged_id``
* an empty slot holds ``EMPTY = 0xFFFF_FFFF_FFFF_FFFF`` in ``keys`` (and in ``values``).
  It cannot be a real key because ids are refused when both would be
  ``0xFFFF_FFFF``; it cannot be a real value because a rank of ``0xFFFF_FFFF``
  is refused. ``lookup`` returns ``EMPTY`` for an absent key.
* slot of a key: ``mix64(key) & (C - 1)`` where ``mix64`` is the splitmix64
  finalizer; collisions probe linearly (``slot + 1, slot + 2, ...`` modulo ``C``).
  A lookup stops at the key or at the first empty slot; with load <= 0.5 there
  always is one.

Everything that reads the table (``mix64``, ``lookup``, ``pair_key``,
``value_rank``, ``value_id``) is plain unsigned arithmetic on arrays, so the
same code can be compiled by ``numba.cuda.jit(device=True)`` for the GPU path.

When the same pair is given twice, the later entry wins (as a Python dict
built from the pairs would).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ._intrinsics import ctz64

__all__ = [
    "EMPTY", "build_merge_table", "merge_table_from_model", "lookup", "mix64", "pair_key",
    "value_rank", "value_id", "njit_cached", "interleave", "lookup2", "lookup_cached", "new_pair_cache",
    "PAIR_CACHE_BITS", "PAIR_CACHE_LEN", "njit_noalloc", "pair_filter", "filter_slot",
]

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_U32 = 0xFFFFFFFF
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_LOW = np.uint64(0xFFFFFFFF)


def njit_cached(*args, **kw):
    """``numba.njit`` with ``cache=True`` where a cache location is writable, plain ``njit`` otherwise.

    Numba refuses ``cache=True`` at decoration time (RuntimeError) when it finds no
    writable cache directory; a read-only install must still work, just without the cache.
    """

    def deco(fn):
        try:
            d = njit(cache=True, **kw)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            d = njit(cache=False, **kw)(fn)
        if kw.get("parallel"):  # run serially in a child forked after OpenMP started (forksafe)
            from .forksafe import fork_safe

            d = fork_safe(d, kw)
        return d

    if args and callable(args[0]):
        return deco(args[0])
    return deco


def kernel_bytes(data) -> np.ndarray:
    """``data`` as the one array type the text kernels are compiled for: ``uint8``, 1-D,
    C-contiguous and writable (copied only when it is not). Numba compiles a separate
    specialization of every kernel a read-only array reaches (``np.frombuffer`` of
    ``bytes``): about 70 s more for the byte-level engine on this 2-core host, paid again
    by a batch that packs that way (a lone surrogate), and once per fresh checkout."""
    if type(data) is np.ndarray and data.dtype == np.uint8 and data.ndim == 1:
        f = data.flags
        if f.c_contiguous and f.writeable:  # (as it is: 0.3 us, where ``np.require`` takes 3)
            return data
    return np.require(data, np.uint8, ("C", "W"))


def njit_noalloc(fn=None, **kw):
    """``njit_cached`` without Numba's reference counting (``_nrt=False``), for kernels that
    allocate nothing: Numba keeps reference-count updates of array arguments around loops,
    even in inlined helpers, and they cost more than a small piece's whole work. A Numba
    without the flag gets plain ``njit_cached``. ``kw`` (e.g. ``inline="always"``) go to njit."""

    def deco(f):
        try:
            return njit_cached(_nrt=False, **kw)(f)
        except (KeyError, TypeError, ValueError):  # pragma: no cover - a Numba without the flag
            return njit_cached(**kw)(f)

    return deco(fn) if fn is not None else deco


@intrinsic
def uidx(typingctx, i):
    """An array index ``i`` (known to be >= 0) as ``uint64``. Numba wraps a signed index
    around (``i < 0`` counts from the end), which costs three instructions per access and
    keeps LLVM from simplifying the code around it; an unsigned index is used as it is.
    On the per-piece paths of the CPU kernels this was about a fifth of the time (llama3,
    8 MB of code, one thread, 38 -> 30 ms). Mixing it in arithmetic with signed integers
    gives floats in Numba, so it is only ever the whole subscript: ``a[uidx(i + 1)]``.

    The same cast as ``np.uint64(i)`` (a signed index is sign-extended, then read as
    unsigned), emitted directly: an intrinsic rather than an ``inline="always"`` function,
    because Numba inlines those by copying the callee's IR at every call site, and this one
    has hundreds (gpt2's first ``encode_batch_ids`` with a fresh cache, 2-core AMD host:
    117.6 s before, 96.7 s after; decision 0022)."""
    if not isinstance(i, types.Integer):
        return None
    sig = types.uint64(i)

    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], signature.args[0], types.uint64)

    return sig, codegen


_U = uidx


@njit_noalloc
def mix64(x):
    """splitmix64 finalizer (uint64 -> uint64), a bijection with good avalanche."""
    z = np.uint64(x)
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit_cached
def pair_key(left_id, right_id):
    return (np.uint64(left_id) << _S32) | np.uint64(right_id)


@njit_cached
def value_rank(v):
    return np.int64(np.uint64(v) >> _S32)


@njit_cached
def value_id(v):
    return np.int64(np.uint64(v) & _LOW)


@njit_noalloc
def lookup(keys, values, key):
    """Value stored for ``key`` (uint64), or ``EMPTY`` when the key is absent."""
    key = np.uint64(key)
    mask = np.int64(keys.shape[0] - 1)
    i = np.int64(mix64(key) & np.uint64(mask))
    while True:
        k = keys[_U(i)]
        if k == key:
            return values[_U(i)]
        if k == EMPTY:
            return EMPTY
        i = (i + 1) & mask


def interleave(keys, values):
    """The table as one array, ``mtab[2i] = keys[i]``, ``mtab[2i+1] = values[i]``: a probe
    reads one cache line instead of two (``lookup2``)."""
    t = np.empty(2 * keys.shape[0], np.uint64)
    t[0::2] = keys
    t[1::2] = values
    return t


@njit_noalloc
def lookup2(mtab, key):
    """``lookup`` on the interleaved table."""
    mask = np.int64((mtab.shape[0] >> 1) - 1)
    i = np.int64(mix64(key) & np.uint64(mask))
    while True:
        k = mtab[_U(2 * i)]
        if k == key:
            return mtab[_U(2 * i + 1)]
        if k == EMPTY:
            return EMPTY
        i = (i + 1) & mask


PAIR_CACHE_BITS = 12  # 4096 recent lookups, 64 KiB
_GOLD = np.uint64(0x9E3779B97F4A7C15)


PAIR_CACHE_LEN = 2 << PAIR_CACHE_BITS  # a pair cache's slots (``uint64`` words); its pair filter follows
_FILTER_BITS_PER_KEY = 8
_FILTER_MIN_BITS = 12
_FILTER_MAX_BITS = 22  # 512 KiB


def new_pair_cache(filt=None):
    """An empty pair cache for ``lookup_cached`` (``[key, value]`` per slot, ``EMPTY`` keys),
    followed by the merge table's pair filter ``filt`` (``pair_filter``) when given."""
    if filt is None:
        return np.full(PAIR_CACHE_LEN, EMPTY, np.uint64)
    pc = np.empty(PAIR_CACHE_LEN + filt.shape[0], np.uint64)
    pc[:PAIR_CACHE_LEN] = EMPTY
    pc[PAIR_CACHE_LEN:] = filt
    return pc


@njit_noalloc(inline="always")
def _filter_bit(h, nwords):
    """The bit of the pair filter (``nwords`` words, a power of two) for the pair whose
    ``key * _GOLD`` is ``h``: the product's top ``6 + log2(nwords)`` bits after the pair
    cache's ``PAIR_CACHE_BITS``."""
    return (h << np.uint64(PAIR_CACHE_BITS)) >> (np.uint64(58) - ctz64(np.uint64(nwords)))


@njit_cached
def _fill_filter(mtab, filt):
    n = filt.shape[0]
    for i in range(0, mtab.shape[0], 2):
        key = mtab[_U(i)]
        if key != EMPTY:
            b = _filter_bit(key * _GOLD, n)
            filt[_U(b >> np.uint64(6))] |= np.uint64(1) << (b & np.uint64(63))


def pair_filter(mtab):
    """``uint64[W]``, ``W`` a power of two: one bit per pair hash, set for every key of the
    interleaved merge table ``mtab`` (about ``_FILTER_BITS_PER_KEY`` bits a key, at most
    ``2^_FILTER_MAX_BITS`` bits). A pair whose bit is clear has no merge: ``lookup_cached``
    answers it without probing the table, which is megabytes (cl100k_base: 8 MiB) where the
    filter stays in the processor's second-level cache. No key is ever missed, so no result
    changes; a set bit is only a maybe (about one pair in ten without a merge)."""
    n = int(np.count_nonzero(mtab[0::2] != EMPTY))
    bits = _FILTER_MIN_BITS
    while bits < _FILTER_MAX_BITS and (1 << bits) < _FILTER_BITS_PER_KEY * n:
        bits += 1
    filt = np.zeros(1 << (bits - 6), np.uint64)
    _fill_filter(mtab, filt)
    return filt


@njit_noalloc(inline="always")
def lookup_cached(mtab, pc, key):
    """``lookup2`` through a small direct-mapped pair cache ``pc`` (``new_pair_cache``): the
    pairs that recur stay dense in the processor's nearest caches; when ``pc`` carries the
    table's pair filter after its slots, a pair whose filter bit is clear is answered
    ``EMPTY`` first, without a probe of either (and not cached: the slots stay with the
    pairs the filter cannot answer). Same result."""
    h = key * _GOLD
    nf = pc.shape[0] - PAIR_CACHE_LEN
    if nf > 0:
        b = _filter_bit(h, nf)
        if (pc[_U(PAIR_CACHE_LEN + np.int64(b >> np.uint64(6)))] >> (b & np.uint64(63))) & np.uint64(1) == 0:
            return EMPTY
    i = np.int64(h >> np.uint64(64 - PAIR_CACHE_BITS)) << 1
    if pc[_U(i)] == key:
        return pc[_U(i + 1)]
    v = lookup2(mtab, key)
    pc[_U(i)] = key
    pc[_U(i + 1)] = v
    return v


@njit_noalloc(inline="always")
def filter_slot(pc, key):
    """The index in ``pc`` of the pair filter word ``lookup_cached`` reads for ``key``
    (``pc``'s first slot when it carries no filter): for a prefetch."""
    nf = pc.shape[0] - PAIR_CACHE_LEN
    if nf <= 0:
        return np.int64(0)
    return PAIR_CACHE_LEN + np.int64(_filter_bit(key * _GOLD, nf) >> np.uint64(6))


@njit_cached
def _insert_all(keys, values, new_keys, new_values):
    mask = np.int64(keys.shape[0] - 1)
    for j in range(new_keys.shape[0]):
        key = new_keys[j]
        i = np.int64(mix64(key) & np.uint64(mask))
        while True:
            k = keys[_U(i)]
            if k == EMPTY or k == key:
                keys[_U(i)] = key
                values[_U(i)] = new_values[j]
                break
            i = (i + 1) & mask


def _capacity(n: int) -> int:
    cap = 8
    while cap < 2 * n:
        cap *= 2
    return cap


def _as_columns(merges):
    """(left, right, rank, merged) as int64 arrays, from any accepted input form."""
    if isinstance(merges, Mapping):
        n = len(merges)
        kv = np.fromiter(itertools.chain.from_iterable(merges.keys()), np.int64, 2 * n).reshape(n, 2)
        vv = np.fromiter(itertools.chain.from_iterable(merges.values()), np.int64, 2 * n).reshape(n, 2)
        return kv[:, 0], kv[:, 1], vv[:, 0], vv[:, 1]
    if isinstance(merges, tuple) and len(merges) == 4 and all(isinstance(c, np.ndarray) for c in merges):
        return tuple(np.asarray(c, dtype=np.int64).ravel() for c in merges)
    if isinstance(merges, np.ndarray):
        a = np.asarray(merges, dtype=np.int64)
        if a.ndim != 2 or a.shape[1] != 4:
            raise ValueError(f"a merge array must have shape (n, 4) [left, right, rank, merged], not {a.shape}")
        return a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    rows = []
    for item in merges:
        if len(item) == 2:  # ((left, right), (rank, merged)), as dict.items() gives
            (l, r), (rk, m) = item
        else:
            l, r, rk, m = item
        rows.append((l, r, rk, m))
    if not rows:
        z = np.zeros(0, np.int64)
        return z, z, z, z
    a = np.array(rows, dtype=np.int64)
    return a[:, 0], a[:, 1], a[:, 2], a[:, 3]


def build_merge_table(merges):
    """Build ``(keys, values)`` (see the module docstring) from the merges.

    ``merges`` is one of: a mapping ``{(left_id, right_id): (rank, merged_id)}``
    (``BPEModel.merges``); a tuple of four integer arrays ``(left, right, rank,
    merged)``; an ``(n, 4)`` integer array with those columns; or an iterable of
    ``((left, right), (rank, merged))`` or ``(left, right, rank, merged)`` items.
    All numbers must fit in 32 unsigned bits; ``rank == 0xFFFFFFFF`` and the pair
    ``(0xFFFFFFFF, 0xFFFFFFFF)`` are refused (they would collide with ``EMPTY``).
    """
    left, right, rank, merged = _as_columns(merges)
    n = left.shape[0]
    for name, col in (("left id", left), ("right id", right), ("rank", rank), ("merged id", merged)):
        if n and (col.min() < 0 or col.max() > _U32):
            raise ValueError(f"merge table: a {name} does not fit in 32 unsigned bits")
    if n and (rank == _U32).any():
        raise ValueError("merge table: rank 0xFFFFFFFF is reserved for the empty sentinel")
    if n and ((left == _U32) & (right == _U32)).any():
        raise ValueError("merge table: the pair (0xFFFFFFFF, 0xFFFFFFFF) is reserved for the empty sentinel")
    new_keys = (left.astype(np.uint64) << np.uint64(32)) | right.astype(np.uint64)
    new_values = (rank.astype(np.uint64) << np.uint64(32)) | merged.astype(np.uint64)
    cap = _capacity(n)
    keys = np.full(cap, EMPTY, dtype=np.uint64)
    values = np.full(cap, EMPTY, dtype=np.uint64)
    _insert_all(keys, values, new_keys, new_values)
    return keys, values


def merge_table_from_model(model):
    """``build_merge_table(model.merges)`` for a ``cpu_ref.models.BPEModel`` whose merges are a dict."""
    if not isinstance(model.merges, Mapping):
        raise TypeError(
            f"the model's merge table is a {type(model.merges).__name__}, not a mapping; "
            "pass build_merge_table the (left, right, rank, merged) columns instead"
        )
    return build_merge_table(model.merges)
