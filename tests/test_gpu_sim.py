"""The GPU engine (``device="cuda"``, ``gpu_tok/gpu_engine.py``) against ``device="cpu"`` and the
oracles, without a GPU: the CUDA kernels under Numba's simulator, and their ``njit`` twins.

Three modes, chosen by the environment:

* **parent** (the normal run, no GPU needed): tests marked ``@on_device`` are not run in this
  process. The simulator must be switched on before ``numba.cuda`` is first imported, which
  the rest of the suite may already have done (``device="auto"`` probes for a GPU), and it
  must not leak into the other tests; so one child ``pytest`` of the selected device tests
  runs with ``NUMBA_ENABLE_CUDASIM=1`` (once per session, on first use) and each device test
  here reports its child's outcome (passed, failed with the child's message, skipped).
  The twin tests (kernels compiled with ``njit``, same source) and the CPU-only checks run
  here directly.
* **sim** (``NUMBA_ENABLE_CUDASIM=1`` in the environment, as in the child): the device tests
  run in-process on the simulator; the twin tests are left to the parent.
* **real** (``GPU_TOK_REAL_CUDA=1``, ``benchmarks/gpu_check.sh``): the device tests run on the
  real GPU, with every golden record instead of a sample.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import gpu_tok
from _oracle_io import is_long
from _samples import bench_texts, golden_records
from _paths import REPO_ROOT, model_path, models_dir
from _kept import kept_dict

REAL = os.environ.get("GPU_TOK_REAL_CUDA") == "1"
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and not REAL
PARENT = not (REAL or SIM)

BYTE_LEVEL = ["gpt2", "roberta-base", "llama3", "qwen3", "gpt-4o", "gpt-oss"]
SENTENCEPIECE = ["llama2", "mistral-v0.1", "phi-3-mini", "gemma3", "mistral-v0.3-metaspace"]
CLIP = ["clip-vit-base-patch32"]  # fast_clip's pieces on the byte-level device tables
FAMILIES = BYTE_LEVEL + SENTENCEPIECE + CLIP
TIKTOKEN = ["r50k_base", "p50k_base", "cl100k_base", "o200k_base", "o200k_harmony"]
SIM_SAMPLE = 40  # golden records per family and flag under the simulator (all of them on a real GPU)

# the simulator hashes with NumPy uint64 scalars, which report the wrap-around they are meant to do
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

_TOKS: dict = kept_dict()


def tok(name: str) -> gpu_tok.Tokenizer:
    if name not in _TOKS:
        _TOKS[name] = gpu_tok.Tokenizer.from_file(str(model_path(name)))
    return _TOKS[name]


def tiktoken_enc(name: str):
    from gpu_tok.tiktoken_encoding import named_definition

    path = models_dir() / "tiktoken" / named_definition(name)["rank_file"]
    if not path.is_file():
        pytest.skip(f"rank file not available: {path}")
    key = ("tiktoken", name)
    if key not in _TOKS:
        _TOKS[key] = gpu_tok.Tokenizer.from_tiktoken(name, path=path)
    return _TOKS[key]


def sample(records, flag: bool, k: int):
    """``k`` short records with this flag, spread over the file (all records when ``k`` is None)."""
    recs = [(r, x) for r, x in records if r["add_special_tokens"] == flag]
    if k is None:
        return recs
    short = [(r, x) for r, x in recs if len(x.encode("utf-8")) <= 400 and not is_long(r)]
    step = max(1, len(short) // k)
    return short[::step][:k]


def same(got, want, what=""):
    ids, rs = np.asarray(_host(got.ids)), np.asarray(_host(got.row_splits))
    assert ids.dtype == np.int32 and rs.dtype == np.int64, what
    assert np.array_equal(rs, want.row_splits), f"{what}: row_splits differ"
    if not np.array_equal(ids, want.ids):
        rows_g = [ids[rs[i]:rs[i + 1]].tolist() for i in range(len(rs) - 1)]
        bad = [i for i, r in enumerate(want.to_list()) if r != rows_g[i]]
        raise AssertionError(f"{what}: ids of {len(bad)} rows differ, first {bad[:5]}")


def shorter_on_sim(texts, chars: int = 1500):
    """``texts`` cut to their first ``chars`` characters under the simulator (which runs each
    device thread in Python: the bench documents whole took over a minute per test there),
    whole on a real GPU and in the twins."""
    return [x[:chars] for x in texts] if SIM else texts


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else a


# ------------------------------------------------------------ parent <-> child
_CHILD: dict = kept_dict()


def on_device(fn):
    """A test that needs ``numba.cuda`` (simulated or real): in the parent it reports the
    outcome of the same test in the simulator child."""
    if not PARENT:
        fn._on_device = True
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        name = os.environ["PYTEST_CURRENT_TEST"].split("::", 1)[1].rsplit(" (", 1)[0]
        res = _CHILD.get("results", {}).get(name)
        tail = _CHILD.get("tail", "")
        if res is None:
            pytest.fail(f"the simulator run did not report {name} (rc={_CHILD.get('rc')}):\n{tail}")
        outcome, msg = res
        if outcome == "skipped":
            pytest.skip(msg)
        if outcome != "passed":
            pytest.fail(f"under the simulator: {msg}", pytrace=False)

    wrapper._on_device = True
    return wrapper


@pytest.fixture(scope="module", autouse=True)
def _simulator_child(request, tmp_path_factory, full_run):
    """Parent mode: run every selected ``@on_device`` test of this module once, in a child
    pytest with ``NUMBA_ENABLE_CUDASIM=1``, and keep the outcomes for the wrappers."""
    if not PARENT or "results" in _CHILD:
        yield
        return
    items = [it for it in request.session.items
             if it.module is request.module and getattr(it.function, "_on_device", False)]
    if not items:
        _CHILD["results"] = {}
        yield
        return
    root = Path(request.config.rootpath)
    xml = tmp_path_factory.mktemp("gpu_sim") / "child.xml"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=os.pathsep.join(
        [str(REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    env.pop("GPU_TOK_REAL_CUDA", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
           "-o", "junit_family=xunit1", *[it.nodeid for it in items]]
    if full_run:
        cmd.append("--full")
    # the --full sweep simulates every short golden record: about 5 minutes per family
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                          timeout=(6 * 3600 if full_run else 1800))
    _CHILD["rc"] = proc.returncode
    _CHILD["tail"] = (proc.stdout + proc.stderr)[-6000:]
    results = {}
    if xml.is_file():
        for case in ET.parse(xml).getroot().iter("testcase"):
            outcome, msg = "passed", ""
            for tag in ("failure", "error", "skipped"):
                node = case.find(tag)
                if node is not None:
                    outcome = tag
                    msg = (node.get("message") or "") + "\n" + (node.text or "")
                    break
            if outcome == "skipped":
                msg = (case.find("skipped").get("message") or "").removeprefix("Skipped: ")
            results[case.get("name")] = (outcome, msg.strip()[-4000:])
    _CHILD["results"] = results
    yield


# ------------------------------------------------------------ device: families
@on_device
@pytest.mark.parametrize("family", FAMILIES)
def test_device_equals_cpu_and_oracles(family):
    """A sample of golden records (all of them on a real GPU), both flags, in one batch each:
    ``device="cuda"`` ids equal ``device="cpu"`` and the golden ids."""
    t = tok(family)
    records = golden_records(family)
    k = None if REAL else SIM_SAMPLE
    for flag in (False, True):
        recs = sample(records, flag, k)
        texts = [x for _r, x in recs]
        got = t.encode_batch_ids(texts, add_special_tokens=flag, device="cuda", return_numpy=True)
        want = t.encode_batch_ids(texts, add_special_tokens=flag, device="cpu")
        same(got, want, f"{family} flag={flag}")
        rows = got.to_list()
        for (rec, _x), row in zip(recs, rows):
            if not is_long(rec):
                assert row == rec["ids"], f"{family} record #{rec['i']} differs from the golden ids"
        assert len(recs) >= (1 if REAL else 20)


@on_device
@pytest.mark.parametrize("name", TIKTOKEN)
def test_device_tiktoken(name):
    enc = tiktoken_enc(name)
    specials = sorted(enc.special_tokens_set)[:2]
    texts = ["", "a", "Hello world", "x's 'S 'ſ \r\n\n end  ", "  lots   of   space\t\t\n", "日本語 中文 한국어 😀🤖",
             "1234567 89 3.14159", "aaaa" * 40, " ".join(specials) + " tail"]
    texts += [x[:300] for x in bench_texts(3000)[:6]]
    rows = None
    for allowed in ("all", frozenset()):
        got = enc.encode_batch_ids(texts, allowed_special=allowed, disallowed_special=(), device="cuda",
                                   return_numpy=True)
        want = enc.encode_batch_ids(texts, allowed_special=allowed, disallowed_special=(), device="cpu")
        same(got, want, f"{name} allowed={allowed}")
        rows = got.to_list()
    try:
        import tiktoken
    except ImportError:
        return
    from gpu_tok.tiktoken_encoding import load_tiktoken_bpe, named_definition

    d = named_definition(name)
    ref = tiktoken.Encoding(name, pat_str=d["pat_str"], mergeable_ranks=load_tiktoken_bpe(
        models_dir() / "tiktoken" / d["rank_file"]), special_tokens=d["special_tokens"])
    assert rows == ref.encode_ordinary_batch(texts)


@on_device
@pytest.mark.parametrize("family", ["gpt2", "llama3", "gpt-oss", "llama2", "gemma3", "mistral-v0.3-metaspace"])
def test_device_edge_cases(family):
    """Empty texts, one-byte pieces, pieces longer than the short limit (the heap path),
    added tokens, characters of every plane, the same pieces repeated across the batch."""
    t = tok(family)
    added = [a.content for a in t.get_added_tokens_decoder().values()][:3]
    texts = ["", "a", " ", "\n", "", "ab", "a b c d e f", "x" * 65, "y" * 300, "z" * 64,
             "supercalifragilisticexpialidocious" * 5, "\u4e2d" * 40, "\U0001F600" * 20,
             "A\u00e9\u0416\u05d0\u0627\u0916\u4e2d\uac00\U0001F916\U00020000\U000E0100\uFFFD end",
             "tab\tnew\nline\r\nspace  ", " leading", "trailing ", "   ", "\u2581 meta\u2581space",
             "".join(added) + " mid " + " ".join(added), "the the the the the", "the the the the the",
             "0123456789" * 10]
    texts += texts[::-1]
    for flag in (False, True):
        got = t.encode_batch_ids(texts, add_special_tokens=flag, device="cuda", return_numpy=True)
        want = t.encode_batch_ids(texts, add_special_tokens=flag, device="cpu")
        same(got, want, f"{family} flag={flag}")
    empty = t.encode_batch_ids([], device="cuda", return_numpy=True)
    assert empty.ids.shape == (0,) and np.asarray(empty.row_splits).tolist() == [0]
    only_empty = t.encode_batch_ids(["", ""], add_special_tokens=False, device="cuda", return_numpy=True)
    assert np.asarray(only_empty.row_splits).tolist() == [0, 0, 0]


@on_device
@pytest.mark.parametrize("family", ["gpt2", "llama3", "qwen3", "gpt-oss"])
def test_device_cut_on_the_device(family, monkeypatch):
    """``GPU_TOK_CUDA_DEVICE_CUT=1``: the pieces cut by ``pretok_cuda``'s kernels on the
    device (the simulator in CI), in batches of a few hundred bytes: the ids of
    ``device="cpu"``, with added tokens, NFC's skipped documents (qwen3), empty texts and
    segments over several chunks."""
    from gpu_tok import gpu_engine as G

    monkeypatch.setenv("GPU_TOK_CUDA_DEVICE_CUT", "1")
    t = tok(family)
    added = [a.content for a in t.get_added_tokens_decoder().values()][:3]
    texts = ["", "a", " ", "ab", "don't 'S 'll X'Re", "x" * 70, "\u4e2d" * 30, "\U0001F600 \U0001F600",
             "tab\tnew\nline\r\nspace  ", " " * 40 + "end", "7" * 20, "e\u0301 vs \u00e9",
             "".join(added) + " mid " + " ".join(added), "The cat sat on the mat. " * 30 + "!!" * 200]
    texts += [" ".join(bench_texts(2000)[0].split()[:60])]
    g = G.GpuTokenizer(t, G.backend("cuda"))
    monkeypatch.setitem(t.__dict__, "_gpu_engines", {"cuda": g})
    g.engine.batch_bytes = 600
    for flag in (False, True):
        got = t.encode_batch_ids(texts, add_special_tokens=flag, device="cuda", return_numpy=True)
        same(got, t.encode_batch_ids(texts, add_special_tokens=flag, device="cpu"), f"{family} flag={flag}")
    assert g.engine.stats["device_cut"] >= 4 and g.engine.stats["device_cut_refused"] == 0


@on_device
@pytest.mark.parametrize("family", ["llama2", "mistral-v0.1", "gemma3"])
def test_sentencepiece_device_cut_on_the_device(family, monkeypatch):
    """``GPU_TOK_CUDA_DEVICE_CUT=1`` on a SentencePiece file: the normalized text written and
    cut by ``sp_cuda``'s kernels on the device (the simulator in CI), in batches of a few
    hundred bytes: the ids of ``device="cpu"``, with spaces in runs, a "▁" in the text,
    empty texts and gaps over several chunks; the added tokens are fixed pieces where the
    raw pass finds them (mistral-v0.1, gemma3), and send their batch to the host step where
    the normalized pass would (llama2)."""
    from gpu_tok import gpu_engine as G

    monkeypatch.setenv("GPU_TOK_CUDA_DEVICE_CUT", "1")
    t = tok(family)
    added = [a.content for a in t.get_added_tokens_decoder().values()][:3]
    texts = ["", "a", " ", "ab", " lead", "two  spaces   three", "x" * 300, "\u4e2d" * 30, "\U0001F600 \U0001F600",
             "tab\tnew\nline\r\nspace  ", " " * 40 + "end", "\u2581\u2581x \u2581 y\u2581", "e\u0301 vs \u00e9",
             "The cat sat on the mat. " * 12, " ".join(bench_texts(2000)[0].split()[:60])]
    g = G.GpuTokenizer(t, G.backend("cuda"))
    monkeypatch.setitem(t.__dict__, "_gpu_engines", {"cuda": g})
    g.engine.batch_bytes = 600
    for flag in (False, True):
        got = t.encode_batch_ids(texts, add_special_tokens=flag, device="cuda", return_numpy=True)
        same(got, t.encode_batch_ids(texts, add_special_tokens=flag, device="cpu"), f"{family} flag={flag}")
    assert g.engine.stats["device_cut"] >= 4 and g.engine.stats["device_cut_refused"] == 0
    mixed = ["one " + " two ".join(added) + " three", "plain text", "".join(added) + "x"]
    got = t.encode_batch_ids(mixed, device="cuda", return_numpy=True)
    same(got, t.encode_batch_ids(mixed, device="cpu"), f"{family} added tokens")
    assert g.engine.stats["device_cut_refused"] == (1 if family == "llama2" else 0)


@on_device
def test_device_many_batches_and_collisions():
    """Batches of a few hundred bytes (both streams and buffer sets in turn), and a dedupe key
    narrowed to two bits (every piece collides with many others: each is confirmed by its
    bytes, so the ids do not change)."""
    from gpu_tok import gpu_engine as G

    words = " ".join(bench_texts(3000)[0].split()[:400]).split(" ")
    texts = [" ".join(words[i:i + 9]) for i in range(0, 360, 9)] + ["the cat sat on the mat", "", "the cat"] * 3
    for family in ("gpt2", "llama2"):
        t = tok(family)
        want = t.encode_batch_ids(texts, device="cpu")
        g = G._engine_for(t, "cuda", lambda be: G.GpuTokenizer(t, be))
        old = g.engine.batch_bytes
        try:
            g.engine.batch_bytes = 300
            g.engine.batch_log.clear()
            same(t.encode_batch_ids(texts, device="cuda", return_numpy=True), want, f"{family} small batches")
            assert len(g.engine.batch_log) > 5
            assert [a for a, _b in g.engine.batch_log] == sorted(a for a, _b in g.engine.batch_log)
        finally:
            g.engine.batch_bytes = old
        g.engine.key_mask = np.uint64(3)
        try:
            same(t.encode_batch_ids(texts, device="cuda", return_numpy=True), want, f"{family} collisions")
        finally:
            g.engine.key_mask = np.uint64(0xFFFFFFFFFFFFFFFF)


@on_device
@pytest.mark.parametrize("family", ["llama3", "gemma3"])
def test_device_huge_pieces_on_the_host(family):
    """Pieces over ``huge_bytes`` are encoded on the host and their ids copied into the
    device's scratch; shorter long ones stay on the device's heap."""
    from gpu_tok import gpu_engine as G

    t = tok(family)
    texts = ["q" * 150 + " tail", "short one", "\u4e2d" * 60, "z" * 90, "q" * 150 + " tail", "", "w " * 80]
    want = t.encode_batch_ids(texts, device="cpu")
    g = G._engine_for(t, "cuda", lambda be: G.GpuTokenizer(t, be))
    on_host = {}
    for huge in (100, 4):  # 4: most pieces, their ids placed by one k_place
        g.engine.huge_bytes = huge
        g.engine.stats["host_pieces"] = 0
        try:
            same(t.encode_batch_ids(texts, device="cuda", return_numpy=True), want, family)
        finally:
            g.engine.huge_bytes = G._HUGE_BYTES
        on_host[huge] = g.engine.stats["host_pieces"]
    assert on_host[4] > on_host[100] >= 2, on_host


_MEDIUM_TEXTS = ["q" * 150 + " tail", "short one", "\u4e2d" * 60, "z" * 90, "q" * 150 + " tail", "", "w " * 80,
                 "x" * 300, "y" * 64, "ab" * 40 + " " + "ab" * 40, "\u4e2d" * 100, "k" * 65 + " " + "k" * 256]


def _check_medium(device, family, spy=None):
    """``GpuEngine.medium_bytes``: the distinct pieces of 65 to ``medium_bytes`` bytes rescanned
    by ``k_medium``, the longer ones by ``k_long``'s heap, on ``device``: the same ids as
    ``device="cpu"`` for each setting (``SHORT``: none, the default). ``spy(medium)``: called
    before each run (the twin test counts the buckets)."""
    from gpu_tok import gpu_engine as G

    t = tok(family)
    want = t.encode_batch_ids(_MEDIUM_TEXTS, device="cpu")
    g = G._engine_for(t, device, lambda be: G.GpuTokenizer(t, be))
    K = g.engine.K
    assert g.engine.medium_bytes == K.SHORT
    try:
        for medium in (K.SHORT, 128, K.MEDIUM):
            g.engine.medium_bytes = medium
            if spy is not None:
                spy(medium)
            ids, rs = g.encode_ids(_MEDIUM_TEXTS, True, None, True)
            assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids), (family, medium)
    finally:
        g.engine.medium_bytes = K.SHORT


@on_device
@pytest.mark.parametrize("family", ["gpt2", "llama2"])
def test_device_medium_bucket(family):
    _check_medium("cuda", family)


@on_device
def test_device_oom_halves_the_batch(monkeypatch):
    _check_oom_halving("cuda", monkeypatch)


@on_device
def test_device_profile_split():
    _check_profile("cuda")


@on_device
def test_device_event_times():
    """The engine's ``events`` switch (``benchmarks/gpu_bench.py``'s device times): same ids,
    and each kernel, the scan and the copies both ways timed by CUDA events by name in
    ``stats["gpu"]``, over several batches, with the device's span at least the longest;
    none left pending; off, nothing recorded (on the simulator the times are all zero)."""
    import warnings

    from gpu_tok import gpu_engine as G

    texts = [" ".join(bench_texts(3000)[0].split()[:30])] * 4 + ["", "x" * 80, "the cat"]
    t = tok("gpt2")
    want = t.encode_batch_ids(texts, device="cpu")
    g = G._engine_for(t, "cuda", lambda be: G.GpuTokenizer(t, be))
    old = g.engine.batch_bytes
    g.engine.stats = G._new_stats()
    g.engine.events = True
    g.engine.batch_bytes = 400
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the simulator's "timings are bogus"
            ids, rs = g.encode_ids(texts, False, None, True)
    finally:
        g.engine.events = False
        g.engine.batch_bytes = old
    assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids)
    st = g.engine.stats
    assert st["batches"] >= 2
    gt = st["gpu"]
    assert {"k_insert", "k_resolve", "k_fill", "k_short", "k_counts", "k_scatter", "k_rows", "scan", "h2d",
            "d2h", "span"} <= set(gt), sorted(gt)
    assert all(v >= 0 for v in gt.values())
    assert gt["span"] >= max(v for k, v in gt.items() if k != "span") - 1e-9
    assert g.engine._ev == []
    g.engine.stats = G._new_stats()
    g.encode_ids(texts, False, None, True)
    assert "gpu" not in g.engine.stats and g.engine._ev == []


@on_device
def test_device_text_packed_in_pinned_memory(monkeypatch):
    """``GpuTokenizer`` packs the texts into the engine's pinned buffer (``text_buffer``), and
    the batches' text goes to the device from there, not through a staging buffer; a text
    larger than the buffer's limit is packed into ordinary memory and staged as before. The
    ids come back through a pinned buffer, then into the result (in parallel on two threads),
    or straight into it with ``pinned_d2h`` off."""
    from gpu_tok import gpu_engine as G
    from gpu_tok.kernels import gpu_host

    t = tok("gpt2")
    texts = [" ".join(bench_texts(3000)[0].split()[:30])] * 4 + ["", "x" * 80, "the cat"]
    want = t.encode_batch_ids(texts, device="cpu")
    g = G._engine_for(t, "cuda", lambda be: G.GpuTokenizer(t, be))
    staged = []
    real = G.GpuEngine._staging

    def staging(self, slot, name, n, dtype):
        staged.append(name)
        return real(self, slot, name, n, dtype)

    monkeypatch.setattr(G.GpuEngine, "_staging", staging)
    ids, rs = g.encode_ids(texts, False, None, True)
    assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids)
    buf = g.engine.text_buffer()._buf
    assert buf is not None and buf.shape[0] >= sum(len(x.encode()) for x in texts)
    assert "data" not in staged and "starts" in staged
    # the ids come back through a pinned buffer ("ids_out"), then into the result; with
    # pinned_d2h off (GPU_TOK_CUDA_PINNED_D2H=0) straight into it: the same ids either way,
    # on one and on two threads (the copy in parallel)
    assert "ids_out" in staged
    copies = []
    real_copy = gpu_host.copy_parallel

    def copy_parallel(src, dst, nblocks):
        copies.append(int(nblocks))
        return real_copy(src, dst, nblocks)

    monkeypatch.setattr(gpu_host, "copy_parallel", copy_parallel)
    real_plan = G.plan_threads
    monkeypatch.setattr(G, "plan_threads", lambda n, b: (2, True) if n == 2 else real_plan(n, b))  # small: parallel
    for threads in (1, 2):
        staged.clear()
        ids, rs = g.encode_ids(texts * 3, False, threads, True)
        assert "ids_out" in staged and np.array_equal(np.asarray(ids), np.tile(want.ids, 3))
    assert copies == [8] or not G._threads_reentrant(), copies  # two threads: 4 parts each
    monkeypatch.setattr(G, "plan_threads", real_plan)
    monkeypatch.setattr(g.engine, "pinned_d2h", False)
    staged.clear()
    ids, rs = g.encode_ids(texts, False, None, True)
    assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids)
    assert "ids_out" not in staged
    monkeypatch.setattr(g.engine, "pinned_d2h", True)
    staged.clear()
    monkeypatch.setattr(g.engine.text_buffer(), "limit", 16)
    ids, rs = g.encode_ids(texts, False, None, True)
    assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids)
    assert "data" in staged
    # a tiktoken encoding's texts too (GpuTiktoken's engine keeps its own buffer)
    enc = tiktoken_enc("cl100k_base")
    want = enc.encode_batch_ids(texts, device="cpu")
    staged.clear()
    got = enc.encode_batch_ids(texts, device="cuda", return_numpy=True)
    assert np.array_equal(got.row_splits, want.row_splits) and np.array_equal(got.ids, want.ids)
    ge = G._engine_for(enc, "cuda", lambda be: G.GpuTiktoken(enc, be)).engine
    assert ge is not g.engine and ge.text_buffer()._buf is not None
    assert "data" not in staged and "starts" in staged


@on_device
def test_device_kernels_equal_twins():
    """The same kernels, compiled for the device and by njit, on the same inputs: BPE counts
    and ids of every distinct piece, the scan, the whole pipeline's arrays."""
    from gpu_tok import gpu_engine as G

    t = tok("llama3")
    texts = ["Hello world, hello WORLD!", "x" * 100, "", "日本語 😀 ok", "aaaa bbbb aaaa"]
    results = {}
    for dev in ("cuda", "twin"):
        g = G._engine_for(t, dev, lambda be: G.GpuTokenizer(t, be))
        results[dev] = g.encode_ids(texts, True, None, True)
    for a, b in zip(results["cuda"], results["twin"]):
        assert np.array_equal(a, b)
    # the scan: chunks of SCAN_CHUNK, recursively
    cu, tw = G.backend("cuda"), G.backend("twin")
    for n in (0, 1, 63, 64, 65, 4097):
        x = np.random.default_rng(n).integers(0, 5, n).astype(np.int32)
        outs = []
        for be in (cu, tw):
            out = be.empty(n + 1, np.int64)
            be.scan(be.upload(x), n, out, None)
            be.sync(None)
            outs.append(be.to_host(out))
        want = np.concatenate([[0], np.cumsum(x)])
        assert np.array_equal(outs[0], want) and np.array_equal(outs[1], want), n


