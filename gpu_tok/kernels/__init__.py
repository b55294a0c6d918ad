"""Numba kernels (CUDA and their ``njit`` CPU twins) and the packing they need.

* ``hash_table``: the BPE merge table as an open-addressing hash table in two
  ``uint64`` arrays (DESIGN.md section 3), with an ``njit`` ``lookup``.
* ``bpe_cpu``: ``njit`` BPE merging over packed pieces (serial and ``prange``),
  exactly ``cpu_ref.models.BPEModel.merge_word``.

Submodules are imported on demand (they need Numba); importing ``gpu_tok`` does not
compile anything. Pre-tokenization, the compiled initial-symbol step, the word
cache and the CUDA kernels are later issues.
"""
