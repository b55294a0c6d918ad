"""The compiled BPE kernel (gpu_tok/kernels/bpe_cpu.py) and its merge hash table (hash_table.py).

Oracle: ``cpu_ref.models.BPEModel.merge_word`` (``tokenize`` where ``ignore_merges``
applies), compared on token ids and UTF-8 byte spans, for

* the small byte-level BPE and the small SentencePiece-style BPE of tests/_small_bpe.py
  (byte_fallback, fused / unfused / absent unk) on random strings;
* real vocabularies (gpt2, llama3 with ignore_merges, llama2 and gemma3 with byte_fallback)
  on the pieces that the reference pipeline cuts from parity-corpus files;
* random, inconsistent merge tables (duplicate ranks, arbitrary results) drawn by hypothesis,
  which exercise the stale-entry rule where it is least forgiving;
* single pieces of 100,000 characters (no quadratic blow-up).
"""
from __future__ import annotations

import random
import time

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _paths import model_file, parity_files, read_text_exact  # noqa: E402
from _small_bpe import bpe_model, sp_model  # noqa: E402

from gpu_tok import config as C  # noqa: E402
from gpu_tok.cpu_ref.models import BPEModel  # noqa: E402
from gpu_tok.kernels import hash_table as H  # noqa: E402
from gpu_tok.kernels.bpe_cpu import bpe_packed, pieces_to_symbols, unpack_tokens  # noqa: E402
from gpu_tok.loader import load_file, parse_model  # noqa: E402


# ------------------------------------------------------------------ helpers
def _model(m: dict) -> BPEModel:
    return BPEModel(parse_model(m))


def _expected(model: BPEModel, piece: str):
    """The reference's tokens of one piece as (id, start, end)."""
    if model.cfg.ignore_merges:
        return [(t.id, t.start, t.end) for t in model.tokenize(piece)]
    return model.merge_word(piece)


def _check(model: BPEModel, pieces, table=None, both=True):
    keys, values = table if table is not None else H.build_merge_table(model.merges)
    sym, lens, starts = pieces_to_symbols(model, pieces)
    memo = {}
    want = []
    for p in pieces:
        if p not in memo:
            memo[p] = _expected(model, p)
        want.append(memo[p])
    for parallel in ((True, False) if both else (None,)):
        ids, tlens, pts = bpe_packed(sym, lens, starts, keys, values, parallel=parallel)
        assert ids.dtype == np.int32 and tlens.dtype == np.int32 and pts.dtype == np.int64
        assert pts.shape == (len(pieces) + 1,)
        got = unpack_tokens(ids, tlens, pts)
        for p, g, w in zip(pieces, got, want):
            assert g == w, (parallel, p[:200])


_BL_ALPHABET = "therinadloĠÃ©123Ċx"  # byte-level characters of the small model, merges among them
_SP_ALPHABET = "\u2581theinrlo12é€xyzQ?"  # '€' is not in the small SP vocab: byte fallback / unk


def _random_pieces(alphabet, n, max_len, seed):
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, max_len))) for _ in range(n)]


# ------------------------------------------------------------------ (e) the hash table
def test_hash_table_finds_every_key_and_no_other():
    rng = np.random.default_rng(0)
    n = 200_000
    pairs = np.unique(rng.integers(0, 300_000, size=(n, 2)), axis=0)
    n = pairs.shape[0]
    rank = rng.permutation(n)
    merged = rng.integers(0, 2**31 - 1, size=n)
    keys, values = H.build_merge_table((pairs[:, 0], pairs[:, 1], rank, merged))
    cap = keys.shape[0]
    assert cap & (cap - 1) == 0 and n <= cap // 2
    assert keys.dtype == np.uint64 and values.dtype == np.uint64
    assert int((keys != H.EMPTY).sum()) == n
    for j in rng.choice(n, 2000, replace=False):
        v = H.lookup(keys, values, H.pair_key(pairs[j, 0], pairs[j, 1]))
        assert v != H.EMPTY
        assert H.value_rank(v) == rank[j] and H.value_id(v) == merged[j]
    present = set(map(tuple, pairs.tolist()))
    absent = [(a, b) for a, b in rng.integers(0, 400_000, size=(3000, 2)).tolist() if (a, b) not in present]
    for a, b in absent:
        assert H.lookup(keys, values, H.pair_key(a, b)) == H.EMPTY
    # the whole table through compiled code, as other kernels use it
    from numba import njit

    @njit
    def all_found(keys, values, left, right, rank, merged):
        bad = 0
        for j in range(left.shape[0]):
            v = H.lookup(keys, values, H.pair_key(left[j], right[j]))
            if v == H.EMPTY or H.value_rank(v) != rank[j] or H.value_id(v) != merged[j]:
                bad += 1
        return bad

    assert all_found(keys, values, pairs[:, 0], pairs[:, 1], rank, merged) == 0