@on_device
def test_device_return_types():
    """NumPy with ``return_numpy``; without it CuPy on a real device with CuPy, NumPy under
    the simulator (CuPy needs a real device)."""
    t = tok("gpt2")
    got = t.encode_batch_ids(["a b", "c"], device="cuda")
    if SIM:
        assert isinstance(got.ids, np.ndarray)
    else:
        try:
            import cupy
        except ImportError:
            assert isinstance(got.ids, np.ndarray)
        else:
            assert isinstance(got.ids, cupy.ndarray) and isinstance(got.row_splits, cupy.ndarray)
            cupy.from_dlpack(got.ids)  # DLPack-convertible
    assert isinstance(t.encode_batch_ids(["a b"], device="cuda", return_numpy=True).ids, np.ndarray)


@on_device
def test_device_truncation_and_padding():
    """``enable_truncation`` / ``enable_padding`` on the GPU engine's ids give the
    reference's ids (decision 0029); without ``return_numpy`` the arrays stay CuPy's on a
    real device with CuPy."""
    tokenizers = pytest.importorskip("tokenizers")
    path = model_path("llama3")
    t, ref = gpu_tok.Tokenizer.from_file(str(path)), tokenizers.Tokenizer.from_file(str(path))
    texts = ["hello world " * 30, "a", "", "The quick brown fox. " * 3]
    for o in (t, ref):
        o.enable_truncation(12, stride=2, direction="left")
        o.enable_padding(pad_id=7, pad_to_multiple_of=8, direction="left")
    want = [e.ids for e in ref.encode_batch(texts)]
    assert t.encode_batch_ids(texts, device="cuda", return_numpy=True).to_list() == want
    got = t.encode_batch_ids(texts, device="cuda")
    if hasattr(got.ids, "get"):
        got = gpu_tok.TokenBatch(got.ids.get(), got.row_splits.get())
    assert got.to_list() == want


