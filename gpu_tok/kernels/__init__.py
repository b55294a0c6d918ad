"""Numba kernels (CUDA and their ``njit`` CPU twins) and the packing they need.

* ``hash_table``: the BPE merge table as an open-addressing hash table (DESIGN.md
  section 3), with ``njit`` lookups; ``bpe_cpu``: heap BPE over packed pieces.
* ``pretok_cpu`` (compiled pre-tokenizers), ``engine_cpu`` (the compiled CPU engine:
  added tokens, fused scan + BPE, word caches, SentencePiece), ``_intrinsics``.
* ``bpe_cuda``, ``dedupe_cuda`` (CUDA kernels written once, compiled for the device and
  as ``njit`` twins by ``twins``), ``gpu_host``, ``sp_host`` (the GPU engine's host side).

Submodules are imported on demand (they need Numba); importing ``gpu_tok`` compiles
nothing and imports neither ``numba.cuda`` nor CuPy.
"""

from ._cache import install as _install_cache_locator  # noqa: E402

_install_cache_locator()  # Numba's on-disk cache notices a change in any kernel file (_cache.py)
