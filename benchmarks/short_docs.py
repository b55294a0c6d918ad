"""Many short documents: one bench file's first --max-mb MB joined and cut into documents
of --chars characters, against the same text cut into documents of --long-chars, through
``encode_batch_ids(device="cpu")`` on --threads threads (best of --repeat after one
warm-up); the per-document cost is the difference. With --check, ids are compared with
HF ``tokenizers`` on every short document (exit status 1 on a mismatch).

    python benchmarks/short_docs.py --models llama2,t5-small,gpt2,bert-base-uncased --threads 1
"""

from __future__ import annotations

import argparse
import sys
import time

from gpu_tok.bench import bench_file, load_texts, models_dir


def best_ms(tok, docs, threads: int, repeat: int) -> float:
    tok.encode_batch_ids(docs, add_special_tokens=False, device="cpu", num_threads=threads)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        tok.encode_batch_ids(docs, add_special_tokens=False, device="cpu", num_threads=threads)
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="llama2,t5-small,gpt2,bert-base-uncased")
    ap.add_argument("--file", default="english_prose")
    ap.add_argument("--max-mb", type=float, default=4.0)
    ap.add_argument("--chars", type=int, default=100)
    ap.add_argument("--long-chars", type=int, default=100_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--check", action="store_true", help="compare every short document's ids with HF tokenizers")
    args = ap.parse_args()

    import gpu_tok

    text = "".join(load_texts(bench_file(args.file), args.max_mb * 1e6))
    mb = len(text.encode("utf-8")) / 1e6
    short = [text[i:i + args.chars] for i in range(0, len(text), args.chars)]
    long_ = [text[i:i + args.long_chars] for i in range(0, len(text), args.long_chars)]
    print(f"{args.file}: {mb:.2f} MB as {len(short)} documents of {args.chars} characters and {len(long_)} of "
          f"{args.long_chars}; {args.threads} thread(s), best of {args.repeat}")
    bad = 0
    for name in args.models.split(","):
        path = models_dir() / name / "tokenizer.json"
        tok = gpu_tok.Tokenizer.from_file(str(path))
        s, lg = best_ms(tok, short, args.threads, args.repeat), best_ms(tok, long_, args.threads, args.repeat)
        line = (f"{name:20s} short {s:8.1f} ms ({mb / s * 1e3:6.1f} MB/s)  long {lg:8.1f} ms ({mb / lg * 1e3:6.1f} MB/s)"
                f"  {(s - lg) / len(short) * 1e3:6.2f} us per extra document")
        if args.check:
            import tokenizers

            ours = tok.encode_batch_ids(short, add_special_tokens=True, device="cpu", num_threads=args.threads).to_list()
            ref = [e.ids for e in tokenizers.Tokenizer.from_file(str(path)).encode_batch(short, add_special_tokens=True)]
            n = sum(a != b for a, b in zip(ours, ref))
            bad += n
            line += f"  ids: {'ok' if n == 0 else f'{n} MISMATCHES'}"
        print(line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
