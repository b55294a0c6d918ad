#!/usr/bin/env python3
"""Where a warm ``device="cpu"`` call of the byte-level engine spends its time, stage by
stage, timed in the same rounds as fastokens (paired, as ``paired.py``).

    python benchmarks/stages.py --model gpt2 --file english_prose --threads 2 --rounds 16

Each round calls ours and fastokens once (alternating which goes first); the stages
(``fast_cpu.pack_probed``, the NFC pre-pass, the added-token pass ``_segments``, the fused
kernel serial or parallel, the parallel gather, and ``run_ids`` around them) are wrapped
with timers for our calls. Printed: both engines' MB/s (medians), the median of the
per-round ratios, the median call time, and each stage's mean time per call. The stages
nest (``run_ids`` holds all but packing), so they do not add up to the call.
"""
from __future__ import annotations

import argparse
import collections
import gc
import os
import statistics
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="gpt2", help="a model directory of the shared models")
    ap.add_argument("--file", default="english_prose", help="a bench file (bench/<file>.jsonl)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--max-mb", type=float, default=8.0, help="MB of texts (the main bench's)")
    args = ap.parse_args()
    for k in ("RAYON_NUM_THREADS", "FASTOKENS_BPE_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = str(args.threads)  # before the engines start their pools
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

    import fastokens

    import gpu_tok
    from gpu_tok import bench as B
    from gpu_tok import fast_cpu as F
    from gpu_tok.kernels import engine_cpu as K

    path = B.models_dir() / args.model / "tokenizer.json"
    texts = B.load_texts(B.corpora_dir() / "bench" / f"{args.file}.jsonl", args.max_mb * 1e6)
    size = sum(len(t.encode("utf-8")) for t in texts)
    tok = gpu_tok.Tokenizer.from_file(str(path))
    ft = fastokens.Tokenizer.from_json_str(path.read_text(encoding="utf-8"))
    acc = collections.defaultdict(float)

    def timed(obj, name):
        f = getattr(obj, name)

        def g(*a, **k):
            t0 = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                acc[name] += time.perf_counter() - t0

        setattr(obj, name, g)

    timed(F, "pack_probed")  # pack() calls it too
    for name in ("_nfc_prepass", "_segments", "run_ids"):
        timed(F.ByteBPEEngine, name)
    for name in ("encode_fused_parallel", "encode_fused_serial", "gather_parallel", "gather_template_parallel"):
        timed(K, name)

    def ours():
        tok.encode_batch_ids(texts, device="cpu", num_threads=args.threads)

    def theirs():
        ft.encode_batch_flat(texts, add_special_tokens=False, split_special_tokens=False)

    ours()
    theirs()
    acc.clear()
    t_ours, t_theirs = [], []
    for r in range(args.rounds):
        for which in ((ours, theirs) if r % 2 else (theirs, ours)):
            gc.collect()
            B.settle_allocator()
            t0 = time.perf_counter()
            which()
            (t_ours if which is ours else t_theirs).append(time.perf_counter() - t0)
    ratio = statistics.median(b / a for a, b in zip(t_ours, t_theirs))
    print(f"{args.model} {args.file} threads={args.threads} rounds={args.rounds} {size / 1e6:.2f} MB: "
          f"ours {size / statistics.median(t_ours) / 1e6:.1f} MB/s, fastokens "
          f"{size / statistics.median(t_theirs) / 1e6:.1f} MB/s, paired ours/fastokens {ratio:.3f}x")
    print(f"  call (median)            {statistics.median(t_ours) * 1e3:7.2f} ms")
    print(f"  call (mean)              {statistics.mean(t_ours) * 1e3:7.2f} ms")
    for name, v in sorted(acc.items(), key=lambda x: -x[1]):
        print(f"  {name:24s} {v / args.rounds * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
