"""Side-by-side CPU throughput: gpu_tok ("ours") against HF tokenizers, tiktoken,
fastokens and gigatoken, on the same texts with the same thread count.

``gpu-tok bench [options]`` and ``python benchmarks/bench.py [options]`` (a thin wrapper in
the repository) run this module with the same options and output:

    python benchmarks/bench.py                         # 8 MB of each bench file, all models
    python benchmarks/bench.py --max-mb 0.2 --models gpt2,r50k_base --files code
    python benchmarks/bench.py --engines hf,tiktoken,fastokens,gigatoken,gigatoken-list
    python benchmarks/bench.py --scaling --models gpt2 --files english_prose
    python benchmarks/bench.py --append-results        # also append the table to benchmarks/RESULTS.md

Each row: one engine encoding the first --max-mb MB (10^6 UTF-8 bytes, whole documents)
of one bench file with one model; seconds are the best of --repeat timed runs after one
untimed warm-up run (the runs of all engines interleaved in rounds). Ids are checked against the reference engine (HF tokenizers for
tokenizer.json models, tiktoken for tiktoken encodings): exact ids on --check-docs
documents spread over the input, and the token count of every document. Every mismatch
is printed; a mismatch (or an error) of ours makes the exit status 1.
See benchmarks/README.md for the methodology.
"""
from __future__ import annotations

import argparse
import base64
import datetime
import gc
import inspect
import json
import math
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent  # the checkout when gpu_tok runs from one (pip install -e)
RESULTS_MD = (REPO_ROOT / "benchmarks" / "RESULTS.md" if (REPO_ROOT / "benchmarks").is_dir()
              else Path.cwd() / "RESULTS.md")
BENCH_FILES = ("code", "english_prose", "multilingual")
# tokenizer.json models, each followed by the tiktoken encoding of its family
DEFAULT_MODELS = ("gpt2", "r50k_base", "llama3", "cl100k_base", "gpt-4o", "o200k_base")
ENGINES = ("ours", "ours-list", "ours-encoding", "ours-fast", "hf", "hf-fast", "tiktoken", "fastokens", "fastokens-list",
           "gigatoken", "gigatoken-list")
DEFAULT_ENGINES = ("ours", "hf", "hf-fast", "tiktoken", "fastokens", "gigatoken", "gigatoken-list")
SCALING_ENGINES = ("ours", "hf", "tiktoken", "gigatoken")
REFERENCE = {"hf": "hf", "tiktoken": "tiktoken"}  # model kind -> reference engine
PACKAGES = {"ours": "gpu_tok", "ours-list": "gpu_tok", "ours-encoding": "gpu_tok", "ours-fast": "gpu_tok", "hf": "tokenizers", "hf-fast": "tokenizers", "tiktoken": "tiktoken",
            "fastokens": "fastokens", "fastokens-list": "fastokens",
            "gigatoken": "gigatoken", "gigatoken-list": "gigatoken"}
MB = 1e6


