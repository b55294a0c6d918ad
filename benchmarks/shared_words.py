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

With ``--time``: MB/s of ``device="cpu"`` on the timed slice after a warm-up on the next,
the table off and on (``GPU_TOK_SHARED_WORDS=0`` / ``1``), for each of ``--threads``: per
setting ``--processes`` fresh processes in alternation, each running ``--rounds`` rounds of
(word caches made anew, warm-up, timed slice); the best of all. ``NUMBA_NUM_THREADS`` is
raised to the largest thread count, so on a host with fewer cores the run measures the total
work of that many workers, not their speed on as many cores. (``bench.py --unseen`` times
one round per fresh process, on the host's own thread limit.)

    python benchmarks/shared_words.py --time --models gpt2 --threads 16,2
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


def engine_and_encode(name: str, threads: int):
    """``(engine, encode)``: the ``ByteBPEEngine`` a model's ``device="cpu"`` calls use, and
    ``encode(texts)`` as ``bench.py`` calls it (``add_special_tokens=False``; tiktoken:
    ``encode_ordinary``)."""
    import gpu_tok
    from gpu_tok.bench import resolve_model

    model = resolve_model(name)
    if model.kind == "tiktoken":  # its compiled engine for no allowed special tokens
        enc = gpu_tok.Tokenizer.from_tiktoken(model.name, path=str(model.path))
        return enc._cpu()._engine(frozenset()), lambda texts: enc.encode_batch_ids(
            texts, disallowed_special=(), device="cpu", num_threads=threads)
    tok = gpu_tok.Tokenizer.from_file(str(model.path))
    return tok._cpu_engine().engine, lambda texts: tok.encode_batch_ids(
        texts, add_special_tokens=False, device="cpu", num_threads=threads)


def time_worker(name: str, fname: str, threads: int, rounds: int, max_mb: float) -> float:
    """Best MB/s over ``rounds`` rounds of (word caches made anew, warm-up, timed slice)."""
    import time

    from gpu_tok.bench import bench_file, load_texts, utf8_len

    engine, encode = engine_and_encode(name, threads)
    path = bench_file(fname)
    timed = load_texts(path, max_mb * 1e6)
    warm = load_texts(path, max_mb * 1e6, skip_bytes=max_mb * 1e6)
    encode(warm)  # compiled, the engine's scratch made
    best = 0.0
    for _ in range(rounds):
        engine._wcache = None
        engine._word_cache(True, threads)  # made anew (and kept), as a fresh engine's
        encode(warm)
        t0 = time.perf_counter()
        encode(timed)
        best = max(best, utf8_len(timed) / 1e6 / (time.perf_counter() - t0))
    return best


def time_table(args, threads) -> None:
    import os
    import subprocess

    env = dict(os.environ, NUMBA_NUM_THREADS=str(max(threads)))
    print("| model | file | threads | off MB/s | on MB/s | on/off |")
    print("|---|---|---:|---:|---:|---:|")
    for name in args.models.split(","):
        for fname in args.files.split(","):
            for t in threads:
                best = {"0": 0.0, "1": 0.0}
                for _ in range(args.processes):
                    for sw in ("1", "0"):
                        out = subprocess.run(
                            [sys.executable, __file__, "--_worker", name, fname, str(t), str(args.rounds),
                             str(args.max_mb)], env=dict(env, GPU_TOK_SHARED_WORDS=sw),
                            capture_output=True, text=True, check=True).stdout
                        best[sw] = max(best[sw], float(out.split()[-1]))
                print(f"| {name} | {fname} | {t} | {best['0']:.0f} | {best['1']:.0f} | {best['1'] / best['0']:.2f} |",
                      flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="gpt2,cl100k_base")
    p.add_argument("--files", default="code,english_prose,multilingual")
    p.add_argument("--max-mb", type=float, default=8.0)
    p.add_argument("--threads", default="1,2,4,8,16")
    p.add_argument("--time", action="store_true", help="time the table off and on instead of counting")
    p.add_argument("--processes", type=int, default=2, help="--time: fresh processes per setting")
    p.add_argument("--rounds", type=int, default=3, help="--time: rounds per process")
    p.add_argument("--_worker", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args._worker:
        name, fname, t, rounds, max_mb = args._worker
        print(f"{time_worker(name, fname, int(t), int(rounds), float(max_mb)):.1f}")
        return 0

    from gpu_tok.bench import bench_file, load_texts

    threads = [int(x) for x in args.threads.split(",")]
    if args.time:
        time_table(args, threads)
        return 0
    print("| model | file | pieces | new distinct | " + " | ".join(f"{t} workers: runs (x shared)" for t in threads) + " |")
    print("|---|---|---:|---:|" + "---:|" * len(threads))
    for name in args.models.split(","):
        engine, _encode = engine_and_encode(name, 1)
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
