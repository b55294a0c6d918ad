"""The GPU kernels and their CPU twins from one source.

``load("cuda")`` compiles ``bpe_cuda.py``, ``dedupe_cuda.py``, ``pretok_cuda.py`` and ``sp_cuda.py`` with ``numba.cuda.jit``
(``device=True`` for the one-item functions, kernels around them): a real device, or the
simulator when ``NUMBA_ENABLE_CUDASIM=1`` was set before ``numba.cuda`` was first imported.
``load("cpu")`` compiles the very same functions with ``numba.njit``: the twins, serial
loops over the items (atomics become plain read-modify-writes). Both return a namespace
with the kernels ``k_*`` and every device function, so tests can call either side.

Importing this module imports nothing of ``numba.cuda``; ``load("cuda")`` does.
"""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
_SOURCES = ("bpe_cuda.py", "dedupe_cuda.py", "pretok_cuda.py", "sp_cuda.py")
_LOADED: dict = {}
_LOCK = threading.Lock()


def simulator_enabled() -> bool:
    """Whether ``numba.cuda`` is (or will be, when first imported) the simulator."""
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


def numpy_aliases_for_numba_cuda() -> bool:
    """Put back ``np.row_stack`` (an alias of ``np.vstack`` that NumPy 2.5 removed) where it is
    missing; returns whether it did. numba-cuda 0.30.4 registers an overload for
    ``np.row_stack`` without a version guard when it compiles its first kernel, so with NumPy
    2.5 every ``cuda.jit`` compile raised ``AttributeError: module 'numpy' has no attribute
    'row_stack'`` (seen on the H200 machine, 2026-12-04: numba-cuda 0.30.4, NumPy 2.5.2).
    The alias is the same function NumPy had, so nothing else changes."""
    if hasattr(np, "row_stack"):
        return False
    np.row_stack = np.vstack
    return True


def load(kind: str) -> types.ModuleType:
    """The compiled namespace for ``kind`` (``"cuda"`` or ``"cpu"``), built once per process."""
    if kind not in ("cuda", "cpu"):
        raise ValueError(f"kind must be 'cuda' or 'cpu', not {kind!r}")
    with _LOCK:
        mod = _LOADED.get(kind)
        if mod is None:
            if kind == "cuda":
                numpy_aliases_for_numba_cuda()
                from ._cache import install

                install(("numba.cuda.core.caching",))  # numba-cuda's copy of Numba's cache (GPU_TOK_CUDA_CACHE=1)
            if kind == "cuda" and simulator_enabled():
                import warnings

                # the simulator runs the kernels in Python on NumPy scalars: uint64 hashing
                # wraps around by design, which NumPy reports as an overflow
                warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)
            name = f"gpu_tok.kernels._twins_{kind}"
            mod = types.ModuleType(name)
            # importable by name: Numba's on-disk cache finds the functions' globals there
            sys.modules[name] = mod
            mod.__dict__["_KIND"] = kind
            mod.__dict__["__package__"] = "gpu_tok.kernels"
            for name in _SOURCES:
                path = _HERE / name
                code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
                exec(code, mod.__dict__)  # noqa: S102 - our own source, compiled for this kind
            _LOADED[kind] = mod
    return mod
