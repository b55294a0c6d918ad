"""The gpu-tok command line (also python -m gpu_tok).

gpu-tok encode tokenizes a corpus into training-ready token shards:

    gpu-tok encode --tokenizer gpt2 --input 'data/*.jsonl.zst' --output out/ --append-eos

Inputs, each a path, a glob, or - for standard input (format from the name, after a
.gz / .zst compression suffix, unless --input-format says):

- .parquet: the --field column (read by record batches; needs pyarrow).
- .jsonl / .json: one JSON object per line, the document is its --field (default text);
  blank lines are skipped.
- anything else is UTF-8 text: the whole file is one document, or with --lines each line
  is one (the \\n, and a \\r before it, removed; empty lines stay, so document i is line
  i+1). Standard input is text unless --input-format jsonl.

Special tokens: by default the ids are the text's own (add_special_tokens=False);
--add-special-tokens applies the tokenizer's post-processor; --append-eos / --prepend-bos
add the EOS / BOS id to every document (from --eos-token/--bos-token, else
tokenizer_config.json beside the tokenizer.json, else the post-processor's template, else
a tiktoken encoding's <|endoftext|>).

With --output DIR it writes shards in document order (--format bin: Megatron-LM
shard-NNNNN.bin + .idx; parquet: shard-NNNNN.parquet with an input_ids list<int32>
column; npy: shard-NNNNN.ids.npy + .row_splits.npy) and DIR/manifest.json, committing
each shard atomically; --resume continues a killed run and gives the same bytes. Without
--output it only encodes and prints the summary. The last line printed is always the
summary: documents, tokens, bytes, seconds, MB/s.

Bad input (malformed JSON, a missing field, invalid UTF-8, a missing file) stops with
file:line: reason and exit status 2; --on-error skip skips bad records, counts them and
lists them in the manifest.
"""

from __future__ import annotations

import argparse
import re
import sys

from gpu_tok.corpus import BadInput
from gpu_tok.resolve import TokenizerNotFound

OLD_INPUT_FORMATS = ("auto", "jsonl", "text")


def _positive_int(value: str) -> int:
    n = int(value)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return n


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.I)


def byte_size(value: str) -> int:
    """``1048576``, ``64M``, ``64MiB``, ``1G``, ``512k`` (binary multiples)."""
    m = _SIZE.match(value)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {value!r} (examples: 1048576, 64M, 256MiB, 1G)")
    n = float(m.group(1)) * (1024 ** " kmgt".index((m.group(2) or " ").lower()))
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte: {value}")
    return int(n)


def _output_format(value: str) -> str:
    if value in ("bin", "parquet", "npy"):
        return value
    if value in OLD_INPUT_FORMATS:
        raise argparse.ArgumentTypeError(
            f"{value!r}: --format is the OUTPUT format now (bin, parquet or npy); "
            f"the input format is --input-format {value}")
    raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from bin, parquet, npy)")


