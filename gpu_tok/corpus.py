"""Reading corpora as a stream of documents, with positions to resume from.

Inputs are files, globs (expanded, sorted) or ``-`` (standard input). The format comes
from the name unless given (``--input-format``), after removing a ``.gz`` / ``.zst`` /
``.zstd`` compression suffix: ``.parquet`` is Parquet (a column, read by record batches
with ``pyarrow``), ``.jsonl`` / ``.json`` JSON Lines (a field of each object; blank lines
are skipped), anything else UTF-8 text (one document per file, or one per line with
``lines=True``: the ``\\n`` and a ``\\r`` before it removed, empty lines kept).

``iter_records`` yields one ``Record`` per document or bad record. A bad record (malformed
JSON, a missing or non-string field, invalid UTF-8, a null Parquet value) carries
``error`` and ``where`` (``file:line``); the caller stops or skips it. An input that
cannot be read at all (missing, corrupt or truncated compressed data, a Parquet file
without the column) raises ``BadInput``.

Positions: ``Record.units`` is how many lines (JSONL, text lines), rows (Parquet) or files
(whole-file text) of the input are consumed once this record is, and ``Record.offset`` the
byte offset in the (decompressed) stream after it, where that is cheap to know (``None``
otherwise). ``iter_records(..., start_units, start_offset)`` continues from such a
position: by seeking in a plain file, else by skipping units.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import io
import json
import os
import sys
import zlib
from dataclasses import dataclass, field as dc_field
from pathlib import Path
from typing import Iterator, List, Optional, Sequence

JSONL_SUFFIXES = (".jsonl", ".json")
COMPRESSION_SUFFIXES = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}
INPUT_FORMATS = ("auto", "jsonl", "parquet", "text")
MISSING = object()  # a record without the id field


class BadInput(Exception):
    """An input that cannot be read as documents; the message names file:line."""


def missing_package(package: str, what: str) -> BadInput:
    return BadInput(f"{what} needs the {package!r} package, which is not installed "
                    f"(pip install {package})")


# ---------------------------------------------------------------- naming

def expand_inputs(specs: List[str]) -> List[str]:
    """Expand globs (sorted) and check that every path exists; ``-`` stays as is."""
    out: List[str] = []
    for spec in specs:
        if spec == "-" or Path(spec).is_file():
            out.append(spec)
        elif glob.has_magic(spec):
            matches = sorted(p for p in glob.glob(spec, recursive=True) if Path(p).is_file())
            if not matches:
                raise BadInput(f"{spec}: no file matches this pattern")
            out.extend(matches)
        elif Path(spec).is_dir():
            raise BadInput(f"{spec}: is a directory (pass files or a glob such as '{spec}/*.jsonl')")
        elif Path(spec).exists():
            raise BadInput(f"{spec}: not a regular file (a pipe can be read as standard input: - )")
        else:
            raise BadInput(f"{spec}: no such file")
    if out.count("-") > 1:
        raise BadInput("-: standard input can be read only once")
    return out


def compression_of(path: str) -> Optional[str]:
    return COMPRESSION_SUFFIXES.get(os.path.splitext(path)[1].lower()) if path != "-" else None


def input_format(path: str, fmt: str = "auto") -> str:
    """``jsonl``, ``parquet`` or ``text``: ``fmt`` unless it is ``auto``, else from the name."""
    if fmt != "auto":
        return fmt
    if path == "-":
        return "text"
    name = path.lower()
    if compression_of(name):
        name = os.path.splitext(name)[0]
    if name.endswith(".parquet"):
        return "parquet"
    return "jsonl" if name.endswith(JSONL_SUFFIXES) else "text"


def display_name(path: str) -> str:
    return "<stdin>" if path == "-" else path


# ---------------------------------------------------------------- byte streams

class _HashingRaw(io.RawIOBase):
    """A raw stream that hashes and counts what is read through it (for standard input)."""

    def __init__(self, raw):
        self._raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._raw.read(len(b))
        if not data:
            return 0
        n = len(data)
        b[:n] = data
        self.sha256.update(data)
        self.size += n
        return n


class Stdin:
    """Standard input read once, hashed on the fly (``sha256`` and ``size`` when read)."""

    def __init__(self):
        self._hashing: Optional[_HashingRaw] = None

    def open(self):
        if self._hashing is not None:
            raise BadInput("-: standard input can be read only once")
        self._hashing = _HashingRaw(sys.stdin.buffer)
        return io.BufferedReader(self._hashing, 1 << 20)

    @property
    def sha256(self) -> Optional[str]:
        return self._hashing.sha256.hexdigest() if self._hashing is not None else None

    @property
    def size(self) -> Optional[int]:
        return self._hashing.size if self._hashing is not None else None


def import_zstandard():
    try:
        import zstandard
    except ImportError:
        raise missing_package("zstandard", "reading .zst input") from None
    return zstandard


def check_readable(kind: str, path: str) -> None:
    """Fail before any work when an input needs an optional package that is missing."""
    if kind == "parquet":
        import_pyarrow("reading Parquet input")
    if compression_of(path) == "zstd":
        import_zstandard()


def _zstd_reader(fileobj):
    zstandard = import_zstandard()
    return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(fileobj, read_across_frames=True),
                             1 << 20)


def open_stream(path: str, stdin: Optional[Stdin] = None):
    """``(stream, raw)``: the decompressed byte stream and the file underneath it."""
    if path == "-":
        raw = (stdin or Stdin()).open()
        return raw, None
    raw = open(path, "rb")
    comp = compression_of(path)
    if comp == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb"), raw
    if comp == "zstd":
        try:
            return _zstd_reader(raw), raw
        except BaseException:
            raw.close()
            raise
    return raw, raw


def sha256_and_size(path: str) -> tuple:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


# ---------------------------------------------------------------- records

@dataclass
class Record:
    text: Optional[str]
    units: int  # lines / rows / files of this input consumed once this record is
    offset: Optional[int]  # byte offset after this record in the decompressed stream, if known
    where: str  # file:line for messages
    line: int  # 1-based line or row number (0: the whole file)
    id: object = MISSING
    error: Optional[str] = None


@dataclass
class Block:
    """Good documents from consecutive lines of one input (``iter_records(..., blocks=True)``):
    document ``k`` is ``texts[k]``, ``nbytes[k]`` UTF-8 bytes, and ``units[k]`` /
    ``offsets[k]`` are its ``Record.units`` / ``Record.offset`` (Parquet: ``offsets`` is None,
    as a row's offset is). ``texts`` is a ``PackedTexts`` (the reader's UTF-8; a ``str`` is
    made only for a document read as one)."""

    texts: "Sequence[str]"
    nbytes: "np.ndarray"
    units: "np.ndarray"
    offsets: "np.ndarray"
    ids: Optional[list] = None  # with an id field: each document's id (MISSING: none)

    def records(self, name: str) -> List[Record]:
        """The documents as the ``Record``s they stand for."""
        ids = self.ids or [MISSING] * len(self.texts)
        if self.offsets is None:  # Parquet rows
            return [Record(t, u, None, f"{name}:row {u}", u, i) for t, u, i in zip(self.texts, self.units.tolist(), ids)]
        return [Record(t, u, o, f"{name}:{u}", u, i)
                for t, u, o, i in zip(self.texts, self.units.tolist(), self.offsets.tolist(), ids)]


BLOCK_READ = 4 << 20  # bytes read at a time by the block reader
PARQUET_BATCH_ROWS = 4096  # Parquet rows read at a time


@dataclass
class Source:
    """One input and how to read it."""

    path: str
    kind: str  # jsonl / parquet / text
    field: str = "text"
    lines: bool = False
    id_field: Optional[str] = None  # carry this field / column as the document's id
    id_required: bool = False  # a record without it is bad (else its id is missing: null)
    stdin: Optional[Stdin] = None
    progress: dict = dc_field(default_factory=dict)  # "raw": the file underneath, for progress

    @property
    def name(self) -> str:
        return display_name(self.path)


def _decode(raw: bytes):
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"invalid UTF-8 at byte {e.start}"


def _json_record(raw: bytes, src: Source):
    """``(text, id, error)`` of one JSON line."""
    line, err = _decode(raw)
    if err:
        return None, MISSING, err
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        return None, MISSING, f"malformed JSON: {e.msg} (column {e.colno})"
    except RecursionError:
        return None, MISSING, "malformed JSON: nested too deeply"
    except ValueError as e:  # an integer past int_max_str_digits (json raises no JSONDecodeError for it)
        return None, MISSING, f"unreadable JSON: {e}"
    if not isinstance(obj, dict):
        return None, MISSING, f"expected a JSON object, got {type(obj).__name__}"
    f = src.field
    if f not in obj:
        return None, MISSING, f"missing field {f!r}"
    text = obj[f]
    if not isinstance(text, str):
        return None, MISSING, f"field {f!r} is {type(text).__name__}, not a string"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None, MISSING, f"field {f!r} holds a lone surrogate (not valid Unicode)"
    ident = MISSING
    if src.id_field is not None:
        if src.id_field in obj:
            ident = obj[src.id_field]
        elif src.id_required:
            return None, MISSING, f"missing id field {src.id_field!r}"
    return text, ident, None


def iter_records(src: Source, start_units: int = 0, start_offset: Optional[int] = None,
                 blocks: bool = False, threads: Optional[int] = None) -> Iterator[Record]:
    """The records of one input from a position (see the module docstring). ``blocks``:
    JSON Lines (with their ids, if an id field is asked for) and text lines come as
    ``Block``s of good documents (many lines at a time, read without a Python call per
    line: ``_line_blocks``) between the ``Record``s of the lines that are not; ``threads``:
    how many read them (default: all cores)."""
    if src.kind == "parquet":
        yield from _iter_parquet(src, start_units, blocks)
        return
    name = src.name
    f = raw = None
    try:
        f, raw = open_stream(src.path, src.stdin)
        src.progress["raw"] = raw
        if src.kind == "text" and not src.lines:
            if start_units >= 1:
                return
            text, err = _decode(f.read())
            yield Record(text, 1, None, name, 0, error=err)
            return
        units = offset = 0
        if start_units:
            if start_offset is not None and raw is f and f.seekable():
                f.seek(start_offset)
                units, offset = start_units, start_offset
            else:  # compressed: decompress and skip
                for skipped in f:
                    units += 1
                    offset += len(skipped)
                    if units == start_units:
                        break
                if units < start_units:
                    raise BadInput(f"{name}: has {units} lines, cannot resume after line {start_units} "
                                   "(the input changed?)")
        jsonl = src.kind == "jsonl"
        if blocks:
            key = _field_key(src.field) if jsonl else None
            idkey = _field_key(src.id_field if src.id_field is not None else "") if jsonl else None
            if not jsonl or (key is not None and idkey is not None):
                yield from _line_blocks(f, src, units, offset, key, idkey, threads)
                return
        for rawline in f:
            units += 1
            offset += len(rawline)
            where = f"{name}:{units}"
            if jsonl:
                if not rawline.strip():  # blank lines are not documents
                    continue
                text, ident, err = _json_record(rawline, src)
                yield Record(text, units, offset, where, units, ident, err)
            else:
                if rawline.endswith(b"\n"):
                    rawline = rawline[:-1]
                    if rawline.endswith(b"\r"):
                        rawline = rawline[:-1]
                text, err = _decode(rawline)
                yield Record(text, units, offset, where, units, error=err)
    except (OSError, EOFError, zlib.error) as e:  # unreadable file, corrupt or truncated data
        raise BadInput(f"{name}: {e}") from None
    except Exception as e:  # zstandard.ZstdError and friends
        if type(e).__module__.startswith("zstandard") or "zstd" in type(e).__name__.lower():
            raise BadInput(f"{name}: {e}") from None
        raise
    finally:
        if f is not None and src.path != "-":
            f.close()
        if raw is not None and raw is not f:
            raw.close()


def _field_key(field: str):
    try:
        import numpy as np

        return np.frombuffer(field.encode("utf-8"), np.uint8)
    except UnicodeEncodeError:  # such a key is never a plain one: every line is read by json
        return None


def warm_block_reader() -> None:
    """Load the compiled JSON Lines reader and the text lines' UTF-8 check now (from Numba's
    cache: a few tenths of a second the first time in a process), not inside the first
    block's time."""
    import numpy as np

    from .kernels.jsonl_cpu import json_fields, utf8_lines

    line = np.frombuffer(b'{"text": "x"}', np.uint8)
    one = np.zeros(1, np.int64)
    json_fields(line, one * 0, one + line.shape[0], line[2:6], line[:0], np.empty_like(line), np.empty_like(one),
                np.empty_like(one), np.empty_like(one), np.empty(1, np.uint8))
    utf8_lines(line, one * 0, one + line.shape[0], np.empty(1, np.uint8))


