#!/usr/bin/env python3
"""GPU engine check and timing on the bench corpus (used by ``benchmarks/gpu_check.sh``).

For every model and bench file (the first ``--max-mb`` MB, as ``benchmarks/bench.py``):

* **equality**: ``device="cuda"`` ids and row splits equal ``device="cpu"`` (the compiled
  CPU engine), every document, exactly;
* **end-to-end MB/s**: texts in, ids out, best of ``--repeat`` after a warm-up: with the ids
  copied back to the host (``return_numpy=True``) and, where CuPy is installed, left on the
  device (CuPy arrays, synchronized); the CPU engine on all ``--threads`` cores beside it;
* **the host thread**: one more run as the timed ones, and what its thread spent in each phase
  (making pieces, issuing copies and launches, waiting for the device and copying back);
* **the device's own time**: one more run with CUDA events around each kernel, the scan and each
  copy (no waits added): the kernels' and copies' device time and the span of the run on it;
* **long pieces on the host** (``--host-piece 64,32``): e2e MB/s, equality and the device's
  own time again with the pieces longer than each length encoded on the host;
* **where the time goes**: one more run with the engine's ``profile`` switch (it waits for
  the device after every phase and every kernel, so nothing overlaps): packing the texts,
  host pre-tokenization (pieces), copies to the device, kernels (and each kernel's share),
  copies back, plus pieces, distinct pieces and batches.

Writes ``gpu_bench.json`` and ``gpu_bench.md`` to ``--out``. ``--device twin`` runs the same
pipeline on the CPU twins (no GPU: a dry run of this script). Models and texts come from
``$GPU_TOK_MODELS`` / ``$GPU_TOK_CORPORA`` like bench.py; nothing is downloaded.
Exit status 1 when any ids differ or a run fails.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="gpt2,llama3,o200k_base")
    p.add_argument("--files", default="code,english_prose,multilingual")
    p.add_argument("--max-mb", type=float, default=8.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--device", choices=["cuda", "twin"], default="cuda")
    p.add_argument("--batch-mb", type=float, default=None, help="GPU batch size (GPU_TOK_CUDA_BATCH_MB)")
    p.add_argument("--host-piece", default="",
                   help="comma-separated byte lengths: for each, e2e MB/s, equality and the device's own time with "
                        "pieces longer than that encoded on the host (the engine's huge_bytes; default 8192)")
    p.add_argument("--out", default=os.environ.get("OUT", "."))
    p.add_argument("--budget-s", type=float, default=0,
                   help="stop starting new cases this many seconds after the first case ended (its time is mostly "
                        "compiling the kernels: about 2 minutes on a fresh H200 machine)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.batch_mb:
        os.environ["GPU_TOK_CUDA_BATCH_MB"] = str(args.batch_mb)
    import numpy as np

    import gpu_tok
    from gpu_tok import gpu_engine as G
    from gpu_tok.bench import bench_file, load_texts, resolve_model, utf8_len

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    cp = G._cupy() if args.device == "cuda" else None
    t_start = time.perf_counter()
    results, failed = [], False
    for name in [m for m in args.models.split(",") if m]:
        model = resolve_model(name)
        if model.error:
            print(f"skip model {name}: {model.error}", flush=True)
            results.append({"model": name, "error": model.error})
            continue
        if model.kind == "hf":
            obj = gpu_tok.Tokenizer.from_file(str(model.path))

            def cpu(texts, obj=obj):
                b = obj.encode_batch_ids(texts, add_special_tokens=False, device="cpu", num_threads=args.threads)
                return b.ids, b.row_splits

            def gpu(texts, numpy_out, obj=obj):
                return G.tokenizer_batch_ids(obj, texts, False, args.device, args.threads, numpy_out)
        else:
            obj = gpu_tok.Tokenizer.from_tiktoken(name, path=str(model.path))

            def cpu(texts, obj=obj):
                b = obj.encode_batch_ids(texts, disallowed_special=(), device="cpu", num_threads=args.threads)
                return b.ids, b.row_splits

            def gpu(texts, numpy_out, obj=obj):
                return G.tiktoken_batch_ids(obj, texts, frozenset(), frozenset(), args.device, args.threads,
                                            numpy_out)
        for fname in [f for f in args.files.split(",") if f]:
            if args.budget_s and time.perf_counter() - t_start > args.budget_s:
                print(f"time budget of {args.budget_s:g} s spent: {name} {fname} not run", flush=True)
                results.append({"model": name, "file": fname, "error": "time budget spent"})
                continue
            path = bench_file(fname)
            if not path.is_file():
                print(f"skip file {fname}: {path} not found", flush=True)
                results.append({"model": name, "file": fname, "error": f"{path} not found"})
                continue
            try:
                texts = load_texts(path, args.max_mb * 1e6)
                r = run_case(name, fname, texts, utf8_len(texts) / 1e6, cpu, gpu, obj, args, cp, np, G)
            except Exception as e:  # noqa: BLE001
                traceback.print_exc()
                r = {"model": name, "file": fname, "error": f"{type(e).__name__}: {e}"}
            failed |= bool(r.get("error")) or not r.get("equal", False) \
                or not all(c["equal"] for c in r.get("host_piece", {}).values())
            if not results or all(x.get("error") for x in results):
                t_start = time.perf_counter()  # the budget counts from the first case's end
            results.append(r)
            print(json.dumps(r), flush=True)
    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": args.device,
            "card": card_name(args.device), "host": platform.platform(), "cores": os.cpu_count(),
            "threads": args.threads, "python": platform.python_version(), "versions": versions(),
            "git": git_rev(), "max_mb": args.max_mb, "repeat": args.repeat, "engine": engine_switches(G, args.device)}
    (out_dir / "gpu_bench.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    md = render(meta, results)
    (out_dir / "gpu_bench.md").write_text(md)
    print(md)
    return 1 if failed else 0


def best_of(fn, repeat, sync=None):
    best = float("inf")
    out = None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = fn()
        if sync is not None:
            sync()
        best = min(best, time.perf_counter() - t0)
    return best, out


def one_run(eng, gpu, texts, G, switch=None):
    """``(seconds, stats)`` of one ``gpu(texts, True)`` with the engine's stats fresh and its
    ``switch`` (``"events"``, ``"profile"``) on for that run."""
    eng.stats = G._new_stats()
    if switch:
        setattr(eng, switch, True)
    try:
        t0 = time.perf_counter()
        gpu(texts, True)
        return time.perf_counter() - t0, eng.stats
    finally:
        if switch:
            setattr(eng, switch, False)


def run_case(name, fname, texts, mb, cpu, gpu, obj, args, cp, np, G):
    r = {"model": name, "file": fname, "docs": len(texts), "mb": round(mb, 3)}
    cpu(texts[:50])  # compile and build the engine
    cpu_s, (c_ids, c_rs) = best_of(lambda: cpu(texts), args.repeat)
    gpu(texts[:50], True)  # compile and build the engine
    gpu(texts, True)  # warm-up on the whole input (buffers grown once)
    e2e_s, (g_ids, g_rs) = best_of(lambda: gpu(texts, True), args.repeat)
    r["equal"] = bool(np.array_equal(g_rs, c_rs) and np.array_equal(g_ids, c_ids))
    if not r["equal"]:
        rows = [i for i in range(len(texts)) if not np.array_equal(g_ids[g_rs[i]:g_rs[i + 1]],
                                                                     c_ids[c_rs[i]:c_rs[i + 1]])]
        r["differing_docs"] = rows[:20]
        r["n_differing_docs"] = len(rows)
    r.update(tokens=int(c_ids.shape[0]), cpu_s=round(cpu_s, 4), cpu_mbps=round(mb / cpu_s, 1),
             gpu_e2e_s=round(e2e_s, 4), gpu_e2e_mbps=round(mb / e2e_s, 1))
    if cp is not None:
        sync = cp.cuda.Device().synchronize
        dev_s, _ = best_of(lambda: gpu(texts, False), args.repeat, sync)
        r.update(gpu_dev_s=round(dev_s, 4), gpu_dev_mbps=round(mb / dev_s, 1))
    eng = obj.__dict__["_gpu_engines"]["cuda" if args.device == "cuda" else "twin"].engine
    # the host thread in an overlapped run (no waits added): what it spent making pieces,
    # issuing copies and launches, and in d2h (waiting for the device, then copying back)
    run_s, st = one_run(eng, gpu, texts, G)
    r["host_thread"] = {k: round(st[k], 4) for k in ("pack_s", "host_s", "h2d_s", "kernel_s", "d2h_s")}
    r["host_thread"]["total_s"] = round(run_s, 4)
    if st.get("hybrid_share") is not None:  # GPU_TOK_CUDA_HYBRID: the CPU engine's part of that run
        r["hybrid"] = {"share": round(st["hybrid_share"], 3), "cpu_mb": round(st["hybrid_cpu_bytes"] / 1e6, 3),
                       "cpu_s": round(st["hybrid_cpu_s"], 4),
                       "rates_ns_per_byte": [None if x is None else round(x * 1e9, 3) for x in (eng._rates or [])]}
    # the device's own time (CUDA events around each kernel, scan and copy; no waits added)
    ev_s, st = one_run(eng, gpu, texts, G, "events")
    gt = st.get("gpu", {})
    if gt:
        r["device_time"] = {k: round(v, 5) for k, v in sorted(gt.items(), key=lambda kv: -kv[1])}
        r["device_time"]["run_s"] = round(ev_s, 4)
    prof_s, st = one_run(eng, gpu, texts, G, "profile")
    r["profile"] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in st.items()}
    # each kernel waited for and timed alone (the scan's kernels together): where kernel_s goes
    r["profile"]["kernels"] = {k: round(v, 5) for k, v in sorted(st.get("kernels", {}).items(), key=lambda kv: -kv[1])}
    r["profile"]["total_s"] = round(prof_s, 4)
    r["profile"]["other_s"] = round(prof_s - st["pack_s"] - st["host_s"] - st["h2d_s"] - st["kernel_s"]
                                    - st["d2h_s"], 4)
    r["kernel_mbps"] = round(mb / st["kernel_s"], 1) if st["kernel_s"] > 0 else None
    for t in [int(x) for x in args.host_piece.split(",") if x]:
        r.setdefault("host_piece", {})[str(t)] = host_piece_case(eng, gpu, texts, mb, t, c_ids, c_rs, args, np, G)
    return r


def host_piece_case(eng, gpu, texts, mb, huge, c_ids, c_rs, args, np, G) -> dict:
    """With pieces of more than ``huge`` bytes encoded on the host (one GPU thread runs a
    piece's BPE as a serial chain of memory loads, a CPU core is faster at it): e2e MB/s,
    equality, the pieces the host encoded and the device's own time (events run)."""
    old = eng.huge_bytes
    eng.huge_bytes = huge
    try:
        gpu(texts, True)  # warm-up
        s, (ids, rs) = best_of(lambda: gpu(texts, True), args.repeat)
        out = {"gpu_e2e_mbps": round(mb / s, 1), "equal": bool(np.array_equal(rs, c_rs) and np.array_equal(ids, c_ids))}
        ev_s, st = one_run(eng, gpu, texts, G, "events")
        out["host_pieces"] = st["host_pieces"]
        out["host_s"] = round(st["host_s"], 4)
        gt = st.get("gpu", {})
        if gt:
            out["device_time"] = {k: round(v, 5) for k, v in sorted(gt.items(), key=lambda kv: -kv[1])}
            out["device_time"]["run_s"] = round(ev_s, 4)
        return out
    finally:
        eng.huge_bytes = old


def engine_switches(G, device: str) -> dict:
    """The engine's switches as this run had them (after it): the batch loop (plain or the
    overlapped host step), and the launch path (launches FastLauncher made, and the kernels
    it left to Numba, with why)."""
    out = {"overlap": os.environ.get("GPU_TOK_CUDA_OVERLAP") == "1",
           "device_cut": os.environ.get("GPU_TOK_CUDA_DEVICE_CUT") == "1",
           "medium": os.environ.get("GPU_TOK_CUDA_MEDIUM") or None,
           "hybrid": os.environ.get("GPU_TOK_CUDA_HYBRID") or None}
    be = G._BACKENDS.get(device) if device == "cuda" else None
    fast = getattr(be, "fast", None)
    out["fast_launch"] = None if fast is None else {"launches": fast.fast, "refused": dict(fast.refused)}
    return out


def render(meta, results) -> str:
    eng = meta.get("engine", {})
    fl = eng.get("fast_launch")
    medium = int(eng.get("medium") or 64)
    fl_text = ("off (Numba's launches)" if fl is None else
               f"{fl['launches']} launches" + (f", left to Numba: {fl['refused']}" if fl["refused"] else ", none left to Numba"))
    lines = [f"## {meta['date_utc']}: GPU engine ({meta['device']}) on {meta['card']}", "",
             f"- host: `{meta['host']}`, {meta['cores']} cores, threads {meta['threads']}; git {meta['git']}",
             f"- engine: batch loop {'overlapped (GPU_TOK_CUDA_OVERLAP=1)' if eng.get('overlap') else 'plain'}; "
             f"FastLauncher: {fl_text}; byte-level pieces cut "
             f"{'on the device (GPU_TOK_CUDA_DEVICE_CUT=1)' if eng.get('device_cut') else 'on the host'}; "
             + (f"distinct pieces of 65 to {medium} bytes rescanned by k_medium (GPU_TOK_CUDA_MEDIUM={medium})"
                if medium > 64 else "no k_medium (the default)")
             + (f"; hybrid loop (GPU_TOK_CUDA_HYBRID={eng['hybrid']}): host-bound calls shared with the CPU "
                "engine" if eng.get("hybrid") not in (None, "0") else ""),
             f"- versions: {', '.join(f'{k} {v}' for k, v in meta['versions'].items())}",
             f"- first {meta['max_mb']:g} MB of each bench file; best of {meta['repeat']} after a warm-up; "
             "MB = 10^6 bytes of UTF-8 input; e2e = texts in, ids out (host: NumPy ids; device: CuPy ids); "
             "split = one profiled run that waits after each phase (no overlap)", "",
             "| model | file | MB | ids == cpu | cpu MB/s | gpu e2e MB/s (host) | gpu e2e MB/s (device) | "
             "pack s | pieces s (host) | h2d s | kernel s | d2h s | kernel-only MB/s | pieces | distinct | batches |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        if r.get("error"):
            lines.append(f"| {r['model']} | {r.get('file', '')} | | FAILED: {r['error'][:120]} |" + " |" * 12)
            continue
        p = r["profile"]
        eq = "yes" if r["equal"] else f"NO ({r.get('n_differing_docs')} docs)"
        lines.append(f"| {r['model']} | {r['file']} | {r['mb']:.2f} | {eq} | {r['cpu_mbps']} | {r['gpu_e2e_mbps']} | "
                     f"{r.get('gpu_dev_mbps', '-')} | {p['pack_s']} | {p['host_s']} | {p['h2d_s']} | {p['kernel_s']} | {p['d2h_s']} | "
                     f"{r['kernel_mbps']} | {p['pieces']} | {p['distinct']} | {p['batches']} |")
    lines += section(results, lambda r: r.get("host_thread"),
                     "The host thread in one overlapped run (no added waits; seconds): pack, pieces, issuing the "
                     "copies (h2d) and the launches (kernel), d2h (waiting for the device, then the copy back), "
                     "and the run's total:",
                     lambda h: f"pack {h['pack_s']}, pieces {h['host_s']}, h2d {h['h2d_s']}, kernel {h['kernel_s']}, "
                               f"d2h {h['d2h_s']}, total {h['total_s']}")
    lines += section(results, lambda r: r.get("hybrid"),
                     "The hybrid loop in that run (GPU_TOK_CUDA_HYBRID): the device's share of the bytes in its "
                     "last round, the MB the CPU engine encoded meanwhile and its seconds, the learnt rates (ns per "
                     "byte: host part of the device's documents, device, CPU engine):",
                     lambda h: f"share {h['share']}, CPU engine {h['cpu_mb']} MB in {h['cpu_s']} s, rates "
                               f"{h['rates_ns_per_byte']}")
    lines += section(results, lambda r: r.get("device_time"),
                     "The device's own time in one overlapped run (CUDA events around each kernel, the scan and "
                     "each copy; seconds): span from the first event to the last, the run's wall time, kernels "
                     "(sum, then the largest), copies:", device_line)
    lines += section(results, lambda r: r.get("host_piece"),
                     "Pieces longer than N bytes encoded on the host (N = 8192 in the table above): e2e MB/s, "
                     "ids == cpu, pieces the host encoded, the host's pieces time, the device's own time:",
                     lambda hp: "; ".join(f"**{n}**: {c['gpu_e2e_mbps']} MB/s, {'equal' if c['equal'] else 'NOT EQUAL'}, "
                                          f"{c['host_pieces']} on the host, pieces {c['host_s']} s"
                                          + (f", {device_line(c['device_time'])}" if c.get("device_time") else "")
                                          for n, c in hp.items()))
    lines += section(results, lambda r: r["profile"] if r["profile"].get("device_cut") or r["profile"].get(
                         "device_cut_refused") else None,
                     "Batches of the profiled run whose pieces were cut on the device (GPU_TOK_CUDA_DEVICE_CUT=1), "
                     "and those sent back to the host step (a piece over the host-piece limit, or a fixed piece "
                     "where another starts):",
                     lambda p: f"{p.get('device_cut', 0)} on the device, {p.get('device_cut_refused', 0)} "
                               "sent back")
    lines += section(results, lambda r: r["profile"].get("host_parts"),
                     "The host step's parts in the profiled run (seconds, all batches; ``gpu_host.lap``):",
                     lambda hp: ", ".join(f"{k} {v:.4f}" for k, v in hp.items()))
    lines += section(results, lambda r: r["profile"].get("kernels"),
                     "Kernel split of the profiled run (seconds, each kernel waited for alone; the scan's "
                     "kernels together), largest first:",
                     lambda ks: ", ".join(f"{k} {v:.4f}" for k, v in ks.items()))
    return "\n".join(lines) + "\n"


def section(results, get, title: str, line) -> list:
    """Markdown lines: ``title``, then ``- model file: line(get(r))`` for every case that ran
    and has ``get(r)`` (none at all when no case has)."""
    rows = [r for r in results if not r.get("error") and get(r)]
    return ["", title, ""] + [f"- {r['model']} {r['file']}: {line(get(r))}" for r in rows] if rows else []


def device_line(dt: dict) -> str:
    d = dict(dt)
    span, run = d.pop("span", 0.0), d.pop("run_s", 0.0)
    h2d, d2h = d.pop("h2d", 0.0), d.pop("d2h", 0.0)
    top = ", ".join(f"{k} {v:.4f}" for k, v in list(d.items())[:4])
    return f"span {span:.4f}, run {run:.4f}; kernels {sum(d.values()):.4f} ({top}); h2d {h2d:.4f}, d2h {d2h:.4f}"


def card_name(device) -> str:
    if device != "cuda":
        return "no GPU (CPU twins)"
    try:
        from numba import cuda

        d = cuda.get_current_device()
        name = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
        return f"{name} (cc {d.compute_capability[0]}.{d.compute_capability[1]})"
    except Exception as e:  # noqa: BLE001
        return f"unknown ({type(e).__name__})"


def versions() -> dict:
    out = {}
    for mod in ("numpy", "numba", "cupy", "tokenizers", "tiktoken", "gigatoken"):
        try:
            m = __import__(mod)
        except Exception:  # noqa: BLE001
            continue
        out[mod] = getattr(m, "__version__", None) or _dist_version(mod)
    return out


def _dist_version(mod: str) -> str:
    """The installed distribution's version (gigatoken has no ``__version__``)."""
    from importlib import metadata

    try:
        return metadata.version(mod)
    except metadata.PackageNotFoundError:
        return "?"


def git_rev() -> str:
    """``$GPU_TOK_GIT`` where set (a lent machine's copy of the tree may carry a stale .git),
    else ``git rev-parse --short HEAD``."""
    import subprocess

    if os.environ.get("GPU_TOK_GIT"):
        return os.environ["GPU_TOK_GIT"]
    try:
        return subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "?"
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())
