"""Packing Python strings into one UTF-8 byte array without a Python-level copy per text.

CPython keeps the UTF-8 of a ``str``: a pure-ASCII string's characters are its UTF-8, and
``PyUnicode_AsUTF8AndSize`` encodes any other string once and caches the bytes on the
object, the pointer staying valid while the string lives. HF ``tokenizers``, ``tiktoken``
and ``fastokens`` read their inputs through the same call (PyO3), so each of them leaves
that cache behind too (measured in ``docs/decisions/0021-packing-through-cpython-utf8.md``).

``utf8_views`` (GIL held: it calls the C API) takes each string's address and size;
``gather_views`` (parallel, without the GIL) copies them into the packed array.

Array layout: ``objs: int64[n]`` the ``id()`` of each string (the caller holds the
strings), ``ptr, size: int64[n]`` their UTF-8 addresses and byte lengths;
``offsets: int64[n + 1]`` (cumulative sizes) and ``data: uint8[offsets[-1]]`` the packed
bytes, string ``k`` at ``data[offsets[k]:offsets[k + 1]]``.
"""

from __future__ import annotations

import ctypes

from numba import prange

from ._intrinsics import call_i64_i64_i64, call_void, copy_from_address
from .hash_table import njit_cached

# the C API by address (the kernels stay cacheable: no ctypes object inside them)
AS_UTF8 = ctypes.cast(ctypes.pythonapi.PyUnicode_AsUTF8AndSize, ctypes.c_void_p).value
ERR_CLEAR = ctypes.cast(ctypes.pythonapi.PyErr_Clear, ctypes.c_void_p).value


@njit_cached
def utf8_views(objs, ptr, size, as_utf8, err_clear):
    """Fill ``ptr[k], size[k]`` for each string; returns -1, or the index of the first object
    the call refused (not a ``str``, or a lone surrogate: it cannot be UTF-8) with the
    Python error it set cleared. Must run with the GIL held (Numba's default)."""
    base = size.ctypes.data
    for k in range(objs.shape[0]):
        p = call_i64_i64_i64(as_utf8, objs[k], base + 8 * k)
        if p == 0:
            call_void(err_clear)
            return k
        ptr[k] = p
    return -1


@njit_cached(parallel=True, nogil=True)
def gather_views(ptr, offsets, data):
    """Copy string ``k``'s UTF-8 (``ptr[k]``) to ``data[offsets[k]:offsets[k + 1]]``."""
    for k in prange(ptr.shape[0]):
        n = offsets[k + 1] - offsets[k]
        if n > 0:
            copy_from_address(data, offsets[k], ptr[k], n)


@njit_cached(nogil=True)
def gather_views_serial(ptr, offsets, data):
    """``gather_views`` on one thread (small batches)."""
    for k in range(ptr.shape[0]):
        n = offsets[k + 1] - offsets[k]
        if n > 0:
            copy_from_address(data, offsets[k], ptr[k], n)
