"""``gpu-tok encode``: a corpus on disk into training-ready token shards, streaming and resumable.

The job reads the inputs as one stream of documents (``gpu_tok.corpus``), encodes them in
batches of about ``batch_bytes`` UTF-8 bytes, and writes shards (``gpu_tok.shards``): a
shard closes after the document that brings it to ``shard_bytes`` bytes of text or
``shard_docs`` documents, so shard contents depend on the document stream only. Each shard
is committed with a line in the commit log (``shards.jsonl``) holding the input position
where the next one starts; ``resume`` continues after the last committed shard and gives
byte-identical files. ``manifest.json`` is written at the start and, complete, at the end.

Memory stays bounded: one batch of text, its ids, and per-document sizes of the open shard.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from . import shards as S
from ._util import PackedTexts
from .megatron_idx import dtype_code, token_dtype
from .corpus import (MISSING, BadInput, Block, Source, Stdin, check_readable, compression_of, expand_inputs,
                     input_format, iter_records, parquet_schema, sha256_and_size, warm_block_reader)
from .errors import UnsupportedComponent
from .resolve import TokenizerNotFound, default_tokenizer_path, resolve_tokenizer

MANIFEST_VERSION = 1
DEFAULT_BATCH_BYTES = 16 << 20
DEFAULT_SHARD_BYTES = 256 << 20
DEFAULT_BATCH_DOCS = 1 << 18  # also bounds a batch of (nearly) empty documents
READ_BLOCKS = True  # JSON Lines and text lines are read in blocks (corpus.iter_records)
DEFAULT_SHARD_DOCS = 1 << 24
MAX_SKIPPED_LISTED = 1000
SETUP_NOTICE_S = 5.0  # EncodeJob._setup_notice: seconds of set-up before it says why
SETUP_NOTICE = ("gpu-tok: still setting up: the first run of a tokenizer family on a machine (or after an "
                "upgrade) compiles the engine's kernels, about a minute; later runs load them from Numba's cache")
# options that change the output bytes: a resumed run must use the same ones
OUTPUT_OPTIONS = ("format", "input_format", "field", "lines", "id_field", "add_special_tokens", "append_eos",
                  "prepend_bos", "shard_bytes", "shard_docs", "on_error")


class _Batch:
    """The documents of the batch being gathered, in order: runs of the reader's blocks
    (``PackedTexts``, packed by the engine from the reader's UTF-8) and of single records'
    ``str``s (lists)."""

    __slots__ = ("parts", "n")

    def __init__(self):
        self.parts: list = []
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def _strs(self) -> list:
        """The run of ``str``s at the end (a new one after a block)."""
        if not self.parts or not isinstance(self.parts[-1], list):
            self.parts.append([])
        return self.parts[-1]

    def append(self, text: str) -> None:
        self._strs().append(text)
        self.n += 1

    def extend(self, texts) -> None:
        """Documents of a block (a ``PackedTexts`` slice, kept as it is, or a list)."""
        if isinstance(texts, PackedTexts):
            self.parts.append(texts)
        else:
            self._strs().extend(texts)
        self.n += len(texts)

    def texts(self):
        """All the documents: one ``PackedTexts`` where every part is one, else a list of ``str``."""
        if all(isinstance(p, PackedTexts) for p in self.parts):
            return PackedTexts.join(self.parts)
        out: List[str] = []
        for p in self.parts:
            out.extend(p)
        return out


def _version() -> str:
    import gpu_tok

    return str(getattr(gpu_tok, "__version__", "unknown"))


# ---------------------------------------------------------------- tokenizers

@dataclass
class Encoder:
    """A loaded tokenizer.json or tiktoken encoding, with what the job needs of it."""

    kind: str  # "tokenizer.json" or "tiktoken"
    spec: Optional[str]
    path: Path
    name: str
    obj: object
    sha256: str = ""
    vocab_size: int = 0  # largest id + 1

    def encode(self, texts: List[str], add_special_tokens: bool, device: str, num_threads: Optional[int]):
        # the ids come to the host (return_numpy): on the GPU engine, its path for host results
        # (copied back through pinned staging buffers; the one gpu_bench times as "host" and
        # the hybrid loop's, where GPU_TOK_CUDA_HYBRID is set: decision 0020), not CuPy arrays
        # copied to the host after the call
        if self.kind == "tiktoken":
            # tiktoken's encode_ordinary: special-token text in a document is ordinary text
            b = self.obj.encode_batch_ids(texts, allowed_special=frozenset(), disallowed_special=(),
                                          num_threads=num_threads, device=device, return_numpy=True)
        else:
            b = self.obj.encode_batch_ids(texts, add_special_tokens=add_special_tokens, device=device,
                                          num_threads=num_threads, return_numpy=True)
        return b.ids, b.row_splits

    def token_to_id(self, token: str) -> Optional[int]:
        if self.kind == "tiktoken":
            special = self.obj._special_tokens
            if token in special:
                return int(special[token])
            try:
                return int(self.obj.encode_single_token(token))
            except KeyError:
                return None
        return self.obj.token_to_id(token)

    def describe(self) -> dict:
        return {"spec": self.spec, "kind": self.kind, "name": self.name, "path": str(self.path.resolve()),
                "sha256": self.sha256, "vocab_size": self.vocab_size}


def tiktoken_rank_file(name: str) -> Tuple[Optional[Path], List[str]]:
    """The rank file of a named tiktoken encoding: ``$GPU_TOK_MODELS/tiktoken/``, then tiktoken's cache."""
    from .tiktoken_encoding import find_rank_file, named_definition

    d = named_definition(name)
    tried = []
    models = os.environ.get("GPU_TOK_MODELS")
    if models:
        cand = Path(models).expanduser() / "tiktoken" / d["rank_file"]
        tried.append(f"tiktoken rank file: {cand}")
        if cand.is_file():
            return cand, tried
    else:
        tried.append("tiktoken rank file: GPU_TOK_MODELS not set")
    try:
        return find_rank_file(name), tried
    except FileNotFoundError as e:
        tried.append(f"tiktoken rank file: {e}")
    return None, tried


def load_encoder(spec: Optional[str], log=None, clear_stored: bool = False) -> Encoder:
    """``spec``: a tokenizer.json, a folder, a ``.tiktoken`` file named after its encoding, a
    tiktoken encoding name, or a model name (``gpu_tok.resolve``); None: the embedded default.
    ``clear_stored``: a tokenizer.json's stored truncation / padding cleared (else refused)."""
    from .tiktoken_encoding import named_encodings

    if spec is None:
        path = default_tokenizer_path()
        if log:
            log(f"gpu-tok: no --tokenizer given; using the embedded default tokenizer {path} "
                "(a small byte-level BPE trained on gpu_tok's own source)")
        return _load_hf(None, path, clear_stored)
    p = Path(spec).expanduser()
    if p.is_file() and p.suffix == ".tiktoken":
        if p.stem not in named_encodings():
            raise BadInput(f"{spec}: a .tiktoken rank file must be named after its encoding "
                           f"({', '.join(named_encodings())}), or pass the encoding name")
        return _load_tiktoken(spec, p.stem, p)
    if not p.exists() and spec in named_encodings():
        rank, tried = tiktoken_rank_file(spec)
        if rank is not None:
            return _load_tiktoken(spec, spec, rank)
        try:
            path = resolve_tokenizer(spec)
        except TokenizerNotFound as e:
            raise TokenizerNotFound(str(e) + "\n" + "\n".join(f"  - {t}" for t in tried)) from None
        return _load_hf(spec, path, clear_stored)
    return _load_hf(spec, resolve_tokenizer(spec), clear_stored)


def _load_hf(spec, path: Path, clear_stored: bool = False) -> Encoder:
    import gpu_tok

    try:
        tok = gpu_tok.Tokenizer.from_file(str(path))
        if clear_stored:
            tok.no_truncation()
            tok.no_padding()
        for key in ("truncation", "padding"):
            if getattr(tok, key) is not None:  # the job writes whole documents, unpadded
                raise UnsupportedComponent(key, getattr(tok, key), f"the file stores {key}, which the job does not "
                                           "apply (it writes whole documents, unpadded); pass "
                                           "--no-truncation-padding to encode without it (the API applies it: "
                                           f"Tokenizer.enable_{key} / no_{key})")
    except Exception as e:  # noqa: BLE001
        raise BadInput(f"cannot load tokenizer {path}: {type(e).__name__}: {e}") from None
    vocab = tok.get_vocab(with_added_tokens=True)
    size = max(vocab.values()) + 1 if vocab else 0
    return Encoder("tokenizer.json", spec, Path(path), Path(path).parent.name if spec else "default", tok,
                   S._file_sha256(Path(path)), size)


def _load_tiktoken(spec, name: str, rank: Path) -> Encoder:
    import gpu_tok

    try:
        enc = gpu_tok.Tokenizer.from_tiktoken(name, path=str(rank))
    except Exception as e:  # noqa: BLE001
        raise BadInput(f"cannot load tiktoken encoding {name} from {rank}: {type(e).__name__}: {e}") from None
    return Encoder("tiktoken", spec, rank, name, enc, S._file_sha256(rank), int(enc.n_vocab))


def resolve_device(enc: Encoder, device: str) -> Tuple[str, str]:
    """``(device, note)``: ``auto`` is ``cuda`` when it runs here, else ``cpu``."""
    if device not in ("auto", "cuda"):
        return device, ""
    try:
        enc.encode(["gpu_tok device probe"], False, "cuda", None)
        return "cuda", ""
    except Exception as e:  # noqa: BLE001 - any failure means "no usable CUDA engine"
        reason = f"{type(e).__name__}: {e}"
    if device == "cuda":
        raise BadInput(f"--device cuda is not usable here ({reason}); use --device cpu or auto")
    return "cpu", f"cuda: {reason}"


# ---------------------------------------------------------------- BOS / EOS

def _config_token(value) -> Optional[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def _template_specials(proc) -> Tuple[Optional[str], Optional[str]]:
    """``(bos, eos)`` tokens the post-processor puts around a single sequence."""
    from . import config as C

    if proc is None:
        return None, None
    if isinstance(proc, C.ProcessorSequence):
        bos = eos = None
        for p in proc.processors:
            b, e = _template_specials(p)
            bos, eos = bos or b, eos or e
        return bos, eos
    if isinstance(proc, (C.RobertaProcessing, C.BertProcessing)):
        return proc.cls[0], proc.sep[0]
    if isinstance(proc, C.TemplateProcessing):
        single = proc.single
        seq = [k for k, piece in enumerate(single) if piece.kind == "Sequence"]
        if not seq:
            return None, None

        def one(piece):
            spec = proc.special_tokens.get(piece.id)
            return piece.id if spec is not None and len(spec.ids) == 1 else None

        bos = one(single[seq[0] - 1]) if seq[0] > 0 and single[seq[0] - 1].kind == "SpecialToken" else None
        last = seq[-1] + 1
        eos = one(single[last]) if last < len(single) and single[last].kind == "SpecialToken" else None
        return bos, eos
    return None, None


def special_token_id(enc: Encoder, which: str, override: Optional[str]) -> dict:
    """EOS (``which="eos"``) or BOS id: the override, tokenizer_config.json, the
    post-processor's template, a tiktoken encoding's ``<|endoftext|>``; else ``BadInput``."""
    tried = []

    def found(token, source):
        i = enc.token_to_id(token)
        if i is None:
            raise BadInput(f"{which.upper()} token {token!r} (from {source}) is not in the vocabulary of "
                           f"{enc.path}")
        return {"token": token, "id": int(i), "source": source}

    flag = f"--{which}-token"
    if override is not None:
        return found(override, flag)
    tried.append(f"{flag} (not given)")
    if enc.kind == "tokenizer.json":
        cfg_path = enc.path.parent / "tokenizer_config.json"
        if enc.spec is not None and cfg_path.is_file():
            try:
                cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise BadInput(f"{cfg_path}: cannot read: {e}") from None
            token = _config_token(cfg.get(f"{which}_token"))
            if token is not None:
                return found(token, str(cfg_path))
            tried.append(f"{cfg_path} ({which}_token is {json.dumps(cfg.get(f'{which}_token'))})")
        else:
            tried.append(f"{cfg_path} (no such file)")
        bos, eos = _template_specials(enc.obj.config.post_processor)
        token = bos if which == "bos" else eos
        if token is not None:
            return found(token, "post_processor template")
        tried.append("the post-processor's template (no special token " +
                     ("before" if which == "bos" else "after") + " the sequence)")
    else:
        if "<|endoftext|>" in enc.obj._special_tokens:
            return found("<|endoftext|>", f"tiktoken encoding {enc.name}")
        tried.append(f"tiktoken encoding {enc.name} (no <|endoftext|>)")
    opt = "--append-eos" if which == "eos" else "--prepend-bos"
    raise BadInput(f"{opt}: no {which.upper()} token found for {enc.path}; tried: " + "; ".join(tried) +
                   f". Name one with {flag} TOKEN")


def add_bos_eos(ids: np.ndarray, rs: np.ndarray, bos: Optional[int], eos: Optional[int]):
    """Put ``bos`` before and ``eos`` after every row (vectorized; O(tokens))."""
    nb, ne = int(bos is not None), int(eos is not None)
    if not nb and not ne:
        return ids, rs
    n = len(rs) - 1
    lens = np.diff(rs)
    new_rs = np.zeros(n + 1, np.int64)
    np.cumsum(lens + nb + ne, out=new_rs[1:])
    out = np.empty(int(new_rs[-1]), dtype=np.int32)
    if ids.size:
        doc = np.repeat(np.arange(n, dtype=np.int64), lens)
        out[np.arange(ids.size, dtype=np.int64) + doc * (nb + ne) + nb] = ids
    if nb:
        out[new_rs[:-1]] = bos
    if ne:
        out[new_rs[1:] - 1] = eos
    return out, new_rs


# ---------------------------------------------------------------- progress

class Progress:
    """Progress on stderr: a ``\\r`` line on a terminal, a log line every ``interval`` s otherwise."""

    def __init__(self, total_bytes: Optional[int], quiet: bool, stream=None, interval: Optional[float] = None):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        env = os.environ.get("GPU_TOK_PROGRESS_INTERVAL")
        self.interval = interval if interval is not None else (float(env) if env else (0.5 if self.tty else 10.0))
        self.total = total_bytes
        self.start = time.perf_counter()
        self.last = self.start
        self.drawn = False

    def update(self, docs: int, text_bytes: int, tokens: int, done_bytes: Optional[int], force=False) -> None:
        if self.quiet:
            return
        now = time.perf_counter()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        dt = max(now - self.start, 1e-9)
        mb = text_bytes / 1e6
        parts = [f"{docs:,} docs", f"{mb:,.1f} MB", f"{mb / dt:.1f} MB/s", f"{tokens / dt / 1e6:.2f} Mtok/s"]
        if self.total and done_bytes is not None and done_bytes > 0:
            frac = min(done_bytes / self.total, 1.0)
            eta = dt * (1 - frac) / frac if frac > 0 else float("inf")
            bar = "#" * int(frac * 20)
            head = f"[{bar:<20}] {frac * 100:5.1f}%"
            parts.append(f"ETA {_fmt_secs(eta)}")
        else:
            head = "encoding"
        line = head + " " + ", ".join(parts)
        if self.tty:
            self.stream.write("\r" + line + "\x1b[K")
            self.drawn = True
        else:
            self.stream.write(f"gpu-tok: {line}, {_fmt_secs(dt)} elapsed\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _fmt_secs(s: float) -> str:
    if s == float("inf"):
        return "?"
    s = int(s)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


# ---------------------------------------------------------------- the job

@dataclass
class Options:
    inputs: List[str]
    tokenizer: Optional[str] = None
    output: Optional[str] = None
    format: str = "bin"
    input_format: str = "auto"
    field: str = "text"
    lines: bool = False
    id_field: Optional[str] = None
    device: str = "auto"
    add_special_tokens: bool = False
    append_eos: bool = False
    prepend_bos: bool = False
    eos_token: Optional[str] = None
    bos_token: Optional[str] = None
    batch_bytes: int = DEFAULT_BATCH_BYTES
    batch_size: int = DEFAULT_BATCH_DOCS
    shard_bytes: int = DEFAULT_SHARD_BYTES
    shard_docs: int = DEFAULT_SHARD_DOCS
    num_threads: Optional[int] = None
    on_error: str = "stop"
    resume: bool = False
    overwrite: bool = False
    quiet: bool = False
    no_truncation_padding: bool = False  # a file's stored truncation / padding cleared (never applied)


@dataclass
class State:
    """Where the committed shards leave the run (restored from the commit log on resume)."""

    documents: int = 0
    tokens: int = 0
    bytes: int = 0
    shards: int = 0
    skipped_count: int = 0
    skipped: list = field(default_factory=list)  # the first MAX_SKIPPED_LISTED bad records
    per_input: list = field(default_factory=list)  # documents per input
    next: dict = field(default_factory=lambda: {"input": 0, "units": 0, "byte_offset": 0})
    log_bytes: int = 0  # valid length of the commit log


def _id_type_of(value) -> Optional[str]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return "int64"
    if isinstance(value, str):
        return "string"
    return None


def decide_id_column(sources: List[Source], opts: Options) -> Optional[dict]:
    """The id column carried into Parquet output: ``--id-field`` or ``id`` when the first input has it.

    Its type (``int64`` or ``string``) comes from the first input's column or first record.
    """
    if opts.format != "parquet" or opts.id_field == "":
        return None
    name = opts.id_field or "id"
    explicit = opts.id_field is not None
    if name == "input_ids":
        raise BadInput("--id-field: 'input_ids' is the name of the token column")
    first = sources[0]
    found = None
    where = first.name
    if first.kind == "parquet":
        import pyarrow as pa

        schema = parquet_schema(first.path)
        if name in schema.names:
            t = schema.field(name).type
            if pa.types.is_integer(t):
                found = "int64"
            elif pa.types.is_string(t) or pa.types.is_large_string(t):
                found = "string"
            else:
                raise BadInput(f"{first.name}: id column {name!r} is {t}; gpu-tok carries integer or string ids "
                               "(pass --id-field '' to leave it out)")
    elif first.kind == "jsonl" and first.path != "-":
        probe = Source(first.path, "jsonl", first.field, id_field=name)
        for rec in iter_records(probe):
            where = rec.where
            if rec.id is not MISSING:
                found = _id_type_of(rec.id)
                if found is None:
                    raise BadInput(f"{rec.where}: id field {name!r} is {type(rec.id).__name__}; gpu-tok carries "
                                   "integer or string ids (pass --id-field '' to leave it out)")
            break
    elif first.kind == "jsonl" and explicit:
        found = "string"  # standard input cannot be looked at in advance
    if found is None:
        if explicit:
            raise BadInput(f"--id-field {name}: {where} has no {name!r} (the first input's first record decides "
                           "the id column)")
        return None
    return {"name": name, "type": found, "required": explicit}


class _IdColumn:
    """Checks each record's id against the column's type (ints become strings in a string column)."""

    def __init__(self, spec: Optional[dict]):
        self.spec = spec

    def value(self, ident):
        """``(value, error)``"""
        if self.spec is None:
            return None, None
        if ident is MISSING or ident is None:
            if self.spec["required"]:
                return None, f"missing id field {self.spec['name']!r}"
            return None, None
        if self.spec["type"] == "string":
            if isinstance(ident, str):
                return ident, None
            if isinstance(ident, int) and not isinstance(ident, bool):
                return str(ident), None
        elif isinstance(ident, int) and not isinstance(ident, bool):
            if -(1 << 63) <= ident < (1 << 63):
                return ident, None
        return None, (f"id {self.spec['name']!r} is {type(ident).__name__} {ident!r:.40}, the id column is "
                      f"{self.spec['type']} (decided by the first record)")


class EncodeJob:
    def __init__(self, opts: Options, out=None, err=None):
        self.o = opts
        self.resumed_after = 0
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def log(self, msg: str) -> None:
        print(msg, file=self.err, flush=True)

    @contextlib.contextmanager
    def _setup_notice(self, quiet: bool):
        """The engine's set-up (the warm-up calls): when it is still running after
        ``SETUP_NOTICE_S`` seconds, one line on stderr says why (a first run compiles the
        kernels: 40 s for the Quickstart's command on the 2-core development host, 1.4 s
        once they are cached), so a long silence does not look like a hang."""
        timer = None
        if not quiet:
            timer = threading.Timer(SETUP_NOTICE_S, self.log, [SETUP_NOTICE])
            timer.daemon = True
            timer.start()
        try:
            yield
        finally:
            if timer is not None:
                timer.cancel()

    # ---------------------------------------------------------------- set-up
    def _sources(self, paths: List[str]) -> List[Source]:
        o = self.o
        self.stdin = Stdin()
        srcs = []
        for p in paths:
            kind = input_format(p, o.input_format)
            if kind == "parquet" and p == "-":
                raise BadInput("-: Parquet cannot be read from standard input (it needs random access)")
            check_readable(kind, p)
            srcs.append(Source(p, kind, o.field, o.lines, stdin=self.stdin if p == "-" else None))
        return srcs

    def _options_record(self) -> dict:
        o = self.o
        rec = {k: getattr(o, k) for k in OUTPUT_OPTIONS}
        rec["id_field"] = self.id_column["name"] if self.id_column else None
        rec["eos_id"] = self.eos["id"] if self.eos else None
        rec["bos_id"] = self.bos["id"] if self.bos else None
        return rec

    def run(self) -> int:
        o = self.o
        t_setup = time.perf_counter()
        paths = expand_inputs(o.inputs)
        sources = self._sources(paths)
        enc = load_encoder(o.tokenizer, self.log, o.no_truncation_padding)
        if enc.kind == "tiktoken" and o.add_special_tokens:
            raise BadInput("--add-special-tokens: a tiktoken encoding has no post-processor; use --append-eos / "
                           "--prepend-bos")
        self.eos = special_token_id(enc, "eos", o.eos_token) if o.append_eos else None
        self.bos = special_token_id(enc, "bos", o.bos_token) if o.prepend_bos else None
        if o.format == "parquet" and o.output:
            from .corpus import import_pyarrow

            import_pyarrow("--format parquet")
        device, note = resolve_device(enc, o.device)
        if note and not o.quiet:
            self.log(f"gpu-tok: --device auto: using cpu ({note})")
        with self._setup_notice(o.quiet):
            enc.encode(["gpu_tok warm-up"], o.add_special_tokens, device, o.num_threads)  # build the engine now
            from .fast_cpu import _PARALLEL_MIN_BYTES

            # and load its parallel kernels now (a batch past the threshold of the thread pool),
            # unless no batch can reach it (a first run then compiles only the serial path: the
            # Quickstart's command, README.md, 54 -> 40 s on the 2-core development host)
            bound = text_bytes_bound(sources)
            if device == "cpu" and (bound is None or bound >= _PARALLEL_MIN_BYTES):
                enc.encode(["gpu_tok warm-up. " * (_PARALLEL_MIN_BYTES // 32 + 1)] * 2, o.add_special_tokens,
                           device, o.num_threads)
            if READ_BLOCKS and any(s.kind == "jsonl" or (s.kind == "text" and s.lines) for s in sources):
                warm_block_reader()
        self.id_column = decide_id_column(sources, o)
        for s in sources:
            if self.id_column:
                s.id_field, s.id_required = self.id_column["name"], self.id_column["required"]
        ids = _IdColumn(self.id_column)
        dtype = token_dtype(enc.vocab_size)

        out_dir = Path(o.output) if o.output else None
        state = State(per_input=[0] * len(sources))
        head = None
        if out_dir is not None:
            head, state = self._prepare_output(out_dir, enc, sources, paths, dtype, state)
            if head is None:  # --resume found a complete run
                return 0
        commit_log = S.ShardLog(out_dir, state.log_bytes) if out_dir is not None else None

        # ------------------------------------------------------------ the stream
        t_start = time.perf_counter()  # the summary's seconds: reading, encoding, writing
        total = sum(os.path.getsize(p) for p in paths if p != "-") if "-" not in paths else None
        progress = Progress(total, o.quiet, self.err)
        done_before = 0
        pos = state.next
        docs, tokens, nbytes = state.documents, state.tokens, state.bytes
        per_input = list(state.per_input)
        pending_skips: list = []  # bad records of the open shard that will be listed
        pending_skip_count = 0  # all bad records of the open shard
        texts = _Batch()
        doc_ids: list = []
        batch_bytes = 0
        shard_docs = shard_bytes = 0
        shard_inputs: dict = {}  # input index -> documents of the open shard
        writer: Optional[S.ShardWriter] = None
        encode_s = 0.0

        def flush():
            nonlocal texts, doc_ids, batch_bytes, tokens, writer, encode_s
            if not texts:
                return
            t0 = time.perf_counter()
            b_ids, b_rs = enc.encode(texts.texts(), o.add_special_tokens, device, o.num_threads)
            b_ids, b_rs = add_bos_eos(b_ids, b_rs, self.bos and self.bos["id"], self.eos and self.eos["id"])
            encode_s += time.perf_counter() - t0
            tokens += int(b_ids.size)
            if out_dir is not None:
                if writer is None:
                    writer = S.open_shard(o.format, out_dir, state.shards, dtype, self.id_column)
                writer.add(b_ids, b_rs, doc_ids)
            texts, doc_ids, batch_bytes = _Batch(), [], 0

        def commit(next_pos: dict):
            """Close the open shard after the document at ``next_pos``."""
            nonlocal writer, shard_docs, shard_bytes, pending_skips, pending_skip_count, shard_inputs
            flush()
            if out_dir is None or writer is None:  # no output, or only skipped records so far
                shard_docs = shard_bytes = 0
                return
            files = writer.commit(state.shards)
            listed = pending_skips
            entry = {"index": state.shards, "files": files, "documents": writer.documents, "tokens": writer.tokens,
                     "bytes": shard_bytes, "first_document": state.documents, "next": next_pos,
                     "input_documents": {str(k): v for k, v in sorted(shard_inputs.items())},
                     "skipped": pending_skip_count, "skipped_records": listed,
                     "totals": {"documents": docs, "tokens": tokens, "bytes": nbytes,
                                "skipped": state.skipped_count + pending_skip_count}}
            commit_log.append(entry)  # the commit point
            state.shards += 1
            state.documents, state.tokens, state.bytes, state.next = docs, tokens, nbytes, next_pos
            state.skipped_count += pending_skip_count
            pending_skip_count = 0
            state.skipped.extend(listed)
            pending_skips, shard_inputs, writer = [], {}, None
            shard_docs = shard_bytes = 0

        last_pos = dict(pos)
        try:
            for i in range(pos["input"], len(sources)):
                src = sources[i]
                start_units, start_off = (pos["units"], pos["byte_offset"]) if i == pos["input"] else (0, 0)

                stream = iter_records(src, start_units, start_off, blocks=READ_BLOCKS, threads=o.num_threads)
                try:
                    for rec in stream:
                        vals = None
                        if isinstance(rec, Block) and self.id_column is not None:
                            got = [ids.value(x) for x in (rec.ids or itertools.repeat(MISSING, len(rec.texts)))]
                            vals = [v for v, _ in got] if not any(err for _, err in got) else None
                        if isinstance(rec, Block) and (vals is not None or self.id_column is None):
                            # good documents of many lines: split where a record would commit or flush
                            k, n = 0, len(rec.texts)
                            cum = np.zeros(n + 1, np.int64)
                            np.cumsum(rec.nbytes, out=cum[1:])
                            while k < n:  # the first document after which a record would commit or flush
                                rest = cum[k + 1:]
                                j = max(0, min(int(np.searchsorted(rest, cum[k] + o.shard_bytes - shard_bytes)),
                                               o.shard_docs - shard_docs - 1,
                                               int(np.searchsorted(rest, cum[k] + o.batch_bytes - batch_bytes)),
                                               o.batch_size - len(texts) - 1, n - k - 1))
                                m, b = j + 1, int(cum[k + j + 1] - cum[k])
                                texts.extend(rec.texts[k:k + m])
                                doc_ids.extend(vals[k:k + m] if vals is not None else itertools.repeat(None, m))
                                batch_bytes += b
                                nbytes += b
                                shard_bytes += b
                                docs += m
                                shard_docs += m
                                per_input[i] += m
                                shard_inputs[i] = shard_inputs.get(i, 0) + m
                                last_pos = {"input": i, "units": int(rec.units[k + j]),
                                            "byte_offset": None if rec.offsets is None else int(rec.offsets[k + j])}
                                k += m
                                if shard_bytes >= o.shard_bytes or shard_docs >= o.shard_docs:
                                    commit(last_pos)
                                elif batch_bytes >= o.batch_bytes or len(texts) >= o.batch_size:
                                    flush()
                                progress.update(docs, nbytes, tokens,
                                                done_before + _position_bytes(src, last_pos["byte_offset"]))
                            continue
                        # one record at a time (a block whose ids are not all good: each as a record)
                        for rec in (rec.records(src.name) if isinstance(rec, Block) else (rec,)):
                            last_pos = {"input": i, "units": rec.units, "byte_offset": rec.offset}
                            value, id_err = (None, None)
                            if rec.error is None:
                                value, id_err = ids.value(rec.id)
                            error = rec.error or id_err
                            if error is not None:
                                if o.on_error == "stop":
                                    raise BadInput(f"{rec.where}: {error}")
                                pending_skip_count += 1
                                if len(state.skipped) + len(pending_skips) < MAX_SKIPPED_LISTED:
                                    pending_skips.append({"file": src.name, "line": rec.line, "reason": error})
                                if out_dir is None and state.skipped_count + pending_skip_count <= 10 and not o.quiet:
                                    self.log(f"gpu-tok: skipped {rec.where}: {error}")
                                continue
                            n = len(rec.text) if rec.text.isascii() else len(rec.text.encode("utf-8"))
                            texts.append(rec.text)
                            doc_ids.append(value)
                            batch_bytes += n
                            docs += 1
                            nbytes += n
                            per_input[i] += 1
                            shard_inputs[i] = shard_inputs.get(i, 0) + 1
                            shard_docs += 1
                            shard_bytes += n
                            if shard_bytes >= o.shard_bytes or shard_docs >= o.shard_docs:
                                commit(last_pos)
                            elif batch_bytes >= o.batch_bytes or len(texts) >= o.batch_size:
                                flush()
                            progress.update(docs, nbytes, tokens, done_before + _position_bytes(src, rec.offset))
                finally:
                    stream.close()  # the input closed on any way out
                done_before += _size(src)
                progress.update(docs, nbytes, tokens, done_before)
            if texts or writer is not None:
                commit(last_pos)
        except BaseException as e:
            if writer is not None:
                writer.abort()
            progress.close()
            if commit_log is not None:
                commit_log.close()
            if out_dir is not None and isinstance(e, BadInput):
                # the committed shards stay; the manifest says why the run stopped
                S.write_manifest(out_dir, {**head, "stopped": str(e)})
            raise
        if progress.tty:
            progress.update(docs, nbytes, tokens, total, force=True)
        progress.close()
        seconds = time.perf_counter() - t_start

        skipped_count = state.skipped_count + pending_skip_count
        listed = state.skipped + pending_skips
        if out_dir is not None:
            commit_log.close()
            inputs = head["inputs"]
            for rec, n in zip(inputs, per_input):
                rec["documents"] = n
            if "-" in paths:
                k = paths.index("-")
                inputs[k]["sha256"], inputs[k]["size"] = self.stdin.sha256, self.stdin.size
            head.update({
                "complete": True, "documents": docs, "tokens": tokens, "bytes": nbytes, "num_shards": state.shards,
                "next": last_pos,
                "skipped": {"count": skipped_count, "records": listed, "listed_max": MAX_SKIPPED_LISTED},
                "timing": {"seconds": round(seconds, 3), "encode_seconds": round(encode_s, 3),
                           "setup_seconds": round(t_start - t_setup, 3), "device": device,
                           "resumed_after_shards": self.resumed_after,
                           "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")}})
            S.write_final_manifest(out_dir, head)
            if (out_dir / S.SHARD_LOG).exists():
                (out_dir / S.SHARD_LOG).unlink()  # every entry is in the manifest now
            if not o.quiet:
                self.log(f"gpu-tok: wrote {state.shards} shard(s) to {out_dir} "
                         f"({S.shard_stem(0) + '*' if state.shards else 'none'}) and {S.MANIFEST}")
        self._summary(docs, tokens, nbytes, seconds, skipped_count, listed)
        return 0

    def _summary(self, docs, tokens, nbytes, seconds, skipped, listed) -> None:
        if skipped:
            first = listed[0] if listed else None
            where = f" (first: {first['file']}:{first['line']}: {first['reason']})" if first else ""
            print(f"skipped {skipped} bad record(s){where}" + ("; see manifest.json" if self.o.output else ""),
                  file=self.out)
        mb_s = nbytes / 1e6 / seconds if seconds > 0 else 0.0
        print(f"{docs} documents, {tokens} tokens, {nbytes} bytes, {seconds:.3f} s, {mb_s:.2f} MB/s",
              file=self.out, flush=True)

    # ---------------------------------------------------------------- the output directory
    def _prepare_output(self, out_dir: Path, enc: Encoder, sources, paths, dtype, state: State):
        """The manifest head of this run, and the state to start from (``(None, _)``: nothing to do)."""
        o = self.o
        self.resumed_after = 0
        if out_dir.exists() and not out_dir.is_dir():
            raise BadInput(f"--output {out_dir}: exists and is not a directory")
        out_dir.mkdir(parents=True, exist_ok=True)
        try:
            old = S.read_manifest(out_dir)
        except (OSError, ValueError) as e:
            raise BadInput(f"{out_dir / S.MANIFEST}: cannot read: {e}") from None
        if o.resume and o.overwrite:
            raise BadInput("--resume and --overwrite exclude each other")
        inputs = []
        for src, p in zip(sources, paths):
            if p == "-":
                if o.resume:
                    raise BadInput("--resume: standard input (-) cannot be read again; resume needs files")
                inputs.append({"path": "-", "format": src.kind, "size": None, "sha256": None, "documents": None})
            else:
                digest, size = sha256_and_size(p)
                inputs.append({"path": p, "format": src.kind, "size": size, "sha256": digest, "documents": None})
        head = {
            "manifest_version": MANIFEST_VERSION,
            "gpu_tok_version": _version(),
            "complete": False,
            "tokenizer": enc.describe(),
            "options": self._options_record(),
            "dtype": str(dtype),
            "megatron_dtype_code": dtype_code(dtype) if o.format == "bin" else None,
            "id_column": ({k: self.id_column[k] for k in ("name", "type")} if self.id_column else None),
            "special_tokens": {"eos": self.eos, "bos": self.bos},
            "inputs": inputs,
            "shard_log": S.SHARD_LOG,  # committed shards while the run is incomplete
        }
        if o.resume:
            if old is None:
                raise BadInput(f"--resume: {out_dir} has no {S.MANIFEST} (nothing to resume; run without --resume)")
            self._check_resumable(old, head, out_dir)
            if old.get("complete"):
                self.log(f"gpu-tok: {out_dir} is already complete; nothing to do")
                self._summary(old["documents"], old["tokens"], old["bytes"], 0.0,
                              old["skipped"]["count"], old["skipped"]["records"])
                return None, state
            state = self._restore(out_dir, state)
            self.resumed_after = state.shards
            if not o.quiet:
                self.log(f"gpu-tok: resuming {out_dir} after {state.shards} committed shard(s), "
                         f"{state.documents} documents")
            return head, state
        if old is not None and not o.overwrite:
            raise BadInput(f"--output {out_dir} already holds a {S.MANIFEST} (from an earlier run): pass --resume to "
                           "continue it or --overwrite to replace it")
        leftovers = S.own_files(out_dir)
        if leftovers and not o.overwrite:
            raise BadInput(f"--output {out_dir} holds shard files without a manifest "
                           f"({leftovers[0].name}, ...): pass --overwrite to replace them")
        for p in leftovers:
            p.unlink()
        S.write_manifest(out_dir, head)
        return head, state

    def _restore(self, out_dir: Path, state: State) -> State:
        """The state after the last complete line of the commit log; files past it are removed."""
        for entry, end in S.iter_shard_log(out_dir):
            for name, info in entry["files"].items():
                f = out_dir / name
                if not f.is_file() or f.stat().st_size != info["bytes"]:
                    raise BadInput(f"--resume: committed shard file {f} is missing or has the wrong size; "
                                   "the output directory is damaged (start again with --overwrite)")
            for k, n in entry["input_documents"].items():
                state.per_input[int(k)] += n
            state.skipped.extend(entry["skipped_records"])
            state.skipped_count += entry["skipped"]
            state.shards = entry["index"] + 1
            state.next = entry["next"]
            t = entry["totals"]
            state.documents, state.tokens, state.bytes = t["documents"], t["tokens"], t["bytes"]
            state.log_bytes = end
        for p in S.stray_files(out_dir, state.shards):
            p.unlink()
        return state

    def _check_resumable(self, old: dict, new: dict, out_dir: Path) -> None:
        problems = []
        if old.get("manifest_version") != MANIFEST_VERSION:
            problems.append(f"manifest version {old.get('manifest_version')} (this gpu_tok writes {MANIFEST_VERSION})")
            raise BadInput(f"--resume: {out_dir}: " + problems[0])
        if old["tokenizer"]["sha256"] != new["tokenizer"]["sha256"]:
            problems.append(f"tokenizer SHA-256 {old['tokenizer']['sha256'][:12]}... was used, "
                            f"{new['tokenizer']['sha256'][:12]}... ({new['tokenizer']['path']}) is given")
        for key in sorted(set(old["options"]) | set(new["options"])):
            a, b = old["options"].get(key), new["options"].get(key)
            if a != b:
                problems.append(f"option {key}: was {json.dumps(a)}, now {json.dumps(b)}")
        oi, ni = old["inputs"], new["inputs"]
        if len(oi) != len(ni):
            problems.append(f"{len(oi)} inputs were used, {len(ni)} are given")
        else:
            for a, b in zip(oi, ni):
                if (a["size"], a["sha256"]) != (b["size"], b["sha256"]):
                    problems.append(f"input {b['path']} differs from {a['path']} of the first run "
                                    f"(size {b['size']} vs {a['size']}, SHA-256 {str(b['sha256'])[:12]}... vs "
                                    f"{str(a['sha256'])[:12]}...)")
        if old["dtype"] != new["dtype"] or old.get("id_column") != new.get("id_column"):
            problems.append(f"output dtype / id column differ ({old['dtype']}, {old.get('id_column')} vs "
                            f"{new['dtype']}, {new.get('id_column')})")
        if problems:
            raise BadInput(f"--resume: {out_dir} was written by a different run:\n" +
                           "\n".join(f"  - {p}" for p in problems))


def _position_bytes(src: Source, offset: Optional[int] = None) -> int:
    """How far into ``src``'s file the job is, for progress: ``offset`` (the last record's
    end) in a plain file, else the file's own position (compressed input: the reader may be
    a block ahead of the job; the file's size once it is closed)."""
    if src.kind == "parquet":
        total = src.progress.get("rows_total") or 0
        return int(_size(src) * src.progress.get("rows_done", 0) / total) if total else 0
    if offset is not None and src.path != "-" and compression_of(src.path) is None:
        return offset
    raw = src.progress.get("raw")
    try:
        return raw.tell() if raw is not None and not raw.closed else _size(src)
    except (OSError, ValueError):
        return 0


def text_bytes_bound(sources: List[Source]) -> Optional[int]:
    """At least as many bytes as the documents of ``sources`` hold in all (UTF-8): the
    files' sizes, where each is a plain JSON Lines or text file (a JSON string's text is
    never longer than its escaped form, a text line than its bytes); None where one is
    standard input, compressed or Parquet."""
    total = 0
    for src in sources:
        if src.path == "-" or src.kind == "parquet" or compression_of(src.path):
            return None
        try:
            total += os.path.getsize(src.path)
        except OSError:
            return None
    return total


def _size(src: Source) -> int:
    try:
        return os.path.getsize(src.path) if src.path != "-" else 0
    except OSError:
        return 0


def run_encode(opts: Options, out=None, err=None) -> int:
    return EncodeJob(opts, out, err).run()
