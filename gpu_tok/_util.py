"""Small helpers shared by the package (and its tests)."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import threading
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
                pair = (table, np.fromiter(map(id, table), np.int64, size))
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
    from .kernels import lists_cpu as L

    out = [None] * (row_splits.shape[0] - 1)
    r = L.fill_lists(np.require(ids, np.int32, ("C", "W")), np.require(row_splits, np.int64, ("C", "W")), ptrs,
                     id(out), _VAR_HEADER, L.LIST_NEW, L.LIST_SET, L.INCREF, L.ERR_CLEAR)
    if r >= 0:
        raise MemoryError(f"id_lists: no memory for the list of row {r}")
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
