"""Compile every CUDA kernel of the GPU engine to PTX without a GPU (a check for hosts with none).

The simulator (``NUMBA_ENABLE_CUDASIM=1``) runs the kernels' Python, so it cannot tell whether
``numba.cuda`` compiles them: a function it does not type, a NumPy call the CUDA target lacks,
fails only on a real card, in a lease of minutes. This runs the GPU engine on the CPU twins over
small inputs (byte-level, SentencePiece, the template, pieces encoded on the host, pieces cut on
the device: byte-level and SentencePiece), records each kernel's argument types as the engine launched it, and compiles the
CUDA kernel of the same name for those types with ``numba.cuda.compile_ptx`` (compute
capability ``--cc``, default 9.0: the H200). The engine passes the CUDA kernels the same
arguments (device arrays of the same dtypes, the same scalars), so these are the signatures a
card compiles.

Needs ``numba-cuda`` and NVVM/NVRTC, no driver or device: on the 2-core host (2026-12-06) a
venv with ``numba==0.68.0 numba-cuda==0.30.4 nvidia-cuda-nvrtc`` (the H200 machine's numba and
numba-cuda) and ``CUDA_HOME=/usr/local/cuda-13.0`` (its libnvvm)::

    CUDA_HOME=/usr/local/cuda-13.0 python benchmarks/ptx_check.py

Exit status 1 if any kernel fails to compile (each failure printed), 2 if none was recorded.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def record_signatures() -> dict:
    """kernel name -> set of argument-type tuples, from the engine on the twins."""
    import numpy as np
    from numba import typeof

    sys.path.insert(0, str(REPO))
    from gpu_tok import Tokenizer
    from gpu_tok import gpu_engine as G

    seen: dict = {}
    orig = G.TwinBackend.launch

    def launch(self, kernel, n, stream, *args):
        name = getattr(kernel, "__name__", None) or kernel.py_func.__name__
        seen.setdefault(name, set()).add(tuple(typeof(a) for a in args))
        return orig(self, kernel, n, stream, *args)

    G.TwinBackend.launch = launch
    models = Path(os.environ.get("GPU_TOK_MODELS", REPO.parent / "shared" / "models"))
    texts = ["", "a", "hello world, it's 2026!", "x" * 80, "\u4e2d\u6587 text " * 20, "tab\tnew\nline  ",
             "e\u0301 vs \u00e9", "q" * 150 + " tail", "<|endoftext|> hi <s> </s><mask>"]
    try:
        for name, cut in (("gpt2", False), ("gpt2", True), ("roberta-base", True), ("llama2", False),
                          ("mistral-v0.1", True)):
            path = models / name / "tokenizer.json"
            if not path.is_file():
                print(f"skipped {name}: {path} not found")
                continue
            os.environ["GPU_TOK_CUDA_DEVICE_CUT"] = "1" if cut else "0"
            t = Tokenizer.from_file(str(path))
            g = G.GpuTokenizer(t, G.backend("twin"))
            for flag in (False, True):
                g.encode_ids(texts, flag, None, True)
            g.engine.huge_bytes = 100  # pieces encoded on the host (k_place)
            g.encode_ids(texts, False, None, True)
            assert np.asarray(g.encode_ids(texts, False, None, True)[1]).shape == (len(texts) + 1,)
    finally:
        G.TwinBackend.launch = orig
        os.environ.pop("GPU_TOK_CUDA_DEVICE_CUT", None)
    return seen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cc", default="9.0", help="compute capability to compile for")
    args = ap.parse_args(argv)
    cc = tuple(int(x) for x in args.cc.split("."))
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    sigs = record_signatures()
    if not sigs:
        print("no kernel launches were recorded")
        return 2
    from numba import cuda
    import numba.cuda.dispatcher as nd

    class _Device:  # device functions are compiled for the current device's compute capability
        compute_capability = cc

    nd.get_current_device = lambda: _Device()
    from gpu_tok.kernels import twins

    K = twins.load("cuda")
    failed = 0
    for name in sorted(sigs):
        kern = getattr(K, name, None)
        if kern is None:
            print(f"{name}: no CUDA kernel of that name")
            failed += 1
            continue
        for sig in sorted(sigs[name], key=str):
            t0 = time.perf_counter()
            try:
                ptx, _ret = cuda.compile_ptx(kern.py_func, sig, cc=cc)
                print(f"{name}: ok ({len(ptx)} bytes of PTX, {time.perf_counter() - t0:.1f} s)")
            except Exception as e:  # noqa: BLE001 - reported, then the exit status
                failed += 1
                print(f"{name}{sig}: FAILED {type(e).__name__}: {str(e)[:2000]}")
    print(f"{sum(len(v) for v in sigs.values())} signatures of {len(sigs)} kernels, {failed} failed (cc {args.cc})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
