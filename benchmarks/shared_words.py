#!/usr/bin/env python3
"""What the CPU engine's shared word table saves, counted (decision 0019, addendum of
2026-12-04): the BPE runs of per-worker word caches against one cache for all workers.

For each model and bench file: the pieces of the timed slice (the first ``--max-mb`` MB,
what ``bench.py --unseen`` times) that are not in the warm-up slice (the next ``--max-mb``
MB), and the BPE runs per-worker caches make for ``--threads`` workers when the engine's
work units (8 per worker, cut by bytes of pieces) go to the workers in turn, each worker's
cache warmed on its own units of the warm-up slice; "x shared" is that over the runs of
one cache for all (the distinct new pieces). Caches are taken as unbounded.

    python benchmarks/shared_words.py --models gpt2,cl100k_base --files code,english_prose

The table's effect on time is ``bench.py --unseen`` with ``GPU_TOK_SHARED_WORDS=0`` and
``1`` (and ``NUMBA_NUM_THREADS`` raised to ``--threads`` on a host with fewer cores).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def pieces_of(engine, texts):
    """The byte strings of the pieces of ``texts``, in order (the compiled engine's cuts)."""
    from gpu_tok.cpu_ref.pipeline import check_text
    from gpu_tok.fast_cpu import pack

    data, offsets = pack(texts, check_text)
    starts, ends, _special = engine.pieces(data, offsets, None, True)
    b = data.tobytes()
    return [b[s:e] for s, e in zip(starts.tolist(), ends.tolist())]


def runs(warm, timed, workers: int) -> int:
    """BPE runs of ``timed`` with per-worker caches, units handed out in turn."""
    import numpy as np

    caches = [set() for _ in range(workers)]
    for u, idx in enumerate(np.array_split(np.arange(len(warm)), 8 * workers)):
        caches[u % workers].update(warm[i] for i in idx)
    n = 0
    for u, idx in enumerate(np.array_split(np.arange(len(timed)), 8 * workers)):
        cache = caches[u % workers]
        for i in idx:
            p = timed[i]
            if p not in cache:
                cache.add(p)
                n += 1
    return n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="gpt2,cl100k_base")
    p.add_argument("--files", default="code,english_prose,multilingual")
    p.add_argument("--max-mb", type=float, default=8.0)
    p.add_argument("--threads", default="1,2,4,8,16")
    args = p.parse_args(argv)

    import gpu_tok
    from gpu_tok.bench import bench_file, load_texts, resolve_model

    threads = [int(x) for x in args.threads.split(",")]
    print("| model | file | pieces | new distinct | " + " | ".join(f"{t} workers: runs (x shared)" for t in threads) + " |")
    print("|---|---|---:|---:|" + "---:|" * len(threads))
    for name in args.models.split(","):
        model = resolve_model(name)
        if model.kind == "tiktoken":  # its compiled engine for no allowed special tokens
            engine = gpu_tok.Tokenizer.from_tiktoken(model.name, path=str(model.path))._cpu()._engine(frozenset())
        else:
            engine = gpu_tok.Tokenizer.from_file(str(model.path))._cpu_engine().engine
        for fname in args.files.split(","):
            path = bench_file(fname)
            timed = pieces_of(engine, load_texts(path, args.max_mb * 1e6))
            warm = pieces_of(engine, load_texts(path, args.max_mb * 1e6, skip_bytes=args.max_mb * 1e6))
            new = len(set(timed) - set(warm))
            cells = []
            for t in threads:
                r = runs(warm, timed, t)
                cells.append(f"{r} ({r / max(new, 1):.2f})")
            print(f"| {name} | {fname} | {len(timed)} | {new} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
