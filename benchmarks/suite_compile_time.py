"""Where Numba's compile time goes in a test run (decision 0042); for one model's first
calls, ``compile_times.py``.

As a pytest plugin, it records every ``numba:compile`` event of each process (the xdist
workers, the simulator child: pass it through ``PYTEST_ADDOPTS`` so children load it too)
with its exclusive time (its callees' compiles subtracted) and writes
``$CT_OUT-<worker>-<pid>.json``::

    PYTHONPATH=benchmarks PYTEST_ADDOPTS="-p suite_compile_time" CT_OUT=/tmp/ct \\
        python -m pytest -q -n auto --dist loadfile

Run on a fresh clone (or with a fresh ``NUMBA_CACHE_DIR``) to see the cold compiles. Then
``python benchmarks/suite_compile_time.py /tmp/ct`` sums them: per process, per function (with
how many copies), per test file, and the time spent compiling a function and signature that
had been compiled before (mostly by the other worker: what a shared compile would save).
"""
from __future__ import annotations

import glob
import json
import os
import sys
import time
from collections import defaultdict

_stack: list = []
_rows: list = []


def _install() -> None:
    from numba.core import event as ev

    class _Listener(ev.Listener):
        def on_start(self, e):
            _stack.append([time.perf_counter(), 0.0, e.data])

        def on_end(self, e):
            t0, child, data = _stack.pop()
            dt = time.perf_counter() - t0
            if _stack:
                _stack[-1][1] += dt
            fn = getattr(data.get("dispatcher"), "py_func", None)
            name = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '?')}"
            _rows.append((name, str(data.get("args")), dt, dt - child, os.environ.get("CT_TEST", "")))

    ev.register("numba:compile", _Listener())


def pytest_configure(config):
    _install()


def pytest_runtest_setup(item):
    os.environ["CT_TEST"] = item.nodeid


def pytest_unconfigure(config):
    out = os.environ.get("CT_OUT", "/tmp/compile_time")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{out}-{worker}-{os.getpid()}.json", "w") as f:
        json.dump(_rows, f)


def report(prefix: str, top: int = 30) -> None:
    per = {os.path.basename(p): json.load(open(p)) for p in sorted(glob.glob(prefix + "-*.json"))}
    print("exclusive compile seconds per process:", {k: round(sum(r[3] for r in v), 1) for k, v in per.items()})
    by_fn = defaultdict(lambda: [0.0, 0])
    by_file = defaultdict(float)
    by_sig = defaultdict(list)
    for rows in per.values():
        for name, args, _dt, ex, test in rows:
            by_fn[name][0] += ex
            by_fn[name][1] += 1
            by_file[test.split("::")[0]] += ex
            by_sig[(name, args)].append(ex)
    dup = sum(sum(sorted(v)[:-1]) for v in by_sig.values())
    uniq = sum(max(v) for v in by_sig.values())
    print(f"unique {uniq:.1f} s, the same function and signature compiled again {dup:.1f} s")
    print("-- per function (seconds, copies)")
    for name, (s, n) in sorted(by_fn.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{s:8.1f} {n:3d}  {name}")
    print("-- per test file")
    for f, s in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{s:8.1f}  {f}")


if __name__ == "__main__":
    report(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30)
