"""The gpu-tok command line (also python -m gpu_tok).

gpu-tok encode tokenizes a corpus in batches with Tokenizer.encode_batch_ids:

    gpu-tok encode --input 'data/*.jsonl.gz' --tokenizer gpt2 --output out/

Inputs, each a path, a glob, or - for standard input:

- JSONL (.jsonl / .json, optionally .gz): one JSON object per line, the
  document is its --field (default text); blank lines are skipped.
- anything else is plain UTF-8 text: the whole file is one document, or with
  --lines each line is one (the \\n, and a \\r before it, removed; empty
  lines stay, so document i is line i+1). Standard input is plain text unless
  --format jsonl.

Special tokens (BOS/EOS templates) are *not* added unless --add-special-tokens
is given: corpora are usually packed and delimited later.

With --output DIR it writes DIR/ids.npy (flat; uint16 when every id fits,
else int32), DIR/row_splits.npy (int64, documents + 1; document i is
ids[row_splits[i]:row_splits[i+1]]) and DIR/manifest.json. The last line
printed is always the summary: documents, tokens, bytes, seconds, MB/s.

Bad input (malformed JSON, a missing field, invalid UTF-8, a missing file) stops
with file:line: reason and exit status 2.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import sys
import time
import zlib
from pathlib import Path
from typing import Iterator

from gpu_tok._util import sha256_file
from gpu_tok.resolve import TokenizerNotFound, default_tokenizer_path, resolve_tokenizer

JSONL_SUFFIXES = (".jsonl", ".json")


class BadInput(Exception):
    """An input that cannot be read as documents; the message names file:line."""


# ---------------------------------------------------------------- inputs

def expand_inputs(specs: list[str]) -> list[str]:
    """Expand globs (sorted) and check that every path exists; ``-`` stays as is."""
    out: list[str] = []
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
        else:
            raise BadInput(f"{spec}: no such file")
    return out


def input_format(path: str, fmt: str) -> str:
    if fmt != "auto":
        return fmt
    if path == "-":
        return "text"
    name = path[:-3] if path.endswith(".gz") else path
    return "jsonl" if name.lower().endswith(JSONL_SUFFIXES) else "text"


def _open(path: str):
    if path == "-":
        return sys.stdin.buffer
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{where}: invalid UTF-8 at byte {e.start}") from None


def read_documents(path: str, fmt: str = "auto", field: str = "text",
                   lines: bool = False) -> Iterator[str]:
    """Yield the documents of one input; raise ``BadInput`` naming file:line."""
    name = "<stdin>" if path == "-" else path
    kind = input_format(path, fmt)
    f = None
    try:
        f = _open(path)
        if kind == "jsonl":
            for lineno, raw in enumerate(f, 1):
                if raw.strip():  # blank lines are skipped
                    yield _json_document(raw, f"{name}:{lineno}", field)
        elif lines:
            for lineno, raw in enumerate(f, 1):
                raw = raw[:-1] if raw.endswith(b"\n") else raw
                raw = raw[:-1] if raw.endswith(b"\r") else raw
                yield _decode(raw, f"{name}:{lineno}")
        else:
            yield _decode(f.read(), name)
    except (OSError, EOFError, zlib.error) as e:  # unreadable file, corrupt or truncated gzip
        raise BadInput(f"{name}: {e}") from None
    finally:
        if f is not None and f is not sys.stdin.buffer:
            f.close()


def _json_document(raw: bytes, where: str, field: str) -> str:
    try:
        obj = json.loads(_decode(raw, where))
    except json.JSONDecodeError as e:
        raise BadInput(f"{where}: malformed JSON: {e.msg} (column {e.colno})") from None
    if not isinstance(obj, dict):
        raise BadInput(f"{where}: expected a JSON object, got {type(obj).__name__}")
    if field not in obj:
        raise BadInput(f"{where}: missing field {field!r}")
    text = obj[field]
    if not isinstance(text, str):
        raise BadInput(f"{where}: field {field!r} is {type(text).__name__}, not a string")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{where}: field {field!r} holds a lone surrogate (not valid Unicode)") from None
    return text


# ---------------------------------------------------------------- outputs

def _to_numpy(a):
    import numpy as np

    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _version() -> str:
    import gpu_tok

    version = getattr(gpu_tok, "__version__", None)
    if version:
        return str(version)
    try:
        from importlib.metadata import version as dist_version

        return dist_version("gpu-tok")
    except Exception:
        return "unknown"


def write_output(out_dir: Path, ids, row_splits, vocab_size: int, manifest: dict) -> None:
    import numpy as np

    fits16 = vocab_size <= 1 << 16 and (ids.size == 0 or int(ids.max()) < 1 << 16)
    ids = ids.astype(np.uint16 if fits16 else np.int32)
    out_dir.mkdir(parents=True, exist_ok=True)
    np.save(out_dir / "ids.npy", ids)
    np.save(out_dir / "row_splits.npy", row_splits.astype(np.int64))
    manifest = {**manifest, "ids": {"file": "ids.npy", "dtype": str(ids.dtype)},
                "row_splits": {"file": "row_splits.npy", "dtype": "int64"}}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- encode

def cmd_encode(args: argparse.Namespace) -> int:
    import numpy as np

    import gpu_tok

    inputs = expand_inputs(args.input)
    if args.tokenizer:
        tok_path = resolve_tokenizer(args.tokenizer)
    else:
        tok_path = default_tokenizer_path()
        print(f"gpu-tok: no --tokenizer given; using the embedded default tokenizer {tok_path} "
              "(a small byte-level BPE trained on gpu_tok's own source)", file=sys.stderr)
    try:
        tok = gpu_tok.Tokenizer.from_file(str(tok_path))
    except Exception as e:
        raise BadInput(f"cannot load tokenizer {tok_path}: {type(e).__name__}: {e}") from None
    keep = args.output is not None
    ids_parts, len_parts, per_input = [], [], []
    n_docs = n_tokens = n_bytes = 0
    start = time.perf_counter()

    def flush(batch: list[str]) -> None:
        nonlocal n_docs, n_tokens
        res = tok.encode_batch_ids(batch, add_special_tokens=args.add_special_tokens,
                                   device=args.device)
        ids, splits = _to_numpy(res.ids), _to_numpy(res.row_splits)
        n_docs += len(batch)
        n_tokens += int(ids.size)
        if keep:
            ids_parts.append(ids.astype(np.int32, copy=False))
            len_parts.append(np.diff(splits))

    batch: list[str] = []
    for path in inputs:
        count = 0
        for text in read_documents(path, args.format, args.field, args.lines):
            batch.append(text)
            n_bytes += len(text.encode("utf-8"))
            count += 1
            if len(batch) >= args.batch_size:
                flush(batch)
                batch = []
        per_input.append({"path": path, "documents": count})
    if batch:
        flush(batch)
    seconds = time.perf_counter() - start

    if keep:
        ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, np.int32)
        lengths = np.concatenate(len_parts) if len_parts else np.zeros(0, np.int64)
        row_splits = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int64)
        manifest = {
            "gpu_tok_version": _version(),
            "tokenizer": {"path": str(Path(tok_path).resolve()), "sha256": sha256_file(tok_path),
                          "spec": args.tokenizer},
            "inputs": per_input,
            "documents": n_docs, "tokens": n_tokens, "bytes": n_bytes,
            "add_special_tokens": args.add_special_tokens, "device": args.device,
            "format": args.format, "field": args.field, "lines": args.lines,
        }
        write_output(Path(args.output), ids, row_splits,
                     tok.get_vocab_size(with_added_tokens=True), manifest)
        print(f"gpu-tok: wrote {args.output}/ids.npy, row_splits.npy, manifest.json", file=sys.stderr)

    mb_s = n_bytes / 1e6 / seconds if seconds > 0 else 0.0
    print(f"{n_docs} documents, {n_tokens} tokens, {n_bytes} bytes, {seconds:.3f} s, {mb_s:.2f} MB/s")
    return 0


# ---------------------------------------------------------------- main

def _positive_int(value: str) -> int:
    n = int(value)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-tok", description="Exact bulk tokenization "
                                     "(Hugging Face tokenizer.json).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    enc = sub.add_parser("encode", help="tokenize files into flat ids + row_splits",
                         description=__doc__.split("\n\n", 1)[1],
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    enc.add_argument("--tokenizer", metavar="PATH|NAME",
                     help="tokenizer.json, a folder holding one, or a model name looked up in "
                          "$GPU_TOK_MODELS, the Hugging Face cache, then the Hub "
                          "(default: the embedded default tokenizer)")
    enc.add_argument("--input", nargs="+", required=True, metavar="PATH",
                     help="files, globs, or - for standard input")
    enc.add_argument("--output", metavar="DIR", help="write ids.npy, row_splits.npy, manifest.json here")
    enc.add_argument("--device", choices=["ref", "cpu", "auto"], default="auto")
    enc.add_argument("--format", choices=["auto", "jsonl", "text"], default="auto",
                     help="input format (auto: by extension; standard input is text)")
    enc.add_argument("--field", default="text", help="JSONL field holding the text (default: text)")
    enc.add_argument("--lines", action="store_true", help="plain text: one document per line")
    enc.add_argument("--add-special-tokens", action="store_true",
                     help="apply the post-processor's special tokens (default: off, for corpora)")
    enc.add_argument("--batch-size", type=_positive_int, default=1024, metavar="N",
                     help="documents per encode_batch_ids call (default: 1024)")
    enc.set_defaults(func=cmd_encode)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.func(args)
    except (BadInput, TokenizerNotFound) as e:
        print(f"gpu-tok: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gpu-tok: interrupted", file=sys.stderr)
        return 130
