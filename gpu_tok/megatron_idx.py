"""Megatron-LM indexed datasets (``PREFIX.bin`` + ``PREFIX.idx``): a writer and a reader.

Written from the format Megatron-LM's ``megatron/core/datasets/indexed_dataset.py`` reads
(``IndexedDataset(path_prefix)``); no Megatron code is used or needed.

``PREFIX.bin`` is the token ids of every sequence, back to back, in one little-endian dtype.

``PREFIX.idx`` (all integers little-endian)::

    offset  size          field
    0       9             magic b"MMIDIDX\\x00\\x00"
    9       8  uint64     version, always 1
    17      1  uint8      dtype code of the .bin (table below)
    18      8  uint64     S: number of sequences
    26      8  uint64     D: number of entries of the document index (documents + 1)
    34      4*S int32     sequence lengths, in tokens
    34+4S   8*S int64     sequence pointers: byte offset of each sequence in the .bin
    34+12S  8*D int64     document index: document d is sequences [doc[d], doc[d+1]);
                          doc[0] == 0 and doc[-1] == S

Dtype codes: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32, 8 uint16.
There is no uint32 code: vocabularies above 65,536 ids are written as int32 (code 4),
which is also what Megatron's own preprocessing writes for them.

gpu_tok writes one sequence per document (document ``i`` is sequence ``i``; an empty
document is a sequence of length 0), as Megatron's ``tools/preprocess_data.py`` does without
``--split-sentences``.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Union

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER_SIZE = 34  # magic 9 + version 8 + dtype code 1 + two counts 8 + 8

DTYPE_CODES = {
    np.dtype(np.uint8): 1,
    np.dtype(np.int8): 2,
    np.dtype(np.int16): 3,
    np.dtype(np.int32): 4,
    np.dtype(np.int64): 5,
    np.dtype(np.float64): 6,
    np.dtype(np.float32): 7,
    np.dtype(np.uint16): 8,
}
CODE_DTYPES = {code: dt for dt, code in DTYPE_CODES.items()}

PathLike = Union[str, os.PathLike]


def token_dtype(vocab_size: int) -> np.dtype:
    """The ``.bin`` dtype for ids ``0 .. vocab_size - 1``: uint16 when they fit, else int32."""
    if vocab_size <= 1 << 16:
        return np.dtype(np.uint16)
    if vocab_size <= 1 << 31:
        return np.dtype(np.int32)
    raise ValueError(f"vocabulary of {vocab_size} ids does not fit Megatron's int32 token dtype")


def dtype_code(dtype) -> int:
    dt = np.dtype(dtype)
    if dt not in DTYPE_CODES:
        raise ValueError(f"Megatron indexed datasets have no code for dtype {dt} "
                         f"(known: {', '.join(str(d) for d in DTYPE_CODES)})")
    return DTYPE_CODES[dt]


def index_bytes(sizes: np.ndarray, dtype) -> bytes:
    """The ``.idx`` file for one sequence per document of the given lengths (tokens)."""
    sizes = np.asarray(sizes)
    if sizes.size and (int(sizes.min()) < 0 or int(sizes.max()) > np.iinfo(np.int32).max):
        raise ValueError("sequence lengths must be in 0 .. 2**31 - 1 (int32)")
    n = int(sizes.size)
    itemsize = np.dtype(dtype).itemsize
    pointers = np.zeros(n, dtype=np.int64)
    if n > 1:
        np.cumsum(sizes[:-1].astype(np.int64) * itemsize, out=pointers[1:])
    doc_index = np.arange(n + 1, dtype=np.int64)
    head = MAGIC + struct.pack("<QBQQ", VERSION, dtype_code(dtype), n, n + 1)
    return b"".join([head, sizes.astype("<i4").tobytes(), pointers.astype("<i8").tobytes(),
                     doc_index.astype("<i8").tobytes()])


def write_index(path_or_file: Union[PathLike, BinaryIO], sizes, dtype) -> int:
    """Write an ``.idx`` (one sequence per document); returns the number of bytes written."""
    data = index_bytes(np.asarray(sizes), dtype)
    if hasattr(path_or_file, "write"):
        path_or_file.write(data)
    else:
        Path(path_or_file).write_bytes(data)
    return len(data)


@dataclass
class MegatronIndex:
    """The parsed ``.idx``: ``sizes[i]`` tokens of sequence ``i`` start at byte ``pointers[i]``."""

    dtype: np.dtype
    sizes: np.ndarray  # int32[S]
    pointers: np.ndarray  # int64[S]
    doc_idx: np.ndarray  # int64[D]

    @property
    def num_sequences(self) -> int:
        return int(self.sizes.size)

    @property
    def num_documents(self) -> int:
        return int(self.doc_idx.size) - 1


def read_index(path: PathLike) -> MegatronIndex:
    """Parse an ``.idx`` file, checking every field the format fixes."""
    data = Path(path).read_bytes()
    if len(data) < HEADER_SIZE or data[:9] != MAGIC:
        raise ValueError(f"{path}: not a Megatron index (no MMIDIDX header)")
    version, code, n_seq, n_doc = struct.unpack_from("<QBQQ", data, 9)
    if version != VERSION:
        raise ValueError(f"{path}: index version {version}, expected {VERSION}")
    if code not in CODE_DTYPES:
        raise ValueError(f"{path}: unknown dtype code {code}")
    need = HEADER_SIZE + 4 * n_seq + 8 * n_seq + 8 * n_doc
    if len(data) < need:
        raise ValueError(f"{path}: truncated ({len(data)} bytes, the header promises {need})")
    off = HEADER_SIZE
    sizes = np.frombuffer(data, "<i4", n_seq, off)
    off += 4 * n_seq
    pointers = np.frombuffer(data, "<i8", n_seq, off)
    off += 8 * n_seq
    doc_idx = np.frombuffer(data, "<i8", n_doc, off)
    if n_doc < 1 or doc_idx[0] != 0 or doc_idx[-1] != n_seq or np.any(np.diff(doc_idx) < 0):
        raise ValueError(f"{path}: document index does not run from 0 to the sequence count")
    return MegatronIndex(CODE_DTYPES[code], sizes, pointers, doc_idx)


class IndexedDataset:
    """Read-only ``PREFIX.bin`` + ``PREFIX.idx`` through ``numpy.memmap`` (as Megatron does).

    ``ds[i]`` is sequence ``i`` (a NumPy view of the .bin); ``len(ds)`` the number of sequences.
    """

    def __init__(self, prefix: PathLike):
        prefix = str(prefix)
        self.index = read_index(prefix + ".idx")
        bin_path = prefix + ".bin"
        size = os.path.getsize(bin_path)
        itemsize = self.index.dtype.itemsize
        n = self.index.num_sequences
        end = int(self.index.pointers[-1]) + int(self.index.sizes[-1]) * itemsize if n else 0
        if end != size:
            raise ValueError(f"{bin_path}: {size} bytes, the index describes {end}")
        self._bin = (np.memmap(bin_path, dtype=self.index.dtype, mode="r") if size
                     else np.zeros(0, self.index.dtype))

    def __len__(self) -> int:
        return self.index.num_sequences

    def __getitem__(self, i: int) -> np.ndarray:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        start = int(self.index.pointers[i]) // self.index.dtype.itemsize
        return self._bin[start:start + int(self.index.sizes[i])]

    @property
    def document_indices(self) -> np.ndarray:
        return self.index.doc_idx

    @property
    def sequence_lengths(self) -> np.ndarray:
        return self.index.sizes
