"""Where a cold start's Numba compile time goes: per compiled function, for one model's first
``encode_batch_ids`` and first ``encode_batch`` on ``device="cpu"``.

    python benchmarks/compile_times.py --models gpt2,llama2 [--top 25]

Each model runs in a fresh process with ``NUMBA_CACHE_DIR`` set to an empty temporary
folder, so nothing comes from Numba's on-disk cache (a fresh install's first call, or CI's
first test of a family). Printed per model: the two calls' seconds, then the functions by
compile time of their own (a function's time less the time of the compilations it set off
while it compiled: its callees compiled separately; callees inlined at Numba's level
(``inline="always"``) count in the caller). Needs the models only (``$GPU_TOK_MODELS``,
else ``../shared/models``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gpu_tok.bench import models_dir

CHILD = r'''
import collections, sys, time

sys.path.insert(0, sys.argv[3])
import suite_compile_time  # its numba:compile listener: each event's time less its callees'

suite_compile_time._install()
import gpu_tok

t = gpu_tok.Tokenizer.from_file(sys.argv[1])
texts = ["Hello world, caf\u00e9 e\u0301 \u65e5\u672c 123"] * 3
t0 = time.perf_counter()
t.encode_batch_ids(texts, device="cpu")
t1 = time.perf_counter()
t.encode_batch(texts, device="cpu")
t2 = time.perf_counter()
own = collections.defaultdict(float)
for name, _args, _dt, exclusive, _test in suite_compile_time._rows:
    own[name] += exclusive
print(f"encode_batch_ids {t1 - t0:.1f} s, then encode_batch {t2 - t1:.1f} s, compiled total {sum(own.values()):.1f} s")
for name, s in sorted(own.items(), key=lambda kv: -kv[1])[:int(sys.argv[2])]:
    print(f"  {s:7.2f}  {name}")
'''


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="gpt2", help="comma-separated folders of $GPU_TOK_MODELS [gpt2]")
    ap.add_argument("--top", type=int, default=25, help="functions listed per model [25]")
    args = ap.parse_args(argv)
    rc = 0
    for name in args.models.split(","):
        path = models_dir() / name / "tokenizer.json"
        if not path.is_file():
            print(f"{name}: no {path}")
            rc = 1
            continue
        with tempfile.TemporaryDirectory(prefix="numba_cold_") as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            print(f"== {name} (cold: NUMBA_CACHE_DIR empty)", flush=True)
            proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(args.top), str(Path(__file__).parent)],
                                  env=env)
            rc = rc or proc.returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
