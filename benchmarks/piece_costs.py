#!/usr/bin/env python3
"""Where a byte-level piece's time goes on one thread, stage by stage, in nanoseconds a piece:
the pre-tokenizer's scan alone (``pretok_cpu.scan_mask``, one thread), the engine's cut
(``engine_cpu._cut_batch``: the scan, each piece keyed and its word-cache set prefetched),
and the cut followed by the encoding of the batch (``engine_cpu._encode_run``, word caches
warm: hits). Each on the file's texts and on an excerpt repeated (``--excerpts``: the first
texts holding at least 1/k of the bytes, k times over: as large or larger, whole documents), so
that the word caches' working set shrinks while the kind of work stays the same: what the
memory hierarchy costs against the compute.

    python benchmarks/piece_costs.py --models gpt2 --files english_prose --excerpts 1,40,400

Uses the byte-level engine's internals (its scanner arguments, model arguments and word
caches) in loops compiled here, which call the engine's own kernels; pieces that need the
heap (longer than the short BPE's reach, rare in the bench files) are skipped by the
encoding loop and counted. ``--other gigatoken`` also times gigatoken's one-thread call on
the same texts (its ns a piece by our piece count). Best of ``--rounds``; MB = 10^6 bytes.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.gpu_overheads import best_of  # noqa: E402  (the fastest of k calls, after one untimed)


def _loops():
    from numba import njit

    from gpu_tok.kernels import engine_cpu as K

    @njit
    def cut_only(data, fam, end_whole, tab, fold, cache, lidx, sc):
        n = data.shape[0]
        i = 0
        pieces = 0
        while i < n:
            nb = K._cut_batch(data, i, n, n, fam, end_whole, tab, fold, sc, cache, lidx, 0, K._BATCH)
            i = sc[0][nb]
            pieces += nb
        return pieces

    @njit
    def cut_encode(data, fam, end_whole, tab, fold, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first,
                   cache, wide, lidx, lbytes, lids, pc, sc, out, nocnt):
        n = data.shape[0]
        i = 0
        o = 0
        skipped = 0
        while i < n:
            nb = K._cut_batch(data, i, n, n, fam, end_whole, tab, fold, sc, cache, lidx, 0, K._BATCH)
            i = sc[0][nb]
            q = 0
            while q < nb:
                o, q = K._encode_run(data, q, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first,
                                     cache, wide, lidx, lbytes, lids, pc, 0, out, o, nocnt, 0)
                if q < nb:  # a piece for the heap: not this loop's business
                    skipped += 1
                    q += 1
        return skipped

    return cut_only, cut_encode


def _excerpt(texts, k: int):
    """The first texts holding at least 1/k of the bytes, k times over (the texts themselves for 1)."""
    if k <= 1:
        return texts
    want = sum(len(t.encode("utf-8")) for t in texts) / k
    got = 0
    for j, t in enumerate(texts):
        got += len(t.encode("utf-8"))
        if got >= want:
            return texts[:j + 1] * k
    return texts * k


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="gpt2")
    p.add_argument("--files", default="english_prose")
    p.add_argument("--max-mb", type=float, default=8.0, help="MB of texts per file")
    p.add_argument("--excerpts", default="1,40,400",
                   help="comma-separated k: the first texts holding at least 1/k of the bytes, k times over "
                        "(1: the texts as they are)")
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--other", default="", help="'gigatoken': its one-thread call on the same texts too")
    args = p.parse_args(argv)
    from gpu_tok import bench as B

    B.set_thread_env(1)  # before Numba's first import: one thread, as the loops here
    import numpy as np

    import gpu_tok
    from gpu_tok.kernels import engine_cpu as K
    from gpu_tok.kernels import pretok_cpu as P

    cut_only, cut_encode = _loops()
    print("| model | file | excerpt | MB | pieces | scan ns | cut ns | cut+encode ns | cut+encode MB/s | "
          f"skipped |{' ' + args.other + ' ns | ' + args.other + ' MB/s |' if args.other else ''}")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if args.other else ""))
    for model in args.models.split(","):
        m = B.resolve_model(model)
        if m.kind != "hf":
            raise SystemExit(f"{model}: a tokenizer.json model is needed (the byte-level engine's internals)")
        tok = gpu_tok.Tokenizer.from_file(str(m.path))
        eng = getattr(tok._cpu_engine(), "engine", None)
        if eng is None or not hasattr(eng, "_scanner"):
            raise SystemExit(f"{model}: not served by the byte-level engine (ByteBPEEngine)")
        other = B.FACTORIES[args.other](m, 1) if args.other else None
        for fname in args.files.split(","):
            texts = B.load_texts(B.bench_file(fname), args.max_mb * 1e6)
            for k in (int(x) for x in args.excerpts.split(",")):
                part = _excerpt(texts, k)
                tok.encode_batch_ids(part, num_threads=1)  # the word caches warm on these texts
                data = np.frombuffer("\n".join(part).encode("utf-8"), np.uint8).copy()
                n = data.shape[0]
                seg_s, seg_e = np.zeros(1, np.int64), np.full(1, n, np.int64)
                mask = np.zeros(n, np.uint8)
                t_scan = best_of(lambda: P.scan_mask(data, seg_s, seg_e, eng.spec.family, eng.spec.dialect, mask,
                                                   parallel=False), args.rounds)
                fam, end_whole, tab, fold = eng._scanner()
                cache = eng._word_cache(True, 1)
                try:
                    short, wide, lidx, lbytes, lids, pcache = cache[:6]
                    sc = K._scratch()
                    out = np.empty(n, np.int32)
                    nocnt = np.zeros(0, np.int64)
                    pieces = cut_only(data, fam, end_whole, tab, fold, short, lidx, sc)
                    t_cut = best_of(lambda: cut_only(data, fam, end_whole, tab, fold, short, lidx, sc), args.rounds)
                    enc = lambda: cut_encode(data, fam, end_whole, tab, fold, *eng._model_args, short, wide, lidx,  # noqa: E731
                                             lbytes, lids, pcache[0], sc, out, nocnt)
                    skipped = enc()
                    t_enc = best_of(enc, args.rounds)
                finally:
                    eng._word_cache_done(cache)
                row = (f"| {model} | {fname} | {k} | {n / 1e6:.2f} | {pieces} | {t_scan / pieces * 1e9:.1f} | "
                       f"{t_cut / pieces * 1e9:.1f} | {t_enc / pieces * 1e9:.1f} | {n / t_enc / 1e6:.1f} | {skipped} |")
                if other is not None:
                    t_o = best_of(lambda: other.encode(part), args.rounds)
                    row += f" {t_o / pieces * 1e9:.1f} | {n / t_o / 1e6:.1f} |"
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
