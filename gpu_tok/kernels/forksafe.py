"""Numba's parallel kernels in a process forked from one that has run them.

Numba's OpenMP threading layer ("omp" with GNU libgomp, the one a pip install of Numba
gets) stops a forked child that launches a parallel region once its parent had launched
one: "Terminating: fork() called from a process already using GNU OpenMP, this is unsafe."
(measured 2026-12-07, Numba 0.68.1: even with one thread). A ``multiprocessing`` pool with
the "fork" start method (Linux's default before Python 3.14) or PyTorch ``DataLoader``
workers (they fork) lost every worker that encoded after the parent had encoded.

In such a child (``os.register_at_fork``) ``serial_now()`` is True: the engines plan one
thread (``fast_cpu.default_threads``), so they take their serial kernels, and a kernel
compiled with ``parallel=True`` (``njit_cached``) runs a serial copy of itself, compiled with
``parallel=False`` under a name of its own (``<qualname>__serial``: its own entry in Numba's
on-disk cache), so that no parallel region is launched there. ``tokenizers`` does the same in
spirit: a forked child turns its parallelism off. Other processes (the parent, children
started by "spawn" or "forkserver", children of a parent that never ran a parallel kernel)
are unaffected.
"""
from __future__ import annotations

import os
import types

_STATE = {"serial": False}
_CLASSES: dict = {}


def _omp_in_use() -> bool:
    """Whether this process has started Numba's OpenMP threading layer."""
    try:
        from numba.np.ufunc import parallel

        return bool(parallel._is_initialized) and parallel._threading_layer == "omp"
    except Exception:  # noqa: BLE001 - another Numba's internals: assume the worst
        return True


def _after_fork_in_child() -> None:
    if _omp_in_use():
        _STATE["serial"] = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def serial_now() -> bool:
    """True in a process forked from one that had started Numba's OpenMP layer."""
    return _STATE["serial"]


def fork_safe(dispatcher, njit_kw: dict):
    """``dispatcher`` (a ``parallel=True`` kernel), made to run its serial copy where
    ``serial_now()``: its class becomes a subclass whose ``__call__`` checks first."""
    base = type(dispatcher)
    cls = _CLASSES.get(base)
    if cls is None:
        def __call__(self, *args, **kwargs):
            if _STATE["serial"]:
                return self._gpu_tok_serial()(*args, **kwargs)
            return base.__call__(self, *args, **kwargs)

        def _gpu_tok_serial(self):
            twin = self.__dict__.get("_gpu_tok_twin")
            if twin is None:
                from .hash_table import njit_cached

                f = self.py_func
                g = types.FunctionType(f.__code__, f.__globals__, f.__name__ + "__serial", f.__defaults__,
                                       f.__closure__)
                g.__qualname__ = f.__qualname__ + "__serial"
                g.__module__ = f.__module__
                g.__doc__ = f.__doc__
                # (a dispatcher Numba rebuilt from a pickle has no options kept: the defaults)
                kw = {k: v for k, v in self.__dict__.get("_gpu_tok_njit_kw", {}).items() if k != "parallel"}
                twin = njit_cached(**kw)(g)  # cached where a cache location is writable
                self.__dict__["_gpu_tok_twin"] = twin
            return twin

        name = f"ForkSafe{base.__name__}"
        cls = type(name, (base,), {"__call__": __call__, "_gpu_tok_serial": _gpu_tok_serial,
                                   "__module__": __name__, "__qualname__": name})
        globals()[name] = cls  # found by name where a dispatcher is pickled
        _CLASSES[base] = cls
    dispatcher.__class__ = cls
    dispatcher.__dict__["_gpu_tok_njit_kw"] = dict(njit_kw)
    return dispatcher
