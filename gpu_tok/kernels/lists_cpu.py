"""Python lists of ids made by a compiled loop (``_util.id_lists``: ``TokenBatch.to_list()``,
tiktoken's ``encode_batch`` / ``encode_ordinary_batch``, ``encode_batch_fast``).

``fill_lists`` makes one list per row through the C API, called by address (the kernel
stays cacheable: no ctypes object inside it), and puts in it the row's ints taken from a
table of them, one reference more each (``Py_IncRef``) and no new object. Layout:

- ``ids: int32[N]``, every value below ``ptrs.shape[0]``;
- ``row_splits: int64[R + 1]``: row ``r`` is ``ids[row_splits[r]:row_splits[r + 1]]``;
- ``ptrs: int64[V]``: ``ptrs[i]`` is the address of the Python int ``i`` (objects the caller
  keeps alive for the call);
- ``out``: the address of a Python list of ``R`` items (``[None] * R``); item ``r`` is
  replaced by row ``r``'s list (``PyList_SetItem``, which drops the ``None``);
- ``items_at``: the offset of a list's item-array pointer in its object (CPython's
  ``PyListObject.ob_item``, after the variable-size header; ``_util._ITEMS_OK`` checks it
  once per process before this runs). A new list's items are written there directly.

Must run with the GIL held (Numba's default: not ``nogil``). Returns -1, or the row whose
list could not be made (out of memory: the Python error cleared, the caller raises
``MemoryError``; rows before it are done, the rest still ``None``).
"""

from __future__ import annotations

import ctypes

from ._intrinsics import call_i32_i64_i64_i64, call_i64_i64, call_void, call_void_i64, load_at, store_at
from .hash_table import njit_cached, njit_noalloc

# the C API by address
LIST_NEW = ctypes.cast(ctypes.pythonapi.PyList_New, ctypes.c_void_p).value
LIST_SET = ctypes.cast(ctypes.pythonapi.PyList_SetItem, ctypes.c_void_p).value
INCREF = ctypes.cast(ctypes.pythonapi.Py_IncRef, ctypes.c_void_p).value
ERR_CLEAR = ctypes.cast(ctypes.pythonapi.PyErr_Clear, ctypes.c_void_p).value


@njit_noalloc
def _row_list(ids, a, b, ptrs, items_at, list_new, incref, err_clear):
    """A new list of the objects at ``ptrs[ids[k]]`` for ``k`` in ``[a, b)``, a reference
    taken to each, items written at its item array; its address, or 0 (out of memory, the
    error cleared)."""
    lst = call_i64_i64(list_new, b - a)
    if lst == 0:
        call_void(err_clear)
        return lst
    if b > a:
        items = load_at(lst + items_at)
        for k in range(b - a):
            p = ptrs[ids[a + k]]
            call_void_i64(incref, p)
            store_at(items + 8 * k, p)
    return lst


@njit_cached
def fill_lists(ids, row_splits, ptrs, out, items_at, list_new, list_set, incref, err_clear):
    """Row ``r``'s list of ints into item ``r`` of the list at ``out`` (module docstring)."""
    for r in range(row_splits.shape[0] - 1):
        lst = _row_list(ids, row_splits[r], row_splits[r + 1], ptrs, items_at, list_new, incref, err_clear)
        if lst == 0:
            return r
        call_i32_i64_i64_i64(list_set, out, r, lst)  # steals lst's reference
    return -1


TUPLE_NEW = ctypes.cast(ctypes.pythonapi.PyTuple_New, ctypes.c_void_p).value
GC_UNTRACK = ctypes.cast(ctypes.pythonapi.PyObject_GC_UnTrack, ctypes.c_void_p).value


@njit_cached
def fill_row(ids, a, b, ptrs, out, items_at, list_new, list_set, incref, err_clear):
    """One row: the list of the objects ``ptrs[ids[a:b]]`` (``_row_list``) into item 0 of the
    list at ``out``; returns 0, or -1 (out of memory, the error cleared)."""
    lst = _row_list(ids, a, b, ptrs, items_at, list_new, incref, err_clear)
    if lst == 0:
        return -1
    call_i32_i64_i64_i64(list_set, out, 0, lst)
    return 0


@njit_noalloc
def _pair_list(xs, ys, a, b, ptrs, out, r, items_at, list_new, tuple_new, gc_untrack, list_set, incref, err_clear):
    """A list of tuples ``(xs[k], ys[k])`` for ``k`` in ``[a, b)`` (ints from ``ptrs``; a
    tuple's two items inline at ``items_at``, as a list's item array is) into item ``r`` of
    the list at ``out``; returns 0, or -1 (out of memory, the error cleared; what was made
    is freed with the list). Each tuple is taken off the cyclic collector's list as it is
    made (``PyObject_GC_UnTrack``: a tuple of ints can be in no cycle, and the collector
    itself untracks such tuples when it first meets them; met here, a million of them cost
    the collections they started more than making them)."""
    lst = call_i64_i64(list_new, b - a)
    if lst == 0:
        call_void(err_clear)
        return -1
    call_i32_i64_i64_i64(list_set, out, r, lst)  # owned by out from here: freed with it on an error
    if b > a:
        items = load_at(lst + items_at)
        for k in range(b - a):
            t = call_i64_i64(tuple_new, 2)
            if t == 0:
                call_void(err_clear)
                return -1
            call_void_i64(gc_untrack, t)
            p = ptrs[xs[a + k]]
            q = ptrs[ys[a + k]]
            call_void_i64(incref, p)
            call_void_i64(incref, q)
            store_at(t + items_at, p)
            store_at(t + items_at + 8, q)
            store_at(items + 8 * k, t)
    return 0


@njit_cached
def fill_pair_row(xs, ys, a, b, ptrs, out, items_at, list_new, tuple_new, gc_untrack, list_set, incref, err_clear):
    """One row of pairs (``_pair_list``) into item 0 of the list at ``out``; returns 0, or -1
    (out of memory, the error cleared)."""
    return _pair_list(xs, ys, a, b, ptrs, out, 0, items_at, list_new, tuple_new, gc_untrack, list_set, incref,
                      err_clear)


@njit_cached
def fill_pair_lists(xs, ys, row_splits, ptrs, out, items_at, list_new, tuple_new, gc_untrack, list_set, incref,
                    err_clear):
    """Row ``r``'s list of pairs (``_pair_list`` over ``[row_splits[r], row_splits[r + 1])``)
    into item ``r`` of the list at ``out``; returns -1, or the row whose list could not be
    made (out of memory: the error cleared; as ``fill_lists``)."""
    for r in range(row_splits.shape[0] - 1):
        if _pair_list(xs, ys, row_splits[r], row_splits[r + 1], ptrs, out, r, items_at, list_new, tuple_new,
                      gc_untrack, list_set, incref, err_clear) < 0:
            return r
    return -1
