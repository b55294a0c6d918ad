"""Small helpers shared by the package (and its tests)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import threading
from collections import abc
from pathlib import Path
from typing import List, Tuple, Union

import numpy as np


def sha256_file(path: Union[str, Path]) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_ONE_TEXT_CHARS = 1000  # encode_batch_ids of one text up to this many characters: the one-text path
_SPARSE_MIN = 1 << 22  # bytes from which sparse_empty maps its own pages


def sparse_empty(n: int, dtype) -> np.ndarray:
    """``np.empty(n, dtype)`` for an array of which a call writes only a part, here and
    there (slots reserved for the most tokens a document could make, written for the
    tokens it does make): its own anonymous mapping with huge pages declined
    (``MADV_NOHUGEPAGE``), so that a page never written costs nothing. A fresh
    ``np.empty`` that size is backed by 2 MiB pages where the host makes them on request
    (NumPy asks), each zeroed whole at its first write however little of it is then
    used. Below ``_SPARSE_MIN`` bytes, or where ``mmap`` cannot decline huge pages,
    ``np.empty``. The mapping lives as long as the array (and its views)."""
    import mmap

    dtype = np.dtype(dtype)
    nbytes = max(int(n), 1) * dtype.itemsize
    if nbytes < _SPARSE_MIN or not hasattr(mmap, "MADV_NOHUGEPAGE"):
        return np.empty(n, dtype)
    mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        mm.madvise(mmap.MADV_NOHUGEPAGE)
    except OSError:
        pass  # a kernel without transparent huge pages: 4 KiB pages anyway
    return np.frombuffer(mm, dtype, int(n))


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused while a block builds many acyclic objects
    (``Encoding`` lists: each allocation would otherwise count toward a collection that
    walks them all again); restored as it was, whatever the block raises."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_INTS_MAX = 1 << 21  # the largest id table id_lists keeps (2^21 ints: about 75 MB)
_INTS_STEP = 1 << 16
# _ints[0] = (table, ptrs): table[i] is the int i, ptrs[i] its address (id_lists);
# replaced by a larger pair, never changed
_ints = [(np.zeros(0, object), np.zeros(0, np.int64))]
_ints_lock = threading.Lock()


def _int_table(n: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(table, ptrs)``: an object array whose item ``i`` is the Python int ``i`` for every
    ``i < n``, and ``int64`` addresses of those ints (``id``); made once per size step,
    shared by every caller (who keeps the pair while it uses the addresses)."""
    pair = _ints[0]
    if pair[0].shape[0] < n:
        with _ints_lock:
            pair = _ints[0]
            if pair[0].shape[0] < n:
                size = min(_INTS_MAX, -(-n // _INTS_STEP) * _INTS_STEP)
                table = np.arange(size).astype(object)
                pair = (table, object_addresses(table))
                _ints[0] = pair
    return pair


def id_lists(ids: np.ndarray, row_splits: np.ndarray) -> List[List[int]]:
    """``[ids[row_splits[i]:row_splits[i + 1]].tolist() for i ...]``, the same lists made
    faster: each id's ``int`` is taken from a table of them (``_int_table``: a reference
    more, not a new object), so the lists cost no allocation per id, and their ints none
    to free; a compiled loop (``kernels/lists_cpu.fill_lists``) makes the lists and fills
    them (8 MB of English prose, cl100k_base, 2.0M ids in 643 rows: 44 ms to make the
    lists and 16 ms to free them with ``tolist`` per row; 26 and 2 ms with the table
    through NumPy, ``take`` then ``tolist`` per row; see RESULTS for the compiled loop).
    Where CPython's list layout was not confirmed (``_ITEMS_OK``), the NumPy way. Ids
    outside ``[0, 2^21)`` fall back to ``tolist``. CuPy arrays (``device="cuda"``'s
    ``TokenBatch``) are copied to the host first."""
    if not isinstance(ids, np.ndarray):
        ids = ids.get()
    if ids.shape[0] == 0:
        return [[] for _ in range(row_splits.shape[0] - 1)]
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= _INTS_MAX:
        b = row_splits.tolist()
        return [ids[b[i]:b[i + 1]].tolist() for i in range(len(b) - 1)]
    table, ptrs = _int_table(hi + 1)
    if not _ITEMS_OK:
        b = row_splits.tolist()
        obj = table.take(ids)
        return [obj[b[i]:b[i + 1]].tolist() for i in range(len(b) - 1)]
    return object_lists(np.require(ids, np.int32, ("C", "W")), np.require(row_splits, np.int64, ("C", "W")), ptrs)


def object_lists(ids: np.ndarray, row_splits: np.ndarray, ptrs: np.ndarray) -> List[list]:
    """Per row ``r``, the list of the objects at ``ptrs[ids[k]]`` for ``k`` in
    ``[row_splits[r], row_splits[r + 1])``, a reference more to each, in one compiled call
    (``lists_cpu.fill_lists``). The caller keeps ``ids`` ``int32`` and ``row_splits``
    ``int64``, C-contiguous, the values below ``ptrs.shape[0]``, the objects alive, and
    ``_ITEMS_OK`` true."""
    from .kernels import lists_cpu as L

    out = [None] * (row_splits.shape[0] - 1)
    r = L.fill_lists(ids, row_splits, ptrs, id(out), _VAR_HEADER, L.LIST_NEW, L.LIST_SET, L.INCREF, L.ERR_CLEAR)
    if r >= 0:
        raise MemoryError(f"object_lists: no memory for the list of row {r}")
    return out


_ROW_MIN = 32  # rows shorter than this: tolist (a compiled call costs about a microsecond)


def _row_table(arrays, a: int, b: int):
    """The int table's addresses for the values of ``arr[a:b]`` of every array, or None
    where the rows are short (``_value_table``'s otherwise)."""
    if b - a < _ROW_MIN:
        return None
    return _value_table(arrays, a, b)


def _value_table(arrays, a: int, b: int):
    """The int table (``_int_table``'s pair) holding the values of ``arr[a:b]`` of every
    array (``b > a``), or None where a value is outside ``[0, 2^21)`` or the list layout
    was not confirmed (then the caller's NumPy way)."""
    if not _ITEMS_OK:
        return None
    lo = min(int(x[a:b].min()) for x in arrays)
    hi = max(int(x[a:b].max()) for x in arrays)
    if lo < 0 or hi >= _INTS_MAX:
        return None
    return _int_table(hi + 1)


def int_row(ids: np.ndarray, a: int, b: int) -> List[int]:
    """``ids[a:b].tolist()``, the ints taken from the shared table (``id_lists``, one row:
    ``lists_cpu.fill_row``): an ``Encoding``'s ``ids`` when read."""
    pair = _row_table((ids,), a, b)
    if pair is None or ids.dtype != np.int32 or not ids.flags.c_contiguous:
        return ids[a:b].tolist()
    return object_row(ids, a, b, pair[1])


def object_row(ids: np.ndarray, a: int, b: int, ptrs: np.ndarray) -> list:
    """The list of the objects at ``ptrs[ids[k]]`` for ``k`` in ``[a, b)``, a reference more
    to each (``lists_cpu.fill_row``). The caller keeps ``ids`` ``int32``, C-contiguous, its
    values below ``ptrs.shape[0]``, the objects alive, and ``_ITEMS_OK`` true."""
    from .kernels import lists_cpu as L

    out = [None]
    if L.fill_row(ids, a, b, ptrs, id(out), _VAR_HEADER, L.LIST_NEW, L.LIST_SET, L.INCREF, L.ERR_CLEAR) < 0:
        raise MemoryError("object_row: no memory for the list")
    return out[0]


def object_addresses(arr: np.ndarray) -> np.ndarray:
    """``int64`` addresses (``id``) of an object array's items, read from its item array."""
    arr = np.ascontiguousarray(arr)
    n = arr.shape[0]
    if not n:
        return np.zeros(0, np.int64)
    return np.frombuffer((ctypes.c_int64 * n).from_address(arr.ctypes.data), np.int64).copy()


def pair_row(xs: np.ndarray, ys: np.ndarray, a: int, b: int) -> List[tuple]:
    """``list(zip(xs[a:b].tolist(), ys[a:b].tolist()))`` made by a compiled loop (tuples
    through the C API, their ints from the shared table: ``lists_cpu.fill_pair_row``): an
    ``Encoding``'s ``offsets`` when read (8 ns a token where the NumPy way took about 120)."""
    pair = _row_table((xs, ys), a, b)
    if (pair is None or xs.dtype != np.int64 or ys.dtype != np.int64 or not xs.flags.c_contiguous
            or not ys.flags.c_contiguous):
        return list(zip(xs[a:b].tolist(), ys[a:b].tolist()))
    from .kernels import lists_cpu as L

    out = [None]
    r = L.fill_pair_row(xs, ys, a, b, pair[1], id(out), _VAR_HEADER, L.LIST_NEW, L.TUPLE_NEW, L.GC_UNTRACK, L.LIST_SET,
                        L.INCREF, L.ERR_CLEAR)
    if r < 0:
        raise MemoryError("pair_row: no memory for the list")
    return out[0]


def pair_lists(xs: np.ndarray, ys: np.ndarray, row_splits: np.ndarray) -> List[List[tuple]]:
    """``[pair_row(xs, ys, row_splits[r], row_splits[r + 1]) for r ...]`` in one compiled
    call (``lists_cpu.fill_pair_lists``); the NumPy way where the rows' values are outside
    the int table or the list layout was not confirmed."""
    R = row_splits.shape[0] - 1
    a, b = int(row_splits[0]), int(row_splits[-1])
    if b == a:
        return [[] for _ in range(R)]
    pair = _value_table((xs, ys), a, b)  # (kept here while its addresses are used)
    if pair is None:
        b = row_splits.tolist()
        return [list(zip(xs[b[r]:b[r + 1]].tolist(), ys[b[r]:b[r + 1]].tolist())) for r in range(R)]
    from .kernels import lists_cpu as L

    out = [None] * R
    r = L.fill_pair_lists(np.require(xs, np.int64, ("C",)), np.require(ys, np.int64, ("C",)),
                          np.require(row_splits, np.int64, ("C",)), pair[1], id(out), _VAR_HEADER, L.LIST_NEW,
                          L.TUPLE_NEW, L.GC_UNTRACK, L.LIST_SET, L.INCREF, L.ERR_CLEAR)
    if r >= 0:
        raise MemoryError(f"pair_lists: no memory for the list of row {r}")
    return out


def _items_layout_ok() -> bool:
    """Whether a list's item-array pointer and a tuple's items are where ``_VAR_HEADER``
    says (CPython's layout, 64-bit)."""
    probe = ["a", "b", 1.5]
    for seq in (probe, tuple(probe)):
        base = id(seq) + _VAR_HEADER
        if type(seq) is list:
            base = ctypes.c_void_p.from_address(base).value
        got = list((ctypes.c_int64 * len(seq)).from_address(base))
        if got != [id(x) for x in seq]:
            return False
    return True


_VAR_HEADER = tuple.__basicsize__  # ob_refcnt, ob_type, ob_size: where the items (or their array's address) are
_ITEMS_OK = ctypes.sizeof(ctypes.c_void_p) == 8 and _items_layout_ok()


class PackedTexts(abc.Sequence):
    """Documents whose UTF-8 is already in memory (the corpus job's reader writes it): to
    whatever reads them as a sequence, ``str``s (each decoded when read); to ``pack`` /
    ``pack_probed``, their bytes, copied from where they lie. So no ``str`` is made for a
    document and no UTF-8 is cached on one (for multilingual text the two cost about as much
    as the encoding on two threads; ``benchmarks/RESULTS.md``, 2026-12-07 07:30).

    ``ptr``, ``size``: ``int64[n]``, each document's address and byte length; ``owners``:
    the objects that hold those bytes, kept alive here. The bytes must be valid UTF-8 (so
    without lone surrogates, which UTF-8 cannot hold) and must not change while this
    lives: ``from_buffer``'s callers vouch for both."""

    __slots__ = ("ptr", "size", "owners")

    def __init__(self, ptr: np.ndarray, size: np.ndarray, owners: tuple):
        self.ptr, self.size, self.owners = ptr, size, owners

    @classmethod
    def from_buffer(cls, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> "PackedTexts":
        """Document ``k`` at ``buf[starts[k]:ends[k]]`` (``buf``: a C-contiguous ``uint8`` array)."""
        starts = np.asarray(starts, np.int64)
        return cls(buf.ctypes.data + starts, np.asarray(ends, np.int64) - starts, (buf,))

    @classmethod
    def join(cls, parts: "abc.Sequence[PackedTexts]") -> "PackedTexts":
        """One sequence of the documents of ``parts``, in order."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), ())
        owners: dict = {}
        for p in parts:
            owners.update((id(o), o) for o in p.owners)
        return cls(np.concatenate([p.ptr for p in parts]), np.concatenate([p.size for p in parts]),
                   tuple(owners.values()))

    def __len__(self) -> int:
        return self.ptr.shape[0]

    def __getitem__(self, k):
        if isinstance(k, slice):
            return PackedTexts(self.ptr[k], self.size[k], self.owners)
        n = int(self.size[k])  # an index out of range raises IndexError here
        return ctypes.string_at(int(self.ptr[k]), n).decode("utf-8") if n else ""

    def __iter__(self):
        for p, n in zip(self.ptr.tolist(), self.size.tolist()):
            yield ctypes.string_at(p, n).decode("utf-8") if n else ""

    def __reduce__(self):  # pickled as the list of its documents (addresses do not travel)
        return list, (list(self),)


def text_list(texts) -> "abc.Sequence[str]":
    """``texts`` as a list, unless it is one already or a ``PackedTexts`` (kept as it is: its
    documents are packed from their bytes)."""
    return texts if isinstance(texts, (list, PackedTexts)) else list(texts)
