"""Name Numba's compiled functions for Linux ``perf`` (profiling the CPU engine).

Numba's JIT code has no symbols, so ``perf report`` shows bare addresses. After the
kernels have run once in a process, ``write_perf_map()`` writes ``/tmp/perf-<pid>.map``
(the format ``perf`` reads for JIT code) with every function Numba's engine defines;
inlined helpers are counted in their caller. Example::

    # in the process to profile, after a first encode call:
    from benchmarks.perf_map import write_perf_map   # or copy this file next to the script
    write_perf_map()
    # then, from a shell, while it keeps encoding:
    perf record -F 2000 -p <pid> -- sleep 4 && perf report --no-children --sort symbol

(The machine this was written on has no hardware counters in its VM: ``perf record``
falls back to the ``cpu-clock`` event, which is enough for a time profile.)
"""

from __future__ import annotations

import os


def write_perf_map() -> int:
    """Write ``/tmp/perf-<pid>.map`` for the functions Numba has compiled so far; returns
    how many it names. Uses Numba internals (the CPU codegen's execution engine)."""
    from numba.core.registry import cpu_target

    engine = cpu_target.target_context.codegen()._engine
    addresses = {}
    for name in list(engine._defined_symbols):
        try:
            address = engine.get_function_address(name)
        except Exception:  # pragma: no cover - a symbol that is not a function
            continue
        if address:
            addresses[address] = name
    ordered = sorted(addresses)
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as f:
        for i, address in enumerate(ordered):
            nxt = ordered[i + 1] if i + 1 < len(ordered) else address + 4096
            size = nxt - address if nxt - address < 1 << 20 else 4096
            f.write(f"{address:x} {size:x} {addresses[address][:200]}\n")
    return len(ordered)
