"""Numba's on-disk cache and the kernels: a change in one kernel file makes the cached code
of functions in other kernel files stale too (``gpu_tok/kernels/_cache.py``)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

numba = pytest.importorskip("numba")

from _paths import REPO_ROOT  # noqa: E402

_RUN = textwrap.dedent("""
    import sys
    import gpu_tok.kernels  # installs the locator
    from gpu_tok.kernels import _cache
    if sys.argv[2] == "kernels":
        _cache._HERE = sys.argv[1]  # the test's directory stands for gpu_tok/kernels
    sys.path.insert(0, sys.argv[1])
    import caller
    print(caller.f(1))
""")


def _run(where: Path, as_kernels: bool) -> int:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", _RUN, str(where), "kernels" if as_kernels else "other"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return int(out.stdout.split()[-1])


def _two_files(where: Path, step: int):
    where.mkdir()
    (where / "callee.py").write_text(
        f"from numba import njit\n\n\n@njit(cache=True)\ndef g(x):\n    return x + {step}\n")
    (where / "caller.py").write_text(
        "from numba import njit\n\nfrom callee import g\n\n\n@njit(cache=True)\ndef f(x):\n    return g(x) * 10\n")


def test_a_changed_callee_in_another_file_is_not_served_from_the_cache(tmp_path):
    """A cached caller whose callee (another file) changed: with the locator (the files
    standing for gpu_tok/kernels), the next process compiles the new callee in; Numba alone
    (the same files elsewhere) serves the old machine code from its cache (measured with
    Numba 0.68.1: 20 where the source says 30)."""
    results = {}
    for as_kernels in (True, False):
        where = tmp_path / ("kernels" if as_kernels else "other")
        _two_files(where, 1)
        assert _run(where, as_kernels) == 20
        (where / "callee.py").write_text((where / "callee.py").read_text().replace("x + 1", "x + 2"))
        results[as_kernels] = _run(where, as_kernels)
    assert results[True] == 30, results
    assert results[False] in (20, 30), results  # 20: Numba's own stamp is its file's text only


def test_the_locator_serves_the_kernels_only():
    """First among Numba's locators; a kernel function's stamp carries the digest of every
    kernel source; a function elsewhere gets Numba's own locator."""
    import numba.core.caching as caching

    from gpu_tok.kernels import _cache
    from gpu_tok.kernels import engine_cpu as E

    assert getattr(caching.CacheImpl._locator_classes[0], "_gpu_tok_kernels", False)
    loc = caching.CompileResultCacheImpl(E._merge_ranked.py_func)._locator
    assert type(loc).__name__ == "KernelsLocator"
    assert loc.get_source_stamp()[1] == _cache.kernels_digest() == _cache.sources_digest()
    assert loc.get_cache_path() == type(loc._inner).from_function(E._merge_ranked.py_func,
                                                                  E.__file__).get_cache_path()

    def elsewhere(x):
        return x

    assert type(caching.CompileResultCacheImpl(elsewhere)._locator).__name__ != "KernelsLocator"
    assert _cache.install() == []  # once only


def test_the_digest_follows_any_kernel_file(tmp_path):
    """``sources_digest`` changes with any file's text (and name), not with its time stamp."""
    from gpu_tok.kernels import _cache

    src = Path(_cache.__file__).parent
    for p in src.glob("*.py"):
        (tmp_path / p.name).write_bytes(p.read_bytes())
    same = _cache.sources_digest(tmp_path)
    assert same == _cache.sources_digest(src)
    os.utime(tmp_path / "hash_table.py", (0, 0))
    assert _cache.sources_digest(tmp_path) == same
    with open(tmp_path / "bpe_cuda.py", "a") as f:
        f.write("# one more line\n")
    assert _cache.sources_digest(tmp_path) != same


def test_a_caching_module_it_cannot_serve_is_left_alone(monkeypatch):
    """A caching module whose locator base asks for a method this locator lacks (a future
    numba-cuda, say) keeps its own locators: nothing is installed there."""
    import abc
    import types

    from gpu_tok.kernels import _cache

    class Base(abc.ABC):
        @abc.abstractmethod
        def something_new(self):
            ...

    class Impl:
        _locator_classes = ["theirs"]

    fake = types.ModuleType("fake_caching")
    fake._CacheLocator, fake.CacheImpl = Base, Impl
    monkeypatch.setitem(__import__("sys").modules, "fake_caching", fake)
    assert _cache.install(("fake_caching",)) == [] and Impl._locator_classes == ["theirs"]
