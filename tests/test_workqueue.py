"""The parallel kernels' work queue (``gpu_tok.kernels.workqueue``): every block runs once,
on whichever worker reaches it first, each worker starting with its own run of blocks."""
from __future__ import annotations

import numba
import numpy as np
import pytest
from numba import njit, prange

from gpu_tok.kernels import workqueue
from gpu_tok.kernels._intrinsics import fetch_add1


@pytest.mark.parametrize("nw", [1, 2, 3, 5, 16])
def test_each_worker_tries_every_block_once_its_own_run_first(nw):
    at = workqueue.block_at.py_func
    for n in list(range(0, 20)) + [97]:
        for t in range(nw):
            order = [int(at(c, t, nw, n)[0]) for c in range(n)]
            lo_of = [int(at(c, t, nw, n)[1]) for c in range(n)]
            assert sorted(order) == list(range(n)), (nw, n, t)
            lo, hi = t * n // nw, (t + 1) * n // nw
            assert order[:hi - lo] == list(range(lo, hi))  # prange's run for worker t, front to back
            assert lo_of[:hi - lo] == [-1] * (hi - lo)
            rest, rest_lo = order[hi - lo:], lo_of[hi - lo:]
            for k in range(1, nw):  # then the others' runs, each from its back
                v = (t + k) % nw
                lo2, hi2 = v * n // nw, (v + 1) * n // nw
                assert rest[:hi2 - lo2] == list(range(hi2 - 1, lo2 - 1, -1))
                assert rest_lo[:hi2 - lo2] == [lo2] * (hi2 - lo2)
                rest, rest_lo = rest[hi2 - lo2:], rest_lo[hi2 - lo2:]
            assert rest == []


@njit(parallel=True)
def _run_all(n, nw, ran, spin):
    """Blocks ``0..n-1`` through the work queue; ``ran[b]`` counts the runs of block ``b``
    (atomically). With ``spin``, block 0 waits until every other block but one (block 1,
    the last of its run, which ``take`` leaves to its worker) has run, for at most ``spin``
    rounds; returns whether they had (with a fixed run of blocks per thread, block 0's
    thread would be the only one to run blocks 2.. of its run: never)."""
    flags = np.zeros(n, np.int64)
    done = np.zeros(1, np.int64)
    seen_all = np.zeros(1, np.int64)
    for t in prange(nw):
        for c in range(n):
            b = workqueue.take(flags, c, np.int64(t), nw, n)
            if b >= 0:
                if b == 0 and spin:
                    k = 0
                    while fetch_add1(done, 0, 0) < n - 2 and k < spin:
                        k += 1
                    seen_all[0] = fetch_add1(done, 0, 0) >= n - 2
                fetch_add1(ran, b, 1)
                fetch_add1(done, 0, 1)
    return seen_all[0] == 1


@pytest.mark.parametrize("nw", [1, 2, 3, 8])
def test_every_block_runs_exactly_once(nw):
    """``nw`` above the threads Numba runs (a thread given two workers' turns) or below
    (the others' runs taken over) alike."""
    for n in (0, 1, 2, 7, 64):
        ran = np.zeros(max(n, 1), np.int64)
        _run_all(n, nw, ran, 0)
        assert ran[:n].tolist() == [1] * n


def test_a_free_worker_takes_over_a_busy_workers_blocks():
    """Block 0 does not finish until every other block but block 1 has run (or about a
    tenth of a second has passed): worker 0's blocks 2..7 must be run by the other worker
    meanwhile.
    Numba's ``prange`` alone gives them to worker 0's thread (measured: 16 iterations on
    two threads, 0-7 on one and 8-15 on the other, whatever their work)."""
    if numba.get_num_threads() < 2:
        pytest.skip("one Numba thread: no other worker to take blocks over")
    prev = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        for _ in range(3):
            ran = np.zeros(16, np.int64)
            assert _run_all(16, 2, ran, 50_000_000)
            assert ran.tolist() == [1] * 16
    finally:
        numba.set_num_threads(prev)


@njit(parallel=True)
def _run_ranges(bounds, nw, ran):
    """Every item of the blocks ``bounds`` through ``take_range``; ``ran[i]`` counts the
    runs of item ``i`` (atomically)."""
    flags = np.zeros(bounds.shape[0] - 1, np.int64)
    for t in prange(nw):
        for c in range(bounds.shape[0] - 1):
            d0, d1 = workqueue.take_range(flags, c, np.int64(t), nw, bounds)
            for d in range(d0, d1):
                fetch_add1(ran, d, 1)


@pytest.mark.parametrize("nw", [1, 2, 3, 8])
def test_every_item_of_every_range_runs_exactly_once(nw):
    """``take_range``: the items of the block a worker gets, each block once (blocks of
    unequal sizes, none, and one)."""
    for bounds in ([0], [0, 5], [0, 1, 2, 10, 11, 40], list(range(0, 200, 3)) + [200]):
        b = np.array(bounds, np.int64)
        ran = np.zeros(max(int(b[-1]), 1), np.int64)
        _run_ranges(b, nw, ran)
        assert ran[:int(b[-1])].tolist() == [1] * int(b[-1]), bounds