@on_device
def test_device_auto_on_this_machine():
    """Under the simulator "auto" is the CPU engine (the simulator is only ever used when asked
    for explicitly); on a real GPU it is the GPU engine."""
    from gpu_tok import gpu_engine as G

    t = tok("gpt2")
    got = t.encode_batch_ids(["a b c"], device="auto", return_numpy=True)
    assert got.to_list() == t.encode_batch_ids(["a b c"], device="cpu").to_list()
    assert (G.backend("auto") is None) == (not REAL)


@on_device
@pytest.mark.full
@pytest.mark.parametrize("family", FAMILIES)
def test_device_every_golden_record(family):
    """Every short golden record of the family under the simulator (about 5 minutes per family
    on 2 cores: run with --full)."""
    t = tok(family)
    records = golden_records(family)
    for flag in (False, True):
        recs = [(r, x) for r, x in sample(records, flag, None) if len(x) < 5000]
        texts = [x for _r, x in recs]
        got = t.encode_batch_ids(texts, add_special_tokens=flag, device="cuda", return_numpy=True)
        same(got, t.encode_batch_ids(texts, add_special_tokens=flag, device="cpu"), f"{family} flag={flag}")


# ------------------------------------------------------- twins (this process)
twin_only = pytest.mark.skipif(not PARENT, reason="the twins run in the parent process")


@twin_only
@pytest.mark.parametrize("family", FAMILIES)
def test_twin_every_golden_record(family):
    """The pipeline on the njit twins (the CUDA kernels' own source), every golden record,
    the million-character lines included: equal to ``device="cpu"`` and the golden ids."""
    from gpu_tok import gpu_engine as G

    t = tok(family)
    records = golden_records(family)
    for flag in (False, True):
        recs = sample(records, flag, None)
        texts = [x for _r, x in recs]
        ids, rs = G.tokenizer_batch_ids(t, texts, flag, "twin", None, True)
        want = t.encode_batch_ids(texts, add_special_tokens=flag, device="cpu")
        assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids), (family, flag)
        for k, (rec, _x) in enumerate(recs):
            if not is_long(rec):
                assert ids[rs[k]:rs[k + 1]].tolist() == rec["ids"], (family, rec["i"])
        assert len(recs) > 100


@twin_only
@pytest.mark.parametrize("family", BYTE_LEVEL)
def test_twin_device_cut_every_golden_record(family, monkeypatch):
    """``GPU_TOK_CUDA_DEVICE_CUT=1`` on the twins over every golden record of the byte-level
    families (the million-character lines go back to the host step: their pieces are over
    ``huge_bytes``): the golden ids and ``device="cpu"``'s."""
    from gpu_tok import gpu_engine as G

    monkeypatch.setenv("GPU_TOK_CUDA_DEVICE_CUT", "1")
    t = tok(family)
    g = G.GpuTokenizer(t, G.backend("twin"))
    monkeypatch.setitem(t.__dict__, "_gpu_engines", {"twin": g})
    records = golden_records(family)
    for flag in (False, True):
        recs = sample(records, flag, None)
        for long in (False, True):  # apart: a batch with a million-character line is the host step's
            part = [(r, x) for r, x in recs if is_long(r) == long]
            texts = [x for _r, x in part]
            before = dict(g.engine.stats)
            ids, rs = G.tokenizer_batch_ids(t, texts, flag, "twin", None, True)
            want = t.encode_batch_ids(texts, add_special_tokens=flag, device="cpu")
            assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids), (family, flag, long)
            for k, (rec, _x) in enumerate(part):
                if not long:
                    assert ids[rs[k]:rs[k + 1]].tolist() == rec["ids"], (family, rec["i"])
            cut = g.engine.stats["device_cut"] - before["device_cut"]
            back = g.engine.stats["device_cut_refused"] - before["device_cut_refused"]
            assert (cut, back) == ((0, 1) if long else (1, 0)) or not texts, (family, flag, long, cut, back)


@twin_only
@pytest.mark.parametrize("name", TIKTOKEN)
def test_twin_tiktoken(name):
    enc = tiktoken_enc(name)
    texts = bench_texts(60_000) + ["", "a\n  ", "x's 'S 'ſ \r\n\n end  ", "<|endoftext|> hi", "a" * 5000]
    for allowed in (frozenset(), "all"):
        from gpu_tok import gpu_engine as G

        ids, rs = G.tiktoken_batch_ids(enc, texts, *enc._resolve_special(allowed, ()), "twin")
        want = enc.encode_batch_ids(texts, allowed_special=allowed, disallowed_special=(), device="cpu")
        assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids), (name, allowed)


@twin_only
@pytest.mark.parametrize("family", ["gpt2", "llama2", "clip-vit-base-patch32", "cl100k_base"])
def test_twin_packed_texts(family):
    """Documents given as UTF-8 in memory (``PackedTexts``, as the corpus job gives them) on
    the GPU engine's front ends: the ids of the list of their ``str``s."""
    from gpu_tok import gpu_engine as G
    from test_packed_texts import EDGE, packed

    texts = EDGE + bench_texts(20_000)
    p = packed(texts)
    if family in TIKTOKEN:
        enc = tiktoken_enc(family)
        got = G.tiktoken_batch_ids(enc, p, *enc._resolve_special("all", ()), "twin", None, True)
        want = enc.encode_batch_ids(texts, allowed_special="all", disallowed_special=(), device="cpu")
    else:
        got = G.tokenizer_batch_ids(tok(family), p, True, "twin", None, True)
        want = tok(family).encode_batch_ids(texts, device="cpu")
    assert np.array_equal(got[1], want.row_splits) and np.array_equal(got[0], want.ids)


@twin_only
@pytest.mark.parametrize("family", ["gpt2", "qwen3", "gpt-oss", "llama2", "gemma3", "mistral-v0.3-metaspace"])
def test_twin_bench_excerpt(family):
    from gpu_tok import gpu_engine as G

    t = tok(family)
    texts = bench_texts(200_000)
    ids, rs = G.tokenizer_batch_ids(t, texts, True, "twin", None, True)
    want = t.encode_batch_ids(texts, device="cpu")
    assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids)


@twin_only
@pytest.mark.parametrize("family", ["gpt2", "llama2"])
def test_twin_medium_bucket(family, monkeypatch):
    """``_check_medium`` on the twins, with each batch's buckets read where ``k_long`` starts:
    the medium bucket holds the distinct pieces of 65 to ``medium`` bytes, the long one the
    rest, and ``k_medium`` runs only when ``medium`` is above ``SHORT``."""
    from gpu_tok import gpu_engine as G

    K = G.backend("twin").K
    sizes, launched = [], []
    real_long, real_medium = K.k_long, K.k_medium

    def long_spy(n_items, work, bounds, *args):
        sizes.append((int(bounds[K.MEDIUM_BUCKET + 1] - bounds[K.MEDIUM_BUCKET]),
                      int(bounds[K.LONG_BUCKET + 1] - bounds[K.LONG_BUCKET])))
        return real_long(n_items, work, bounds, *args)

    def medium_spy(*args):
        launched.append(True)
        return real_medium(*args)

    monkeypatch.setattr(K, "k_long", long_spy)
    monkeypatch.setattr(K, "k_medium", medium_spy)
    runs = []
    _check_medium("twin", family, lambda medium: runs.append((medium, len(sizes), len(launched))))
    runs.append((None, len(sizes), len(launched)))
    got = {}
    for (medium, a, la), (_m, b, lb) in zip(runs, runs[1:]):
        got[medium] = (tuple(map(sum, zip(*sizes[a:b]))), lb - la)
    (m64, l64), n64 = got[64]
    (m128, l128), n128 = got[128]
    (m256, l256), n256 = got[256]
    assert m64 == 0 and n64 == 0 and l64 >= 6, got  # all long pieces on the heap, no k_medium
    assert 0 < m128 < m256 and l256 < l128 < l64 and m128 + l128 == m256 + l256 == l64, got
    assert n128 > 0 and n256 > 0, got


@twin_only
@pytest.mark.parametrize("family,added", [("gpt2", "<|endoftext|>"), ("llama2", "</s>"),
                                          ("clip-vit-base-patch32", "<|endoftext|>")])