def _read_lines(f):
    """Whole lines (a ``memoryview``), ``BLOCK_READ`` bytes or more at a time; the last
    may lack its ``\n``. Nothing is copied but a line cut by a read."""
    pending: list = []
    while True:
        data = f.read(BLOCK_READ)
        if not data:
            break
        cut = data.rfind(b"\n") + 1
        if cut == 0:  # a line longer than one read: joined once its end comes
            pending.append(data)
            continue
        view = memoryview(data)
        body = memoryview(b"".join(pending + [view[:cut]])) if pending else view[:cut]
        pending = [data[cut:]] if cut < len(data) else []
        yield body
    if pending:
        yield memoryview(b"".join(pending))


def _line_blocks(f, src: Source, units: int, offset: int, key, idkey, threads=None) -> Iterator[object]:
    """``Block``s and ``Record``s of the lines of ``f`` (``iter_records``), the same
    documents and errors as one line at a time: a JSON line goes through ``_json_record``
    unless ``kernels.jsonl_cpu`` reads it (exactly, or not at all), a text line through
    ``_decode`` when it is not UTF-8 (``jsonl_cpu.utf8_lines``)."""
    import numpy as np

    from ._util import PackedTexts
    from .fast_cpu import default_threads, numba_threads
    from .kernels.jsonl_cpu import OK, SLOW, json_fields, utf8_lines

    workers = None if threads is None else min(max(1, threads), default_threads())  # the kernels' threads
    name = src.name
    for body in _read_lines(f):
        arr = np.frombuffer(body, np.uint8)
        ends = np.flatnonzero(arr == 10)
        if arr[-1] != 10:
            ends = np.append(ends, len(body))
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        after = np.minimum(ends + 1, len(body))  # each line's end with its \n
        line_units = units + np.arange(1, ends.shape[0] + 1)
        line_offsets = offset + after
        units, offset = int(line_units[-1]), int(line_offsets[-1])
        status = np.empty(ends.shape[0], np.uint8)
        if key is not None:
            out = np.empty(max(len(body), 1), np.uint8)
            out_end = np.empty_like(ends)
            id_start = np.empty_like(ends)
            id_end = np.empty_like(ends)
            with numba_threads(workers):
                json_fields(arr, starts, ends, key, idkey, out, out_end, id_start, id_end, status)
            if src.id_field is not None and src.id_required:  # json's record says the id is missing
                status[(status == OK) & (id_start < 0)] = SLOW
        else:  # text lines: the \n and a \r before it go; each line UTF-8 (OK) or not (SLOW: _decode names why)
            cr = (ends > starts) & (after > ends) & (arr[np.maximum(ends - 1, 0)] == 13)  # only before a \n
            out_end = ends - cr
            with numba_threads(workers):
                utf8_lines(arr, starts, out_end, status)
        slow = np.flatnonzero(status == SLOW).tolist()
        first = 0
        for stop in slow + [ends.shape[0]]:
            good = np.arange(first, stop)
            good = good[status[first:stop] == OK]
            if good.shape[0]:
                a, b = starts[good], out_end[good]
                # the UTF-8 of the field as the kernel wrote it, or of the line: vouched for above
                docs = PackedTexts.from_buffer(out if key is not None else arr, a, b)
                ids = None
                if key is not None and src.id_field is not None:
                    ids = [MISSING if x < 0 else json.loads(str(body[x:y], "utf-8"))
                           for x, y in zip(id_start[good].tolist(), id_end[good].tolist())]
                yield Block(docs, b - a, line_units[good], line_offsets[good], ids)
            if stop < ends.shape[0]:
                k = stop
                u = int(line_units[k])
                where = f"{name}:{u}"
                rawline = bytes(body[starts[k]:after[k]])
                if key is not None:
                    text, ident, err = _json_record(rawline, src)
                    yield Record(text, u, int(line_offsets[k]), where, u, ident, err)
                else:
                    text, err = _decode(bytes(body[starts[k]:out_end[k]]))
                    yield Record(text, u, int(line_offsets[k]), where, u, error=err)
            first = stop + 1


