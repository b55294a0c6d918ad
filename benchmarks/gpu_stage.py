#!/usr/bin/env python3
"""Pack what ``benchmarks/gpu_check.sh`` needs on a machine that has no ``../shared`` (a lent GPU
machine sees only the working tree, at most 64 MiB of it) into one archive,
``build/gpu_stage/stage.tar.xz`` (``build/`` is ignored by git; pass ``build/gpu_stage`` in the
device tool's ``carry``):

* ``models/<family>/tokenizer.json`` of the test families, ``models/tiktoken/*.tiktoken``;
* ``corpora/bench/<file>.jsonl``: the documents ``benchmarks/bench.py --max-mb 8`` reads (the
  first ones until 8 MB), so both sides time and check the same texts;
* ``corpora/parity/`` (the golden records' corpus excerpts);

and, beside the archive, ``build/gpu_stage/whl/``: wheels of gigatoken and of what its array
API imports (awkward, awkward-cpp for CPython 3.10-3.13, and their pure-Python dependencies;
not NumPy), at the versions installed here, fetched with ``pip download`` (the one step that
needs the network; ``--no-wheels`` leaves it out). ``gpu_check.sh`` installs from there, with
no index, only the ones its Python cannot import.

Nothing is copied into the repository's tracked files. Sources: ``$GPU_TOK_MODELS`` /
``$GPU_TOK_CORPORA``, else ``../shared/{models,corpora}``.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ["gpt2", "roberta-base", "llama3", "qwen3", "gpt-4o", "gpt-oss", "llama2", "mistral-v0.1", "phi-3-mini",
            "gemma3", "mistral-v0.3-metaspace", "clip-vit-base-patch32"]
RANK_FILES = ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"]
BENCH_FILES = ["code", "english_prose", "multilingual"]
# gigatoken's array API imports awkward; their dependencies at the versions installed here,
# but NumPy (the GPU machine has it) and typer (gigatoken's command line's alone)
WHEEL_ROOTS = ["gigatoken", "awkward"]
WHEEL_SKIP = {"numpy", "typer"}
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_27_x86_64", "manylinux_2_28_x86_64"]


def _canon(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def wheel_closure(roots=WHEEL_ROOTS, skip=WHEEL_SKIP) -> list:
    """``(package, version, module, pure)`` of ``roots`` and their dependencies as installed
    here (a requirement whose marker holds for none of ``PYTHONS`` left out); ``module``: the
    top-level import name, ``pure``: one wheel for every Python."""
    from packaging.requirements import Requirement

    out, seen, stack = [], set(), list(roots)
    while stack:
        name = _canon(stack.pop())
        if name in seen or name in skip:
            continue
        seen.add(name)
        dist = importlib.metadata.distribution(name)
        files = [str(f) for f in dist.files or []]
        tops = sorted({f.split("/")[0].split(".")[0] for f in files
                       if not f.split("/")[0].endswith((".dist-info", ".data")) and not f.startswith(("..", "__"))})
        module = (dist.read_text("top_level.txt") or "").split() or tops or [name.replace("-", "_")]
        pure = "Root-Is-Purelib: true" in (dist.read_text("WHEEL") or "")
        out.append((name, dist.version, module[0], pure))
        for r in dist.requires or []:
            req = Requirement(r)
            if req.marker is None or any(req.marker.evaluate({"python_version": v, "extra": ""}) for v in PYTHONS):
                stack.append(req.name)
    return out


def download_wheels(dest: Path) -> list:
    """``pip download`` of ``wheel_closure()`` into ``dest`` (a compiled one for each of
    ``PYTHONS``), and ``dest/needs.txt``: one line ``module package==version`` per package
    (what ``gpu_check.sh`` installs where ``import module`` fails); returns the problems
    (a package not installed here, a failed download), a line each."""
    dest.mkdir(parents=True, exist_ok=True)
    problems, needs = [], []
    try:
        closure = wheel_closure()
    except ImportError as e:  # PackageNotFoundError among them
        return [f"{e.name}: not installed here, no wheels staged"]
    for name, version, module, pure in closure:
        for py in [None] if pure else PYTHONS:
            cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                   "-d", str(dest), f"{name}=={version}"]
            if py is not None:
                cmd += ["--python-version", py] + [a for plat in PLATFORMS for a in ("--platform", plat)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                problems.append(f"{name}=={version} (python {py or 'any'}): pip download failed: "
                                + (r.stderr.strip().splitlines() or ["?"])[-1])
        needs.append(f"{module} {name}=={version}")
    (dest / "needs.txt").write_text("\n".join(needs) + "\n", encoding="utf-8")
    return problems


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
    p.add_argument("--no-wheels", action="store_true", help="stage no wheels (no network needed)")
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
    if not args.no_wheels:
        whl = out.parent / "whl"
        for problem in download_wheels(whl):
            print(f"wheels: {problem}")
        staged = sorted(whl.glob("*.whl"))
        wsize = sum(f.stat().st_size for f in staged)
        print(f"{whl}: {len(staged)} wheels, {wsize / 2**20:.1f} MiB")
        size += wsize
    if size > 40 * 2**20:
        print("warning: over 40 MiB; the working tree and the staged files travel within 64 MiB together")
    return 0


if __name__ == "__main__":
    sys.exit(main())
