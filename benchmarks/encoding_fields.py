#!/usr/bin/env python3
"""The cost of ``encode_batch`` (``Encoding`` objects) and of reading their fields.

Our encodings are lazy (decision 0032): ``encode_batch`` makes flat arrays, and each
encoding makes a field's list the first time it is read. What a caller pays is the call
plus the fields it reads (``transformers`` reads ``ids``, ``type_ids`` and
``attention_mask`` of every encoding, ``offsets`` with ``return_offsets_mapping``). This
times, on the first ``--max-mb`` MB of each bench file (warm engine, best of ``--repeat``
rounds, the garbage collector on, as in a caller's process): the call, then reading
``ids``, ``attention_mask``, ``offsets`` and ``tokens`` of every encoding, each in turn.
With ``--truncation`` the fields are read of every encoding and of each of its
``overflowing`` windows, and the tokens column counts them all.

    python benchmarks/encoding_fields.py
    python benchmarks/encoding_fields.py --models gpt2,llama2 --files english_prose --threads 2
    python benchmarks/encoding_fields.py --doc-bytes 100     # documents of about 100 bytes
    python benchmarks/encoding_fields.py --hf                # HF tokenizers' row after ours
    python benchmarks/encoding_fields.py --hf --truncation 512,128 --special   # windows (overflowing)
    PYTHONPATH=<worktree of another revision> python benchmarks/encoding_fields.py   # before/after
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

from gpu_tok.bench import _cut_utf8, bench_file, load_texts, resolve_model

FIELDS = ("ids", "attention_mask", "offsets", "tokens")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="gpt2,llama3,llama2")
    ap.add_argument("--files", default="code,english_prose,multilingual")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-mb", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--doc-bytes", type=int, metavar="N",
                    help="cut each file's texts into documents of about N bytes (as paired.py --doc-bytes)")
    ap.add_argument("--hf", action="store_true",
                    help="also the pinned HF tokenizers (its encode_batch and fields, --threads rayon threads), "
                         "each file's row after ours")
    ap.add_argument("--truncation", metavar="MAX_LENGTH[,STRIDE]",
                    help="enable_truncation(max_length, stride=STRIDE) on each engine")
    ap.add_argument("--special", action="store_true", help="add_special_tokens=True (default False)")
    args = ap.parse_args(argv)
    trunc = None
    if args.truncation:
        ml, _, stride = args.truncation.partition(",")
        trunc = (int(ml), int(stride or 0))
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)  # HF tokenizers' pool (read when it first starts)
    import gpu_tok

    print(f"gpu_tok from {os.path.dirname(gpu_tok.__file__)}; truncation {args.truncation or '-'}, "
          f"add_special_tokens {args.special}")
    print("| engine | model | file | MB | tokens | encode_batch ms | " + " | ".join(f"{f} ms" for f in FIELDS) + " |")
    print("|---|---|---|---:|---:|---:|" + "---:|" * len(FIELDS))
    for mname in args.models.split(","):
        model = resolve_model(mname)
        if model.error or model.kind != "hf":
            print(f"skipped {mname}: {model.error or 'not a tokenizer.json'}")
            continue
        engines = [("ours", gpu_tok.Tokenizer.from_file(str(model.path)))]
        if args.hf:
            import tokenizers

            engines.append(("hf", tokenizers.Tokenizer.from_file(str(model.path))))
        for _, tok in engines:
            if trunc is not None:
                tok.enable_truncation(trunc[0], stride=trunc[1])
        for fn in args.files.split(","):
            texts = load_texts(bench_file(fn), args.max_mb * 1e6)
            if args.doc_bytes:
                texts = _cut_utf8("\n".join(texts).encode("utf-8")[: int(args.max_mb * 1e6)], args.doc_bytes)
                fn = f"{fn} ({args.doc_bytes} B docs)"
            mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
            for name, tok in engines:
                if name == "ours":
                    def call():
                        return tok.encode_batch(texts, add_special_tokens=args.special, device="cpu",
                                                num_threads=args.threads)
                else:
                    def call():
                        return tok.encode_batch(texts, add_special_tokens=args.special)
                best = [float("inf")] * (1 + len(FIELDS))
                ntok = 0
                for r in range(args.repeat + 1):
                    gc.collect()
                    t0 = time.perf_counter()
                    encs = call()
                    times = [time.perf_counter() - t0]
                    if trunc is not None:  # (the windows too; not timed)
                        encs = [w for e in encs for w in (e, *e.overflowing)]
                    for f in FIELDS:
                        t0 = time.perf_counter()
                        got = [getattr(e, f) for e in encs]
                        times.append(time.perf_counter() - t0)
                        if f == "ids":
                            ntok = sum(map(len, got))
                        del got
                    del encs
                    if r:  # the first round warms up
                        best = [min(a, b) for a, b in zip(best, times)]
                print(f"| {name} | {mname} | {fn} | {mb:.2f} | {ntok} | " + " | ".join(f"{t * 1e3:.1f}" for t in best)
                      + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
