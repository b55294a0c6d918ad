"""Blocks of a parallel kernel handed to its workers as they free up.

Numba's ``prange`` gives each thread a fixed, contiguous run of the iterations, with the
OpenMP and workqueue threading layers alike and whatever ``numba.parallel_chunksize`` says
(measured, Numba 0.68: 16 iterations, the first with ten times the others' work, two
threads: 0-7 ran on one thread and 8-15 on the other, chunk size 1 or not). A kernel whose
blocks take unequal time (the word caches miss through one block and hit through the next;
another tenant of the host takes a core for a while) then lasts as long as its slowest run,
the other workers idle at the end (seen by timing each block of ``encode_fused_parallel``:
8 MB of code, cl100k, two threads, text not seen before).

Here the kernel's ``prange`` runs over its ``nw`` workers (the call's thread count), and
worker ``t`` goes through the blocks in the order ``block_at(c, t, nw, n)``, ``c = 0, 1,
...``: first its own run (the blocks ``prange`` would have given it, front to back: on a
batch encoded again, the blocks whose words its caches hold), then the other workers'
runs, each from its back. ``take`` gives it the blocks it ``claim``s first (an atomic add
on the block's flag), so each block runs exactly once, on whichever worker reaches it
first, except that a worker's last block left is never taken over (``take``). The result
does not depend on who ran what: the workers' caches change no id.

    flags = np.zeros(n, np.int64)
    for t in prange(nw):
        for c in range(n):
            b = take(flags, c, np.int64(t), nw, n)
            if b >= 0:
                ...  # block b, on worker get_thread_id()

Every block runs once whatever ``nw`` is against the threads Numba runs: each worker's
turn runs what is left of its own run (a thread given two workers' turns runs them one
after the other)."""

from __future__ import annotations

import numpy as np

from ._intrinsics import fetch_add1
from .hash_table import njit_noalloc
from .hash_table import uidx as _U


@njit_noalloc(inline="always")
def _run_of(t, nw, n):
    """Worker ``t``'s own run of the ``n`` blocks: ``[lo, hi)`` (``prange``'s split)."""
    return t * n // nw, (t + 1) * n // nw


@njit_noalloc(inline="always")
def block_at(c, t, nw, n):
    """The ``c``-th block (``0 <= c < n``) worker ``t`` of ``nw`` tries, and the first block
    of the run it is in, or -1 when that is the worker's own run: its own run front to
    back, then the runs of workers ``t + 1, t + 2, ...`` (mod ``nw``), each back to front."""
    lo, hi = _run_of(t, nw, n)
    if c < hi - lo:
        return lo + c, np.int64(-1)
    c -= hi - lo
    for k in range(1, nw):
        lo, hi = _run_of((t + k) % nw, nw, n)
        if c < hi - lo:
            return hi - 1 - c, lo
        c -= hi - lo
    return np.int64(-1), np.int64(-1)


@njit_noalloc(inline="always")
def take(flags, c, t, nw, n):
    """The block worker ``t`` of ``nw`` runs at its ``c``-th turn (``block_at``), or -1: a
    block of its own run that it ``claim``s; one of another worker's run only while that
    worker has the block before it still to run. A block taken over is one the taker's
    word caches have not seen the text around (a language, a code base), so it runs
    slower there than on its own worker: a worker's last block is left to it."""
    b, lo = block_at(c, t, nw, n)
    if lo < 0:
        return b if claim(flags, b) else np.int64(-1)
    if b > lo and flags[_U(b - 1)] == 0 and claim(flags, b):
        return b
    return np.int64(-1)


@njit_noalloc(inline="always")
def claim(flags, b):
    """Whether this worker gets block ``b`` (``flags``: int64, zero before the kernel): true
    for exactly one of the workers that ask (the flag read first, so a block already taken
    costs no atomic write)."""
    return flags[_U(b)] == 0 and fetch_add1(flags, b, 1) == 0


@njit_noalloc(inline="always")
def take_range(flags, c, t, nw, bounds):
    """``take`` for blocks given by their ``bounds`` (``int64[n + 1]``, e.g. documents of
    about equal bytes): ``(bounds[b], bounds[b + 1])`` for the block ``b`` worker ``t`` runs
    at its ``c``-th turn, or ``(0, 0)``, so a kernel loops over what it gets:

        flags = np.zeros(bounds.shape[0] - 1, np.int64)
        for t in prange(nw):
            for c in range(bounds.shape[0] - 1):
                d0, d1 = take_range(flags, c, np.int64(t), nw, bounds)
                for d in range(d0, d1):
                    ...  # document d, on worker get_thread_id()"""
    b = take(flags, c, t, nw, bounds.shape[0] - 1)
    if b < 0:
        return np.int64(0), np.int64(0)
    return bounds[_U(b)], bounds[_U(b + 1)]
