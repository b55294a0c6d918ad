#!/usr/bin/env python3
"""What seeding the CPU engine's short word cache with the vocabulary saves (decision 0019,
addendum of 2026-12-05; byte-level and SentencePiece engines): MB/s of ``device="cpu"`` on text the engine has not seen, with a
kept cache made without seeds and with them, in alternation in one process.

For each model and bench file: the first ``--max-mb`` MB (what ``bench.py --unseen``
times) after a warm-up on the next ``--max-mb`` MB; each round drops the engine's kept
word caches (the next call makes them anew: faulted in, seeded or not), runs the warm-up,
then times the slice, for seeds off and on in turn; the best of ``--rounds`` rounds each.
"setup ms" is the best time of the first call on fresh caches (one short text: making the
caches, and seeding them; the seeds' entries are made once per engine, before the first
round and timed on their own: "seeds made ms", so setup is the copy into every worker's
rows). Also counted, once: the new pieces
of the timed slice (distinct, not in the warm-up slice) and how many of them are a
vocabulary token's bytes (those a seeded cache serves without a BPE run).

    python benchmarks/seeded_cache.py --models cl100k_base,gpt2 --files code,english_prose

``--switch pair-filter`` times the other switch of the same engines the same way: the
merge table's pair filter after every worker's pair cache (``hash_table.pair_filter``,
decision 0019 addendum of 2026-12-05) left out and put in, in turn (the seeds on in both);
its column "filter KiB" is the filter's size.

    python benchmarks/seeded_cache.py --switch pair-filter --models gemma3,llama2
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


SEEDED = ("ByteBPEEngine", "CpuSentencePieceEngine")  # the engine classes (``fast_cpu``) that seed


def seeding_engines():
    """The engines alive now whose kept caches are seeded."""
    from gpu_tok import fast_cpu

    kinds = tuple(getattr(fast_cpu, k) for k in SEEDED)
    return [o for o in gc.get_objects() if isinstance(o, kinds)]


def set_seeding(on: bool) -> None:
    from gpu_tok import fast_cpu

    for k in SEEDED:
        getattr(fast_cpu, k)._seeds_words = on


def new_tokens(engine, warm, timed):
    """``(new, tokens)``: distinct pieces of ``timed`` not in ``warm``, and how many of those
    are a token's bytes."""
    from shared_words import pieces_of  # this folder's (the script's own directory is on the path)

    arena = engine.arena.tobytes()
    off = engine.tok_off.tolist()
    vocab = {arena[off[i]:off[i + 1]] for i in range(len(off) - 1)}
    new = set(pieces_of(engine, timed)) - set(pieces_of(engine, warm))
    return len(new), sum(1 for p in new if p in vocab)


def alternate(runner, engines, warm, timed, rounds: int, turn):
    """``(best, setup)``: per switch state (``turn(False)``, ``turn(True)`` in turn, each
    round), the best seconds of the timed slice after the warm-up, the engines' kept caches
    made anew each round, and the best seconds of the first call on them (``["x"]``)."""
    best, setup = {}, {}
    for _ in range(rounds):
        for on in (False, True):
            turn(on)
            for e in engines:
                e._wcache = None
            gc.collect()
            t0 = time.perf_counter()
            runner.encode(["x"])
            t1 = time.perf_counter()
            runner.encode(warm)
            t2 = time.perf_counter()
            runner.encode(timed)
            t3 = time.perf_counter()
            best[on] = min(best.get(on, float("inf")), t3 - t2)
            setup[on] = min(setup.get(on, float("inf")), t1 - t0)
    return best, setup


def slices(fname: str, max_mb: float):
    """``(timed, warm, MB)``: the first ``max_mb`` MB of a bench file, the next ``max_mb`` MB,
    and the first slice's size."""
    from gpu_tok import bench as B

    path = B.bench_file(fname)
    timed = B.load_texts(path, max_mb * 1e6)
    warm = B.load_texts(path, max_mb * 1e6, skip_bytes=max_mb * 1e6)
    return timed, warm, sum(len(t.encode("utf-8")) for t in timed) / 1e6


def set_filter(engines, filters, on: bool) -> None:
    """The engines' next kept caches with their pair filters (``filters``, as made) or none."""
    for e, f in zip(engines, filters):
        e.pfilt = f if on else None


def filter_rows(args, model, runner, engines) -> None:
    """``--switch pair-filter``: MB/s with the pair filters out and in, in turn."""
    filters = [e.pfilt for e in engines]
    for fname in args.files.split(","):
        timed, warm, mb = slices(fname, args.max_mb)
        best, _setup = alternate(runner, engines, warm, timed, args.rounds,
                                 lambda on: set_filter(engines, filters, on))
        set_filter(engines, filters, True)
        off, on = mb / best[False], mb / best[True]
        print(f"| {model} | {fname} | {mb:.2f} | {args.threads} | {off:.1f} | {on:.1f} | {on / off:.3f} "
              f"| {filters[0].nbytes >> 10} |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--switch", choices=("seeds", "pair-filter"), default="seeds")
    ap.add_argument("--models", default="gpt2,cl100k_base,llama3,o200k_base")
    ap.add_argument("--files", default="code,english_prose,multilingual")
    ap.add_argument("--max-mb", type=float, default=4.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args(argv)

    from gpu_tok import bench as B
    from gpu_tok import fast_cpu

    if args.switch == "seeds":
        print("| model | file | MB | threads | new pieces | of them tokens | MB/s seeds off | MB/s seeds on | on/off "
              "| setup ms off | setup ms on | seeds made ms |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    else:
        print("| model | file | MB | threads | MB/s filter off | MB/s filter on | on/off | filter KiB |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
    for model in args.models.split(","):
        m = B.resolve_model(model)
        runner = None
        gc.collect()
        before = {id(e) for e in seeding_engines()}
        runner = B.FACTORIES["ours"](m, args.threads)
        runner.encode(["warm-up"])
        engines = [e for e in seeding_engines() if id(e) not in before]  # this model's
        if not engines:
            print(f"| {model} | - | no seeded engine |")
            continue
        if args.switch == "pair-filter":
            filter_rows(args, model, runner, engines)
            continue
        for fname in args.files.split(","):
            timed, warm, mb = slices(fname, args.max_mb)
            if isinstance(engines[0], fast_cpu.ByteBPEEngine):
                new, tokens = new_tokens(engines[0], warm, timed)
            else:  # the SentencePiece engine's words are not counted here
                new, tokens = "-", "-"
            made = 0.0
            for e in engines:  # the seeds' entries, made once per engine (its first kept cache)
                e._seed[0] = None  # (made by the warm-up call: made again, timed)
            for e in engines:
                if e._seed[0] is None:
                    t0 = time.perf_counter()
                    e._seed_short(np.zeros((1, 1024, 4), np.uint64))
                    made += time.perf_counter() - t0
            best, setup = alternate(runner, engines, warm, timed, args.rounds, set_seeding)
            set_seeding(True)
            off, on = mb / best[False], mb / best[True]
            print(f"| {model} | {fname} | {mb:.2f} | {args.threads} | {new} | {tokens} | {off:.0f} | {on:.0f} "
                  f"| {on / off:.3f} | {setup[False] * 1e3:.1f} | {setup[True] * 1e3:.1f} | {made * 1e3:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
