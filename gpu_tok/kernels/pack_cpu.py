"""Packing Python strings into one UTF-8 byte array without a Python-level copy per text.

CPython keeps the UTF-8 of a ``str``: a pure-ASCII string's characters are its UTF-8, and
``PyUnicode_AsUTF8AndSize`` encodes any other string once and caches the bytes on the
object, the pointer staying valid while the string lives. HF ``tokenizers``, ``tiktoken``
and ``fastokens`` read their inputs through the same call (PyO3), so each of them leaves
that cache behind too (measured in ``docs/decisions/0021-packing-through-cpython-utf8.md``).

``utf8_views`` (GIL held: it calls the C API) takes each string's address and size;
``gather_views`` (parallel, without the GIL) copies them into the packed array;
``gather_views_probe`` also flags each text that holds one of up to three given bytes,
testing it while its bytes are still in the first-level cache (the byte-level engine's
added-token pass then skips the texts without an added token's first byte).

Array layout: ``objs: int64[n]`` the ``id()`` of each string (the caller holds the
strings), ``ptr, size: int64[n]`` their UTF-8 addresses and byte lengths;
``offsets: int64[n + 1]`` (cumulative sizes) and ``data: uint8[offsets[-1]]`` the packed
bytes, string ``k`` at ``data[offsets[k]:offsets[k + 1]]``; ``probe: uint8[1..3]`` the
bytes looked for and ``flags: uint8[n]`` (1: string ``k`` holds one of them).
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba import prange

from ._intrinsics import call_i64_i64_i64, call_void, copy_from_address, range_mask64
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


@njit_cached(nogil=True)
def _holds(data, a, b, probe):
    """Whether ``data[a:b]`` holds one of the bytes of ``probe`` (64 bytes a compare)."""
    P = probe.shape[0]
    i = a
    while i + 64 <= b:
        m = range_mask64(data, i, probe[0], probe[0])
        for f in range(1, P):
            m |= range_mask64(data, i, probe[f], probe[f])
        if m != 0:
            return True
        i += 64
    while i < b:
        v = data[i]
        for f in range(P):
            if v == probe[f]:
                return True
        i += 1
    return False


@njit_cached(nogil=True, inline="always")
def _copy_probe(ptr, offsets, data, probe, flags, k):
    """String ``k`` of ``gather_views_probe``."""
    a = offsets[k]
    n = offsets[k + 1] - a
    f = 0
    if n > 0:
        copy_from_address(data, a, ptr[k], n)
        if _holds(data, a, a + n, probe):
            f = 1
    flags[k] = f


@njit_cached(parallel=True, nogil=True)
def gather_views_probe(ptr, offsets, data, probe, flags):
    """``gather_views``, and ``flags[k] = 1`` where string ``k`` holds a byte of ``probe``."""
    for k in prange(ptr.shape[0]):
        _copy_probe(ptr, offsets, data, probe, flags, np.int64(k))


@njit_cached(nogil=True)
def gather_views_probe_serial(ptr, offsets, data, probe, flags):
    """``gather_views_probe`` on one thread (small batches)."""
    for k in range(ptr.shape[0]):
        _copy_probe(ptr, offsets, data, probe, flags, k)