def test_pair_filter_never_misses_a_merge(monkeypatch):
    """``pair_filter``: a power-of-two number of words, about 8 bits a merge (at least 2^12
    bits, at most 2^22), every merge's bit set. ``lookup_cached`` through a pair cache that
    carries it gives ``lookup2``'s value for every merge and for pairs without one, read
    once and again (from the pair cache); most of those pairs are answered by a clear bit;
    and the filter is read (all bits cleared: a merge is answered ``EMPTY``)."""
    from numba import njit

    rng = np.random.default_rng(5)
    pairs = np.unique(rng.integers(0, 300_000, size=(200_000, 2)), axis=0)
    n = pairs.shape[0]
    mtab = H.interleave(*H.build_merge_table((pairs[:, 0], pairs[:, 1], rng.permutation(n),
                                               rng.integers(0, 2**31 - 1, size=n))))
    filt = H.pair_filter(mtab)
    bits = 64 * filt.shape[0]
    assert bits & (bits - 1) == 0 and 8 * n <= bits < 16 * n
    present = set(map(tuple, pairs.tolist()))
    absent = np.array([p for p in rng.integers(0, 300_000, size=(50_000, 2)).tolist() if tuple(p) not in present])

    @njit
    def same(mtab, pc, left, right):
        bad = 0
        clear = 0
        nf = pc.shape[0] - H.PAIR_CACHE_LEN
        for _ in range(2):
            for j in range(left.shape[0]):
                key = (np.uint64(left[j]) << np.uint64(32)) | np.uint64(right[j])
                if H.lookup_cached(mtab, pc, key) != H.lookup2(mtab, key):
                    bad += 1
                if nf > 0:
                    b = H._filter_bit(key * H._GOLD, nf)
                    clear += ((pc[H.PAIR_CACHE_LEN + np.int64(b >> np.uint64(6))] >> (b & np.uint64(63)))
                              & np.uint64(1)) == 0
        return bad, clear

    pc = H.new_pair_cache(filt)
    assert pc.shape[0] == H.PAIR_CACHE_LEN + filt.shape[0] and np.array_equal(pc[H.PAIR_CACHE_LEN:], filt)
    assert same(mtab, pc, pairs[:, 0], pairs[:, 1]) == (0, 0)
    bad, clear = same(mtab, pc, absent[:, 0], absent[:, 1])
    assert bad == 0 and clear > 2 * 0.8 * absent.shape[0]
    assert same(mtab, H.new_pair_cache(), absent[:, 0], absent[:, 1]) == (0, 0)  # no filter: probes only
    blind = H.new_pair_cache(np.zeros_like(filt))
    key = (np.uint64(pairs[0, 0]) << np.uint64(32)) | np.uint64(pairs[0, 1])
    assert H.lookup2(mtab, key) != H.EMPTY and same(mtab, blind, pairs[:1, 0], pairs[:1, 1])[0] == 2
    small = H.interleave(*H.build_merge_table([(1, 2, 0, 7), (7, 3, 1, 8)]))
    assert H.pair_filter(small).shape[0] == 64  # 2^12 bits
    monkeypatch.setattr(H, "_FILTER_MAX_BITS", 18)  # the cap: fewer bits than 8 a merge, still no miss
    capped = H.pair_filter(mtab)
    assert capped.shape[0] == 1 << 12 and same(mtab, H.new_pair_cache(capped), pairs[:, 0], pairs[:, 1]) == (0, 0)