# ---------------------------------------------------------------- parquet

def import_pyarrow(what: str):
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet as pq
    except ImportError:
        raise missing_package("pyarrow", what) from None
    return pq


def parquet_schema(path: str):
    pq = import_pyarrow("reading Parquet input")
    try:
        return pq.ParquetFile(path).schema_arrow
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise BadInput(f"{path}: cannot read as Parquet: {type(e).__name__}: {e}") from None


def _parquet_block(col, row: int, ids: Optional[list], src: Source) -> Optional[list]:
    """The rows after ``row`` of a batch's column (``col``: ``large_binary``): ``Block``s of
    its good values (their bytes where Arrow keeps them, as a ``PackedTexts``) between the
    ``Record``s of its null ones (and of rows whose required id is null), in row order; None
    where a value is not UTF-8 (Arrow's check of each value, as strict as Python's decoder:
    then the caller reads the rows one at a time and names it)."""
    import numpy as np
    import pyarrow as pa

    from ._util import PackedTexts

    try:
        col.cast(pa.large_string())  # checks every value's UTF-8 (a Parquet reader does not)
    except pa.ArrowInvalid:
        return None
    n = len(col)
    bufs = col.buffers()
    offs = np.frombuffer(bufs[1], np.int64)[col.offset:col.offset + n + 1] if n else np.zeros(1, np.int64)
    base = bufs[2].address if bufs[2] is not None else 0
    bad = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else np.zeros(n, np.bool_)
    if ids is not None and src.id_required:
        bad = bad | np.array([x is None for x in ids], np.bool_)
    rows = row + np.arange(1, n + 1)
    out: list = []
    first = 0
    for stop in np.flatnonzero(bad).tolist() + [n]:
        if stop > first:
            a, b = offs[first:stop], offs[first + 1:stop + 1]
            out.append(Block(PackedTexts(base + a, b - a, (col,)), b - a, rows[first:stop], None,
                             ids[first:stop] if ids is not None else None))
        if stop < n:
            r = int(rows[stop])
            if col[stop].is_valid:
                err = f"id column {src.id_field!r} is null"
            else:
                err = f"column {src.field!r} is null"
            out.append(Record(None, r, None, f"{src.name}:row {r}", r, ids[stop] if ids is not None else MISSING, err))
        first = stop + 1
    return out


