#!/usr/bin/env python3
"""The whole corpus job (``gpu-tok encode``), ours against ours at another git revision,
taking turns: reading, encoding and writing, as a user runs it (or, with ``--read``, only
the reader and the engine's packing of what it reads: the part of the job before the
encoder, whose few percent the job's seconds on a noisy host do not show).

Each round runs both revisions once (in rotating order) on the same input, each in a
fresh process writing a ``bin`` shard, and reads the job's own summary (its seconds cover
reading, encoding and writing, not start-up). The result is the median of the per-round
ratios of those seconds, with the medians of both and of the whole process's wall time.
The shards both write must be byte for byte the same.

    python benchmarks/job_paired.py --against HEAD~1
    python benchmarks/job_paired.py --against HEAD~1 --inputs prose-1KB,english_prose --threads 1 --rounds 8
    python benchmarks/job_paired.py --against HEAD~1 --read --inputs multilingual,multilingual-parquet

Inputs (``--inputs``, comma-separated): a bench file's name (``english_prose``, ``code``,
``multilingual``: its JSON Lines as they are, ``--copies`` times over), ``<file>-1KB``
(its texts cut into documents of 1,000 characters, one JSON object each, with an ``id``),
``<file>-lines`` (its texts' lines as a text file read with ``--lines``) and
``<file>-parquet`` (its texts as a Parquet ``text`` column, pyarrow's defaults). Generated
inputs are written under a temporary directory and removed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
SUMMARY = re.compile(r"^(\d+) documents, (\d+) tokens, (\d+) bytes, ([\d.]+) s, ")


def make_input(name: str, tmp: Path, copies: int):
    """``(paths, extra args)`` of one input."""
    from gpu_tok import bench as B

    base, _, shape = name.partition("-")
    src = B.bench_file(base)
    if not shape:
        return [str(src)] * copies, []
    if shape == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        out = tmp / f"{name}.parquet"
        with open(src, encoding="utf-8") as f:
            pq.write_table(pa.table({"text": [json.loads(line)["text"] for line in f]}), str(out))
        return [str(out)] * copies, []
    out = tmp / f"{name}.{'txt' if shape == 'lines' else 'jsonl'}"
    with open(src, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as w:
        n = 0
        for line in f:
            text = json.loads(line)["text"]
            if shape == "lines":
                w.write(text.replace("\r", "") + "\n")
                continue
            for k in range(0, len(text), 1000):
                w.write(json.dumps({"id": n, "text": text[k:k + 1000]}) + "\n")
                n += 1
    return [str(out)] * copies, ["--lines"] if shape == "lines" else []


def run_job(pythonpath: str, model: str, paths, extra, threads: int, out: Path):
    env = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [sys.executable, "-m", "gpu_tok", "encode", "--tokenizer", model, "--device", "cpu", "--input", *paths,
           "--output", str(out), "--overwrite", "--num-threads", str(threads), *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(out.parent))
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    m = SUMMARY.match(proc.stdout.strip().splitlines()[-1])
    return float(m.group(4)), wall, int(m.group(3))


READ_CHILD = r"""
import sys, time
from gpu_tok.corpus import Block, Source, iter_records, warm_block_reader
from gpu_tok.cpu_ref.pipeline import check_text
from gpu_tok.fast_cpu import pack

paths, threads, repeat = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3])
warm_block_reader()
best, n = float("inf"), 0
for r in range(repeat + 1):  # the first pass loads the kernels
    t0, n = time.perf_counter(), 0
    for p in paths:
        kind = "parquet" if p.endswith(".parquet") else "text" if p.endswith(".txt") else "jsonl"
        pend = []
        for rec in iter_records(Source(p, kind, lines=kind == "text"), blocks=True, threads=threads):
            if isinstance(rec, Block):
                n += pack(rec.texts, check_text, threads)[0].shape[0]
            elif rec.error is None:
                pend.append(rec.text)
                if len(pend) == 4096:
                    n += pack(pend, check_text, threads)[0].shape[0]
                    pend = []
        if pend:
            n += pack(pend, check_text, threads)[0].shape[0]
    if r:
        best = min(best, time.perf_counter() - t0)
print(best, n)
"""


def run_read(pythonpath: str, paths, threads: int, cwd: Path, repeat: int = 3):
    """The reader and the packing alone (``--read``): best seconds of ``repeat`` passes, bytes
    (run in ``cwd``, away from the checkout: ``python -c`` puts its directory first on the path)."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    proc = subprocess.run([sys.executable, "-c", READ_CHILD, ",".join(paths), str(threads), str(repeat)],
                          capture_output=True, text=True, env=env, cwd=str(cwd))
    if proc.returncode != 0:
        raise SystemExit(f"the reading child failed:\n{proc.stderr[-3000:]}")
    s, n = proc.stdout.split()
    return float(s), float(s), int(n)


def shard_bytes(out: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.suffix in (".bin", ".idx")}


def ref_tree(rev: str, tmp: Path) -> str:
    d = tmp / "ref"
    d.mkdir()
    tar = subprocess.run(["git", "archive", rev, "gpu_tok"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(d)], input=tar, check=True)
    return str(d)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True, metavar="REV", help="the git revision to pair with")
    ap.add_argument("--inputs", default="english_prose-1KB,english_prose,multilingual,english_prose-lines")
    ap.add_argument("--model", default="gpt2")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--copies", type=int, default=2, help="each input given this many times (default 2)")
    ap.add_argument("--read", action="store_true",
                    help="time only what comes before the encoder: the reader's records and blocks, and the "
                         "engine's packing of their documents (best of 3 passes per process)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="job_paired_") as t:
        tmp = Path(t)
        trees = {"ours": str(REPO_ROOT), f"ours@{args.against}": ref_tree(args.against, tmp)}
        print(f"| input | MB | ours s (median) | ours@{args.against} s | speed-up: median of ref s / ours s "
              f"| quartiles | wall s ours / ref |")
        print("|---|---|---|---|---|---|---|")
        for name in args.inputs.split(","):
            paths, extra = make_input(name, tmp, args.copies)
            outs = {k: tmp / f"out_{i}" for i, k in enumerate(trees)}
            if args.read:
                def one(k):
                    return run_read(trees[k], paths, args.threads, tmp)
            else:
                def one(k):
                    return run_job(trees[k], args.model, paths, extra, args.threads, outs[k])
                for k, tree in trees.items():  # warm-up: Numba's caches of each tree
                    run_job(tree, args.model, paths, extra, args.threads, outs[k])
                got = {k: shard_bytes(outs[k]) for k in trees}
                if len(set(map(lambda d: tuple(sorted(d.items())), got.values()))) != 1:
                    print(f"{name}: the shards differ between the revisions", flush=True)
                    return 1
            secs = {k: [] for k in trees}
            walls = {k: [] for k in trees}
            ratios = []
            nbytes = 0
            for r in range(args.rounds):
                order = list(trees) if r % 2 == 0 else list(trees)[::-1]
                this = {}
                for k in order:
                    s, w, nbytes = one(k)
                    secs[k].append(s)
                    walls[k].append(w)
                    this[k] = s
                ratios.append(this[f"ours@{args.against}"] / this["ours"])
            q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
            a, b = trees
            print(f"| {name} | {nbytes / 1e6:.1f} | {statistics.median(secs[a]):.3f} | {statistics.median(secs[b]):.3f} "
                  f"| {statistics.median(ratios):.3f}x | {q[0]:.3f}-{q[2]:.3f} "
                  f"| {statistics.median(walls[a]):.2f} / {statistics.median(walls[b]):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
