"""Pairs: ``encode_batch`` and ``encode_batch_fast`` of ``(text, pair)`` inputs, ours
(the compiled engines) against HF ``tokenizers`` on the same thread count, optionally
with truncation and padding; every run's ids compared with HF's (exit status 1 on a
mismatch). Pairs are built from a bench file: document ``i``'s first ``--first-chars``
characters with document ``i + 1`` whole. MB = 10^6 UTF-8 bytes of both texts; the time
is the call alone (both libraries make an encoding's lists when a field is first read), or
with ``--read`` the call and reading the fields transformers reads of each encoding.

    python benchmarks/pairs.py --models bert-base-uncased,gpt2,llama2 --threads 1
    python benchmarks/pairs.py --max-length 512 --pad
    python benchmarks/pairs.py --max-length 512 --stride 128 --read
    python benchmarks/pairs.py --max-length 384 --stride 128 --strategy only_second --first-chars 80 --pad
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from gpu_tok.bench import bench_file, load_texts, models_dir


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="bert-base-uncased,gpt2,llama2")
    ap.add_argument("--file", default="english_prose")
    ap.add_argument("--max-mb", type=float, default=5.0, help="MB of the bench file read [%(default)s]")
    ap.add_argument("--first-chars", type=int, default=600, help="characters kept of each first text [%(default)s]")
    ap.add_argument("--max-length", type=int, default=0, help="enable_truncation(max_length) on both; 0: none")
    ap.add_argument("--stride", type=int, default=0, help="the truncation's stride (windows in overflowing)")
    ap.add_argument("--strategy", default="longest_first", help="the truncation's strategy [%(default)s]")
    ap.add_argument("--pad", action="store_true", help="enable_padding() on both")
    ap.add_argument("--read", action="store_true",
                    help="time the call and reading each encoding's ids, type_ids, attention_mask and offsets (not "
                         "its overflowing windows': what transformers reads without return_overflowing_tokens)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))  # before tokenizers starts its pool
    import tokenizers

    import gpu_tok

    texts = load_texts(bench_file(args.file), args.max_mb * 1e6)
    pairs = [(texts[i][:args.first_chars], texts[i + 1]) for i in range(len(texts) - 1)]
    mb = sum(len(a.encode()) + len(b.encode()) for a, b in pairs) / 1e6
    print(f"{len(pairs)} pairs, {mb:.2f} MB, {args.file}, threads {args.threads}, max_length {args.max_length or '-'}, "
          f"stride {args.stride}, strategy {args.strategy}, pad {args.pad}, fields read {args.read}, "
          f"tokenizers {tokenizers.__version__}")
    print("| model | ours encode_batch | hf encode_batch | ratio | ours fast | hf fast | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    bad = 0
    for name in args.models.split(","):
        path = str(models_dir() / name / "tokenizer.json")
        ours, hf = gpu_tok.Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)
        for t in (ours, hf):
            if args.max_length:
                t.enable_truncation(args.max_length, stride=args.stride, strategy=args.strategy)
            if args.pad:
                t.enable_padding()
        runs = {"ours": lambda: ours.encode_batch(pairs, device="cpu", num_threads=args.threads),
                "hf": lambda: hf.encode_batch(pairs),
                "ours-fast": lambda: ours.encode_batch_fast(pairs, device="cpu", num_threads=args.threads),
                "hf-fast": lambda: hf.encode_batch_fast(pairs)}
        best = {k: float("inf") for k in runs}
        ids = {}
        for _ in range(args.repeat + 1):  # (+1: a warm-up round; rounds interleave the engines)
            for k, f in runs.items():
                t0 = time.perf_counter()
                got = f()
                if args.read:
                    for e in got:
                        e.ids, e.type_ids, e.attention_mask, e.offsets
                best[k] = min(best[k], time.perf_counter() - t0)
                ids[k] = [w.ids for e in got for w in (e, *e.overflowing)]  # (the windows too: not timed)
                del got  # (freed here, not inside the next engine's timed call)
        for k in ("ours", "ours-fast"):
            if ids[k] != ids[k.replace("ours", "hf")]:
                bad += 1
                print(f"MISMATCH: {name} {k}", file=sys.stderr)
        r = {k: mb / v for k, v in best.items()}
        print(f"| {name} | {r['ours']:.1f} | {r['hf']:.2f} | {r['ours'] / r['hf']:.1f}x | {r['ours-fast']:.1f} "
              f"| {r['hf-fast']:.2f} | {r['ours-fast'] / r['hf-fast']:.1f}x |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