# ----------------------------------------------------------------------------- data
def _dir_from_env(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    return Path(value).expanduser().resolve() if value else default.resolve()


def models_dir() -> Path:
    return _dir_from_env("GPU_TOK_MODELS", REPO_ROOT / ".." / "shared" / "models")


def corpora_dir() -> Path:
    return _dir_from_env("GPU_TOK_CORPORA", REPO_ROOT / ".." / "shared" / "corpora")


def bench_file(name: str) -> Path:
    p = Path(name)
    if p.suffix == ".jsonl" and p.is_file():
        return p
    return corpora_dir() / "bench" / f"{name}.jsonl"


def load_texts(path: Path, max_bytes: float, skip_bytes: float = 0) -> List[str]:
    """The first documents of a JSON-lines file whose UTF-8 sizes add up to
    ``max_bytes`` (the last one may overshoot it: documents are never cut).
    ``skip_bytes``: first skip the documents that ``load_texts(path, skip_bytes)`` returns."""
    texts, total, skipped = [], 0, 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if total >= max_bytes:
                break
            if line.strip():
                t = json.loads(line)["text"]
                size = len(t.encode("utf-8"))
                if skipped < skip_bytes:
                    skipped += size
                    continue
                texts.append(t)
                total += size
    return texts


def utf8_len(texts: Sequence[str]) -> int:
    return sum(len(t.encode("utf-8")) for t in texts)


def _cut_utf8(data: bytes, size: int) -> List[str]:
    """Cut ``data`` into pieces of about ``size`` bytes, each on a UTF-8 character boundary."""
    out, start, n = [], 0, len(data)
    while start < n:
        end = min(start + size, n)
        while end < n and (data[end] & 0xC0) == 0x80:
            end -= 1
        out.append(data[start:end].decode("utf-8"))
        start = end
    return out


def scaling_inputs(path: Path, max_mb: float, line_mb: float) -> Dict[str, List[str]]:
    """1 KB and 100 KB documents cut from --max-mb MB of the file's texts (joined with
    newlines), and one single line of --line-mb MB (newlines and CRs replaced by spaces)."""
    pool = "\n".join(load_texts(path, max_mb * MB)).encode("utf-8")[: int(max_mb * MB)]
    line = "\n".join(load_texts(path, line_mb * MB)).replace("\r", " ").replace("\n", " ")
    line = _cut_utf8(line.encode("utf-8"), int(line_mb * MB))[0]
    return {"1KB docs": _cut_utf8(pool, 1000), "100KB docs": _cut_utf8(pool, 100_000),
            f"{line_mb:g}MB line": [line]}


# ----------------------------------------------------------------------------- models
@dataclass
class Model:
    name: str
    kind: str = ""  # "hf" (tokenizer.json) or "tiktoken" (rank file)
    path: Optional[Path] = None
    definition: Optional[dict] = None  # tiktoken: pat_str, special_tokens, explicit_n_vocab
    error: str = ""


def tiktoken_definitions() -> dict:
    with open(PACKAGE_DIR / "data" / "tiktoken_encodings.json", encoding="utf-8") as f:
        return json.load(f)["encodings"]


def resolve_model(name: str) -> Model:
    hf_path = models_dir() / name / "tokenizer.json"
    if hf_path.is_file():
        return Model(name, "hf", hf_path)
    defs = tiktoken_definitions()
    if name in defs:
        rank = models_dir() / "tiktoken" / defs[name]["rank_file"]
        if rank.is_file():
            d = dict(defs[name])
            d["special_tokens"] = {k: int(v) for k, v in d["special_tokens"]}
            return Model(name, "tiktoken", rank, d)
        return Model(name, error=f"rank file {rank} not found")
    return Model(name, error=f"no {hf_path} and not a tiktoken encoding")


def read_rank_file(path: Path) -> Dict[bytes, int]:
    """tiktoken's .tiktoken format (base64 token, rank). Parsed here, not with
    tiktoken.load.load_tiktoken_bpe, which copies local files into its cache dir."""
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                tok, rank = line.split()
                ranks[base64.b64decode(tok)] = int(rank)
    return ranks


# ----------------------------------------------------------------------------- engines
class NotApplicable(Exception):
    """The engine has no form for this kind of model (e.g. tiktoken for a tokenizer.json)."""


@dataclass
class Runner:
    api: str  # the exact call, for the legend
    encode: Callable[[List[str]], object]  # the timed call
    lengths: Callable[[object], object]  # numpy int64 tokens per document (untimed)
    rows: Callable[[object, Sequence[int]], List[List[int]]]  # ids of some documents (untimed)


def _np():
    import numpy as np

    return np


def _list_runner(api, fn) -> Runner:
    np = _np()
    return Runner(api, fn, lambda out: np.fromiter((len(r) for r in out), np.int64, len(out)),
                  lambda out, idx: [list(out[i]) for i in idx])


def _encoding_runner(api, fn) -> Runner:  # list of tokenizers.Encoding-like objects
    np = _np()
    return Runner(api, fn, lambda out: np.fromiter((len(e.ids) for e in out), np.int64, len(out)),
                  lambda out, idx: [list(out[i].ids) for i in idx])


def _splits_runner(api, fn, unpack) -> Runner:  # flat ids + row offsets
    np = _np()

    def rows(out, idx):
        ids, splits = unpack(out)
        return [ids[int(splits[i]):int(splits[i + 1])].tolist() for i in idx]

    return Runner(api, fn, lambda out: np.diff(np.asarray(unpack(out)[1], dtype=np.int64)), rows)


def _kwargs_for(fn, wanted: dict) -> dict:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(wanted)
    return {k: v for k, v in wanted.items() if k in params}


def make_ours(model: Model, threads: int, module=None) -> Runner:
    """``module``: another copy of the package to time instead (``benchmarks/paired.py --against``)."""
    if module is None:
        import gpu_tok as module

    gpu_tok = module
    if model.kind == "hf":
        obj = gpu_tok.Tokenizer.from_file(str(model.path))
        base = {"add_special_tokens": False}
        optional = {"device": "cpu", "num_threads": threads}
        ctor = f"gpu_tok.Tokenizer.from_file({model.name}/tokenizer.json)"
    else:
        obj = gpu_tok.Tokenizer.from_tiktoken(model.name, path=str(model.path))
        # allowed_special=frozenset(), disallowed_special=() is tiktoken's encode_ordinary
        base = {}
        optional = {"disallowed_special": (), "device": "cpu", "num_threads": threads}
        ctor = f"gpu_tok.Tokenizer.from_tiktoken({model.name!r}, path=...)"
    fn = obj.encode_batch_ids
    kw = {**base, **_kwargs_for(fn, optional)}
    if model.kind == "tiktoken" and "disallowed_special" not in kw:
        raise RuntimeError("TiktokenEncoding.encode_batch_ids takes no disallowed_special: cannot ask for "
                           "encode_ordinary semantics")
    api = f"{ctor}.encode_batch_ids(texts, {', '.join(f'{k}={v!r}' for k, v in kw.items())}) -> TokenBatch"
    return _splits_runner(api, lambda texts: fn(texts, **kw), lambda out: (out.ids, out.row_splits))


def make_ours_lists(model: Model, threads: int) -> Runner:
    """Our ids as Python lists, one per text (the ``tiktoken`` / ``gigatoken-list`` engines'
    counterpart): ``encode_ordinary_batch`` for a tiktoken encoding, else
    ``encode_batch_ids(...).to_list()``."""
    import gpu_tok

    if model.kind == "hf":
        tok = gpu_tok.Tokenizer.from_file(str(model.path))
        api = (f"gpu_tok.Tokenizer.from_file({model.name}/tokenizer.json).encode_batch_ids(texts, "
               f"add_special_tokens=False, device='cpu', num_threads={threads}).to_list() -> list[list[int]]")
        return _list_runner(api, lambda texts: tok.encode_batch_ids(texts, add_special_tokens=False, device="cpu",
                                                                    num_threads=threads).to_list())
    enc = gpu_tok.Tokenizer.from_tiktoken(model.name, path=str(model.path))
    api = (f"gpu_tok.Tokenizer.from_tiktoken({model.name!r}, path=...).encode_ordinary_batch(texts, "
           f"num_threads={threads}) -> list[list[int]]")
    return _list_runner(api, lambda texts: enc.encode_ordinary_batch(texts, num_threads=threads))


def make_ours_encodings(model: Model, threads: int, fast: bool = False) -> Runner:
    """Our ``encode_batch`` (``fast``: ``encode_batch_fast``): ``Encoding`` objects, as HF's
    ``encode_batch`` gives them (the ``hf`` / ``hf-fast`` engines' counterparts)."""
    if model.kind != "hf":
        raise NotApplicable
    import gpu_tok

    tok = gpu_tok.Tokenizer.from_file(str(model.path))
    name = "encode_batch_fast" if fast else "encode_batch"
    fn = getattr(tok, name)
    api = (f"gpu_tok.Tokenizer.from_file(...).{name}(texts, add_special_tokens=False, device='cpu', "
           f"num_threads={threads}) -> list[Encoding]")
    return _encoding_runner(api, lambda texts: fn(texts, add_special_tokens=False, device="cpu", num_threads=threads))


def make_hf(model: Model, threads: int, fast: bool = False) -> Runner:
    if model.kind != "hf":
        raise NotApplicable
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(str(model.path))
    name = "encode_batch_fast" if fast else "encode_batch"
    fn = getattr(tok, name, None)
    if fn is None:
        raise RuntimeError(f"tokenizers {tokenizers.__version__} has no Tokenizer.{name}")
    api = f"tokenizers.Tokenizer.from_file(...).{name}(texts, add_special_tokens=False) -> list[Encoding]"
    return _encoding_runner(api, lambda texts: fn(texts, add_special_tokens=False))


def make_tiktoken(model: Model, threads: int) -> Runner:
    if model.kind != "tiktoken":
        raise NotApplicable
    import tiktoken

    d = model.definition
    enc = tiktoken.Encoding(model.name, pat_str=d["pat_str"], mergeable_ranks=read_rank_file(model.path),
                            special_tokens=d["special_tokens"], explicit_n_vocab=d.get("explicit_n_vocab"))
    api = (f"tiktoken.Encoding({model.name!r}, <local rank file>).encode_ordinary_batch(texts, "
           f"num_threads={threads}) -> list[list[int]]")
    return _list_runner(api, lambda texts: enc.encode_ordinary_batch(texts, num_threads=threads))


def make_fastokens(model: Model, threads: int, flat: bool = True) -> Runner:
    import fastokens

    if model.kind == "hf":
        # from_json_str reads tokenizer.json only, as HF does (from_file also merges a
        # sibling tokenizer_config.json)
        tok = fastokens.Tokenizer.from_json_str(model.path.read_text(encoding="utf-8"))
        ctor, split = "fastokens.Tokenizer.from_json_str(<tokenizer.json>)", False
    else:
        d = model.definition
        tok = fastokens.Tokenizer.from_tiktoken(str(model.path), pattern=d["pat_str"],
                                                special_tokens=d["special_tokens"])
        ctor = f"fastokens.Tokenizer.from_tiktoken(<{model.name}.tiktoken>, pattern, special_tokens)"
        split = True  # special-token text encoded as ordinary text: tiktoken's encode_ordinary
    if flat:
        np = _np()
        api = (f"{ctor}.encode_batch_flat(texts, add_special_tokens=False, split_special_tokens={split}) "
               f"-> (uint32 bytes, uint64 offsets bytes)")
        return _splits_runner(
            api, lambda texts: tok.encode_batch_flat(texts, add_special_tokens=False, split_special_tokens=split),
            lambda out: (np.frombuffer(out[0], dtype="<u4"), np.frombuffer(out[1], dtype="<u8")))
    api = f"{ctor}.encode_batch(texts, add_special_tokens=False, split_special_tokens={split}) -> list[Encoding]"
    return _encoding_runner(
        api, lambda texts: tok.encode_batch(texts, add_special_tokens=False, split_special_tokens=split))


def make_gigatoken(model: Model, threads: int, as_list: bool = False) -> Runner:
    import gigatoken as gt

    if model.kind == "hf":
        tok = gt.Tokenizer(str(model.path))
        ctor = "gigatoken.Tokenizer(<tokenizer.json>)"
    else:
        from gigatoken._load.tiktoken import ENCODINGS

        if model.name not in ENCODINGS:
            raise RuntimeError(f"gigatoken knows no pretokenizer for {model.name}")
        # gigatoken always recognizes the special tokens it was given; giving it none
        # makes its encode equal to tiktoken's encode_ordinary
        tok = gt.Tokenizer.from_tiktoken(str(model.path), pretokenizer=ENCODINGS[model.name].pretokenizer,
                                         special_tokens={})
        ctor = f"gigatoken.Tokenizer.from_tiktoken(<{model.name}.tiktoken>, pretokenizer=..., special_tokens={{}})"
    parallel = threads > 1  # as gigatoken's own tiktoken wrapper does for num_threads == 1
    if as_list:
        api = f"{ctor}.encode_batch_list(texts, parallel={parallel}) -> list[list[int]]"
        return _list_runner(api, lambda texts: tok.encode_batch_list(texts, parallel=parallel))
    import awkward as ak
    np = _np()
    api = f"{ctor}.encode_batch(texts, parallel={parallel}) -> awkward.Array (uint32, i64 offsets)"
    return Runner(api, lambda texts: tok.encode_batch(texts, parallel=parallel),
                  lambda out: np.asarray(ak.to_numpy(ak.num(out, axis=1)), dtype=np.int64),
                  lambda out, idx: [list(out[i].to_list()) for i in idx])


FACTORIES: Dict[str, Callable[[Model, int], Runner]] = {
    "ours": make_ours,
    "ours-list": make_ours_lists,
    "ours-encoding": make_ours_encodings,
    "ours-fast": lambda m, t: make_ours_encodings(m, t, fast=True),
    "hf": make_hf,
    "hf-fast": lambda m, t: make_hf(m, t, fast=True),
    "tiktoken": make_tiktoken,
    "fastokens": make_fastokens,
    "fastokens-list": lambda m, t: make_fastokens(m, t, flat=False),
    "gigatoken": make_gigatoken,
    "gigatoken-list": lambda m, t: make_gigatoken(m, t, as_list=True),
}


def set_thread_env(threads: int) -> None:
    """Thread counts of the Rust engines are read from the environment when their
    pools start, so this runs before any of them is imported."""
    os.environ["RAYON_NUM_THREADS"] = str(threads)  # HF tokenizers, gigatoken, fastokens' rayon pool
    os.environ["RAYON_RS_NUM_CPUS"] = str(threads)  # older rayon spelling
    os.environ["TOKENIZERS_PARALLELISM"] = "true"  # HF: allow its parallel encode_batch
    os.environ["FASTOKENS_BPE_THREADS"] = str(threads)  # fastokens' own BPE pool
    os.environ["NUMBA_NUM_THREADS"] = str(threads)  # ours: numba's thread pool size (num_threads caps it)


def package_version(pkg: str) -> Optional[str]:
    from importlib import metadata

    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def unavailable_reason(engine: str) -> Optional[str]:
    pkg = PACKAGES[engine]
    try:
        __import__(pkg)
    except Exception as e:  # noqa: BLE001 - any import failure means "skip"
        return f"not importable ({type(e).__name__}: {e})"
    return None


# ----------------------------------------------------------------------------- measuring
def sample_indices(n: int, k: int) -> List[int]:
    if k <= 0 or n == 0:
        return []
    if k >= n:
        return list(range(n))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]