def test_twin_special_filled_on_the_device(monkeypatch, family, added):
    """A byte-level, SentencePiece or CLIP batch with no added token, no document left to the
    reference path (CLIP leaves those out of its pieces) and no piece encoded on the host has
    every ``special`` -1: ``HostPieces.model_only``, and the engine sets it on the device
    instead of copying it; a batch with an added token copies it. Both give ``device="cpu"``'s
    ids."""
    from gpu_tok import gpu_engine as G

    t = tok(family)
    g = G._engine_for(t, "twin", lambda be: G.GpuTokenizer(t, be))
    seen = []
    real = G.GpuEngine._launch

    def spy(self, hp, d0, d1, slot):
        seen.append(hp.model_only)
        return real(self, hp, d0, d1, slot)

    monkeypatch.setattr(G.GpuEngine, "_launch", spy)
    plain = ["the cat sat on the mat", "", "x" * 40, "e\u0301 text"]  # (NFC is kept: qwen3's skip, not gpt2's)
    for texts, want_flag in ((plain, True), (plain + [f"a {added} b"], False)):
        seen.clear()
        want = t.encode_batch_ids(texts, device="cpu")
        ids, rs = g.encode_ids(texts, True, None, True)
        assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids)
        assert seen == [want_flag], seen


@twin_only
@pytest.mark.parametrize("family", ["roberta-base", "qwen3"])
def test_twin_host_result_in_place_over_batches(family, monkeypatch):
    """Host-bound ids go from each batch straight to their place in one array
    (``gpu_engine.HostResult``), row splits offset by the ids before them: over many
    batches, with the template's ids around each row (roberta-base), documents NFC changes
    left to the CPU engine (qwen3), empty documents, and an array that starts too small to
    hold them (grown, its ids kept; shrunk to its ids at the end), the same ids and row splits
    as ``device="cpu"``; the room ``_host_result`` gives a call holds all its ids."""
    from gpu_tok import gpu_engine as G

    t = tok(family)
    texts = [f"caf\u00e9 {i} cafe\u0301 " * (i % 4) + "the cat sat " * (i % 5) for i in range(30)] + ["", " "]
    want = t.encode_batch_ids(texts, device="cpu")
    g = G._engine_for(t, "twin", lambda be: G.GpuTokenizer(t, be))
    made = []
    real = G.HostResult

    def small(n_docs, cap, threads=None):
        made.append(cap)
        return real(n_docs, 3, threads)

    monkeypatch.setattr(G, "HostResult", small)
    old = g.engine.batch_bytes
    g.engine.batch_bytes = 64
    g.engine.batch_log.clear()
    try:
        ids, rs = g.encode_ids(texts, True, None, True)
    finally:
        g.engine.batch_bytes = old
    assert len(g.engine.batch_log) > 5 and made
    assert made[0] >= want.ids.shape[0]  # (_host_result's room: every id of the call, no growth)
    import unicodedata

    assert sum(unicodedata.normalize("NFC", x) != x for x in texts) > 10
    assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids)
    h = real(2, 2)
    h.ids_at(2)[:] = [7, 8]
    h.t = 2
    h.ids_at(5)[:] = 9
    h.t = 7
    h.ids_at(0)
    out = h.done()[0]
    assert out.tolist() == [7, 8, 9, 9, 9, 9, 9] and out.flags.owndata and out.shape == (7,)
    big = real(1, 1 << 22)  # a block the allocator maps: grown (a fresh array, the ids copied), then shrunk
    big.ids_at(1 << 22)[:] = np.arange(1 << 22, dtype=np.int32)
    big.t = 1 << 22
    big.ids_at(1 << 21)[:] = -1
    big.t += 1 << 21
    ids = big.done()[0]
    assert ids.shape == (3 << 21,) and np.array_equal(ids[:1 << 22], np.arange(1 << 22)) and (ids[1 << 22:] == -1).all()


def _check_overlapped(device, family, monkeypatch, full):
    """``GpuEngine.overlap`` (``GPU_TOK_CUDA_OVERLAP=1``): the host step of the next batches on
    a worker thread, three slots; over many batches, with the template's ids, empty and
    NFC-changed documents, the same ids as ``device="cpu"``, batches collected once each in
    order; an error on the worker is raised to the caller (the worker ends); an out-of-memory
    error mid-call runs the whole call again on the plain loop, which halves the batch.
    (Under the simulator without ``--full`` the bench documents are cut to 700 characters.)"""
    from gpu_tok import gpu_engine as G

    t = tok(family)
    texts = [f"caf\u00e9 {i} cafe\u0301 " * (i % 3) + "the cat sat on it " * (i % 6) for i in range(40)] + ["", "x"]
    texts += shorter_on_sim(bench_texts(20000)[:3], 1500 if full else 700)
    want = t.encode_batch_ids(texts, device="cpu")
    g = G._engine_for(t, device, lambda be: G.GpuTokenizer(t, be))
    eng = g.engine
    monkeypatch.setattr(eng, "batch_bytes", 1000 if SIM else 2000)
    monkeypatch.setattr(eng, "overlap", True)
    called = []
    real_over = G.GpuEngine._encode_overlapped

    def over(self, *a):
        called.append(1)
        return real_over(self, *a)

    monkeypatch.setattr(G.GpuEngine, "_encode_overlapped", over)
    eng.batch_log.clear()
    ids, rs = g.encode_ids(texts, True, None, True)
    assert called and np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids)
    log = eng.batch_log
    assert len(log) > 4 and log[0][0] == 0 and log[-1][1] == len(texts)
    assert all(a[1] == b[0] for a, b in zip(log, log[1:])) and len(eng._streams) == 3
    # the worker's error reaches the caller, and the worker ends
    real_pieces = type(g.host).pieces
    seen = []

    def pieces(self, *a, **k):
        seen.append(1)
        if len(seen) == 3:
            raise ValueError("host step failed (injected)")
        return real_pieces(self, *a, **k)

    monkeypatch.setattr(type(g.host), "pieces", pieces)
    with pytest.raises(ValueError, match="injected"):
        g.encode_ids(texts, True, None, True)
    import threading

    assert not [th for th in threading.enumerate() if th.name == "gpu_tok-host-step"]
    monkeypatch.setattr(type(g.host), "pieces", real_pieces)
    # out of memory on the third batch: the plain loop does the whole call, halving
    assert len(_oom_then_plain(g, texts, want, 3, monkeypatch)) > 3


def _oom_then_plain(g, texts, want, at, monkeypatch):
    """An out-of-memory error on the ``at``-th batch launched of ``g.encode_ids(texts)`` (the
    template's ids on): the whole call runs again on the plain loop (which halves the batch),
    its batches covering the documents in order once, its ids ``want``'s; returns the
    batches launched."""
    from numba.cuda.cudadrv.driver import CudaAPIError

    from gpu_tok import gpu_engine as G

    real_launch = G.GpuEngine._launch
    launches = []

    def launch(self, hp, d0, d1, slot):
        launches.append((d0, d1))
        if len(launches) == at:
            raise CudaAPIError(2, "CUDA_ERROR_OUT_OF_MEMORY (injected)")
        return real_launch(self, hp, d0, d1, slot)

    monkeypatch.setattr(G.GpuEngine, "_launch", launch)
    g.engine.batch_log.clear()
    ids, rs = g.encode_ids(texts, True, None, True)
    assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids)
    log = g.engine.batch_log
    assert log[0][0] == 0 and log[-1][1] == len(texts) and all(a[1] == b[0] for a, b in zip(log, log[1:]))
    return launches


@twin_only
@pytest.mark.parametrize("family", ["roberta-base", "qwen3", "llama2", "clip-vit-base-patch32"])
def test_twin_overlapped_host_step(family, monkeypatch, full_run):
    _check_overlapped("twin", family, monkeypatch, full_run)


@on_device
@pytest.mark.parametrize("family", ["roberta-base", "llama2"])
def test_device_overlapped_host_step(family, monkeypatch, full_run):
    _check_overlapped("cuda", family, monkeypatch, full_run)


def _check_hybrid(device, family, monkeypatch, full):
    """``GpuEngine.hybrid`` (``GPU_TOK_CUDA_HYBRID``): each round's first documents encoded by
    the CPU engine while the device runs the rest. With fixed shares and small rounds (many
    rounds, some all device, some all CPU), the template's ids, empty and NFC-changed
    documents: the same ids as ``device="cpu"``, the device's batches in order with the CPU
    engine's parts between them; ids left on the device (CuPy) and CLIP's engine take the
    plain loop; an out-of-memory error mid-call runs the whole call again on the plain loop.
    Under the simulator without ``--full`` (decision 0042): each share once, two with the
    special tokens and two without, and the bench documents cut to 700 characters."""
    from gpu_tok import gpu_engine as G

    t = tok(family)
    sliced = SIM and not full
    texts = [f"caf\u00e9 {i} cafe\u0301 " * (i % 3) + "the cat sat on it " * (i % 6) for i in range(40)] + ["", "x"]
    texts += shorter_on_sim(bench_texts(20000)[:3], 700 if sliced else 1500)
    g = G._engine_for(t, device, lambda be: G.GpuTokenizer(t, be))
    eng = g.engine
    monkeypatch.setattr(eng, "hybrid_min_bytes", 0)
    hybrid_calls = []
    real_hybrid = G.GpuEngine._encode_hybrid

    def hybrid(self, *a):
        hybrid_calls.append(1)
        return real_hybrid(self, *a)

    monkeypatch.setattr(G.GpuEngine, "_encode_hybrid", hybrid)
    served = not isinstance(t._cpu_engine(), __import__("gpu_tok.fast_clip", fromlist=["x"]).CpuClipEngine)
    for special in (True, False):
        want = t.encode_batch_ids(texts, device="cpu", add_special_tokens=special)
        for k, (share, batch) in enumerate(((0.5, 1 << 30), (0.35, 700), (1.0, 900), (0.9, 1 << 30))):
            if sliced and (k % 2 == 0) != special:
                continue
            monkeypatch.setattr(eng, "hybrid", share)
            monkeypatch.setattr(eng, "batch_bytes", batch)
            eng.stats = G._new_stats()
            eng.batch_log.clear()
            hybrid_calls.clear()
            ids, rs = g.encode_ids(texts, special, None, True)
            what = f"{family} share {share} rounds of {batch} bytes"
            assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids), what
            log = eng.batch_log
            assert bool(hybrid_calls) == served, what
            if not served:
                continue
            cpu_bytes = eng.stats["hybrid_cpu_bytes"]
            assert (cpu_bytes == 0) == (share == 1.0) and eng.stats["hybrid_share"] == share, what
            assert log and all(a[1] <= b[0] for a, b in zip(log, log[1:])), what
            assert sum(len("".join(texts[a:b]).encode()) for a, b in log) + cpu_bytes == len("".join(texts).encode())
            if batch < 1000 and share < 1.0:  # rounds: many batches, with the CPU engine's documents between
                assert len(log) > 3 and any(a[1] < b[0] for a, b in zip(log, log[1:])), what
    if not served:
        return
    if device == "cuda" and not SIM:  # ids left on the device: the plain loop
        hybrid_calls.clear()
        g.encode_ids(texts, True, None, False)
        assert not hybrid_calls
    # out of memory on the device's second batch: the plain loop does the whole call, halving
    monkeypatch.setattr(eng, "hybrid", 0.5)
    monkeypatch.setattr(eng, "batch_bytes", 900)
    hybrid_calls.clear()
    _oom_then_plain(g, texts, t.encode_batch_ids(texts, device="cpu", add_special_tokens=True), 2, monkeypatch)
    assert hybrid_calls


@twin_only
@pytest.mark.parametrize("family", ["roberta-base", "qwen3", "llama2", "clip-vit-base-patch32"])
def test_twin_hybrid_loop(family, monkeypatch, full_run):
    _check_hybrid("twin", family, monkeypatch, full_run)


@on_device
@pytest.mark.parametrize("family", ["roberta-base", "llama2"])
def test_device_hybrid_loop(family, monkeypatch, full_run):
    _check_hybrid("cuda", family, monkeypatch, full_run)