def test_hash_table_input_forms_duplicates_and_limits():
    d = {(1, 2): (0, 10), (2, 3): (1, 11), (0, 0): (2, 12), (2**32 - 1, 0): (3, 2**32 - 1)}
    tables = [H.build_merge_table(d), H.build_merge_table(list(d.items())),
              H.build_merge_table([(a, b, r, m) for (a, b), (r, m) in d.items()]),
              H.build_merge_table(np.array([(a, b, r, m) for (a, b), (r, m) in d.items()]))]
    for keys, values in tables:
        assert keys.shape == (8,)
        for (a, b), (r, m) in d.items():
            v = H.lookup(keys, values, np.uint64(H.pair_key(a, b)))
            assert (H.value_rank(v), H.value_id(v)) == (r, m)
        assert H.lookup(keys, values, H.pair_key(2, 1)) == H.EMPTY
    # a later duplicate wins, as in a dict built from the same pairs
    keys, values = H.build_merge_table([(1, 2, 5, 7), (1, 2, 6, 8)])
    v = H.lookup(keys, values, H.pair_key(1, 2))
    assert (H.value_rank(v), H.value_id(v)) == (6, 8)
    # empty table
    keys, values = H.build_merge_table({})
    assert H.lookup(keys, values, H.pair_key(0, 0)) == H.EMPTY
    for bad in ([(-1, 0, 0, 0)], [(0, 2**32, 0, 0)], [(0, 0, 2**32 - 1, 0)], [(2**32 - 1, 2**32 - 1, 0, 0)]):
        with pytest.raises(ValueError):
            H.build_merge_table(bad)


def test_njit_cached_falls_back_when_no_cache_location(monkeypatch):
    from numba.core.dispatcher import Dispatcher

    def refuse(self):
        raise RuntimeError("cannot cache function: no locator available")

    monkeypatch.setattr(Dispatcher, "enable_caching", refuse)

    @H.njit_cached
    def f(x):
        return x + 1

    assert f(1) == 2


# ------------------------------------------------------------------ (a) small models, random strings
def test_small_byte_level_random_pieces():
    model = _model(bpe_model())
    pieces = _random_pieces(_BL_ALPHABET, 3000, 40, 1) + ["", "t", "the", "Ġthe" * 50, "ĠĠĠĠĠĠĠ", "ell" * 30]
    _check(model, pieces)


@pytest.mark.parametrize("options", [
    {}, {"fuse_unk": False}, {"byte_fallback": False}, {"byte_fallback": False, "fuse_unk": False},
    {"byte_fallback": False, "unk_token": None}, {"ignore_merges": True},
])
def test_small_sentencepiece_random_pieces(options):
    model = _model(sp_model(**options))
    pieces = _random_pieces(_SP_ALPHABET, 1500, 30, 2) + ["", "€€€", "\u2581hello", "\u2581hell", "é" * 20]
    _check(model, pieces)


# ------------------------------------------------------------------ (c) property test, random tables
_N_CHARS = 5


def _random_table_model(table):
    vocab = {chr(ord("a") + i): i for i in range(_N_CHARS)}
    cfg = C.BPE(vocab=vocab, merges=(), path="test")
    return BPEModel(cfg, merges=table)


@st.composite
def _tables_and_pieces(draw):
    # dense tables over few ids: stale queue entries whose position now holds a different
    # mergeable pair are common (a kernel without the merged-id check fails within a few examples)
    n_ids = draw(st.integers(_N_CHARS, 9))
    ids = st.integers(0, n_ids - 1)
    entries = draw(st.lists(st.tuples(ids, ids, st.integers(0, 12), ids), min_size=10, max_size=60))
    table = {(a, b): (r, m) for a, b, r, m in entries}
    alphabet = "".join(chr(ord("a") + i) for i in range(_N_CHARS))
    pieces = draw(st.lists(st.text(alphabet=alphabet, min_size=2, max_size=30), min_size=1, max_size=12))
    return table, pieces


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tables_and_pieces())
def test_property_random_merge_tables(tp):
    """Arbitrary tables: duplicate ranks, results that re-form earlier ids; only the tuple order decides."""
    table, pieces = tp
    model = _random_table_model(table)
    _check(model, pieces, table=H.build_merge_table(table), both=False)