_WORKER = [sys.executable, "-m", "gpu_tok.bench"]  # the worker subprocesses run this module


def _worker_env() -> Dict[str, str]:
    """The environment of a worker: this one, with gpu_tok importable even from a bare checkout."""
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def time_worker(args) -> None:
    """--unseen, in a fresh process: build the engine, warm it up on the documents that
    follow the timed slice in the same file (same size), then time ONE run on the timed
    slice, which this process has never encoded."""
    np = _np()
    model = resolve_model(args.models[0])
    runner = FACTORIES[args.time_engine](model, args.threads)
    path = bench_file(args.files[0])
    texts = load_texts(path, args.max_mb * MB)
    warm = load_texts(path, args.max_mb * MB, skip_bytes=args.max_mb * MB) or ["warm-up"]
    runner.encode(warm)
    warm_bytes, warm = utf8_len(warm), None
    gc.collect()
    settle_allocator()
    t0 = time.perf_counter()
    out = runner.encode(texts)
    dt = time.perf_counter() - t0
    lens = np.asarray(runner.lengths(out), dtype=np.int64)
    rows = runner.rows(out, sample_indices(len(texts), args.check_docs)) if args.check_docs > 0 else None
    json.dump({"seconds": dt, "lengths": lens.tolist(), "rows": [list(map(int, r)) for r in rows or []],
               "warm_bytes": warm_bytes}, sys.stdout)