@twin_only
def test_twin_hybrid_tiktoken(monkeypatch):
    """The hybrid loop for a tiktoken encoding (its own front end, ``GpuTiktoken``): the same ids
    as ``device="cpu"`` with the allowed special tokens matched in both parts."""
    from gpu_tok import gpu_engine as G

    enc = tiktoken_enc("cl100k_base")
    texts = [f"line {i} <|endoftext|> caf\u00e9 " * (i % 4) for i in range(60)] + bench_texts(20000)[:2]
    want = enc.encode_batch_ids(texts, allowed_special="all", device="cpu")
    g = G._engine_for(enc, "twin", lambda be: G.GpuTiktoken(enc, be))
    monkeypatch.setattr(g.engine, "hybrid_min_bytes", 0)
    monkeypatch.setattr(g.engine, "hybrid", 0.5)
    monkeypatch.setattr(g.engine, "batch_bytes", 2000)
    g.engine.stats = G._new_stats()
    ids, rs = G.tiktoken_batch_ids(enc, texts, *enc._resolve_special("all", ()), "twin", None, True)
    assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids)
    assert g.engine.stats["hybrid_cpu_bytes"] > 0 and g.engine.batch_log


def test_hybrid_setting_and_share():
    """``GPU_TOK_CUDA_HYBRID``'s values, and the "auto" share from the learnt rates: 1/2 until
    both parts were timed; then where the two parts end together (``c / (c + g)``), within
    the bounds; the device's least share where its host work alone costs more than the CPU
    engine's; a rate under half the last replaces it, others are averaged in."""
    from gpu_tok import gpu_engine as G

    assert G.hybrid_setting(None) is None and G.hybrid_setting("") is None and G.hybrid_setting("0") is None
    assert G.hybrid_setting("auto") == "auto" and G.hybrid_setting(" 0.25 ") == 0.25 and G.hybrid_setting("1") == 1.0
    for bad in ("2", "-0.5", "yes", "nan"):
        with pytest.raises(ValueError, match="GPU_TOK_CUDA_HYBRID"):
            G.hybrid_setting(bad)
    e = G.GpuEngine.__new__(G.GpuEngine)
    e.hybrid, e._rates = "auto", None
    assert e._gpu_share() == 0.5
    e._learn(1 << 20, 1 << 20, 0.001, 0.002, 0.003)
    h, g, c = (x * (1 << 20) for x in e._rates)
    assert (round(h, 6), round(g, 6), round(c, 6)) == (0.001, 0.002, 0.003)
    assert abs(e._gpu_share() - 0.003 / 0.005) < 1e-9  # the parts end together: 0.6
    e._learn(1 << 20, 0, 0.003, 0.002, 0.0)  # host part averaged (0.002); the CPU rate kept (no bytes)
    assert abs(e._rates[0] * (1 << 20) - 0.002) < 1e-12 and abs(e._rates[2] * (1 << 20) - 0.003) < 1e-12
    e._learn(1 << 20, 1 << 20, 0.002, 0.0001, 0.003)  # a device rate under half the last: replaces it
    assert abs(e._rates[1] * (1 << 20) - 0.0001) < 1e-12
    assert e._gpu_share() == G._HYBRID_HI  # c / (c + g) = 0.97: the upper bound
    e._rates = [5e-9, 1e-9, 2e-9]  # the device's host work alone costs more than the CPU engine's
    assert e._gpu_share() == G._HYBRID_LO
    e._learn(1000, 1000, 1.0, 1.0, 1.0)  # parts under _HYBRID_SAMPLE bytes: not counted
    assert e._rates == [5e-9, 1e-9, 2e-9]
    e.hybrid = 0.3
    assert e._gpu_share() == 0.3


@twin_only
def test_twin_oom_halves_the_batch(monkeypatch):
    _check_oom_halving("twin", monkeypatch)


@twin_only
def test_huge_pieces_in_order_in_any_blocks():
    """``gpu_host.huge_pieces``: the model pieces (``special == -1``) longer than the
    threshold, in order, whatever the number of blocks it counts and writes in parallel
    (one, a few, more blocks than pieces; no pieces at all)."""
    from gpu_tok.kernels.gpu_host import huge_pieces

    rng = np.random.default_rng(11)
    P = 10_007
    lens = rng.integers(0, 200, P)
    starts = np.zeros(P + 1, np.int32)
    np.cumsum(lens, out=starts[1:])
    special = rng.choice(np.array([-1, -1, -1, -1, -2, 7], np.int32), P)
    want = np.flatnonzero((special == -1) & (lens > 150))
    assert 0 < want.shape[0] < P // 4
    for nblocks in (1, 3, 8, P + 5):
        assert np.array_equal(huge_pieces(starts, special, 150, nblocks), want), nblocks
    assert huge_pieces(starts[:1], special[:0], 150, 4).shape == (0,)


@twin_only
@pytest.mark.parametrize("huge", [8, 100, 2 ** 62])
def test_twin_collisions_and_long_pieces(huge):
    """Every dedupe key collides (two bits): still exact; long pieces of many sizes, on the
    device's heap (``huge`` = never) or encoded on the host (over 100 bytes; over 8: most
    words, thousands of pieces placed by one ``k_place``)."""
    from gpu_tok import gpu_engine as G

    for family in ("llama3", "gpt-oss", "gemma3", "llama2"):
        t = tok(family)
        texts = bench_texts(30_000) + ["q" * n for n in (63, 64, 65, 100, 101, 127, 128, 129, 1000, 20000)] + \
            ["\u4e2d\u6587" * 700, ("abc" * 30 + " ") * 20, "x" * 101 + " " + "x" * 101]
        g = G._engine_for(t, "twin", lambda be: G.GpuTokenizer(t, be))
        want = t.encode_batch_ids(texts, device="cpu")
        g.engine.key_mask = np.uint64(3)
        g.engine.huge_bytes = huge
        g.engine.stats["host_pieces"] = 0
        try:
            ids, rs = g.encode_ids(texts, True, None, True)
        finally:
            g.engine.key_mask = np.uint64(0xFFFFFFFFFFFFFFFF)
            g.engine.huge_bytes = G._HUGE_BYTES
        assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids), family
        assert (g.engine.stats["host_pieces"] > 0) == (huge < 2 ** 62), family
        if huge == 8:
            assert g.engine.stats["host_pieces"] > 1000, family


@twin_only
@pytest.mark.parametrize("family", ["gpt2", "roberta-base", "qwen3", "gpt-oss", "cl100k_base"])
def test_host_pieces_equal_cpu_engine(family, monkeypatch):
    """``kernels.gpu_host`` (parallel cut, records merged in text order) gives the pieces of
    ``ByteBPEEngine.pieces``: with added tokens between segments, documents left to the
    reference path (qwen3's NFC), long lines cut between workers at sync points."""
    from gpu_tok import fast_cpu
    from gpu_tok.kernels import gpu_host

    if family == "cl100k_base":
        enc = tiktoken_enc(family)
        eng = enc._cpu()._engine(frozenset(enc.special_tokens_set))
    else:
        eng = tok(family)._cpu_engine().engine
    added = [c.decode() for c, _i, _f in eng.spec.raw_tokens + eng.spec.norm_tokens][:4]
    texts = bench_texts(40_000)
    texts += [" ".join(texts).replace("\n", " ")[:150_000], "", "x", "e\u0301 not NFC", "A" * 3000]
    texts += [f"{a}word{a} {a}" for a in added] + ["".join(added) * 3, "plain"]
    data, off = fast_cpu.pack(texts, None)
    monkeypatch.setattr(eng._pretok, "_MIN_CHUNK", 1 << 10)
    skip = eng._nfc_skip(data, off, None)
    st, _en, sp = eng.pieces(data, off, skip, False)
    for parallel in (False, True):
        starts, special, first, stats = gpu_host.byte_level_pieces(eng, data, off, skip, parallel, 2)
        assert np.array_equal(starts[:-1], st) and starts[-1] == data.shape[0], parallel
        assert np.array_equal(special, sp), parallel
        assert np.array_equal(first[:-1], np.searchsorted(st, off[:-1])) and first[-1] == st.shape[0]
        lens = np.diff(starts)
        model = (special == -1) & (lens >= 2)
        fixed = (special != -1).sum()
        assert stats == (model.sum(), (model & (lens > 64)).sum(), lens[model & (lens > 64)].sum(), 0, fixed)
        *_s, stats2 = gpu_host.byte_level_pieces(eng, data, off, skip, parallel, 2, huge=1000)
        big = model & (lens > 1000)
        assert stats2 == (model.sum() - big.sum(), (model & (lens > 64)).sum() - big.sum(),
                          lens[model & (lens > 64)].sum() - lens[big].sum(), big.sum(), fixed)
        # fill_special=False: with fixed pieces (these texts) every special is written all the same
        _st, sp2, _f, stats3 = gpu_host.byte_level_pieces(eng, data, off, skip, parallel, 2, fill_special=False)
        assert stats3 == stats and (np.array_equal(sp2, sp) or not fixed)
    # without fixed pieces: the specials are left unwritten (the device sets them), but where a
    # piece is over the huge limit (its ids are marked there): the rest -1; the rest as before
    plain = [x for x in texts if not any(a in x for a in added)]
    data, off = fast_cpu.pack(plain, None)
    skip = None if family == "qwen3" else eng._nfc_skip(data, off, None)
    if family == "qwen3":  # (its NFC check leaves documents to the reference path: fixed pieces)
        plain = [x for x in plain if "\u0301" not in x]
        data, off = fast_cpu.pack(plain, None)
        skip = eng._nfc_skip(data, off, None)
    st, _en, sp = eng.pieces(data, off, skip, False)
    assert (sp == -1).all()
    for parallel in (False, True):
        for huge in (2 ** 62, 1000):
            want = gpu_host.byte_level_pieces(eng, data, off, skip, parallel, 2, huge=huge)
            alloc = lambda name, n, dt: np.full(n, 7, dt)  # noqa: E731 - unwritten items stay 7
            got = gpu_host.byte_level_pieces(eng, data, off, skip, parallel, 2, alloc=alloc, huge=huge,
                                             fill_special=False)
            assert got[3] == want[3] and got[3][4] == 0 and np.array_equal(got[0], want[0])
            assert np.array_equal(got[2], want[2])
            if got[3][3]:
                assert np.array_equal(got[1], want[1]), (parallel, huge)
            else:
                assert (got[1] == 7).all() and got[3][3] == 0, (parallel, huge)
    assert (np.diff(st) > 1000).any()  # the huge case had one
    if family == "qwen3":
        assert skip is not None and not skip.any()


def _byte_level_engine(family):
    """``(ByteBPEEngine, ByteLevelHost, GpuEngine)`` of ``family`` on the twins (a tiktoken
    encoding's engine with all its special tokens allowed)."""
    from gpu_tok import gpu_engine as G

    if family in TIKTOKEN:
        enc = tiktoken_enc(family)
        g = G.GpuTiktoken(enc, G.backend("twin"))
        host = G.ByteLevelHost(enc._cpu()._engine(frozenset(enc.special_tokens_set)))
    else:
        g = G.GpuTokenizer(tok(family), G.backend("twin"))
        host = g.host
    g.engine._slots(2)
    return host.eng, host, g.engine


def _cut_texts(eng):
    """Texts for the device cut: bench text, a long line, added tokens between segments,
    runs with no sync point over many chunks (white space, digits, CJK, marks), edge cases."""
    added = [c.decode() for c, _i, _f in eng.spec.raw_tokens + eng.spec.norm_tokens][:4]
    texts = bench_texts(40_000)
    texts += [" ".join(texts).replace("\n", " ")[:150_000], "", "x", "e\u0301 not NFC", "A" * 3000, " " * 3000,
              "\n \n" * 700, "7" * 2000, "\u4e2d" * 1500, "a\u0301" * 800, "don't 'S 'll X'Re " * 100,
              "\U0001F600 " * 300, "\t\r\n  end  ", "word" * 10 + "!" * 600 + " tail"]
    texts += [f"{a}word{a} {a}" for a in added] + ["".join(added) * 3, "plain"]
    return texts


@twin_only
@pytest.mark.parametrize("family", ["gpt2", "roberta-base", "llama3", "qwen3", "gpt-oss", "cl100k_base",
                                    "o200k_base"])