def _iter_parquet(src: Source, start_rows: int, blocks: bool = False) -> Iterator[Record]:
    pq = import_pyarrow("reading Parquet input")
    import pyarrow as pa
    name = src.name
    if src.path == "-" or compression_of(src.path):
        raise BadInput(f"{name}: Parquet input must be a plain .parquet file (it is read by random access)")
    try:
        pf = pq.ParquetFile(src.path)
    except Exception as e:  # noqa: BLE001
        raise BadInput(f"{name}: cannot read as Parquet: {type(e).__name__}: {e}") from None
    schema = pf.schema_arrow
    if src.field not in schema.names:
        raise BadInput(f"{name}: no column {src.field!r} (columns: {', '.join(schema.names)})")
    ftype = schema.field(src.field).type
    is_binary = pa.types.is_binary(ftype) or pa.types.is_large_binary(ftype)
    if not (pa.types.is_string(ftype) or pa.types.is_large_string(ftype) or is_binary
            or str(ftype) in ("string_view", "binary_view")):
        raise BadInput(f"{name}: column {src.field!r} is {ftype}, not a string")
    columns = [src.field]
    id_col = src.id_field if src.id_field is not None and src.id_field in schema.names else None
    if src.id_field is not None and id_col is None and src.id_required:
        raise BadInput(f"{name}: no id column {src.id_field!r} (columns: {', '.join(schema.names)})")
    if id_col is not None and id_col != src.field:
        columns.append(id_col)
    md = pf.metadata
    first_group, row = 0, 0
    while first_group < md.num_row_groups and row + md.row_group(first_group).num_rows <= start_rows:
        row += md.row_group(first_group).num_rows
        first_group += 1
    src.progress["rows_total"] = md.num_rows
    if first_group >= md.num_row_groups:
        return
    try:
        batches = pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=list(range(first_group, md.num_row_groups)),
                                  columns=columns, use_threads=False)
        for batch in batches:
            n = batch.num_rows
            skip = min(max(start_rows - row, 0), n)  # rows of the batch before the start
            ids = batch.column(columns.index(id_col)).to_pylist()[skip:] if id_col is not None else None
            col = batch.column(0).slice(skip).cast(pa.large_binary())  # the values' bytes (no copy of them)
            if blocks:
                got = _parquet_block(col, row + skip, ids, src)
                if got is not None:
                    src.progress["rows_done"] = row + n
                    yield from got
                    row += n
                    continue
            row += skip
            for k, raw in enumerate(col.to_pylist()):
                row += 1
                src.progress["rows_done"] = row
                text, err = (None, f"column {src.field!r} is null") if raw is None else _decode(raw)
                ident = MISSING
                if ids is not None:
                    ident = ids[k]
                    if ident is None and src.id_required:
                        err = err or f"id column {id_col!r} is null"
                yield Record(None if err else text, row, None, f"{name}:row {row}", row, ident, err)
    except (OSError, pa.ArrowException) as e:
        raise BadInput(f"{name}: {type(e).__name__}: {e}") from None