def time_unseen(engine: str, model: Model, fname: str, args):
    """Best of --repeat fresh processes, each timing one run on text it has not seen."""
    np = _np()
    cmd = _WORKER + ["--_time-worker", engine, "--models", model.name,
           "--files", fname, "--max-mb", str(args.max_mb), "--threads", str(args.threads),
           "--check-docs", str(args.check_docs)]
    best, first = math.inf, None
    for _ in range(args.repeat):
        p = subprocess.run(cmd, capture_output=True, text=True, env=_worker_env())
        if p.returncode != 0:
            raise RuntimeError(f"worker failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
        r = json.loads(p.stdout)
        best = min(best, r["seconds"])
        first = first or r
    return best, np.asarray(first["lengths"], dtype=np.int64), first["rows"] if args.check_docs > 0 else None


@dataclass
class Result:
    engine: str
    model: str
    file: str
    nbytes: int = 0
    ndocs: int = 0
    seconds: float = math.nan
    tokens: int = 0
    status: str = ""  # "" (not checked), "ok", "MISMATCH ...", "FAILED ..."
    problem: bool = False  # mismatch or failure
    details: List[str] = field(default_factory=list)
    shape: str = ""  # scaling mode: input shape

    @property
    def mbps(self) -> float:
        return self.nbytes / MB / self.seconds if self.seconds > 0 else math.nan


def compare(res: Result, lens, rows, ref_lens, ref_rows, idx, ref_name: str) -> None:
    np = _np()
    bad_len = np.flatnonzero(lens != ref_lens) if len(lens) == len(ref_lens) else None
    bad_ids = [j for j, (a, b) in enumerate(zip(rows, ref_rows)) if list(a) != list(b)]
    problems = []
    if bad_len is None:
        problems.append(f"{len(lens)} rows for {len(ref_lens)} documents")
    elif len(bad_len):
        problems.append(f"token count differs on {len(bad_len)}/{len(lens)} docs")
        i = int(bad_len[0])
        res.details.append(f"doc {i}: {int(lens[i])} tokens, {ref_name} {int(ref_lens[i])}")
    if bad_ids:
        problems.append(f"ids differ on {len(bad_ids)}/{len(idx)} checked docs")
        for j in bad_ids[:3]:
            a, b = list(rows[j]), list(ref_rows[j])
            p = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            res.details.append(f"doc {idx[j]}: first difference at token {p}: {a[p:p + 6]} vs {ref_name} "
                               f"{b[p:p + 6]} ({len(a)} vs {len(b)} tokens)")
    res.status = "MISMATCH: " + "; ".join(problems) if problems else f"ok ({len(idx)} docs ids, all counts)"
    res.problem = bool(problems)


def short_error(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg[:160]}"


def bench_one(model: Model, fname: str, texts: List[str], engines: List[str], runners: dict, args,
              shape: str = "") -> List[Result]:
    """Time every engine on ``texts`` and check its ids against the reference engine.

    The reference runs first (timed if selected, else once untimed); each engine's
    warm-up output is reduced to per-document token counts and the sampled rows and
    then dropped, so no engine is timed while others' outputs are held; then the timed
    rounds (``time_rounds``)."""
    np = _np()
    nbytes, n = utf8_len(texts), len(texts)
    idx = sample_indices(n, args.check_docs)
    ref_name = REFERENCE[model.kind]
    ref = runners.get(ref_name)
    ref_lens = ref_rows = None
    ref_problem = "not available"
    order = sorted(engines, key=lambda e: e != ref_name)  # reference first, stable otherwise
    if args.check_docs > 0 and ref_name not in engines and isinstance(ref, Runner):
        try:
            out = ref.encode(texts)
            ref_lens, ref_rows = np.asarray(ref.lengths(out), dtype=np.int64), ref.rows(out, idx)
        except Exception as e:  # noqa: BLE001
            ref_problem = short_error(e)
        out = None
    results = []
    timed = []  # (result, runner) of the engines that ran
    for eng in order:
        r = runners.get(eng)
        if r is None or isinstance(r, NotApplicable):
            continue
        res = Result(eng, model.name, fname, nbytes, n, shape=shape)
        results.append(res)
        if isinstance(r, BaseException):
            res.status, res.problem = f"FAILED to load: {short_error(r)}", True
            if eng == ref_name:
                ref_problem = "failed to load"
            continue
        try:
            if args.unseen and not shape:
                res.seconds, lens, rows = time_unseen(eng, model, fname, args)
            else:  # the warm-up run, checked; timed runs below, in rounds over the engines
                out = r.encode(texts)
                lens = np.asarray(r.lengths(out), dtype=np.int64)
                rows = r.rows(out, idx) if args.check_docs > 0 else None
                timed.append((res, r))
            res.tokens = int(lens.sum())
        except Exception as e:  # noqa: BLE001
            res.status, res.problem = f"FAILED: {short_error(e)}", True
            if eng == ref_name:
                ref_problem = "failed"
            continue
        finally:
            out = None
        if args.check_docs <= 0:
            continue
        if eng == ref_name:
            ref_lens, ref_rows, res.status = lens, rows, "reference"
        elif ref_lens is None:
            res.status = f"UNCHECKED ({ref_name} {ref_problem})"
        else:
            compare(res, lens, rows, ref_lens, ref_rows, idx, ref_name)
    time_rounds(timed, texts, args.repeat)
    return results


_LIBC = None


def settle_allocator(max_rounds: int = 16) -> None:
    """Make the C allocator do, untimed, the work an engine's freed output left it.

    glibc's ``free`` defers work: freed chunks wait in its fast and unsorted lists, and
    the next ``malloc`` that those lists cannot serve sorts and merges all of them. HF
    tokenizers' output for 8-10 MB is millions of small Rust allocations, and the first
    allocations after it is dropped took 4 ms and then 22 ms (one 1 MiB ``malloc``, then
    another; measured on the 10 MB line, llama3), charged to whichever engine ran next in
    the round. A ``malloc``/``free`` of just over 1 MiB (below the mmap threshold, so
    served from the heap and made to sort its lists) is repeated until two in a row take
    under 50 us. No-op where the C library has no ``malloc`` to call."""
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes

            lib = ctypes.CDLL(None)
            lib.malloc.restype = ctypes.c_void_p
            lib.malloc.argtypes = [ctypes.c_size_t]
            lib.free.argtypes = [ctypes.c_void_p]
            _LIBC = lib
        except (OSError, AttributeError):
            _LIBC = False
    if not _LIBC:
        return
    quick = 0
    for _ in range(max_rounds):
        t0 = time.perf_counter()
        _LIBC.free(_LIBC.malloc((1 << 20) + 24))
        quick = quick + 1 if time.perf_counter() - t0 < 50e-6 else 0
        if quick == 2:
            return


def time_rounds(timed, texts: List[str], repeat: int) -> None:
    """``repeat`` rounds, each timing one run of every engine in turn; each keeps its best.
    Interleaved, so that a slow spell of the machine (on this 2-vCPU host the same work
    takes ~1.5x as long for seconds at a time, whatever the engine) falls on all engines
    alike instead of on the one timed then. Outputs are freed outside the timed region,
    and so is the allocator's deferred work on them (``settle_allocator``): no engine is
    timed sorting the free lists the engine before it left."""
    for res, _r in timed:
        res.seconds = math.inf
    for _ in range(repeat):
        for res, r in timed:
            gc.collect()
            settle_allocator()
            try:
                t0 = time.perf_counter()
                out = r.encode(texts)
                dt = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001
                res.status, res.problem = f"FAILED: {short_error(e)}", True
                continue
            del out
            res.seconds = min(res.seconds, dt)


# ----------------------------------------------------------------------------- memory (subprocess)
def _proc_status_kb(key: str) -> Optional[int]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _trim_heap() -> None:
    """Hand freed heap pages back to the OS, so the next call cannot reuse them unseen."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _peak_growth(encode, texts):
    """``(output, bytes, method)``: the peak RSS during ``encode(texts)`` over the RSS before it."""
    import resource

    _trim_heap()
    rss0 = _proc_status_kb("VmRSS")
    method = "VmHWM after clear_refs"
    try:  # resets the peak-RSS counter (VmHWM) to the current RSS (Linux >= 4.0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        method = "ru_maxrss delta"
    hwm0 = _proc_status_kb("VmHWM") if method.startswith("VmHWM") else None
    if hwm0 is None or rss0 is None or hwm0 > rss0 + 1024:
        method, rss0 = "ru_maxrss delta", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = encode(texts)
    peak = _proc_status_kb("VmHWM") if method.startswith("VmHWM") else resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss
    return out, (peak - rss0) * 1024, method


def mem_worker(args) -> None:
    """Run in a fresh process: the peak RSS growth of ours' first encode of the texts (after
    a one-line warm-up), and of a second encode of them (its caches' pages touched and its
    kept scratch already there: what each later call of the same size costs)."""
    model = resolve_model(args.models[0])
    runner = make_ours(model, args.threads)
    runner.encode(["warm-up: build lazy tables, compile, start threads"])
    texts = scaling_inputs(bench_file(args.files[0]), args.max_mb, args.line_mb)[args.mem_shape]
    nbytes = utf8_len(texts)
    out, first, method = _peak_growth(runner.encode, texts)
    out_bytes = int(getattr(out, "ids").nbytes + getattr(out, "row_splits").nbytes)
    del out
    out, again, method2 = _peak_growth(runner.encode, texts)
    del out
    json.dump({"bytes": nbytes, "peak_extra": first, "peak_again": again, "method": method,
               "method_again": method2, "output_bytes": out_bytes}, sys.stdout)


def measure_memory(model: Model, fname: str, shape: str, args) -> str:
    cmd = _WORKER + ["--_mem-worker", shape, "--models", model.name,
           "--files", fname, "--max-mb", str(args.max_mb), "--line-mb", str(args.line_mb),
           "--threads", str(args.threads)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=_worker_env())
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["?"])[-1]
        return f"FAILED: {tail[:160]}"
    r = json.loads(p.stdout)
    again = (f"; a second call on them {r['peak_again'] / r['bytes']:.2f} B/B ({r['peak_again'] / MB:.1f} MB"
             f"{'' if r['method_again'] == r['method'] else ', ' + r['method_again']})")
    return (f"{r['peak_extra'] / r['bytes']:.2f} B/B peak RSS growth on the first call ({r['peak_extra'] / MB:.1f} MB for "
            f"{r['bytes'] / MB:.2f} MB){again}; output {r['output_bytes'] / r['bytes']:.2f} B/B; {r['method']}")


# ----------------------------------------------------------------------------- output
def fmt(x: float, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.{digits}f}" if x >= 0.1 else f"{x:.3g}"


def table_rows(results: List[Result], scaling: bool) -> List[List[str]]:
    ours = {(r.model, r.file, r.shape): r.mbps for r in results if r.engine == "ours" and r.seconds > 0}
    rows = []
    for r in results:
        o = ours.get((r.model, r.file, r.shape))
        ratio = "" if r.engine == "ours" or o is None or not r.seconds > 0 else f"{o / r.mbps:.3g}x"
        row = [r.engine, r.model, r.file] + ([r.shape, str(r.ndocs)] if scaling else [])
        row += [f"{r.nbytes / MB:.2f}", fmt(r.seconds, 3), fmt(r.mbps),
                fmt(r.tokens / r.seconds / 1e6) if r.seconds > 0 else "-", ratio, r.status or "-"]
        rows.append(row)
    return rows


def progress(results: List[Result]) -> None:
    for r in results:
        where = "/".join(x for x in (r.model, r.file, r.shape) if x)
        speed = f"{r.mbps:.3g} MB/s" if r.seconds > 0 else "-"
        print(f"  {where} {r.engine}: {speed} {r.status}", file=sys.stderr, flush=True)


def headers(scaling: bool) -> List[str]:
    return (["engine", "model", "file"] + (["input", "docs"] if scaling else [])
            + ["MB", "s", "MB/s", "Mtok/s", "ours/this", "ids vs reference"])


def render_text(hdr: List[str], rows: List[List[str]]) -> str:
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *rows)]
    right = {"MB", "s", "MB/s", "Mtok/s", "ours/this", "docs"}
    line = lambda cells: "  ".join(c.rjust(w[i]) if hdr[i] in right else c.ljust(w[i])  # noqa: E731
                                   for i, c in enumerate(cells)).rstrip()
    return "\n".join([line(hdr), line(["-" * x for x in w])] + [line(r) for r in rows])


def render_md(hdr: List[str], rows: List[List[str]]) -> str:
    right = {"MB", "s", "MB/s", "Mtok/s", "ours/this", "docs"}
    out = ["| " + " | ".join(hdr) + " |", "|" + "|".join("---:" if h in right else "---" for h in hdr) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key = line.split(":")[0].strip().lower()
                if key in ("model name", "hardware", "cpu model", "processor") and ":" in line:
                    value = line.split(":", 1)[1].strip()
                    if value and not value.isdigit():
                        return value
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown"


def versions() -> Dict[str, str]:
    v = {"python": sys.version.split()[0]}
    for pkg in ("gpu_tok", "tokenizers", "tiktoken", "fastokens", "gigatoken", "numpy"):
        v[pkg] = package_version(pkg) or "not installed"
    try:
        rev = subprocess.run(["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        if rev:
            v["gpu_tok"] += f" (git {rev})"
    except (OSError, subprocess.SubprocessError):
        pass
    return v


def append_results(args, text_blocks: List[str]) -> None:
    write_results("(scaling)" if args.scaling else "", args.threads, args.load_at_start,
                  f"best of {args.repeat} {method_note(args)}; MB = 10^6 UTF-8 bytes of input; "
                  f"ours/this = ours MB/s / this engine's MB/s", text_blocks)


def write_results(tag: str, threads, load, method: str, text_blocks: List[str]) -> None:
    """Append a dated section to RESULTS.md: its heading (``tag`` after the date), the
    command, machine, versions and ``method`` lines, then ``text_blocks``."""
    u = os.uname()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = shlex.join(["python"] + sys.argv)
    vers = ", ".join(f"{k} {v}" for k, v in versions().items())
    head = [f"## {now}{' ' + tag if tag else ''}", "",
            f"- command: `{cmd}`",
            f"- machine: `{u.sysname} {u.release} {u.machine}`; CPU: {cpu_model()}; "
            f"cores: {os.cpu_count()}; threads: {threads}; load average at start: {load}",
            f"- versions: {vers}",
            f"- {method}", ""]
    new = not RESULTS_MD.exists()
    with open(RESULTS_MD, "a", encoding="utf-8") as f:
        if new:
            f.write("# Benchmark results\n\nAppended by `python benchmarks/bench.py --append-results` "
                    "(newest last). Methodology: benchmarks/README.md.\n")
        f.write("\n" + "\n".join(head) + "\n" + "\n".join(text_blocks) + "\n")
    print(f"appended to {RESULTS_MD}")


# ----------------------------------------------------------------------------- main
def method_note(args) -> str:
    if args.unseen and not args.scaling:
        return "(--unseen: fresh process per timed run, warm-up on the next --max-mb MB of the file)"
    return "(+1 warm-up run on the same texts; the engines' runs interleaved in rounds)"


def parse_args(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated: folders of GPU_TOK_MODELS holding tokenizer.json, or tiktoken "
                         "encodings (r50k_base, cl100k_base, o200k_base, p50k_base) [%(default)s]")
    ap.add_argument("--files", default=",".join(BENCH_FILES),
                    help="bench files (names under GPU_TOK_CORPORA/bench or .jsonl paths) [%(default)s]")
    ap.add_argument("--engines", default=None,
                    help=f"comma-separated subset of {','.join(ENGINES)} [main: {','.join(DEFAULT_ENGINES)}; "
                         f"--scaling: {','.join(SCALING_ENGINES)}]")
    ap.add_argument("--max-mb", type=float, default=8.0, help="MB (10^6 UTF-8 bytes) of texts per file [8]")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for every engine [cpu_count]")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs, best kept (after 1 warm-up) [3]")
    ap.add_argument("--check-docs", type=int, default=200, help="docs whose ids are compared exactly; 0: no checks")
    ap.add_argument("--scaling", action="store_true",
                    help="1 KB docs, 100 KB docs and one --line-mb MB single line, plus peak memory of ours")
    ap.add_argument("--line-mb", type=float, default=10.0, help="size of the --scaling single line [10]")
    ap.add_argument("--no-memory", action="store_true", help="--scaling without the memory subprocesses")
    ap.add_argument("--append-results", action="store_true", help=f"append the table to {RESULTS_MD}")
    ap.add_argument("--unseen", action="store_true",
                    help="time each run in a fresh process on text it has never encoded (warm-up on the next "
                         "--max-mb MB of the same file), defeating per-word / per-document caches")
    ap.add_argument("--_mem-worker", dest="mem_shape", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_time-worker", dest="time_engine", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.models = [m for m in args.models.split(",") if m]
    args.files = [f for f in args.files.split(",") if f]
    default = SCALING_ENGINES if args.scaling else DEFAULT_ENGINES
    args.engines = [e for e in (args.engines.split(",") if args.engines else default) if e]
    unknown = [e for e in args.engines if e not in ENGINES]
    if unknown:
        ap.error(f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    if args.threads < 1 or args.repeat < 1:
        ap.error("--threads and --repeat must be >= 1")
    return args


def main(argv=None, prog=None) -> int:
    args = parse_args(argv, prog)
    set_thread_env(args.threads)  # before any engine is imported
    args.load_at_start = load_average()
    if args.mem_shape:
        mem_worker(args)
        return 0
    if args.time_engine:
        time_worker(args)
        return 0
    print(f"threads={args.threads} repeat={args.repeat} {method_note(args)} max-mb={args.max_mb:g} "
          f"check-docs={args.check_docs}; load average {load_average()}; models: {models_dir()}; "
          f"corpora: {corpora_dir()}")
    skipped = {e: unavailable_reason(e) for e in set(args.engines) | set(REFERENCE.values())}
    for e in args.engines:
        if skipped[e]:
            print(f"skipped engine {e}: {skipped[e]}")

    results: List[Result] = []
    legend: Dict[str, str] = {}
    notes: List[str] = []
    text_cache: Dict[str, object] = {}
    for mname in args.models:
        model = resolve_model(mname)
        if model.error:
            notes.append(f"model {mname}: {model.error}")
            print(notes[-1])
            continue
        ref_name = REFERENCE[model.kind]
        wanted = [e for e in args.engines if not skipped[e]]
        build = wanted + ([ref_name] if args.check_docs > 0 and ref_name not in wanted and not skipped[ref_name]
                          else [])
        runners: Dict[str, object] = {}
        for eng in build:
            try:
                runners[eng] = FACTORIES[eng](model, args.threads)
                legend.setdefault(f"{eng}/{model.kind}", runners[eng].api)
            except NotApplicable as e:
                runners[eng] = e
            except Exception as e:  # noqa: BLE001
                runners[eng] = e
        for fname in args.files:
            path = bench_file(fname)
            if not path.is_file():
                notes.append(f"file {fname}: {path} not found")
                print(notes[-1])
                continue
            if args.scaling:
                if fname not in text_cache:
                    text_cache[fname] = scaling_inputs(path, args.max_mb, args.line_mb)
                for shape, texts in text_cache[fname].items():
                    rs = bench_one(model, fname, texts, wanted, runners, args, shape=shape)
                    results += rs
                    progress(rs)
                    if "ours" in wanted and isinstance(runners.get("ours"), Runner) and not args.no_memory:
                        notes.append(f"ours memory {model.name}/{fname}/{shape}: "
                                     f"{measure_memory(model, fname, shape, args)}")
                        print("  " + notes[-1], file=sys.stderr, flush=True)
            else:
                if fname not in text_cache:
                    text_cache[fname] = load_texts(path, args.max_mb * MB)
                rs = bench_one(model, fname, text_cache[fname], wanted, runners, args)
                results += rs
                progress(rs)
        runners.clear()
        gc.collect()

    hdr, rows = headers(args.scaling), table_rows(results, args.scaling)
    print()
    print(render_text(hdr, rows))
    details = [f"{r.engine} {r.model} {r.file}{' ' + r.shape if r.shape else ''}: {d}"
               for r in results for d in r.details]
    if details:
        print("\nmismatch details:")
        print("\n".join("  " + d for d in details))
    if notes:
        print("\nnotes:")
        print("\n".join("  " + n for n in notes))
    print("\nAPIs timed:")
    for k, v in legend.items():
        print(f"  {k}: {v}")
    bad_ours = [r for r in results if r.engine == "ours" and r.problem]
    if args.append_results:
        blocks = [render_md(hdr, rows)]
        extra = notes + [f"skipped {e}: {skipped[e]}" for e in args.engines if skipped[e]] + details
        if extra:
            blocks.append("\n" + "\n".join(f"- {x}" for x in extra))
        append_results(args, blocks)
    if bad_ours:
        print(f"\nFAIL: ours has {len(bad_ours)} mismatching or failing row(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