def test_device_cut_equals_host_step(family):
    """``GpuEngine._device_step`` (the scanner of ``pretok_cpu`` run by ``pretok_cuda``'s
    kernels, here their twins) gives the host step's pieces: the same ``starts``,
    ``special`` and ``first``, and the same counts, with added tokens, documents left to the
    reference path (qwen3's NFC) and segments over many chunks; pieces over ``huge_bytes``
    send the batch back to the host step."""
    from gpu_tok.fast_cpu import pack_probed
    from gpu_tok.cpu_ref.pipeline import check_text

    eng, host, E = _byte_level_engine(family)
    texts = _cut_texts(eng)
    data, off, hint = pack_probed(texts, check_text, None, eng.probe, eng.probe_pairs)
    n = off.shape[0] - 1
    for h in (hint, None):
        want = E._host_step(host, data, off, 0, n, None, 0, h)
        got = E._device_step(host, data, off, 0, n, None, 1, h)
        P = want.special.shape[0]
        assert got.device is not None and got.P == P, family
        assert np.array_equal(got.starts[:P + 1], want.starts), family
        # (a batch with no fixed piece: the host step leaves every special to the device, -1)
        want_special = np.full(P, -1, np.int32) if want.model_only else want.special
        assert np.array_equal(got.special[:P], want_special), family
        assert np.array_equal(got.first[:n + 1], want.first), family
        assert tuple(got.stats) == tuple(want.stats), family
        assert np.array_equal(np.asarray(got.buf), np.asarray(want.buf))
        assert (got.skip is None) == (want.skip is None)
        if want.skip is not None:
            assert np.array_equal(got.skip, want.skip)
    assert E.stats["device_cut"] == 2 and E.stats["device_cut_refused"] == 0
    if family == "qwen3":
        assert want.skip is not None and want.skip.any()
    if eng.spec.raw_tokens or eng.spec.norm_tokens:
        assert not want.model_only and (want.special >= 0).any()
    E.huge_bytes = 1000  # the long line and the runs: pieces the host encodes
    got = E._device_step(host, data, off, 0, n, None, 1, hint)
    assert got.device is None and got.huge is not None and E.stats["device_cut_refused"] == 1


def test_device_cut_fixed_pieces():
    """``gpu_engine._fixed_pieces``: added tokens and skipped documents in text order; None
    (the host step then) where two fixed pieces, or a fixed piece and a segment, start at
    the same byte."""
    from gpu_tok.gpu_engine import _chunks, _fixed_pieces

    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    off = i64(0, 10, 20, 30)
    seg_s, seg_e = i64(0, 5, 20), i64(3, 10, 30)
    got = _fixed_pieces(seg_s, seg_e, i64(3), np.array([7], np.int32), off, np.array([0, 1, 0], np.uint8))
    assert got[0].tolist() == [3, 10] and got[1].tolist() == [7, -2]
    assert _fixed_pieces(seg_s, seg_e, i64(4, 4), np.array([7, 8], np.int32), off, None) is None
    assert _fixed_pieces(seg_s, seg_e, i64(6), np.array([7], np.int32), off, None) is None
    assert _fixed_pieces(seg_s, seg_e, i64(5), np.array([7], np.int32), off, None) is None
    assert _fixed_pieces(i64(0, 5), i64(5, 5), i64(5), np.array([7], np.int32), off, None)[0].tolist() == [5]
    lo, hi, end, first = _chunks(i64(0, 7, 7, 600), i64(5, 7, 600, 1112), 256)
    assert lo.tolist() == [0, 7, 263, 519, 600, 856]
    assert hi.tolist() == [5, 263, 519, 600, 856, 1112]
    assert end.tolist() == [5, 600, 600, 600, 1112, 1112] and first.tolist() == [1, 1, 0, 0, 1, 0]


@twin_only
@pytest.mark.parametrize("family", ["roberta-base", "qwen3", "gpt-oss", "o200k_base", "llama2", "gemma3"])
def test_twin_device_cut_end_to_end(family, monkeypatch):
    """``GPU_TOK_CUDA_DEVICE_CUT=1`` on the twins, over several batches: the ids of
    ``device="cpu"``, with the template's ids (roberta-base, llama2) and NFC's skipped
    documents (qwen3); SentencePiece files (llama2, gemma3) cut by ``sp_cuda``."""
    from gpu_tok import gpu_engine as G

    monkeypatch.setenv("GPU_TOK_CUDA_DEVICE_CUT", "1")
    texts = bench_texts(300_000) + ["", "a\n  ", "x's 'S 'ſ \r\n\n end  ", "<|endoftext|> hi", "e\u0301", "a" * 5000,
                                    "  two  ", "\u2581 x\u2581"]
    if family in TIKTOKEN:
        enc = tiktoken_enc(family)
        g = G.GpuTiktoken(enc, G.backend("twin"))
        monkeypatch.setitem(enc.__dict__, "_gpu_engines", {"twin": g})
        g.engine.batch_bytes = 40_000
        ids, rs = G.tiktoken_batch_ids(enc, texts, *enc._resolve_special("all", ()), "twin")
        want = enc.encode_batch_ids(texts, allowed_special="all", disallowed_special=(), device="cpu")
    else:
        t = tok(family)
        g = G.GpuTokenizer(t, G.backend("twin"))
        monkeypatch.setitem(t.__dict__, "_gpu_engines", {"twin": g})
        g.engine.batch_bytes = 40_000
        ids, rs = G.tokenizer_batch_ids(t, texts, True, "twin", None, True)
        want = t.encode_batch_ids(texts, device="cpu")
    assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids), family
    assert g.engine.stats["device_cut"] > 5 and g.engine.stats["device_cut_refused"] == 0


def _sp_device_equals_host(E, host, data, off, what):
    """``E._device_step_sp`` against ``E._host_step`` on the packed texts: the same pieces
    (each fixed piece one placeholder byte on the device, none on the host), ids, documents'
    first pieces and counts; returns the device's pieces."""
    n = off.shape[0] - 1
    want = E._host_step(host, data, off, 0, n, None, 0)
    got = E._device_step_sp(host, data, off, 0, n, None, 1)
    P = want.special.shape[0]
    assert got.device is not None and got.P == P, what
    special = np.asarray(got.special[:P])
    starts = np.asarray(got.starts[:P + 1]).astype(np.int64)
    assert np.array_equal(special, want.special) and np.array_equal(np.asarray(got.first[:n + 1]), want.first), what
    assert tuple(got.stats) == tuple(want.stats), what
    fixed = special >= 0
    assert np.array_equal(np.diff(starts) - fixed, np.diff(want.starts.astype(np.int64))), what
    out = np.asarray(got.device[0][:got.M])
    assert got.M == starts[P] and (out[starts[:-1][fixed]] == 0).all(), what
    keep = np.ones(got.M, bool)
    keep[starts[:-1][fixed]] = False
    assert np.array_equal(out[keep], want.buf), what
    return got


@twin_only
@pytest.mark.parametrize("family", ["llama2", "mistral-v0.1", "gemma3", "phi-3-mini"])
def test_sentencepiece_device_cut_equals_host_step(family):
    """``GpuEngine._device_step_sp`` (the raw added-token pass on the host, the normalized text
    written and cut by ``sp_cuda``'s kernels, here their twins) gives the host step's pieces
    on bench text and edge cases (runs of spaces, "▁" in the text, gaps over many chunks,
    added tokens between and inside words: fixed pieces for the raw pass's tokens). llama2's
    added tokens are normalized ("▁<s>"): a batch where the normalized pass could find one
    goes to the host step, as does one with pieces over ``huge_bytes``; Metaspace files
    (``prepend`` 2/3) are not cut on the device."""
    from gpu_tok import gpu_engine as G
    from gpu_tok.fast_cpu import pack

    t = tok(family)
    g = G.GpuTokenizer(t, G.backend("twin"))
    host, E = g.host, g.engine
    E._slots(2)
    E.device_cut = True
    assert isinstance(host, G.SentencePieceHost) and E._cuts_on_device(host)
    added = [a.content for a in t.get_added_tokens_decoder().values()][:4]
    texts = bench_texts(150_000) + ["", "x", " lead", "  two", "a  b   c", " ", " " * 700 + "x" * 600,
                                    "\u2581\u2581x \u2581 \u2581\u2581\u2581", "x  \u2581y>\u2581\u2581z",
                                    "\u00e9\u2581\u2581 \u4e2d\u2581", "tab\t\nnl  \n", "\U0001F600 " * 200]
    with_added = texts + [f"{a}w{a} {a}" for a in added] + ["".join(added) * 3, f"x {added[-1]}", "tail"]
    data, off = pack(texts, None)
    got = _sp_device_equals_host(E, host, data, off, family)
    assert E.stats["device_cut"] == 1 and E.stats["device_cut_refused"] == 0
    data2, off2 = pack(with_added, None)
    if family == "llama2":
        n = off2.shape[0] - 1
        hp = E._device_step_sp(host, data2, off2, 0, n, None, 1)
        assert hp.device is None and E.stats["device_cut_refused"] == 1
    else:
        got = _sp_device_equals_host(E, host, data2, off2, family)
        assert (np.asarray(got.special[:got.P]) >= 0).sum() >= 3 * len(added)
    E.huge_bytes = 1000  # the long runs: pieces the host encodes
    hp = E._device_step_sp(host, data, off, 0, off.shape[0] - 1, None, 1)
    assert hp.device is None and hp.huge is not None
    meta = G.GpuTokenizer(tok("mistral-v0.3-metaspace"), G.backend("twin"))
    meta.engine.device_cut = True
    assert meta.host.cut_trie is None and not meta.engine._cuts_on_device(meta.host)


@twin_only
def test_clip_host_pieces_equal_the_engines_items(monkeypatch):
    """``ClipHost.pieces`` (``gpu_host.clip_counts``/``clip_fill`` over the engine's items,
    in chunks, in parallel) gives what the engine's items say, written out plainly here: the
    pieces' bytes back to back (an added token one byte, 0), their starts, ids, each
    document's first piece, the model-piece counts; on one and on two threads (several
    chunks), with added tokens, documents left to the reference path (not NFC), empty and
    white-space-only documents (no pieces), and pieces over a small ``huge`` threshold."""
    from gpu_tok import fast_cpu
    from gpu_tok import gpu_engine as G
    from gpu_tok.kernels.gpu_host import SHORT

    clip = tok("clip-vit-base-patch32")._cpu_engine()
    monkeypatch.setattr(fast_cpu, "_PARALLEL_MIN_BYTES", 1)
    texts = bench_texts(200_000) + ["", "   ", "<|startoftext|>hi<|endoftext|> x", "e\u0301 not NFC", "",
                                     "A" * 3000, "\t\n", "tail words"]
    data, off = fast_cpu.pack(texts, None)
    n = len(texts)
    skip = clip.engine._nfc_changed(data, off, None).astype(np.uint8)
    buf, starts, ends, special, doc = clip._pieces(data, off, skip, None, 1, False)
    real = special != -2
    starts, ends, special, doc = starts[real], ends[real], special[real], doc[real]
    lens = np.where(special == -1, ends - starts, 1)
    want_buf = b"".join(bytes(buf[a:a + k]) if sp == -1 else b"\0"
                        for a, k, sp in zip(starts.tolist(), lens.tolist(), special.tolist()))
    want_st = np.concatenate(([0], np.cumsum(lens)))
    want_first = np.searchsorted(doc, np.arange(n + 1))
    assert skip.any() and (np.diff(want_first) == 0).sum() >= 3 and (special >= 0).sum() >= 2
    for threads in (1, 2):
        for huge in (1 << 62, 40):
            hp = G.ClipHost(clip).pieces(data, off, threads, None, None, huge)
            assert bytes(hp.buf[:want_st[-1]]) == want_buf and np.array_equal(hp.starts, want_st), (threads, huge)
            assert np.array_equal(hp.first, want_first), (threads, huge)
            model = (special == -1) & (lens >= 2)
            big = model & (lens > huge)
            ok = model & ~big
            assert hp.stats == (ok.sum(), (ok & (lens > SHORT)).sum(), lens[ok & (lens > SHORT)].sum()), (threads, huge)
            assert not hp.model_only  # the added tokens' pieces
            assert np.array_equal(hp.special[~big], special[~big]), (threads, huge)
            if big.any():  # encoded on the host: marked, in order
                assert np.array_equal(hp.huge[0], np.flatnonzero(big)) and (hp.special[big] != -1).all()
            else:
                assert hp.huge is None and np.array_equal(hp.special, special)
            assert np.array_equal(hp.skip, skip)
    assert huge == 40 and big.sum() > 10


