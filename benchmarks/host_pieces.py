#!/usr/bin/env python3
"""The GPU path's host step without a GPU: how fast ``device="cuda"``'s host side makes the
pieces of a batch (``gpu_engine.ByteLevelHost`` / ``SentencePieceHost.pieces``: the NFC
check, added tokens, pre-tokenization or SentencePiece normalization, the pieces' bounds), the
ceiling of the GPU path's end-to-end MB/s on this host. Each threshold of ``--host-piece``
also encodes the pieces longer than it on the host (``huge_bytes``), as
``gpu_bench.py --host-piece`` does on a card.

    python benchmarks/host_pieces.py --models gpt2,llama2 --threads 1,2 --host-piece 8192,64

Output buffers and scratch are kept between calls, as the engine keeps them (pinned staging
there, ordinary memory here); best of ``--repeat`` calls per line; MB = 10^6 bytes of input.
The last column: the step's parts (``gpu_host.lap``) in one more call, in milliseconds.
``--device-cut``: what stays on the host of a batch whose pieces are cut on the device,
instead of the host step: byte-level (``gpu_engine.device_cut_plan``: the NFC check, the
added-token pass, the fixed pieces and the chunks) and SentencePiece files
(``gpu_engine.sp_device_cut_plan``: the raw added-token pass, the normalized pass's check,
the items and the chunks).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="gpt2,llama3,llama2,gemma3")
    p.add_argument("--files", default="code,english_prose,multilingual")
    p.add_argument("--max-mb", type=float, default=4.0, help="MB of texts per file (one batch)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--host-piece", default="8192", help="comma-separated huge_bytes thresholds")
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument("--no-hint", action="store_true",
                   help="pack without the byte-level engine's probe (no flags for the host step)")
    p.add_argument("--device-cut", action="store_true",
                   help="time what stays on the host when the pieces are cut on the device "
                        "(GPU_TOK_CUDA_DEVICE_CUT=1: gpu_engine.device_cut_plan / sp_device_cut_plan), "
                        "not the host step")
    args = p.parse_args(argv)

    import numpy as np

    import gpu_tok
    from gpu_tok import gpu_engine as G
    from gpu_tok.bench import bench_file, load_texts, resolve_model, utf8_len
    from gpu_tok.fast_cpu import pack_probed

    pool: dict = {}

    def alloc(name, n, dtype):
        a = pool.get(name)
        if a is None or a.shape[0] < n or a.dtype != np.dtype(dtype):
            a = pool[name] = np.empty(int(n * 1.25) + 16, dtype)
        return a[:n]

    def scratch(n):
        return alloc("scratch", n, np.int32)

    print("| model | file | MB | threads | host piece | ms | MB/s | pieces | on the host | parts ms (one more call) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in [m for m in args.models.split(",") if m]:
        model = resolve_model(name)
        if model.error or model.kind != "hf":
            print(f"skip {name}: {model.error or 'a tiktoken encoding: use a tokenizer.json model'}")
            continue
        tok = gpu_tok.Tokenizer.from_file(str(model.path))
        g = G.GpuTokenizer(tok, G.backend("twin"))  # its host side; the twins are not run
        for fname in [f for f in args.files.split(",") if f]:
            texts = load_texts(bench_file(fname), args.max_mb * 1e6)
            mb = utf8_len(texts) / 1e6
            # the flags GpuTokenizer packs with (byte-level: the engine's probe), unless --no-hint
            eng = g.host.eng if isinstance(g.host, G.ByteLevelHost) and not args.no_hint else None
            if eng is None:
                data, offsets, hint = pack_probed(texts, None, None, None)
            else:
                data, offsets, hint = pack_probed(texts, None, None, eng.probe, eng.probe_pairs)
            for th in [int(t) for t in args.threads.split(",") if t]:
                if args.device_cut:
                    byte_level = isinstance(g.host, G.ByteLevelHost)
                    if not byte_level and getattr(g.host, "cut_trie", None) is None:
                        print(f"skip {name}: not cut on the device")
                        break
                    best, plan = float("inf"), None
                    for _ in range(max(1, args.repeat)):
                        t0 = time.perf_counter()
                        if byte_level:
                            plan = G.device_cut_plan(g.host.eng, data, offsets, th, hint, g.engine.K.CUT_CHUNK)
                        else:
                            plan = G.sp_device_cut_plan(g.host, data, offsets, th, g.engine.K.CUT_CHUNK)
                        best = min(best, time.perf_counter() - t0)
                    if plan is None:
                        what = "refused"
                    elif byte_level:
                        what = f"{plan[2][0].shape[0]} chunks, {plan[1][0].shape[0]} fixed"
                    else:
                        what = f"{plan[6][0].shape[0]} chunks, {plan[0].shape[0]} items, {plan[7][0].shape[0]} fixed"
                    print(f"| {name} | {fname} | {mb:.2f} | {th} | device cut | {best * 1e3:.2f} | {mb / best:.0f} | "
                          f"{what} | | |", flush=True)
                    continue
                for huge in [int(h) for h in args.host_piece.split(",") if h]:
                    best, hp = float("inf"), None
                    for _ in range(max(1, args.repeat)):
                        t0 = time.perf_counter()
                        hp = g.host.pieces(data, offsets, th, alloc, scratch, huge, None, hint)
                        best = min(best, time.perf_counter() - t0)
                    on_host = 0 if hp.huge is None else int(hp.huge[0].shape[0])
                    times: dict = {}
                    g.host.pieces(data, offsets, th, alloc, scratch, huge, times, hint)
                    parts = ", ".join(f"{k} {v * 1e3:.2f}" for k, v in times.items())
                    print(f"| {name} | {fname} | {mb:.2f} | {th} | {huge} | {best * 1e3:.1f} | {mb / best:.0f} | "
                          f"{hp.special.shape[0]} | {on_host} | {parts} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
