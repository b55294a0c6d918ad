#!/usr/bin/env python3
"""Pack what ``benchmarks/gpu_check.sh`` needs on a machine that has no ``../shared`` (a lent GPU
machine sees only the working tree, at most 64 MiB of it) into one archive,
``build/gpu_stage/stage.tar.xz`` (``build/`` is ignored by git; pass ``build/gpu_stage`` in the
device tool's ``carry``):

* ``models/<family>/tokenizer.json`` of the test families, ``models/tiktoken/*.tiktoken``;
* ``corpora/bench/<file>.jsonl``: the documents ``benchmarks/bench.py --max-mb 8`` reads (the
  first ones until 8 MB), so both sides time and check the same texts;
* ``corpora/parity/`` (the golden records' corpus excerpts).

Nothing is copied into the repository's tracked files. Sources: ``$GPU_TOK_MODELS`` /
``$GPU_TOK_CORPORA``, else ``../shared/{models,corpora}``.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ["gpt2", "roberta-base", "llama3", "qwen3", "gpt-4o", "gpt-oss", "llama2", "mistral-v0.1", "phi-3-mini",
            "gemma3", "mistral-v0.3-metaspace"]
RANK_FILES = ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"]
BENCH_FILES = ["code", "english_prose", "multilingual"]


def _dir(var, default):
    v = os.environ.get(var)
    return Path(v).expanduser().resolve() if v else default.resolve()


def bench_head(path: Path, max_bytes: float) -> bytes:
    """The lines ``gpu_tok.bench.load_texts(path, max_bytes)`` reads, verbatim."""
    out, total = [], 0
    with open(path, "rb") as f:
        for line in f:
            if total >= max_bytes:
                break
            if line.strip():
                out.append(line)
                total += len(json.loads(line)["text"].encode("utf-8"))
    return b"".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(REPO_ROOT / "build" / "gpu_stage" / "stage.tar.xz"))
    p.add_argument("--max-mb", type=float, default=8.0)
    p.add_argument("--no-parity", action="store_true", help="leave the parity corpus out")
    args = p.parse_args(argv)
    models = _dir("GPU_TOK_MODELS", REPO_ROOT / ".." / "shared" / "models")
    corpora = _dir("GPU_TOK_CORPORA", REPO_ROOT / ".." / "shared" / "corpora")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    missing = []
    with tarfile.open(out, "w:xz", preset=6) as tar:
        for fam in FAMILIES:
            f = models / fam / "tokenizer.json"
            if f.is_file():
                tar.add(f, f"models/{fam}/tokenizer.json")
            else:
                missing.append(str(f))
        for name in RANK_FILES:
            f = models / "tiktoken" / f"{name}.tiktoken"
            if f.is_file():
                tar.add(f, f"models/tiktoken/{name}.tiktoken")
            else:
                missing.append(str(f))
        for name in BENCH_FILES:
            f = corpora / "bench" / f"{name}.jsonl"
            if not f.is_file():
                missing.append(str(f))
                continue
            data = bench_head(f, args.max_mb * 1e6)
            info = tarfile.TarInfo(f"corpora/bench/{name}.jsonl")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if not args.no_parity and (corpora / "parity").is_dir():
            tar.add(corpora / "parity", "corpora/parity")
    size = out.stat().st_size
    print(f"{out}: {size / 2**20:.1f} MiB")
    for m in missing:
        print(f"missing (left out): {m}")
    if size > 40 * 2**20:
        print("warning: over 40 MiB; the working tree and this archive travel within 64 MiB together")
    return 0


if __name__ == "__main__":
    sys.exit(main())