@twin_only
@pytest.mark.parametrize("family", ["llama2", "gemma3", "mistral-v0.3-metaspace"])
def test_sentencepiece_host_blocks_equal_one_thread(family):
    """``sp_host.sp_pieces_parallel`` (blocks of documents in parallel, then gathered) gives
    the one-thread ``sp_pieces``'s pieces, ``int32`` starts, and the model-piece counts;
    with blocks of one document, uneven blocks, empty documents and added tokens; and
    ``SentencePieceHost.pieces`` on two threads (a parallel plan) gives the same."""
    from gpu_tok import fast_cpu
    from gpu_tok import gpu_engine as G
    from gpu_tok.kernels import sp_host
    from gpu_tok.kernels.gpu_host import SHORT

    sp = tok(family)._cpu_engine()
    added = [t.content for t in sp.ref.added.map_r.values()][:3]
    texts = bench_texts(300_000) + ["", "x", " lead", "  two"] + [f"{a}w{a} {a}" for a in added] + ["q" * 200, ""]
    texts += ["\u2581\u2581x \u2581 \u2581\u2581\u2581", "x  \u2581y>\u2581\u2581z", "\u00e9\u2581\u2581 \u4e2d\u2581"]
    data, off = fast_cpu.pack(texts, None)
    args = (sp.rt, sp.nt, sp.cls, sp.prepend, *sp.bt, sp.whole_first, sp.held)
    buf, starts, special, first = sp_host.sp_pieces(data, off, *args)
    lens = np.diff(starts)
    model = (special == -1) & (lens >= 2)
    want_stats = (int(model.sum()), int((model & (lens > SHORT)).sum()), int(lens[model & (lens > SHORT)].sum()))
    fixed = int((special != -1).sum())  # the added tokens' pieces (and whole pieces found in the vocabulary)
    assert fixed > 0
    n = len(texts)
    # the regions fresh, then kept (``KeptArray``s, as ``SentencePieceHost`` holds them), reused
    # by later calls of other layouts and over the bytes an earlier call left there
    kept = tuple(fast_cpu.KeptArray(dt, 1 << 30) for dt in (np.uint8, np.int64, np.int32))
    small = fast_cpu.pack(texts[-12:], None)
    for regions in (None, kept):
        for blocks in ([0, n], [0, 1, 2, 3, n], [0, n - 7, n - 6, n - 1, n], list(range(n + 1))):
            b, st, spc, fi, stats = sp_host.sp_pieces_parallel(data, off, np.array(blocks, np.int64), *args, SHORT,
                                                               regions=regions)
            assert st.dtype == np.int32 and np.array_equal(b, buf) and np.array_equal(st, starts), blocks[:5]
            assert np.array_equal(spc, special) and np.array_equal(fi, first) and stats == want_stats + (0, fixed), blocks[:5]
            got = sp_host.sp_pieces_parallel(*small, np.array([0, 12], np.int64), *args, SHORT, regions=regions)
            for x, y in zip(got[:4], sp_host.sp_pieces(*small, *args)):
                assert np.array_equal(x, y), blocks[:5]
    assert kept[0]._buf is not None and kept[0]._buf.shape[0] >= 6 * data.shape[0]
    big = model & (lens > 100)  # with pieces over 100 bytes left to the host: counted apart
    *_a, stats = sp_host.sp_pieces_parallel(data, off, np.array([0, 5, n], np.int64), *args, SHORT, None, 100)
    assert big.sum() > 0 and stats == (want_stats[0] - big.sum(), want_stats[1] - big.sum(),
                                       want_stats[2] - lens[big].sum(), big.sum(), fixed)
    hp = G.SentencePieceHost(sp).pieces(data, off, 2)
    assert np.array_equal(hp.buf, buf) and np.array_equal(hp.starts, starts) and hp.stats == want_stats
    assert not hp.model_only
    assert np.array_equal(hp.special, special) and np.array_equal(hp.first, first)
    # each model piece is a word: no "▁" inside it is a place to cut (one whose previous
    # character no token holds right before a "▁": ``held``'s column for "▁"), and those places
    # start pieces
    sp_ = b"\xe2\x96\x81"
    col = sp.held[:130 * 130].reshape(130, 130)[:129, 128] if sp.held.shape[0] else sp.held
    cuts = 0
    for k in np.flatnonzero(special == -1):
        piece = bytes(buf[starts[k]:starts[k + 1]])
        i = piece.find(sp_, 1)
        while i > 0 and col.shape[0] > 0:
            pv = piece[i - 1]
            held = col[pv] if pv < 0x80 else (col[128] if i >= 3 and piece[i - 3:i] == sp_ else 0)
            assert held, (family, piece[:80])
            i = piece.find(sp_, i + 3)
        if k > 0 and special[k - 1] == -1 and piece.startswith(sp_):
            cuts += 1
    assert col.shape[0] == 0 or cuts > 1000, cuts


@twin_only
def test_twin_bytes_hash_is_the_cpu_engines():
    """The device's piece hash is ``engine_cpu.bytes_hash`` (the vocabulary table's key)."""
    from gpu_tok.kernels import engine_cpu
    from gpu_tok.kernels.twins import load

    K = load("cpu")
    rng = np.random.default_rng(3)
    buf = rng.integers(0, 256, 300).astype(np.uint8)
    for s, e in [(0, 0), (0, 1), (3, 11), (5, 12), (0, 300), (17, 40)]:
        assert K.bytes_hash(buf, s, e) == engine_cpu.bytes_hash(buf, s, e)


@twin_only
def test_twin_profile_split():
    _check_profile("twin")


def _check_profile(device):
    """The engine's ``profile`` switch (``benchmarks/gpu_bench.py``'s split): same ids, and
    each kernel waited for and timed by name, inside the phase times (``kernel_s``), with
    the template's kernels where the post-processor adds ids, over several batches."""
    from gpu_tok import gpu_engine as G

    texts = [" ".join(bench_texts(3000)[0].split()[:30])] * 4 + ["", "x" * 80, "the cat"]
    for family, flag in (("llama3", True), ("gpt2", False)):
        t = tok(family)
        want = t.encode_batch_ids(texts, add_special_tokens=flag, device="cpu")
        g = G._engine_for(t, device, lambda be: G.GpuTokenizer(t, be))
        old = g.engine.batch_bytes
        g.engine.stats = G._new_stats()
        g.engine.profile = True
        g.engine.batch_bytes = 400
        try:
            ids, rs = g.encode_ids(texts, flag, None, True)
        finally:
            g.engine.profile = False
            g.engine.batch_bytes = old
        assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids), family
        st = g.engine.stats
        ks = st["kernels"]
        assert st["batches"] >= 2, family
        want_k = {"k_insert", "k_resolve", "k_fill", "k_short", "k_counts", "k_scatter", "k_rows", "scan"}
        if flag:
            want_k |= {"k_template_rows", "k_template_docs", "k_template_toks"}
        assert want_k <= set(ks), (family, sorted(ks))
        assert all(v >= 0 for v in ks.values())
        assert sum(ks.values()) <= st["kernel_s"] + 1e-9, family  # each timed inside its phase
        # the host step's parts (gpu_host.lap), inside its time
        parts = st["host_parts"]
        assert set(parts) == {"nfc", "added", "cut", "assemble", "huge"}, (family, parts)
        assert all(v >= 0 for v in parts.values()) and sum(parts.values()) <= st["host_s"] + 1e-9, family
    g.engine.stats = G._new_stats()
    g.encode_ids(texts, flag, None, True)
    assert "host_parts" not in g.engine.stats  # only profiled runs time them


@twin_only
def test_twin_host_step_takes_the_pack_hint(monkeypatch):
    """``GpuTokenizer`` packs with the byte-level engine's probe (``pack_probed``) and its host
    step passes each batch's part of the flags to the added-token and NFC passes, as the CPU
    engine does: documents without an added token's first bytes (or a byte NFC may change)
    are not searched; the ids equal ``device="cpu"``'s with and without the flags."""
    from gpu_tok import fast_cpu
    from gpu_tok import gpu_engine as G

    texts = ["plain words here", "x <|endoftext|> y", "", "caf\u00e9 cafe\u0301", "<| not a token", "a" * 50] * 7
    for family in ("gpt2", "qwen3"):
        t = tok(family)
        want = t.encode_batch_ids(texts, device="cpu")
        g = G._engine_for(t, "twin", lambda be: G.GpuTokenizer(t, be))
        g.engine.batch_bytes = 150  # several batches: each takes its documents' flags
        seen = []
        real = fast_cpu.ByteBPEEngine._segments

        def segments(self, data, doc_offsets, skip, parallel=False, hint=None, doc_ends=None):
            seen.append((doc_offsets.shape[0] - 1, None if hint is None else hint.copy()))
            return real(self, data, doc_offsets, skip, parallel, hint, doc_ends)

        monkeypatch.setattr(fast_cpu.ByteBPEEngine, "_segments", segments)
        try:
            ids, rs = g.encode_ids(texts, True, None, True)
        finally:
            monkeypatch.setattr(fast_cpu.ByteBPEEngine, "_segments", real)
            g.engine.batch_bytes = G._BATCH_BYTES
        assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids), family
        # every batch's documents (qwen3's NFC-changed ones once more, by the CPU engine: skipped_rows)
        assert len(seen) > 3 and sum(n for n, _h in seen) >= len(texts), family
        _n, h0 = seen[0]
        assert h0 is not None and (h0 & fast_cpu._PROBE_ADDED)[[0, 2, 5]].sum() == 0, (family, h0)
        assert (h0 & fast_cpu._PROBE_ADDED)[1] != 0, (family, h0)
        # the same without the flags (pack, no probe): the same ids
        real_pp = fast_cpu.pack_probed
        monkeypatch.setattr(fast_cpu, "pack_probed", lambda texts, check, n, probe, pairs=None, kept=None:
                            real_pp(texts, check, n, None, kept=kept))
        ids, rs = g.encode_ids(texts, True, None, True)
        monkeypatch.undo()
        assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids), family


def _check_oom_halving(device, monkeypatch):
    """A fake out-of-memory error for every batch of more than 3 documents: each is halved
    until it fits; no text is lost or reordered. One document that does not fit raises."""
    from numba.cuda.cudadrv.driver import CudaAPIError

    from gpu_tok import gpu_engine as G

    t = tok("gpt2")
    texts = [f"text number {i} " + "word " * (i % 7) for i in range(23)]
    want = t.encode_batch_ids(texts, device="cpu")
    g = G._engine_for(t, device, lambda be: G.GpuTokenizer(t, be))
    real_launch = G.GpuEngine._launch
    sizes = []

    def launch(self, hp, d0, d1, slot):
        sizes.append(d1 - d0)
        if d1 - d0 > 3:
            raise CudaAPIError(2, "CUDA_ERROR_OUT_OF_MEMORY (injected)")
        return real_launch(self, hp, d0, d1, slot)

    monkeypatch.setattr(G.GpuEngine, "_launch", launch)
    g.engine.batch_log.clear()
    splits0 = g.engine.stats["oom_splits"]
    ids, rs = g.encode_ids(texts, True, None, True)
    assert np.array_equal(rs, want.row_splits) and np.array_equal(ids, want.ids)
    assert sizes[0] == 23 and g.engine.stats["oom_splits"] > splits0
    log = g.engine.batch_log
    assert log[0][0] == 0 and log[-1][1] == 23 and all(a[1] == b[0] for a, b in zip(log, log[1:]))
    assert all(d1 - d0 <= 3 for d0, d1 in log)

    def always(self, hp, d0, d1, slot):
        raise CudaAPIError(2, "CUDA_ERROR_OUT_OF_MEMORY (injected)")

    monkeypatch.setattr(G.GpuEngine, "_launch", always)
    with pytest.raises(CudaAPIError):
        g.encode_ids(["one document"], True, None, True)
    monkeypatch.setattr(G.GpuEngine, "_launch", real_launch)
    assert g.encode_ids(texts, True, None, True)[0].tolist() == want.ids.tolist()  # still usable


