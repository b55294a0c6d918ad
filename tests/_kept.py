"""What the test files keep between their tests (our tokenizers, the reference's, loaded
samples), registered here so that conftest can let go of all of it after each test file.

Measured (2026-12-06, this 2-core 24 GB host, ``-n auto --dist loadfile``): without this the
two xdist workers kept every file's tokenizers to the end of the run and reached 10.2 and
10.6 GB RSS (a compiled engine keeps about 50 MB of word and long-piece caches per tokenizer
on two threads); two CI runs lost a worker to the kernel's OOM killer.
"""
from __future__ import annotations

import ctypes
import functools
import gc
import sys

_KEPT: list = []


def kept_dict() -> dict:
    """An empty dict that ``forget_all`` empties."""
    d: dict = {}
    _KEPT.append(d)
    return d


def kept_cache(fn=None, *, maxsize=None):
    """``functools.lru_cache(maxsize)`` whose entries ``forget_all`` drops; as ``@kept_cache``
    or ``@kept_cache(maxsize=1)``."""
    if fn is None:
        return lambda f: kept_cache(f, maxsize=maxsize)
    cached = functools.lru_cache(maxsize=maxsize)(fn)
    _KEPT.append(cached)
    return cached


def forget_all() -> None:
    """Empty every registered dict and cache, collect, and hand freed heap back to the
    system (glibc's ``malloc_trim``; freed blocks otherwise stay in the process's RSS)."""
    for k in _KEPT:
        if isinstance(k, dict):
            k.clear()
        else:
            k.cache_clear()
    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc (musl): nothing to trim
            pass
