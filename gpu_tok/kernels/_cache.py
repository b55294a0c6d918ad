"""Numba's on-disk cache, made to notice a change in any kernel source file.

Numba keys a cached function on its own source file's content (``get_source_stamp``: a hash
of the file) and nothing else, while the machine code it stores holds every ``njit``
function it calls, inlined or linked, from other files too. So a change to a callee in one
file (``bpe_cuda.bucket_of``) left its callers in another (``dedupe_cuda.k_resolve``) loaded
from the cache with the old callee compiled in: seen 2026-12-06 on this repository (a
changed ``bucket_of`` had no effect on the twins until ``dedupe_cuda.py``'s own text
changed). An upgrade that changes one kernel file and not another would do the same to an
installed copy (pip leaves Numba's cache files in ``__pycache__``): ids from old code.

``install()`` puts ``KernelsLocator`` first among Numba's cache locators: for a function
defined in a file of this directory (the kernels and the twins' shared sources), the stamp
is the usual one and a digest of every ``*.py`` file here, so any change here makes every
kernel's cached code stale (recompiled once); for other functions it declines, and Numba's
own locators apply as before. Where it is placed is Numba's choice (the first of its own
locators that accepts the function).
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

_HERE = os.path.dirname(os.path.abspath(__file__))


def sources_digest(here=None) -> str:
    """SHA-256 over the names and contents of the ``*.py`` files of ``here`` (this
    directory by default), in name order."""
    h = hashlib.sha256()
    for p in sorted(Path(here or _HERE).glob("*.py")):
        h.update(p.name.encode("utf-8") + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def kernels_digest() -> str:
    """``sources_digest()`` of this directory, computed once per process."""
    return sources_digest()


def _locator_class(caching):
    base = caching._CacheLocator

    class KernelsLocator(base):
        """Numba's own locator for a function of ``gpu_tok/kernels``, its source stamp joined
        with ``kernels_digest()`` (module docstring)."""

        def __init__(self, inner):
            self._inner = inner

        def ensure_cache_path(self):
            return self._inner.ensure_cache_path()

        def get_cache_path(self):
            return self._inner.get_cache_path()

        def get_source_stamp(self):
            return (self._inner.get_source_stamp(), kernels_digest())

        def get_disambiguator(self):
            return self._inner.get_disambiguator()

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.dirname(os.path.abspath(py_file)) != _HERE:
                return None
            for other in caching.CacheImpl._locator_classes:
                if other is cls:
                    continue
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
            return None

    KernelsLocator.__qualname__ = "KernelsLocator"
    return KernelsLocator


def install(modules=("numba.core.caching",)) -> list:
    """Put ``KernelsLocator`` first in the locator list of each caching module of ``modules``
    that is importable (Numba's; ``twins.load("cuda")`` adds numba-cuda's own copy,
    ``numba.cuda.core.caching``, once ``numba.cuda`` is imported); returns the modules changed.
    Idempotent."""
    import importlib

    changed = []
    for name in modules:
        try:
            caching = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - absent (no numba-cuda), or not importable here
            continue
        impl = getattr(caching, "CacheImpl", None)
        classes = getattr(impl, "_locator_classes", None)
        if not isinstance(classes, list) or not hasattr(caching, "_CacheLocator"):
            continue
        if any(getattr(k, "_gpu_tok_kernels", False) for k in classes):
            continue
        cls = _locator_class(caching)
        if getattr(cls, "__abstractmethods__", None):  # a caching module asking for more: leave it as it is
            continue
        cls._gpu_tok_kernels = True
        classes.insert(0, cls)
        changed.append(name)
    return changed