# ------------------------------------------------------- CPU-only (this process)
@pytest.mark.skipif(REAL, reason="a real GPU is here")
def test_auto_without_gpu_is_the_cpu_engine():
    t = tok("gpt2")
    texts = ["Hello world", "", "日本語"]
    got = t.encode_batch_ids(texts, device="auto")
    assert isinstance(got.ids, np.ndarray)
    assert got.to_list() == t.encode_batch_ids(texts, device="cpu").to_list()
    enc = tiktoken_enc("cl100k_base")
    assert (enc.encode_batch_ids(texts, device="auto").to_list()
            == enc.encode_batch_ids(texts, device="cpu").to_list())


@pytest.mark.skipif(not PARENT, reason="checks the plain process (no simulator, no GPU)")
def test_cuda_without_a_device_raises_clearly():
    from gpu_tok import gpu_engine as G

    if G.cuda_usable()[0]:
        pytest.skip("a CUDA device is usable here")
    with pytest.raises(G.DeviceNotAvailable, match="device='cuda' is not usable here"):
        tok("gpt2").encode_batch_ids(["x"], device="cuda")


def test_not_served_is_refused_by_name():
    """A file the compiled engines do not serve (gpt2's vocabulary behind a Whitespace
    pre-tokenizer) is refused on the GPU, naming why; "auto" gives the CPU path's ids."""
    from gpu_tok import gpu_engine as G

    d = json.loads(model_path("gpt2").read_text(encoding="utf-8"))
    d["pre_tokenizer"] = {"type": "Whitespace"}
    t = gpu_tok.Tokenizer.from_str(json.dumps(d))
    with pytest.raises(G.NotServedOnDevice, match="Whitespace"):
        G.tokenizer_batch_ids(t, ["a b"], True, "twin")
    texts = ["Hello world", " two  spaces"]
    assert t.encode_batch_ids(texts, device="auto").to_list() == t.encode_batch_ids(texts, device="ref").to_list()


def test_import_needs_neither_cupy_nor_numba_cuda():
    code = ("import sys, gpu_tok; t = gpu_tok.Tokenizer; "
            "bad = [m for m in ('cupy', 'numba.cuda', 'gpu_tok.gpu_engine') if m in sys.modules]; "
            "assert not bad, bad")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr


def test_numpy_alias_for_numba_cuda(monkeypatch):
    """NumPy 2.5 has no ``np.row_stack``, which numba-cuda 0.30.4 looks up when it compiles its
    first kernel (every compile failed on the H200 machine): ``twins.load("cuda")`` puts back
    the alias of ``np.vstack`` where it is missing, and leaves a present one alone."""
    from gpu_tok.kernels import twins

    monkeypatch.delattr(np, "row_stack", raising=False)
    assert not hasattr(np, "row_stack")
    assert twins.numpy_aliases_for_numba_cuda() is True
    assert np.row_stack is np.vstack
    assert twins.numpy_aliases_for_numba_cuda() is False


def test_batch_plan():
    """Batches cover every document once, in order; at most ``batch_bytes`` unless one document
    is larger; a mid-sized input is cut in at least four so host and device work overlap."""
    from gpu_tok import gpu_engine as G

    eng = G.GpuEngine.__new__(G.GpuEngine)
    rng = np.random.default_rng(1)
    for sizes in ([], [0], [5, 0, 0, 7], list(rng.integers(0, 3 << 20, 40)), [100 << 20, 1, 1]):
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        eng.batch_bytes = 16 << 20
        plan = eng.plan(offsets)
        assert [a for a, _b in plan] == ([0] + [b for _a, b in plan[:-1]] if plan else [])
        assert (plan[-1][1] if plan else 0) == len(sizes)
        for a, b in plan:
            assert b - a == 1 or offsets[b] - offsets[a] <= eng.batch_bytes
        if int(offsets[-1]) > 4 * G._MIN_BATCH_BYTES and max(sizes) < G._MIN_BATCH_BYTES:
            assert len(plan) >= 4
    # min_batch_bytes (gpu_overheads' "one batch"): no split below batch_bytes
    offsets = np.concatenate([[0], np.cumsum([3 << 20] * 4)]).astype(np.int64)
    assert len(eng.plan(offsets)) == 4
    eng.min_batch_bytes = 1 << 40
    assert eng.plan(offsets) == [(0, 4)]


def test_oom_is_recognised():
    from gpu_tok.gpu_engine import is_oom

    class CudaAPIError(Exception):
        def __init__(self, code, msg):
            self.code = code
            super().__init__(msg)

    class OutOfMemoryError(Exception):
        pass

    assert is_oom(CudaAPIError(2, "CUDA_ERROR_OUT_OF_MEMORY"))
    assert not is_oom(CudaAPIError(700, "CUDA_ERROR_ILLEGAL_ADDRESS"))
    assert is_oom(OutOfMemoryError("out of memory allocating 1 bytes"))
    assert not is_oom(MemoryError())


def _fake_kernel(reference):
    """A stand-in for a Numba CUDA dispatcher and its one compiled kernel, for FastLauncher:
    ``reference(types, args)`` plays ``_Kernel._prepare_args`` (the parameter values Numba
    would launch with); launches through it are recorded in ``.numba``."""

    class Array:  # Numba's type classes, by name (FastLauncher reads the names)
        ndim, layout = 1, "C"

        def __init__(self, dt):
            self.dt = dt

        def __str__(self):
            return f"array({self.dt})"

    class Integer:
        def __init__(self, name):
            self.name = name

        def __str__(self):
            return self.name

    class Boolean:
        def __str__(self):
            return "bool"

    sig = (Array("int32"), Integer("int64"), Boolean(), Integer("uint64"))

    class Compiled:
        argument_types = sig

        def _prepare_args(self, t, v, stream, retr, out):
            out.extend(reference(t, v))

        class _codelibrary:
            @staticmethod
            def get_cufunc():
                return type("F", (), {"kernel": "compiled k_demo"})()

    def k_demo():
        pass

    class Dispatcher:
        py_func = staticmethod(k_demo)
        numba = []
        overloads = {("a", "i", "b", "u"): Compiled()}

        def typeof_pyval(self, a):
            if hasattr(a, "ndim") and a.ndim == 1:
                return "a"
            return {bool: "b", int: "i"}.get(type(a), "u")

        def __getitem__(self, cfg):
            return lambda *args: self.numba.append((cfg, args))

    return Dispatcher()


class _FakeDeviceArray:
    def __init__(self, n, dtype, ptr, stride=None):
        import ctypes

        self.dtype, self.ndim, self.shape = np.dtype(dtype), 1, (n,)
        self.strides = (stride or self.dtype.itemsize,)
        self.device_ctypes_pointer = ctypes.c_size_t(ptr)


def test_fast_launch_only_where_its_parameters_are_numbas():
    """``gpu_engine.FastLauncher``: a kernel's first launch goes through Numba; then its
    parameter values are compared with Numba's own (``_Kernel._prepare_args``) for the same
    arguments, and only where equal item by item (value and kind) do later launches skip
    Numba; a difference, a non-contiguous array or a failed launch leaves Numba launching it
    (and says why). The values checked here are the layout numba-cuda 0.30.4's
    ``_prepare_args`` makes; on the GPU machine the comparison is against the real one."""
    import ctypes

    from gpu_tok.gpu_engine import FastLauncher, _same_params

    def numba_0304(t, v):  # numba-cuda 0.30.4's _prepare_args for these kinds of argument
        name = type(t).__name__
        if name == "Array":
            return [0, 0, v.shape[0], v.dtype.itemsize, v.device_ctypes_pointer.value, v.shape[0], v.strides[0]]
        if name == "Boolean":
            return [v]
        return [getattr(ctypes, f"c_{t}")(v)]

    arr = _FakeDeviceArray(10, np.int32, 0x7000)
    args = (arr, 5, True, np.uint64(2 ** 64 - 1))
    sent = []
    k = _fake_kernel(numba_0304)
    fl = FastLauncher(lambda stream, cfg, kern, *vals: sent.append((stream, cfg, kern, vals)),
                      lambda grid, block: ("cfg", grid, block))
    assert fl.launch(k, 3, 256, "s", args) and k.numba == [((3, 256, "s"), args)] and not sent
    assert fl.launch(k, 4, 256, "s", args) and fl.fast == 1 and len(k.numba) == 1
    stream, cfg, kern, vals = sent[0]
    assert (stream, cfg, kern) == ("s", ("cfg", (4, 1, 1), (256, 1, 1)), "compiled k_demo")
    types_ = k.overloads[("a", "i", "b", "u")].argument_types
    assert _same_params([x for t, v in zip(types_, args) for x in numba_0304(t, v)], list(vals)) == ""
    assert vals[:7] == (0, 0, 10, 4, 0x7000, 10, 4) and vals[8] is True
    assert type(vals[7]) is ctypes.c_int64 and vals[7].value == 5 and vals[9].value == 2 ** 64 - 1
    assert fl.refused == {}
    # a parameter Numba makes differently: refused, and Numba launches it from then on
    for differ in (lambda t, v: numba_0304(t, v)[:-1] if type(t).__name__ == "Array" else numba_0304(t, v),
                   lambda t, v: [np.int32(x) for x in numba_0304(t, v)] if type(t).__name__ == "Array"
                   else numba_0304(t, v),
                   lambda t, v: [ctypes.c_uint64(v)] if str(t) == "int64" else numba_0304(t, v)):
        k2 = _fake_kernel(differ)
        fl2 = FastLauncher(lambda *a: sent.append(a), lambda g, b: None)
        assert fl2.launch(k2, 1, 256, "s", args) and not fl2.launch(k2, 1, 256, "s", args)
        assert "k_demo" in fl2.refused and fl2.fast == 0
    # a strided array is left to Numba at once; a launch that fails hands it back to Numba
    k3 = _fake_kernel(numba_0304)
    fl3 = FastLauncher(lambda *a: sent.append(a), lambda g, b: None)
    assert not fl3.launch(k3, 1, 256, "s", (_FakeDeviceArray(10, np.int32, 0x7000, stride=8), 5, True, np.uint64(1)))
    assert k3.numba == []

    def broken(*a):
        raise RuntimeError("no")

    fl4 = FastLauncher(broken, lambda g, b: None)
    assert fl4.launch(k3, 1, 256, "s", args) and not fl4.launch(k3, 1, 256, "s", args)
    assert fl4.refused["k_demo"].startswith("launch failed")
    # Python ints and 8-byte NumPy integers are the same parameter; narrower ones are not
    assert _same_params([3, ctypes.c_int64(1)], [np.int64(3), ctypes.c_int64(1)]) == ""
    assert _same_params([3], [np.int32(3)]) and _same_params([ctypes.c_int64(1)], [ctypes.c_int64(2)])


@on_device
def test_device_launches_skip_numbas_argument_preparation():
    """On a real GPU every kernel of a batch takes ``FastLauncher``'s path (its parameters
    checked equal to Numba's own), with the same ids as ``device="cpu"``; on the simulator
    (no compiled kernels) the path is off."""
    from gpu_tok import gpu_engine as G

    texts = shorter_on_sim(bench_texts(20000)[:4]) + ["", "the cat é"]
    t = tok("gpt2")
    want = t.encode_batch_ids(texts, device="cpu")
    g = G._engine_for(t, "cuda", lambda be: G.GpuTokenizer(t, be))
    ids, rs = g.encode_ids(texts, False, None, True)
    ids, rs = g.encode_ids(texts, False, None, True)  # each kernel's second launch: the short path
    assert np.array_equal(np.asarray(rs), want.row_splits) and np.array_equal(np.asarray(ids), want.ids)
    fast = g.engine.be.fast
    if SIM:
        assert fast is None
        return
    assert fast is not None and fast.refused == {}, fast and fast.refused
    assert fast.fast >= 10
