"""Output shards of ``gpu-tok encode`` and their crash-safe commit.

Every shard is written under a temporary name (``.tmp-shard-00000.*``), flushed and
fsynced, then renamed to its final name (``shard-00000.*``); only after that is its entry
appended to the commit log ``shards.jsonl`` (one JSON line per shard, fsynced): a shard is
committed when its line is complete. A shard file without a complete log line is what a
crash leaves behind: ``--resume`` removes it (and a torn last line). ``manifest.json`` is
replaced atomically (write temp, fsync, rename) at the start of a run and at its end, when
it gets the totals and every shard's entry (the log is then removed). Appending one line per shard keeps each commit
O(1): rewriting a manifest that lists every shard at every commit would be quadratic in the
number of shards.

Formats (one shard = the documents of a contiguous part of the input, in order):

- ``bin``: ``shard-NNNNN.bin`` (ids, uint16 or int32 little-endian) + ``shard-NNNNN.idx``
  (Megatron-LM's ``MMIDIDX`` index, one sequence per document); each shard is a Megatron
  path prefix (``DIR/shard-NNNNN``), see ``gpu_tok.megatron_idx``.
- ``parquet``: ``shard-NNNNN.parquet`` with an ``input_ids`` ``list<int32>`` column (and the
  source's id column when there is one), a row group closing after the document that
  reaches ``ROW_GROUP_TOKENS`` ids or ``ROW_GROUP_ROWS`` documents.
- ``npy``: ``shard-NNNNN.ids.npy`` (flat ids, same dtype as ``bin``) and
  ``shard-NNNNN.row_splits.npy`` (int64, documents + 1; document ``i`` of the shard is
  ``ids[row_splits[i]:row_splits[i + 1]]``).

Every byte depends only on the documents and the options, never on timing or threads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from .megatron_idx import index_bytes

OUTPUT_FORMATS = ("bin", "parquet", "npy")
MANIFEST = "manifest.json"
SHARD_LOG = "shards.jsonl"
SHARD_RE = re.compile(r"^shard-(\d{5})\.")
TMP_PREFIX = ".tmp-"
MAX_SHARDS = 100_000
ROW_GROUP_TOKENS = 1 << 23  # parquet: a row group closes after the document that reaches 8M ids
ROW_GROUP_ROWS = 1 << 20  # ... or 1M documents
CHUNK_IDS = 1 << 18  # ids converted to the shard's dtype at a time (write_ids), into a buffer kept per writer
KILL_ENV = "GPU_TOK_TEST_KILL_AFTER_SHARDS"
KILL_POINT_ENV = "GPU_TOK_TEST_KILL_POINT"


def shard_stem(index: int) -> str:
    if index >= MAX_SHARDS:
        raise ValueError(f"more than {MAX_SHARDS} shards: raise --shard-bytes / --shard-docs")
    return f"shard-{index:05d}"


def shard_files(fmt: str, index: int) -> List[str]:
    stem = shard_stem(index)
    return {"bin": [f"{stem}.bin", f"{stem}.idx"], "parquet": [f"{stem}.parquet"],
            "npy": [f"{stem}.ids.npy", f"{stem}.row_splits.npy"]}[fmt]


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(str(path), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_file_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(TMP_PREFIX + path.name)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_manifest(out_dir: Path, manifest: dict) -> None:
    write_file_atomic(out_dir / MANIFEST, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())


def write_final_manifest(out_dir: Path, head: dict) -> None:
    """``manifest.json`` = ``head`` plus ``"shards"``: every entry of the commit log, streamed."""
    text = json.dumps(head, indent=2, ensure_ascii=False)
    assert text.endswith("\n}")
    path = out_dir / MANIFEST
    tmp = path.with_name(TMP_PREFIX + path.name)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text[:-2] + ',\n  "shards": [')
        n = 0
        for entry, _ in iter_shard_log(out_dir):
            f.write(("\n    " if n == 0 else ",\n    ") + json.dumps(entry, ensure_ascii=False))
            n += 1
        f.write("\n  ]\n}\n" if n else "]\n}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(out_dir)


def iter_shard_log(out_dir: Path):
    """``(entry, end_offset)`` of each complete line of the commit log, in order; stops at the
    first torn or invalid line (what a crash in the middle of an append leaves)."""
    p = out_dir / SHARD_LOG
    if not p.is_file():
        return
    offset = 0
    with open(p, "rb") as f:
        for k, line in enumerate(f):
            if not line.endswith(b"\n"):
                return
            try:
                entry = json.loads(line)
            except ValueError:
                return
            if not isinstance(entry, dict) or entry.get("index") != k:
                return
            offset += len(line)
            yield entry, offset


class ShardLog:
    """The commit log, open for appending (truncated to ``valid_bytes`` first, dropping a torn line)."""

    def __init__(self, out_dir: Path, valid_bytes: int = 0):
        self.out_dir = out_dir
        self.path = out_dir / SHARD_LOG
        self.f = None
        if self.path.exists():
            self._open(valid_bytes)

    def _open(self, valid_bytes: int) -> None:
        self.f = open(self.path, "r+b" if self.path.exists() else "wb")
        self.f.truncate(valid_bytes)
        self.f.seek(valid_bytes)
        self.f.flush()
        os.fsync(self.f.fileno())
        fsync_dir(self.out_dir)

    def append(self, entry: dict) -> None:
        if self.f is None:  # created with the first commit
            self._open(0)
        self.f.write((json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8"))
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self) -> None:
        if self.f is not None:
            self.f.close()


def read_manifest(out_dir: Path) -> Optional[dict]:
    p = out_dir / MANIFEST
    if not p.is_file():
        return None
    return json.loads(p.read_text(encoding="utf-8"))


def _test_kill(point: str, committed: int) -> None:
    """Test hook: SIGKILL this process at ``point`` once ``committed`` shards are committed."""
    want = os.environ.get(KILL_ENV)
    if want is None or int(want) != committed:
        return
    if os.environ.get(KILL_POINT_ENV, "before_rename") == point:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_ids_fit(ids: np.ndarray, dtype: np.dtype) -> None:
    if ids.size and dtype != ids.dtype:
        lo, hi = int(ids.min()), int(ids.max())
        info = np.iinfo(dtype)
        if lo < info.min or hi > info.max:
            raise ValueError(f"token id {hi if hi > info.max else lo} does not fit the output dtype {dtype}")


def _sizes(row_splits: np.ndarray) -> np.ndarray:
    """Tokens per document as int32 (Megatron's sequence-length type; 4 bytes kept per document)."""
    sizes = np.diff(row_splits)
    if sizes.size and int(sizes.max()) > np.iinfo(np.int32).max:
        raise ValueError("a document of more than 2**31 - 1 tokens")
    return sizes.astype(np.int32)


def write_ids(write, ids: np.ndarray, dtype: np.dtype, kept: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """``write`` the ids as little-endian ``dtype``: as they are where they are that already,
    else ``CHUNK_IDS`` at a time through a buffer (``kept``, or a new one, returned for the
    next call) that stays in the cache for the write and the hash; a whole converted copy
    of a batch's ids was a fresh array of up to tens of MB each time."""
    dtype = np.dtype(dtype).newbyteorder("<")
    if ids.dtype == dtype and ids.flags.c_contiguous:
        write(ids)
        return kept
    if kept is None or kept.dtype != dtype:
        kept = np.empty(CHUNK_IDS, dtype)
    for a in range(0, ids.size, CHUNK_IDS):
        part = ids[a:a + CHUNK_IDS]
        out = kept[:part.size]
        np.copyto(out, part, casting="unsafe")
        write(out)
    return kept


class _HashedFile:
    """An open temp file that hashes what is written to it."""

    def __init__(self, path: Path):
        self.path = path
        self.f = open(path, "wb")
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data) -> None:
        mv = memoryview(data).cast("B")
        self.f.write(mv)
        self.sha.update(mv)
        self.size += mv.nbytes

    def finish(self) -> dict:
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        return {"bytes": self.size, "sha256": self.sha.hexdigest()}

    def abort(self) -> None:
        if not self.f.closed:
            self.f.close()


class ShardWriter:
    """Base: ``add(ids, row_splits, doc_ids)`` batches, then ``commit()`` or ``abort()``."""

    def __init__(self, out_dir: Path, index: int, fmt: str, dtype: np.dtype):
        self.out_dir, self.index, self.fmt, self.dtype = out_dir, index, fmt, np.dtype(dtype)
        self.names = shard_files(fmt, index)
        self.tmp = [out_dir / (TMP_PREFIX + n) for n in self.names]
        self.documents = 0
        self.tokens = 0

    def add(self, ids: np.ndarray, row_splits: np.ndarray, doc_ids: Optional[list]) -> None:
        raise NotImplementedError

    def _finish(self) -> List[dict]:
        """Close and fsync the temp files; their ``{"bytes", "sha256"}`` in ``names`` order."""
        raise NotImplementedError

    def commit(self, committed_before: int) -> Dict[str, dict]:
        """Make the shard's files final (its commit-log line is the caller's next step)."""
        infos = self._finish()
        _test_kill("before_rename", committed_before)
        for tmp, name in zip(self.tmp, self.names):
            os.replace(tmp, self.out_dir / name)
        fsync_dir(self.out_dir)
        _test_kill("before_commit", committed_before)
        return {name: info for name, info in zip(self.names, infos)}

    def abort(self) -> None:
        for p in self.tmp:
            try:
                p.unlink()
            except OSError:
                pass


class BinShardWriter(ShardWriter):
    def __init__(self, out_dir: Path, index: int, dtype: np.dtype, **_):
        super().__init__(out_dir, index, "bin", dtype)
        self._bin = _HashedFile(self.tmp[0])
        self._sizes: List[np.ndarray] = []
        self._buf: Optional[np.ndarray] = None

    def add(self, ids, row_splits, doc_ids=None) -> None:
        check_ids_fit(ids, self.dtype)
        self._buf = write_ids(self._bin.write, ids, self.dtype, self._buf)
        self._sizes.append(_sizes(row_splits))
        self.documents += len(row_splits) - 1
        self.tokens += int(ids.size)

    def _finish(self):
        bin_info = self._bin.finish()
        sizes = np.concatenate(self._sizes) if self._sizes else np.zeros(0, np.int64)
        idx = _HashedFile(self.tmp[1])
        idx.write(index_bytes(sizes, self.dtype))
        return [bin_info, idx.finish()]

    def abort(self):
        self._bin.abort()
        super().abort()


NPY_HEADER_LEN = 128  # fixed, so the shape can be written once the length is known


def npy_header(dtype: np.dtype, length: int) -> bytes:
    """A NumPy ``.npy`` v1.0 header of exactly ``NPY_HEADER_LEN`` bytes for a 1-D array."""
    d = "{'descr': %r, 'fortran_order': False, 'shape': (%d,), }" % (np.dtype(dtype).str, length)
    pad = NPY_HEADER_LEN - 10 - len(d) - 1
    if pad < 0:
        raise ValueError("npy header too long")
    body = (d + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


class NpyShardWriter(ShardWriter):
    def __init__(self, out_dir: Path, index: int, dtype: np.dtype, **_):
        super().__init__(out_dir, index, "npy", dtype)
        self._f = open(self.tmp[0], "wb")
        self._f.write(b"\0" * NPY_HEADER_LEN)  # replaced by the real header at the end
        self._sizes: List[np.ndarray] = []
        self._buf: Optional[np.ndarray] = None

    def add(self, ids, row_splits, doc_ids=None) -> None:
        check_ids_fit(ids, self.dtype)
        self._buf = write_ids(lambda a: self._f.write(memoryview(a).cast("B")), ids, self.dtype, self._buf)
        self._sizes.append(_sizes(row_splits))
        self.documents += len(row_splits) - 1
        self.tokens += int(ids.size)

    def _finish(self):
        self._f.seek(0)
        self._f.write(npy_header(self.dtype.newbyteorder("<"), self.tokens))
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        sizes = np.concatenate(self._sizes) if self._sizes else np.zeros(0, np.int64)
        splits = np.zeros(sizes.size + 1, dtype="<i8")
        np.cumsum(sizes, dtype=np.int64, out=splits[1:])
        rs = _HashedFile(self.tmp[1])
        rs.write(npy_header(splits.dtype, splits.size))
        rs.write(splits)
        rs_info = rs.finish()
        size = os.path.getsize(self.tmp[0])
        return [{"bytes": size, "sha256": _file_sha256(self.tmp[0])}, rs_info]

    def abort(self):
        if not self._f.closed:
            self._f.close()
        super().abort()


class ParquetShardWriter(ShardWriter):
    """``input_ids`` ``list<int32>`` (+ the id column), one row group per ~``ROW_GROUP_TOKENS`` ids."""

    def __init__(self, out_dir: Path, index: int, dtype: np.dtype, id_column: Optional[dict] = None, **_):
        super().__init__(out_dir, index, "parquet", dtype)
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.pa = pa
        self.id_column = id_column
        fields = []
        if id_column:
            fields.append(pa.field(id_column["name"], _arrow_type(id_column["type"])))
        fields.append(pa.field("input_ids", pa.list_(pa.int32())))
        self.schema = pa.schema(fields)
        self._writer = pq.ParquetWriter(str(self.tmp[0]), self.schema)
        self._pending_ids: List[np.ndarray] = []
        self._pending_lens: List[np.ndarray] = []
        self._pending_doc_ids: list = []
        self._pending_tokens = 0
        self._pending_rows = 0

    def add(self, ids, row_splits, doc_ids=None) -> None:
        ids = np.asarray(ids, dtype=np.int32)
        lens = np.diff(row_splits).astype(np.int64)
        self.documents += len(lens)
        self.tokens += int(ids.size)
        # split the batch so that a row group closes after the document that reaches the limit
        start_doc = 0
        csum = np.cumsum(lens) if lens.size else lens
        base = 0
        while start_doc < len(lens):
            room = ROW_GROUP_TOKENS - self._pending_tokens
            # first document (from start_doc) at which the pending ids or rows reach their limit
            k = min(int(np.searchsorted(csum, base + room, side="left")),
                    start_doc + ROW_GROUP_ROWS - self._pending_rows - 1)
            end_doc = min(k + 1, len(lens))
            a, b = int(row_splits[start_doc]), int(row_splits[end_doc])
            self._pending_ids.append(ids[a:b])
            self._pending_lens.append(lens[start_doc:end_doc])
            if self.id_column:
                self._pending_doc_ids.extend(doc_ids[start_doc:end_doc])
            self._pending_tokens += b - a
            self._pending_rows += end_doc - start_doc
            base = int(csum[end_doc - 1])
            start_doc = end_doc
            if self._pending_tokens >= ROW_GROUP_TOKENS or self._pending_rows >= ROW_GROUP_ROWS:
                self._flush_group()

    def _flush_group(self) -> None:
        pa = self.pa
        if not self._pending_lens:
            return
        values = np.concatenate(self._pending_ids) if self._pending_ids else np.zeros(0, np.int32)
        lens = np.concatenate(self._pending_lens)
        if values.size > np.iinfo(np.int32).max:
            raise ValueError("a row group of more than 2**31 - 1 ids (one document that long?) does not "
                             "fit Parquet list<int32> offsets")
        offsets = np.zeros(lens.size + 1, np.int32)
        np.cumsum(lens, out=offsets[1:])
        arrays = []
        if self.id_column:
            arrays.append(pa.array(self._pending_doc_ids, type=self.schema.field(0).type))
        arrays.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(values, type=pa.int32())))
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        self._writer.write_table(table, row_group_size=max(1, table.num_rows))
        self._pending_ids, self._pending_lens, self._pending_doc_ids = [], [], []
        self._pending_tokens = self._pending_rows = 0

    def _finish(self):
        self._flush_group()
        self._writer.close()
        with open(self.tmp[0], "rb+") as f:
            os.fsync(f.fileno())
        return [{"bytes": os.path.getsize(self.tmp[0]), "sha256": _file_sha256(self.tmp[0])}]

    def abort(self):
        try:
            self._writer.close()
        except Exception:  # noqa: BLE001
            pass
        super().abort()


def _arrow_type(name: str):
    import pyarrow as pa

    return {"string": pa.string(), "large_string": pa.large_string(), "int64": pa.int64()}[name]


WRITERS = {"bin": BinShardWriter, "parquet": ParquetShardWriter, "npy": NpyShardWriter}


def open_shard(fmt: str, out_dir: Path, index: int, dtype: np.dtype, id_column: Optional[dict] = None) -> ShardWriter:
    return WRITERS[fmt](out_dir, index, dtype, id_column=id_column)


def stray_files(out_dir: Path, committed: int) -> List[Path]:
    """Files a crash may leave: temp files, and shard files past the committed ones."""
    out = []
    for p in sorted(out_dir.iterdir()):
        if p.name.startswith(TMP_PREFIX):
            out.append(p)
            continue
        m = SHARD_RE.match(p.name)
        if m and int(m.group(1)) >= committed:
            out.append(p)
    return out


def own_files(out_dir: Path) -> List[Path]:
    """Everything ``gpu-tok encode`` writes in an output directory."""
    return [p for p in sorted(out_dir.iterdir())
            if p.name in (MANIFEST, SHARD_LOG) or p.name.startswith(TMP_PREFIX) or SHARD_RE.match(p.name)]
