#!/usr/bin/env python3
"""Paired in-process timing: ours against one other engine, or against ours at another
git revision, with the engines taking turns in one process.

Separate runs on a shared host drift by 25% and more between minutes (the main bench's
rows are seconds apart, so an engine can be lucky on one file and not on the next).
Here every round times each engine once, in rotating order, on the same texts, and the
result is the **median of the per-round ratios** with its quartiles: a slow spell slows
both engines of a round alike. Identical code measures 1.00-1.01 with quartiles within
about 4% this way on the 2-core development machine (on the AMD hosts of 2026-12-02 the
quartiles of identical code spread 10% and more). The ratio of the two engines' best
times is printed too: on a host whose other tenants slow it in spells, the best of many
rounds is the run that nothing slowed.

    python benchmarks/paired.py                                  # ours vs fastokens, 5 models x 3 files
    python benchmarks/paired.py --against HEAD~1 --models llama3 --files english_prose
    python benchmarks/paired.py --other gigatoken --threads 1 --rounds 30 --append-results

``--against REV`` copies the package at ``REV`` (``git archive``) under another name
(``gpu_tok_ref``) into a temporary directory and times it as the other engine: a change's
own effect, measured the same way. Engines are warm (each has encoded the texts once before
the timed rounds), as in the main bench; the texts are the main bench's (``--max-mb`` MB of
each file; ``--shape`` cuts them into 1 KB or 100 KB documents or one line, as ``bench.py
--scaling`` does; ``--doc-bytes N`` into documents of about ``N`` bytes, for the
per-document costs). ``--unseen`` (with ``--against``): text neither engine has seen, as
``bench.py --unseen`` but in one process: each round, before each engine's timed call, its
word caches are made anew and warmed up on the next ``--max-mb`` MB of the file. Options
not listed here behave as in ``bench.py``.

    python benchmarks/paired.py --against HEAD~1 --unseen --models gpt2,gemma3 --files code,multilingual
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MB = 1_000_000
FIELD = ("gpt2:english_prose,gpt2:code,gpt2:multilingual,qwen3:english_prose,qwen3:code,qwen3:multilingual,"
         "llama3:english_prose,llama3:code,llama3:multilingual,cl100k_base:english_prose,cl100k_base:code,"
         "cl100k_base:multilingual,o200k_base:english_prose,o200k_base:code,o200k_base:multilingual")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", default=FIELD, help="comma-separated model:file pairs (default: 5 models x 3 files)")
    ap.add_argument("--models", help="instead of --pairs: these models ...")
    ap.add_argument("--files", default="english_prose,code,multilingual", help="... on these files")
    ap.add_argument("--other", default="fastokens", help="the bench engine to pair with (default fastokens)")
    ap.add_argument("--against", metavar="REV", help="pair with ours at this git revision instead")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for both engines")
    ap.add_argument("--rounds", type=int, default=20, help="timed rounds (each engine once per round)")
    ap.add_argument("--max-mb", type=float, default=8.0, help="MB of texts per file (the main bench's)")
    ap.add_argument("--shape", choices=["1KB docs", "100KB docs", "line"],
                    help="instead of the file's documents: --max-mb MB of them cut into documents of this "
                         "size, or one line of --max-mb MB (bench.py --scaling's inputs)")
    ap.add_argument("--doc-bytes", type=int, metavar="N",
                    help="instead of the file's documents: --max-mb MB of them (joined with newlines) cut into "
                         "documents of about N bytes (per-document costs)")
    ap.add_argument("--unseen", action="store_true",
                    help="each round, each engine's word caches made anew, warmed up on the next --max-mb MB of the "
                         "file, then timed on texts it has not seen (ours and ours at --against only)")
    ap.add_argument("--append-results", action="store_true", help="append the table to benchmarks/RESULTS.md")
    args = ap.parse_args(argv)
    if args.unseen and not args.against:
        ap.error("--unseen pairs ours with ours at --against (other engines' caches are not made anew)")
    return args


def ref_package(rev: str, where: Path) -> str:
    """The package at ``rev`` as ``gpu_tok_ref`` under ``where``; returns the name."""
    name = "gpu_tok_ref"
    tar = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", rev, "gpu_tok"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=tar, check=True)
    (where / "gpu_tok").rename(where / name)
    for py in (where / name).rglob("*.py"):
        py.write_text(re.sub(r"\bgpu_tok\b", name, py.read_text(encoding="utf-8")), encoding="utf-8")
    return name


_KEPT_CACHES = ("_wcache", "_wc", "_lc")  # byte-level and SentencePiece; WordPiece and Unigram; Unigram's long pieces


def cache_keepers(pkg):
    """The byte-level, SentencePiece, WordPiece and Unigram engines of package ``pkg``
    (``gpu_tok`` or the copy at ``--against``) alive now: their word caches (the attributes
    ``_KEPT_CACHES`` names) are what ``--unseen`` makes anew each round."""
    if pkg is None:
        return []
    fc = sys.modules[f"{pkg.__name__}.fast_cpu"]
    kinds = [fc.ByteBPEEngine, fc.CpuSentencePieceEngine]
    fw = sys.modules.get(f"{pkg.__name__}.fast_wordpiece")
    if fw is not None:
        kinds.append(fw.PieceEngine)
    return [o for o in gc.get_objects() if isinstance(o, tuple(kinds))]


def quartiles(v):
    s = sorted(v)
    return s[len(s) // 4], statistics.median(s), s[(3 * len(s)) // 4]


def main(argv=None) -> int:
    args = parse_args(argv)
    for k in ("RAYON_NUM_THREADS", "FASTOKENS_BPE_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[k] = str(args.threads)  # before any engine is imported
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    import numpy as np

    from gpu_tok import bench as B

    tmp = tempfile.TemporaryDirectory()
    other_name = args.other
    if args.against:
        sys.path.insert(0, tmp.name)
        ref_mod = __import__(ref_package(args.against, Path(tmp.name)))
        other_name = f"ours@{args.against}"
    pairs = ([f"{m}:{f}" for m in args.models.split(",") for f in args.files.split(",")] if args.models
             else args.pairs.split(","))
    load = B.load_average()
    rows = ["| model | file | MB | ours MB/s (median) | "
            f"{other_name} MB/s (median) | ours/{other_name}: median of paired ratios | quartiles | ratio of best times |",
            "|---|---|---|---|---|---|---|---|"]
    print(rows[0], flush=True)
    for spec in pairs:
        mname, fname = spec.split(":")
        model = B.resolve_model(mname)
        if model.error:
            print(f"skipped {spec}: {model.error}", flush=True)
            continue
        if args.shape:
            shapes = B.scaling_inputs(B.bench_file(fname), args.max_mb, args.max_mb)
            texts = shapes[args.shape if args.shape != "line" else f"{args.max_mb:g}MB line"]
            fname = f"{fname} ({args.shape})"
        elif args.doc_bytes:
            pool = "\n".join(B.load_texts(B.bench_file(fname), args.max_mb * MB)).encode("utf-8")
            texts = B._cut_utf8(pool[: int(args.max_mb * MB)], args.doc_bytes)
            fname = f"{fname} ({args.doc_bytes} B docs)"
        else:
            texts = B.load_texts(B.bench_file(fname), args.max_mb * MB)
        warm = B.load_texts(B.bench_file(fname), args.max_mb * MB, skip_bytes=args.max_mb * MB) if args.unseen else None
        size = sum(len(t.encode("utf-8")) for t in texts)
        ours = B.make_ours(model, args.threads).encode
        if args.against:
            other = B.make_ours(model, args.threads, ref_mod).encode
        else:
            try:
                other = B.FACTORIES[args.other](model, args.threads).encode
            except B.NotApplicable:
                print(f"skipped {spec}: {args.other} has no form for {mname}", flush=True)
                continue
        engines = [ours, other]
        a, b = ours(texts), other(texts)  # warm-up, and the ids compared when both are ours
        if args.against and not (np.array_equal(a.ids, b.ids) and np.array_equal(a.row_splits, b.row_splits)):
            print(f"{spec}: ours and ours@{args.against} give different ids", flush=True)
            return 1
        times = ([], [])
        kept = (cache_keepers(sys.modules["gpu_tok"]), cache_keepers(ref_mod if args.against else None))
        for r in range(args.rounds):
            for k in ((0, 1) if r % 2 == 0 else (1, 0)):
                if args.unseen:  # fresh caches (allocated by a first call), warmed up on other text
                    for e in kept[k]:
                        for name in _KEPT_CACHES:
                            if hasattr(e, name):
                                setattr(e, name, None)
                    engines[k](["x"])
                    engines[k](warm)
                gc.collect()
                B.settle_allocator()
                t0 = time.perf_counter()
                engines[k](texts)
                times[k].append(time.perf_counter() - t0)
        q1, med, q3 = quartiles([t1 / t0 for t0, t1 in zip(*times)])
        row = (f"| {mname} | {fname} | {size / MB:.2f} | {size / statistics.median(times[0]) / MB:.1f} | "
               f"{size / statistics.median(times[1]) / MB:.1f} | {med:.3f}x | {q1:.3f}-{q3:.3f} | "
               f"{min(times[1]) / min(times[0]):.3f}x |")
        rows.append(row)
        print(row, flush=True)
    if args.append_results:
        how = (f"unseen: each engine's word caches made anew and warmed up on the next {args.max_mb:g} MB of the "
               "file each round" if args.unseen else "warm engines")
        B.write_results("(paired)", args.threads, load,
                        f"{args.rounds} rounds, each engine once per round in alternating order, {how}, "
                        f"{args.max_mb:g} MB of each file; ratio > 1: ours faster", ["\n".join(rows)])
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
