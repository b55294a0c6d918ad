#!/usr/bin/env python3
"""A GPU batch's fixed costs (used by ``benchmarks/gpu_check.sh``): what one kernel launch,
one wait, one device allocation, one scalar read and one small copy cost through the GPU
engine's backend (``gpu_engine.CudaBackend``), how many launches one ``encode_batch_ids``
makes, and end-to-end MB/s as the input grows (fixed costs fall per byte; work does not; a
long run also keeps the card's clocks up, where a 20 ms one may not: the bench files give
24 MB, cycled beyond that).

The first H200 runs (2026-12-04) showed every kernel of an 8 MB input at 0.1-0.4 ms, whatever
its size of work; this measured a launch at about 21 us, 5% of the time at 8 MB.

Prints one JSON object per measurement and a short table. ``--device twin``: a dry run on
the CPU twins (the launch numbers are then the twins' calls). Nothing is downloaded; models
and texts as ``benchmarks/bench.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def per_call_us(fn, n: int, after=None) -> float:
    """Mean microseconds of ``fn()`` over ``n`` calls (one warm-up call first; ``after()`` once
    at the end, inside the timing: a final wait)."""
    fn()
    if after is not None:
        after()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    if after is not None:
        after()
    return (time.perf_counter() - t0) / n * 1e6


def best_of(run, k: int) -> float:
    """Seconds of the fastest of ``k`` calls of ``run()``, after one call not timed."""
    run()
    best = float("inf")
    for _ in range(k):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best


def profile_run(run, tok, device: str, mb: float, batch_mb: str) -> None:
    """One run's phases (the engine's stats: pack, host pieces, issuing copies and launches,
    waiting and copying back), then one run under cProfile (the functions with the most time
    of their own, and the most time inside them), then e2e with the default batch plan and the
    whole input as one batch (``GpuEngine.min_batch_bytes``), and with other batch sizes."""
    import cProfile
    import io
    import pstats

    from gpu_tok import gpu_engine as G

    eng = tok.__dict__["_gpu_engines"][G.backend(device).name].engine
    eng.stats = G._new_stats()
    t0 = time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    st = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in eng.stats.items()}
    print(json.dumps({"what": "phases", "mb": mb, "wall_s": round(wall, 4), **st}), flush=True)
    pr = cProfile.Profile()
    pr.enable()
    run()
    pr.disable()
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(pr, stream=buf).sort_stats(key).print_stats(28)
        lines = [x for x in buf.getvalue().splitlines() if x.strip()]
        print(f"cProfile of one {mb:g} MB run, by {key}:")
        print("\n".join(lines[:40]), flush=True)
    # the default plan, and the whole input as one batch (no split: fewer launches per byte, no
    # overlap of one batch's host step with the previous batch's device work)
    keep = eng.batch_bytes, eng.min_batch_bytes
    for label, b, m in (("default", keep[0], keep[1]), ("one batch", 1 << 40, 1 << 40)):
        eng.batch_bytes, eng.min_batch_bytes = b, m
        try:
            best = best_of(run, 3)
            n0 = len(eng.batch_log)
            run()
            batches = len(eng.batch_log) - n0
        finally:
            eng.batch_bytes, eng.min_batch_bytes = keep
        print(json.dumps({"what": "batch plan", "mb": mb, "plan": label, "batches": batches, "s": round(best, 4),
                          "mbps": round(mb / best, 1)}), flush=True)
    for b in [float(x) for x in batch_mb.split(",") if x]:
        keep = eng.batch_bytes
        eng.batch_bytes = int(b * (1 << 20))
        try:
            best = best_of(run, 2)
        finally:
            eng.batch_bytes = keep
        print(json.dumps({"what": "batch size", "mb": mb, "batch_mb": b, "s": round(best, 4),
                          "mbps": round(mb / best, 1)}), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cuda", "twin"], default="cuda")
    p.add_argument("--model", default="gpt2")
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--sizes-mb", default="2,8,24,240", help="input sizes; past the texts' 24 MB they are cycled")
    p.add_argument("--profile-mb", default="",
                   help="input sizes (of --sizes-mb) whose run is split into the engine's phases and profiled "
                        "with cProfile (the host thread's Python: where its time goes)")
    p.add_argument("--batch-mb", default="", help="at the largest --profile-mb size, e2e with these batch sizes too")
    args = p.parse_args(argv)

    import numpy as np

    import gpu_tok
    from gpu_tok import gpu_engine as G
    from gpu_tok.bench import bench_file, load_texts, resolve_model, utf8_len

    be = G.backend(args.device)
    K = be.K
    s = be.stream()
    n = args.calls
    a = be.empty(1 << 20, np.int64)
    h = np.zeros(1 << 16, np.int64)
    out = {}
    sync = lambda: be.sync(s)  # noqa: E731
    out["launch_us"] = per_call_us(lambda: be.launch(K.k_fill_i64, 1, s, 1, a, np.int64(0)), n, sync)
    out["launch_1M_items_us"] = per_call_us(lambda: be.launch(K.k_fill_i64, 1 << 20, s, 1 << 20, a, np.int64(0)),
                                            n, sync)
    out["launch_and_wait_us"] = per_call_us(lambda: (be.launch(K.k_fill_i64, 1, s, 1, a, np.int64(0)), sync()), n)
    out["wait_idle_us"] = per_call_us(sync, n)
    out["alloc_512KiB_us"] = per_call_us(lambda: be.empty(1 << 16, np.int64), n, sync)
    out["read_scalar_us"] = per_call_us(lambda: be.read_scalar(a, 0, s), n)
    out["h2d_512KiB_pageable_us"] = per_call_us(lambda: be.copy_into(a, 0, h, s), n, sync)
    # the ids' way back (GpuEngine._collect): 8 MiB of int32 into pageable memory (kept, as a
    # reused result; fresh, as a new one), and into pinned memory then copied on all threads
    ids = be.empty(1 << 21, np.int32)
    kept = np.empty(1 << 21, np.int32)
    m = max(1, n // 10)
    out["d2h_8MiB_pageable_kept_us"] = per_call_us(lambda: be.to_host_into(ids, kept, s), m, sync)
    out["d2h_8MiB_pageable_fresh_us"] = per_call_us(lambda: be.to_host_into(ids, np.empty(1 << 21, np.int32), s), m,
                                                    sync)
    if hasattr(be, "pinned"):
        from gpu_tok.fast_cpu import numba_threads
        from gpu_tok.kernels.gpu_host import copy_parallel

        pin = be.pinned(1 << 21, np.int32)

        def pinned_then_copy(dst):
            be.to_host_into(ids, pin, s)
            sync()
            with numba_threads(args.threads):
                copy_parallel(pin, dst, np.int64(4 * args.threads))

        out["d2h_8MiB_pinned_us"] = per_call_us(lambda: (be.to_host_into(ids, pin, s), sync()), m)
        out["d2h_8MiB_pinned_copy_kept_us"] = per_call_us(lambda: pinned_then_copy(kept), m)
        out["d2h_8MiB_pinned_copy_fresh_us"] = per_call_us(lambda: pinned_then_copy(np.empty(1 << 21, np.int32)), m)
    out["chunk_scan_5_args_us"] = per_call_us(
        lambda: be.launch(K.k_chunk_scan, 1, s, 1, 1, a, a, a), n, sync)
    if args.device == "cuda":
        try:  # the compiled kernel launched directly: Numba's dispatch left out
            kern = next(iter(K.k_fill_i64.overloads.values()))
            out["launch_direct_us"] = per_call_us(
                lambda: kern.launch((1, a, np.int64(0)), (1, 1, 1), (256, 1, 1), s, 0), n, sync)
        except Exception as e:  # noqa: BLE001
            out["launch_direct_us"] = f"{type(e).__name__}: {e}"
    for k, v in out.items():
        print(json.dumps({"what": k, "value": round(v, 2) if isinstance(v, float) else v}), flush=True)

    model = resolve_model(args.model)
    if model.error:
        print(f"model {args.model}: {model.error}")
        return 1
    tok = gpu_tok.Tokenizer.from_file(str(model.path))
    texts = []
    for f in ("english_prose", "code", "multilingual"):
        path = bench_file(f)
        if path.is_file():
            texts += load_texts(path, 8e6)
    launches = [0]
    plain = be.launch

    def counting(*x, **kw):
        launches[0] += 1
        return plain(*x, **kw)

    rows = []
    profile = {float(x) for x in args.profile_mb.split(",") if x}
    for mb in [float(x) for x in args.sizes_mb.split(",") if x]:
        part, total, i = [], 0, 0
        while texts and total < mb * 1e6:  # past the texts' end they come round again
            t = texts[i % len(texts)]
            part.append(t)
            total += len(t.encode("utf-8"))
            i += 1
        run = lambda: G.tokenizer_batch_ids(tok, part, False, args.device, args.threads, True)  # noqa: E731
        best = best_of(run, 3)
        be.launch = counting
        launches[0] = 0
        try:
            run()
        finally:
            del be.launch
        r = {"what": "e2e", "model": args.model, "mb": round(utf8_len(part) / 1e6, 3), "docs": len(part),
             "s": round(best, 4), "mbps": round(utf8_len(part) / 1e6 / best, 1), "launches": launches[0],
             "launch_share": round(launches[0] * out["launch_us"] / 1e6 / best, 3)}
        rows.append(r)
        print(json.dumps(r), flush=True)
        if mb in profile:
            profile_run(run, tok, args.device, mb, args.batch_mb if mb == max(profile) else "")
    print()
    print(f"fixed costs through {type(be).__name__} (microseconds each): "
          + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in out.items()))
    print("end-to-end as the input grows (ids on the host; launches: be.launch calls of one run; launch share: "
          "launches x launch_us / time):")
    for r in rows:
        print(f"  {r['model']} {r['mb']:.1f} MB ({r['docs']} docs): {r['mbps']:.0f} MB/s, {r['launches']} launches, "
              f"launch share {r['launch_share']:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