def test_seeded_dense_random_merge_tables():
    """The same as the property test, deterministic: 300 dense random tables."""
    rng = random.Random(3)
    for _ in range(300):
        n_ids = rng.randint(_N_CHARS, 9)
        table = {}
        for _ in range(rng.randint(0, 60)):
            table[(rng.randrange(n_ids), rng.randrange(n_ids))] = (rng.randint(0, 20), rng.randrange(n_ids))
        pieces = _random_pieces("abcde", 6, 30, rng.random())
        _check(_random_table_model(table), pieces, table=H.build_merge_table(table), both=False)


@settings(max_examples=100, deadline=None, database=None)
@given(st.lists(st.text(alphabet=_SP_ALPHABET + "\u0000\U0001F600", max_size=40), max_size=20))
def test_property_sentencepiece_text(pieces):
    _check(_SP_MODEL, pieces, both=False)


_SP_MODEL = _model(sp_model())


# ------------------------------------------------------------------ (b) real vocabularies
_REAL = ["gpt2", "llama3", "llama2", "gemma3"]


def _corpus_texts():
    files = parity_files()
    if not files:
        return None
    chosen = files[::12] + [f for f in files if "naughty" in f.as_posix()]
    texts = []
    for f in chosen:
        for line in read_text_exact(f)[:8000].splitlines(keepends=True):
            texts.append(line)
    return texts


def _ref_pieces(pipe, text):
    from gpu_tok.cpu_ref.pre_tokenizers import pre_tokenize

    pts = pipe.added.extract_and_normalize(text, pipe._normalize)
    if pipe.cfg.pre_tokenizer is not None:
        pre_tokenize(pipe.cfg.pre_tokenizer, pts)
    return [sp.normalized.text for sp in pts.splits if sp.tokens is None]


@pytest.fixture(scope="module")
def corpus_texts():
    texts = _corpus_texts()
    if not texts:
        pytest.skip("no parity corpus (set GPU_TOK_CORPORA to the folder holding parity/)")
    return texts


@pytest.mark.parametrize("name", _REAL)
def test_real_vocabulary_on_corpus_pieces(name, corpus_texts):
    path = model_file(name)
    if not path.is_file():
        pytest.skip(f"model {name!r} not available: {path} does not exist")
    from gpu_tok.cpu_ref.pipeline import RefPipeline

    pipe = RefPipeline(load_file(path))
    model = pipe.model
    pieces = []
    for t in corpus_texts:
        pieces.extend(_ref_pieces(pipe, t))
    assert len(pieces) > 1000
    if name == "llama3":
        assert model.cfg.ignore_merges
        assert any(p in model.vocab for p in pieces) and any(p not in model.vocab for p in pieces)
    if name in ("llama2", "gemma3"):
        assert model.cfg.byte_fallback
    table = H.merge_table_from_model(model)
    _check(model, pieces, table=table)
    if name == "llama2":  # no pre-tokenizer: a whole text is one long piece with byte fallback
        whole = _ref_pieces(pipe, "".join(corpus_texts[:4000]))
        assert len(whole) == 1 and len(whole[0]) > 50_000
        _check(model, whole, table=table)


# ------------------------------------------------------------------ (d) long single pieces
@pytest.fixture(scope="module")
def gpt2_or_small():
    path = model_file("gpt2")
    if path.is_file():
        return BPEModel(load_file(path).model)
    return _model(bpe_model())


@pytest.mark.parametrize("piece", ["a" * 100_000, "ab" * 50_000, "Ġthe" * 25_000])
def test_long_single_piece_not_quadratic(gpt2_or_small, piece):
    model = gpt2_or_small
    table = H.build_merge_table(model.merges)
    sym, lens, starts = pieces_to_symbols(model, [piece])
    bpe_packed(sym[:10], lens[:10], np.array([0, 10]), *table)  # compiled already
    t = time.perf_counter()
    ids, tlens, pts = bpe_packed(sym, lens, starts, *table)
    elapsed = time.perf_counter() - t
    assert unpack_tokens(ids, tlens, pts) == [model.merge_word(piece)]
    # n log n takes milliseconds here; a quadratic scan over 1e5 symbols would take minutes
    assert elapsed < 2.0, elapsed
