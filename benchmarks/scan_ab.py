#!/usr/bin/env python3
"""The compiled pre-tokenizer alone, this tree against another git revision, in one process.

    python benchmarks/scan_ab.py --against HEAD~1 --family gpt2 --dialect onig
    python benchmarks/scan_ab.py --against a56d5c6 --family o200k --dialect tiktoken --files multilingual

Each bench file (``--max-mb`` MB, the main bench's texts) is packed into one buffer and cut
with ``pretok_cpu.scan_mask`` (serial: one thread, the per-byte cost) by this tree and by
the package at ``--against`` (copied under another name, as ``paired.py --against``). The
two masks must be equal (else it stops: the revisions cut differently). Then ``--rounds``
rounds time each once, alternating which goes first; printed per file: the best time of
each and the median of the per-round ratios (old time / new time: > 1, this tree faster)
with its quartiles. A slow spell of the host slows both of a round alike, which separate
runs do not give (they drifted by 2x within minutes on the development machine).
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True, help="a git revision to compare with")
    ap.add_argument("--family", default="gpt2", help="gpt2, cl100k, qwen or o200k")
    ap.add_argument("--dialect", default="onig", help="onig or tiktoken")
    ap.add_argument("--files", default="english_prose,code,multilingual")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--max-mb", type=float, default=8.0)
    args = ap.parse_args(argv)

    from paired import quartiles, ref_package

    from gpu_tok import bench as B
    from gpu_tok.fast_cpu import pack
    from gpu_tok.kernels import pretok_cpu as new

    tmp = tempfile.TemporaryDirectory()
    sys.path.insert(0, tmp.name)
    name = ref_package(args.against, Path(tmp.name))
    old = importlib.import_module(f"{name}.kernels.pretok_cpu")
    for f in args.files.split(","):
        texts = B.load_texts(B.corpora_dir() / "bench" / f"{f}.jsonl", args.max_mb * 1e6)
        data, offsets = pack(texts, None)
        starts, ends = offsets[:-1].copy(), offsets[1:].copy()
        m_new = np.zeros(data.shape, np.uint8)
        m_old = np.zeros(data.shape, np.uint8)
        new.scan_mask(data, starts, ends, args.family, args.dialect, m_new, parallel=False)
        old.scan_mask(data, starts, ends, args.family, args.dialect, m_old, parallel=False)
        diff = np.flatnonzero(m_new != m_old)
        if diff.size:
            print(f"{f}: the cuts differ at {diff.size} bytes (first at byte {int(diff[0])})")
            return 1
        t_new, t_old, ratios = [], [], []
        for r in range(args.rounds):
            order = ((new, m_new, t_new), (old, m_old, t_old))
            for mod, mask, acc in (order if r % 2 == 0 else order[::-1]):
                t0 = time.perf_counter()
                mod.scan_mask(data, starts, ends, args.family, args.dialect, mask, parallel=False)
                acc.append(time.perf_counter() - t0)
            ratios.append(t_old[-1] / t_new[-1])
        lo, med, hi = quartiles(ratios)
        print(f"{args.family}/{args.dialect} {f} ({offsets[-1] / 1e6:.2f} MB, {int(m_new.sum())} pieces): "
              f"this tree {min(t_new) * 1e3:.2f} ms, {args.against} {min(t_old) * 1e3:.2f} ms; "
              f"old/new median {med:.3f}x (quartiles {lo:.3f}-{hi:.3f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
