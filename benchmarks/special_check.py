#!/usr/bin/env python3
"""The cost of tiktoken's special-token check in ``TiktokenEncoding.encode_batch_ids``.

tiktoken's ``encode``/``encode_batch`` (and ours, with the same defaults) raise when a text
holds a special token's text (``disallowed_special="all"``), so every text is searched for
them first; ``encode_ordinary`` (``disallowed_special=()``) skips that. This times both on
the first ``--max-mb`` MB of each bench file (warm engine, best of ``--repeat``, in
alternating order) and prints the difference: what the check costs.

    python benchmarks/special_check.py
    python benchmarks/special_check.py --encodings cl100k_base --files code --threads 1,2
    PYTHONPATH=<worktree of another revision> python benchmarks/special_check.py   # before/after
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from gpu_tok.bench import bench_file, load_texts, models_dir
from gpu_tok.tiktoken_encoding import find_rank_file


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encodings", default="cl100k_base,o200k_base")
    ap.add_argument("--files", default="code,english_prose,multilingual")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--max-mb", type=float, default=8.0)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)
    import gpu_tok

    print(f"gpu_tok from {os.path.dirname(gpu_tok.__file__)}")
    print("| encoding | file | MB | threads | with the check ms | ordinary ms | check ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in args.encodings.split(","):
        path = models_dir() / "tiktoken" / f"{name}.tiktoken"
        enc = gpu_tok.Tokenizer.from_tiktoken(name, path=path if path.exists() else find_rank_file(name))
        for fn in args.files.split(","):
            texts = load_texts(bench_file(fn), args.max_mb * 1e6)
            mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
            for threads in (int(x) for x in args.threads.split(",")):
                kinds = ({}, {"disallowed_special": ()})
                best = [float("inf")] * 2
                for r in range(args.repeat + 1):
                    for k in (0, 1) if r % 2 == 0 else (1, 0):
                        t0 = time.perf_counter()
                        enc.encode_batch_ids(texts, device="cpu", num_threads=threads, **kinds[k])
                        dt = time.perf_counter() - t0
                        if r:  # the first round warms up
                            best[k] = min(best[k], dt)
                print(f"| {name} | {fn} | {mb:.2f} | {threads} | {best[0] * 1e3:.1f} | {best[1] * 1e3:.1f} | "
                      f"{(best[0] - best[1]) * 1e3:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
