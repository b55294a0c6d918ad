#!/usr/bin/env python3
"""``decode_batch`` side by side: ours against HF ``tokenizers`` (tokenizer.json files) and
``tiktoken`` (tiktoken encodings), on the ids of the first ``--max-mb`` MB of each bench
file (made by the reference), best of ``--repeat`` rounds after a warm-up, the engines
taking turns; every decoded text compared with the reference's.

    python benchmarks/decode_bench.py
    python benchmarks/decode_bench.py --models gpt2,llama2 --files english_prose
    PYTHONPATH=<worktree of another revision> python benchmarks/decode_bench.py   # before/after
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from gpu_tok.bench import bench_file, load_texts, read_rank_file, resolve_model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="gpt2,llama3,llama2,cl100k_base")
    ap.add_argument("--files", default="code,english_prose,multilingual")
    ap.add_argument("--max-mb", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import gpu_tok

    print(f"gpu_tok from {os.path.dirname(gpu_tok.__file__)}")
    print("| model | file | MB | ids | ours ms | reference ms | ours/reference speed | texts equal |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    bad = 0
    for mname in args.models.split(","):
        model = resolve_model(mname)
        if model.error:
            print(f"skipped {mname}: {model.error}")
            continue
        if model.kind == "hf":
            import tokenizers

            ref = tokenizers.Tokenizer.from_file(str(model.path))
            ours = gpu_tok.Tokenizer.from_file(str(model.path))

            def rows_of(texts, ref=ref):
                return [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
        else:
            import tiktoken

            d = model.definition
            ref = tiktoken.Encoding(model.name, pat_str=d["pat_str"], mergeable_ranks=read_rank_file(model.path),
                                    special_tokens=d["special_tokens"], explicit_n_vocab=d.get("explicit_n_vocab"))
            ours = gpu_tok.Tokenizer.from_tiktoken(model.name, path=model.path)

            def rows_of(texts, ref=ref):
                return ref.encode_ordinary_batch(texts)
        for fn in args.files.split(","):
            texts = load_texts(bench_file(fn), args.max_mb * 1e6)
            mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
            rows = rows_of(texts)
            fns = (lambda: ours.decode_batch(rows), lambda: ref.decode_batch(rows))
            best = [float("inf")] * 2
            outs = [None, None]
            for r in range(args.repeat + 1):
                for k in (0, 1) if r % 2 == 0 else (1, 0):
                    t0 = time.perf_counter()
                    outs[k] = fns[k]()
                    dt = time.perf_counter() - t0
                    if r:
                        best[k] = min(best[k], dt)
            same = outs[0] == outs[1]
            bad += not same
            print(f"| {mname} | {fn} | {mb:.2f} | {sum(map(len, rows))} | {best[0] * 1e3:.1f} | {best[1] * 1e3:.1f} | "
                  f"{best[1] / best[0]:.2f}x | {'yes' if same else 'NO'} |", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