def _add_input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokenizer", metavar="PATH|NAME",
                   help="tokenizer.json, a folder holding one, a tiktoken encoding name (r50k_base, p50k_base, "
                        "cl100k_base, o200k_base, o200k_harmony; rank file from $GPU_TOK_MODELS/tiktoken or "
                        "tiktoken's cache), or a model name looked up in $GPU_TOK_MODELS, the Hugging Face "
                        "cache, then the Hub (default: the embedded default tokenizer)")
    p.add_argument("--input", nargs="+", required=True, metavar="PATH",
                   help="files, globs, or - for standard input (.gz / .zst are decompressed)")
    p.add_argument("--input-format", choices=["auto", "jsonl", "parquet", "text"], default="auto",
                   help="input format (auto: .parquet, .jsonl/.json, else text; standard input is text)")
    p.add_argument("--field", default="text", help="JSONL field / Parquet column holding the text (default: text)")
    p.add_argument("--lines", action="store_true", help="plain text: one document per line")
    p.add_argument("--device", choices=["auto", "cuda", "cpu", "ref"], default="auto",
                   help="auto: cuda when usable, else cpu (the compiled engine); ref: the plain-Python reference")
    p.add_argument("--add-special-tokens", action="store_true",
                   help="apply the post-processor's special tokens (default: off, the text's own ids)")
    p.add_argument("--no-truncation-padding", action="store_true",
                   help="accept a tokenizer.json that stores truncation or padding (all-MiniLM-L6-v2) and encode "
                        "whole documents without them, as after Tokenizer.no_truncation() / no_padding() "
                        "(default: such a file is refused)")
    p.add_argument("--num-threads", type=_positive_int, metavar="N", help="CPU threads (default: all cores)")
    p.add_argument("--on-error", choices=["stop", "skip"], default="stop",
                   help="a bad record (malformed JSON, missing field, invalid UTF-8): stop with file:line "
                        "(default), or skip it, count it and list it in the manifest")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-tok", description="Exact bulk tokenization "
                                     "(Hugging Face tokenizer.json, tiktoken).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    enc = sub.add_parser("encode", help="tokenize a corpus into training-ready token shards",
                         description=__doc__.split("\n\n", 1)[1],
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_input_args(enc)
    enc.add_argument("--output", metavar="DIR", help="write shards and manifest.json here (default: only "
                     "encode and print the summary)")
    enc.add_argument("--format", type=_output_format, default="bin", metavar="{bin,parquet,npy}",
                     help="output format (default: bin, Megatron-LM .bin/.idx)")
    enc.add_argument("--id-field", metavar="NAME",
                     help="parquet output: carry this JSONL field / Parquet column as the id column "
                          "(default: 'id' when the first record has it; '' for none)")
    enc.add_argument("--append-eos", action="store_true", help="append the EOS id to every document")
    enc.add_argument("--prepend-bos", action="store_true", help="prepend the BOS id to every document")
    enc.add_argument("--eos-token", metavar="TOKEN", help="the EOS token (default: see above)")
    enc.add_argument("--bos-token", metavar="TOKEN", help="the BOS token (default: see above)")
    enc.add_argument("--batch-bytes", type=byte_size, default="16MiB", metavar="N",
                     help="UTF-8 bytes of text per encode call (default: 16MiB; memory grows with it)")
    enc.add_argument("--batch-size", type=_positive_int, default=1 << 18, metavar="N",
                     help="also cap the documents per encode call (default: 262144)")
    enc.add_argument("--shard-bytes", type=byte_size, default="256MiB", metavar="N",
                     help="a shard closes after the document that brings it to N bytes of text (default: 256MiB)")
    enc.add_argument("--shard-docs", type=_positive_int, default=1 << 24, metavar="N",
                     help="a shard also closes after N documents (default: 16777216)")
    enc.add_argument("--resume", action="store_true",
                     help="continue the run recorded in DIR/manifest.json (same inputs, tokenizer and options)")
    enc.add_argument("--overwrite", action="store_true", help="replace an earlier run's output in DIR")
    enc.add_argument("--quiet", action="store_true", help="no progress output (the summary is still printed)")
    enc.set_defaults(func=cmd_encode)

    ver = sub.add_parser("verify", help="re-encode a sample with the reference library and report mismatches")
    _add_input_args(ver)
    ver.add_argument("--sample", type=_positive_int, default=1000, metavar="N",
                     help="documents to sample (default: 1000)")
    ver.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    ver.set_defaults(func=cmd_verify)

    sub.add_parser("bench", help="the side-by-side benchmark (gpu-tok bench --help)", add_help=False)
    return parser


def cmd_encode(args: argparse.Namespace) -> int:
    from gpu_tok.bulk import Options, run_encode

    opts = Options(
        inputs=args.input, tokenizer=args.tokenizer, output=args.output, format=args.format,
        input_format=args.input_format, field=args.field, lines=args.lines, id_field=args.id_field,
        device=args.device, add_special_tokens=args.add_special_tokens, append_eos=args.append_eos,
        prepend_bos=args.prepend_bos, eos_token=args.eos_token, bos_token=args.bos_token,
        batch_bytes=args.batch_bytes, batch_size=args.batch_size, shard_bytes=args.shard_bytes,
        shard_docs=args.shard_docs, num_threads=args.num_threads, on_error=args.on_error,
        resume=args.resume, overwrite=args.overwrite, quiet=args.quiet,
        no_truncation_padding=args.no_truncation_padding)
    return run_encode(opts)


def cmd_verify(args: argparse.Namespace) -> int:
    from gpu_tok.verify import VerifyOptions, run_verify

    return run_verify(VerifyOptions(
        inputs=args.input, tokenizer=args.tokenizer, sample=args.sample, seed=args.seed, device=args.device,
        input_format=args.input_format, field=args.field, lines=args.lines,
        add_special_tokens=args.add_special_tokens, on_error=args.on_error, num_threads=args.num_threads,
        no_truncation_padding=args.no_truncation_padding))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        from gpu_tok import bench

        return bench.main(argv[1:], prog="gpu-tok bench")
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
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        print("gpu-tok: interrupted", file=sys.stderr)
        return 130
