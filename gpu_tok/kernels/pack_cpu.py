"""Packing Python strings into one UTF-8 byte array without a Python-level copy per text.

CPython keeps the UTF-8 of a ``str``: a pure-ASCII string's characters are its UTF-8, and
``PyUnicode_AsUTF8AndSize`` encodes any other string once and caches the bytes on the
object, the pointer staying valid while the string lives. HF ``tokenizers``, ``tiktoken``
and ``fastokens`` read their inputs through the same call (PyO3), so each of them leaves
that cache behind too (measured in ``docs/decisions/0021-packing-through-cpython-utf8.md``).

``utf8_views`` (GIL held: it calls the C API) takes each string's address and size;
``gather_views`` (parallel, without the GIL) copies them into the packed array;
``gather_views_probe`` also flags each text that holds a byte in given ranges (up to
four), testing it while its bytes are still in the first-level cache (the byte-level
engine's added-token pass then skips the texts without an added token's first byte, and
its NFC check the texts without a lead byte of a character NFC may change).

Array layout: ``objs: int64[n]`` the ``id()`` of each string (the caller holds the
strings), ``ptr, size: int64[n]`` their UTF-8 addresses and byte lengths;
``offsets: int64[n + 1]`` (cumulative sizes) and ``data: uint8[offsets[-1]]`` the packed
bytes, string ``k`` at ``data[offsets[k]:offsets[k + 1]]``; ``probe: int64[1..4, 3]`` rows
``(lo, hi, bit)``: byte ranges looked for; ``pairs: int64[P, 3]`` rows ``(first, second,
bit)`` (rows of one bit next to each other; P may be 0): byte pairs a bit also needs; and
``flags: uint8[n]``: for string ``k`` the bits of the ranges some byte of it falls in, a
bit with pairs only where one of them occurs in it too.
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


@njit_cached(nogil=True, inline="always")
def _mask256(data, i, lo, hi):
    """Non-zero when a byte of ``data[i:i + 256]`` is in ``[lo, hi]``."""
    return (range_mask64(data, i, lo, hi) | range_mask64(data, i + 64, lo, hi)
            | range_mask64(data, i + 128, lo, hi) | range_mask64(data, i + 192, lo, hi))


@njit_cached(nogil=True)
def _probe_bits(data, a, b, probe):
    """The bits of the ranges of ``probe`` (1 to 4 rows) some byte of ``data[a:b]`` falls
    in: vector compares of 64 bytes, four or-ed a row per step, then the last bytes as
    one 64-byte window ending at ``b`` (where the text has 64 bytes); it stops once it
    has them all."""
    R = probe.shape[0]
    r1 = min(1, R - 1)
    r2 = min(2, R - 1)
    r3 = min(3, R - 1)
    lo0, hi0, b0 = probe[0, 0], probe[0, 1], probe[0, 2]
    lo1, hi1, b1 = probe[r1, 0], probe[r1, 1], probe[r1, 2]
    lo2, hi2, b2 = probe[r2, 0], probe[r2, 1], probe[r2, 2]
    lo3, hi3, b3 = probe[r3, 0], probe[r3, 1], probe[r3, 2]
    want = b0 | b1 | b2 | b3
    got = 0
    i = a
    while i + 256 <= b and got != want:  # four blocks a step, their masks or-ed
        got |= b0 * (_mask256(data, i, lo0, hi0) != 0)
        if R > 1:  # loop-invariant: the compiler makes a loop per row count
            got |= b1 * (_mask256(data, i, lo1, hi1) != 0)
            if R > 2:
                got |= b2 * (_mask256(data, i, lo2, hi2) != 0)
                if R > 3:
                    got |= b3 * (_mask256(data, i, lo3, hi3) != 0)
        i += 256
    # the 64-byte tail in a loop of its own: one loop with the step chosen per iteration
    # (256 or 64) kept the compiler from splitting it per row count: packing with two
    # rows 0.54 -> 0.85 ms (8 MB of code, two threads)
    while i + 64 <= b and got != want:
        got |= b0 * (range_mask64(data, i, lo0, hi0) != 0)
        if R > 1:  # loop-invariant: the compiler makes a loop per row count
            got |= b1 * (range_mask64(data, i, lo1, hi1) != 0)
            if R > 2:
                got |= b2 * (range_mask64(data, i, lo2, hi2) != 0)
                if R > 3:
                    got |= b3 * (range_mask64(data, i, lo3, hi3) != 0)
        i += 64
    if i < b and got != want and b - a >= 64:
        # the last bytes through the window that ends at ``b`` (it overlaps bytes already
        # tested, which changes nothing): byte by byte they took most of the time on short
        # texts (8,000 texts of 1 KB: 1.5 ms of a 27 ms gpt2 call, one thread)
        i = b - 64
        got |= b0 * (range_mask64(data, i, lo0, hi0) != 0)
        if R > 1:
            got |= b1 * (range_mask64(data, i, lo1, hi1) != 0)
            if R > 2:
                got |= b2 * (range_mask64(data, i, lo2, hi2) != 0)
                if R > 3:
                    got |= b3 * (range_mask64(data, i, lo3, hi3) != 0)
        i = b
    while i < b and got != want:  # a text of fewer than 64 bytes
        v = data[i]
        for r in range(R):
            if probe[r, 0] <= v and v <= probe[r, 1]:
                got |= probe[r, 2]
        i += 1
    return got


@njit_cached(nogil=True)
def _has_pair(data, a, b, pairs, bit):
    """Whether ``data[a:b]`` holds one of the byte pairs of the rows ``(first, second,
    bit)`` of ``pairs`` with this ``bit``, the two bytes one after the other: vector
    compares of 64 bytes (the second byte's mask loaded one byte on), stopping at the
    first found."""
    P = pairs.shape[0]
    i = a
    while i + 65 <= b:
        m = np.uint64(0)
        for r in range(P):
            if pairs[r, 2] == bit:
                m |= range_mask64(data, i, pairs[r, 0], pairs[r, 0]) & range_mask64(data, i + 1, pairs[r, 1], pairs[r, 1])
        if m != 0:
            return True
        i += 64
    while i + 1 < b:
        for r in range(P):
            if pairs[r, 2] == bit and data[i] == pairs[r, 0] and data[i + 1] == pairs[r, 1]:
                return True
        i += 1
    return False


@njit_cached(nogil=True, inline="always")
def _copy_probe(ptr, offsets, data, probe, pairs, flags, k):
    """String ``k`` of ``gather_views_probe``."""
    a = offsets[k]
    n = offsets[k + 1] - a
    f = 0
    if n > 0:
        copy_from_address(data, a, ptr[k], n)
        f = _probe_bits(data, a, a + n, probe)
        for r in range(pairs.shape[0]):  # a bit with pairs: kept where one of them is
            bit = pairs[r, 2]
            if f & bit and (r == 0 or pairs[r - 1, 2] != bit) and not _has_pair(data, a, a + n, pairs, bit):
                f &= ~bit
    flags[k] = f


@njit_cached(parallel=True, nogil=True)
def gather_views_probe(ptr, offsets, data, probe, pairs, flags):
    """``gather_views``, and ``flags[k]``: the bits of the ranges of ``probe`` string ``k``
    holds a byte of; of those, a bit with rows in ``pairs`` only where the string also
    holds one of their byte pairs (``_has_pair``), tested while its bytes are hot."""
    for k in prange(ptr.shape[0]):
        _copy_probe(ptr, offsets, data, probe, pairs, flags, np.int64(k))


@njit_cached(nogil=True)
def gather_views_probe_serial(ptr, offsets, data, probe, pairs, flags):
    """``gather_views_probe`` on one thread (small batches)."""
    for k in range(ptr.shape[0]):
        _copy_probe(ptr, offsets, data, probe, pairs, flags, k)
