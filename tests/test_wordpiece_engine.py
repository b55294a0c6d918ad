"""``device="cpu"`` for WordPiece and WordLevel files (``gpu_tok/fast_wordpiece.py``), against
the installed reference: ids, and every field of ``encode_batch`` (pairs too), with and
without special tokens on random text through every
setting the engine serves, on the texts it sends to the reference path (added tokens,
non-starters the normalizer keeps) and on the cases of its split and its word cache.
The real bert-base-uncased goldens go through it in ``tests/test_cpu_engine.py``."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
if tokenizers.__version__ != "0.23.1":  # pragma: no cover
    pytest.skip(f"reference tokenizers==0.23.1 required, found {tokenizers.__version__}", allow_module_level=True)

import gpu_tok  # noqa: E402
from _kept import kept_dict  # noqa: E402
from gpu_tok.fast_wordpiece import CpuWordPieceEngine  # noqa: E402

from _encodings import diff  # noqa: E402
from _small_bpe import NORMALIZERS, WP_ADDED, wordpiece_model, wordpiece_tokenizer_json  # noqa: E402
from test_components_vs_reference import _SETTINGS, _WP_CHARS, wp_texts  # noqa: E402

# a Mc non-starter BertNormalizer keeps (U+1D165, combining class 216) and a character whose
# NFD holds one (U+1D15F), next to marks it drops: canonical reordering decides their order
_KEPT_NON_STARTERS = ["\U0001d165", "\U0001d15f", "a\u0301\U0001d165\u0323", "e\U0001d165\U0001d16d\u0301x"]

_cache = kept_dict()


def _pair(key, js, engine=CpuWordPieceEngine):
    """Our tokenizer (served by ``engine``) and the reference's, kept by ``key``."""
    if key not in _cache:
        ours = gpu_tok.Tokenizer.from_str(js)
        assert isinstance(ours._cpu_engine(), engine), ours.cpu_engine_reason
        _cache[key] = (ours, tokenizers.Tokenizer.from_str(js))
    return _cache[key]


def _same_ids(ours, ref, texts):
    """encode_batch_ids, and every field of encode_batch (pairs too), on device="cpu"."""
    batch = texts + [(texts[i], texts[-1 - i]) for i in range(len(texts))]
    for add in (False, True):
        got = ours.encode_batch_ids(texts, add_special_tokens=add, device="cpu").to_list()
        want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=add)]
        assert got == want, [t for t, a, b in zip(texts, got, want) if a != b][:3]
        for item, a, b in zip(batch, ours.encode_batch(batch, add_special_tokens=add, device="cpu"),
                              ref.encode_batch(batch, add_special_tokens=add)):
            d = diff(a, b)
            assert d is None, (item, d)


_SERVED = [
    ("Bert", {"type": "BertPreTokenizer"}),
    ("BertCased", {"type": "BertPreTokenizer"}),
    ("BertNoClean", {"type": "BertPreTokenizer"}),
    ("BertStripNoLower", {"type": "BertPreTokenizer"}),
    ("BertLowerNoStrip", {"type": "WhitespaceSplit"}),
    ("BertAllOff", {"type": "BertPreTokenizer"}),
    ("Lowercase", {"type": "BertPreTokenizer"}),
    ("none", {"type": "WhitespaceSplit"}),
]


@pytest.mark.parametrize("normalizer,pre", _SERVED, ids=[f"{n}-{p['type']}" for n, p in _SERVED])
@_SETTINGS
@given(texts=st.lists(st.one_of(wp_texts, st.sampled_from(_KEPT_NON_STARTERS)), min_size=1, max_size=4))
def test_engine_equals_reference(normalizer, pre, texts):
    for name, model in (("wp", wordpiece_model(_WP_CHARS, max_chars=12)),
                        ("wl", {"type": "WordLevel", "vocab": wordpiece_model(_WP_CHARS)["vocab"], "unk_token": "[UNK]"})):
        js = wordpiece_tokenizer_json(model, normalizer=NORMALIZERS[normalizer] or "none", pre_tokenizer=pre)
        ours, ref = _pair((name, normalizer, pre["type"]), js)
        _same_ids(ours, ref, texts)


def test_kept_non_starters_are_reordered_as_the_reference_does():
    """Two non-starters BertNormalizer keeps (U+1D16D, class 226, before U+1D165, class 216):
    NFD puts them in class order, so the piece is the vocabulary's entry; the order of the
    text would be [UNK]. Such texts take the reference path."""
    model = wordpiece_model(_WP_CHARS)
    for t in ("a\U0001d165\U0001d16d", "\U0001d165\U0001d16d"):
        model["vocab"].setdefault(t, len(model["vocab"]))
    js = wordpiece_tokenizer_json(model)
    ours, ref = _pair(("reorder",), js)
    texts = ["a\U0001d16d\U0001d165", "a\U0001d16d\u0301\U0001d165 b", "x \U0001d16d\U0001d165", "A\U0001d16d\U0001d165"]
    unk = ref.token_to_id("[UNK]")
    assert all(unk not in e.ids for e in ref.encode_batch(texts, add_special_tokens=False))  # the rule shows
    _same_ids(ours, ref, texts)


def test_texts_with_kept_non_starters_are_checked_for_a_reordering():
    """A text holding a non-starter BertNormalizer keeps goes to the reference path only when
    NFD would move one (``kernels.wordpiece_cpu._order_ok``: a kept non-starter after one of
    a higher class in the same run of non-starters); else the kernels rewrite it. The
    paths asserted on chosen texts, then random strings of kept non-starters of five
    classes, dropped marks (non-starters, and a starter), a character clean_text drops
    before NFD, characters whose NFD starts with a starter, letters and spaces: with every
    one of those characters a token, any wrong order shows in the ids; equal to the
    reference under three normalizers."""
    import random


    kept = ["\ua9c0", "\U0001e94a", "\U0001d165", "\U0001d16d", "\u08d4"]  # classes 9, 7, 216, 226, 230 (kept)
    pool = kept + ["\u0301", "\u0323", "\u0e31", "\x01", "\U0001d15f", "\U0001d160", "\u00e9", "a", "x", " "]
    model = wordpiece_model(_WP_CHARS)
    for c in pool + ["\U0001d158"]:
        if c.strip():
            model["vocab"].setdefault(c, len(model["vocab"]))
            model["vocab"].setdefault("##" + c, len(model["vocab"]))
    chosen = {  # text: whether it takes the reference path (NFD moves a kept non-starter)
        "a\U0001d165\U0001d16d": False, "a\U0001d16d\U0001d165": True,
        "a\U0001d16d\x01\U0001d165": True,  # clean_text drops \x01 before NFD: one run
        "a\U0001d16d\u0301\U0001d165": True, "a\U0001d16d\u0e31\U0001d165": False,  # U+0E31: a starter
        "\U0001d16d\U0001d15f": False, "\U0001d15f\ua9c0": True, "\ua9c0\U0001d15f": False,
        "\U0001e94a\U0001e94a\ua9c0": False, "x\u08d4 \U0001d165": False, "x\u08d4\U0001d165": True,
    }
    rng = random.Random(25)
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    for normalizer in ("Bert", "BertStripNoLower", "BertNoClean"):
        js = wordpiece_tokenizer_json(model, normalizer=NORMALIZERS[normalizer])
        ours, ref = _pair(("kept-order", normalizer), js)
        eng = ours._cpu_engine()
        assert len(eng._order_tables()[1]) > 0
        status = eng._packed_run(list(chosen) + texts, 1)[0]
        if normalizer != "BertNoClean":  # there \x01 stays: a starter between the two
            assert status[:len(chosen)].tolist() == [int(v) for v in chosen.values()]
        assert 0 < np.count_nonzero(status[len(chosen):]) < len(texts)
        _same_ids(ours, ref, list(chosen) + texts)


def test_added_tokens_raw_and_normalized_send_the_text_to_the_reference():
    """A normalized added token ("HeLLo" matches "hello" after Lowercase) and raw ones with
    lstrip / rstrip / single_word: found in the text, whole texts take the reference path."""
    added = WP_ADDED + [
        {"id": 0, "content": "HeLLo", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
        {"id": 0, "content": "wor", "single_word": True, "lstrip": False, "rstrip": True, "normalized": False, "special": False},
    ]
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS), added=added)
    ours, ref = _pair(("added",), js)
    _same_ids(ours, ref, ["say HELLO", "hello world", "xhelloy", "a wor b", "aworb", "[MASK] x", "a  [MASK]", "[CLS]",
                          "HeLLo[SEP]", "plain text", ""])


def test_only_the_references_white_space_cuts():
    """Without clean_text, U+001C..U+001F stay inside words (Python's str.split() would cut
    there; the reference does not)."""
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS), normalizer="none", pre_tokenizer={"type": "WhitespaceSplit"})
    ours, ref = _pair(("nosplit",), js)
    _same_ids(ours, ref, ["a\x1cb", "a\x1f b", "hello\x1dworld", "a b", "a\u3000b\u0085c"])


def test_word_cache_threads_and_long_pieces():
    """The same ids from the kept word cache (a second pass), from a caller's own cache
    (another call holds the kept one), serially and on two threads, for pieces the cache
    does not keep (over 15 bytes, over 6 ids) next to ones it does."""
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS, max_chars=1000))
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    words = ["hello", "world", "unaffable", "supercalifragilistic", "supercalifragilisticsupercali", "abcdefgh",
             "東京都", "x,y", "don't", "a" * 40, "hellohellohellohello"]
    texts = [" ".join(words[(k * 7 + j) % len(words)] for j in range(k % 50 + 1)) for k in range(3000)]
    want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    for threads in (1, 2, 1):
        assert ours.encode_batch_ids(texts, add_special_tokens=False, device="cpu", num_threads=threads).to_list() == want
    eng = ours._cpu_engine()
    with eng._lock:  # held elsewhere: this call uses a cache of its own
        assert ours.encode_batch_ids(texts[:50], add_special_tokens=False, device="cpu").to_list() == want[:50]


def test_two_threads_on_blocks_of_unequal_documents(monkeypatch):
    """Documents of very unequal sizes (a few long, many short, some the reference path
    encodes) on two threads: the kernels take blocks of documents of about equal bytes
    from the work queue (``_blocks``, ``workqueue.take_range``); ids and every field of
    ``encode_batch`` equal the reference's, as on one thread."""
    from gpu_tok import fast_cpu

    monkeypatch.setattr(fast_cpu, "_PARALLEL_MIN_BYTES", 0)
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS, max_chars=1000))
    ours, ref = _pair(("blocks",), js)
    words = ["hello", "world,", "unaffable", "東京都", "x.y", "don't", "a" * 30, "caf\u00e9"]
    texts = [" ".join(words[(k * 5 + j) % len(words)] for j in range(1 + (k % 7) * (k % 5) ** 3)) for k in range(400)]
    texts[3] = texts[3] + " \U0001d15f"  # a kept non-starter: the document is checked for a reordering
    texts[7] = " ".join(words * 2000)  # one long document
    eng = ours._cpu_engine()
    data, offsets = fast_cpu.pack(texts, None)
    blocks, nw = eng._blocks(offsets, True, 2)
    assert nw == 2 and blocks[0] == 0 and blocks[-1] == len(texts) and blocks.shape[0] > 8
    assert np.all(np.diff(blocks) > 0)
    want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    for threads in (2, 1):
        got = ours.encode_batch_ids(texts, add_special_tokens=False, device="cpu", num_threads=threads).to_list()
        assert got == want, threads
        for k, (a, b) in enumerate(zip(ours.encode_batch(texts, add_special_tokens=False, device="cpu",
                                                         num_threads=threads),
                                       ref.encode_batch(texts, add_special_tokens=False))):
            assert diff(a, b) is None, (threads, k, diff(a, b))


def test_word_cache_sets_of_two_written_over(monkeypatch):
    """A word cache of two sets of two entries (``wordpiece_cpu.cache_get``: the entry
    found second swapped to the front, a new one put in front), so that words take each
    other's places all the time: three passes over many short words, each pass's ids equal
    to the reference's, one thread and two."""
    import random

    from gpu_tok import fast_wordpiece

    monkeypatch.setattr(fast_wordpiece, "_CACHE_SLOTS", 4)
    monkeypatch.setattr(fast_wordpiece, "_CACHE_SLOTS_FIRST", 4)
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS, max_chars=1000))
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    rng = random.Random(5)
    words = ["hello", "world", "un", "aff", "able", "x,y", "don't", "\u6771\u4eac", "abc", "de"]
    words += ["".join(rng.choice("abcdehlowrnu") for _ in range(rng.randint(1, 9))) for _ in range(60)]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) for _ in range(300)]
    want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    eng = ours._cpu_engine()
    eng._wc = None
    for threads in (1, 2, 1):
        assert ours.encode_batch_ids(texts, add_special_tokens=False, device="cpu", num_threads=threads).to_list() == want
    assert eng._wc.shape[1] == 4  # the tiny cache was the one used


def test_word_cache_grows_after_the_engine_has_encoded_enough(monkeypatch):
    """The kept word cache starts with ``_CACHE_SLOTS_FIRST`` entries and is made anew with
    ``_CACHE_SLOTS`` once the engine has encoded ``_CACHE_GROW_BYTES`` of text; the ids equal
    the reference's before, at and after the change."""
    from gpu_tok import fast_wordpiece

    monkeypatch.setattr(fast_wordpiece, "_CACHE_SLOTS_FIRST", 8)
    monkeypatch.setattr(fast_wordpiece, "_CACHE_SLOTS", 64)
    monkeypatch.setattr(fast_wordpiece, "_CACHE_GROW_BYTES", 5000)
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS, max_chars=1000))
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    texts = [" ".join(["hello", "world", "unaffable", "x,y", "don't"][(k + j) % 5] for j in range(k % 9 + 1))
             for k in range(60)]
    size = sum(len(t.encode()) for t in texts)
    assert 1000 < size < 2500
    want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    eng = ours._cpu_engine()
    shapes = []
    for _ in range(4):
        assert ours.encode_batch_ids(texts, add_special_tokens=False, device="cpu", num_threads=1).to_list() == want
        shapes.append(eng._wc.shape[1])
    assert shapes[0] == 8 and shapes[-1] == 64 and shapes == sorted(shapes), shapes


@pytest.mark.parametrize("which", ["sample", pytest.param("all", marks=pytest.mark.full)])
def test_compiled_rewrite_is_the_reference_normalizer(which):
    """The kernels' table (what each code point becomes) against ``rewrite``, which runs the
    reference normalizer on the character: on every 13th code point the table was built
    from, every 97th one and the first 256 (``--full``: all), for the normalizers served."""

    for normalizer in ("Bert", "BertCased", "BertNoClean", "BertStripNoLower", "BertNoChinese", "Lowercase", "none"):
        js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS), normalizer=NORMALIZERS[normalizer] or "none")
        eng = gpu_tok.Tokenizer.from_str(js)._cpu_engine()
        kind, rep_idx, rep_off, rep_bytes = eng._compiled()[:4]
        cps = range(0x110000) if which == "all" else sorted(
            set(range(0, 0x110000, 97)) | set(range(256)) | set(sorted(eng._rewrite_candidates())[::13]))
        bad = []
        for o in cps:
            if 0xD800 <= o <= 0xDFFF:
                continue
            c = chr(o)
            k = int(kind[o])
            got = {0: c, 1: "", 2: " ", 3: "\U0010ffff", 5: f" {c} "}.get(k)
            if k in (4, 6):
                r = int(rep_idx[o])
                got = bytes(rep_bytes[rep_off[r]:rep_off[r + 1]]).decode("utf-8")
            if got != eng.rewrite(c):
                bad.append(hex(o))
        assert not bad, f"{normalizer}: {len(bad)} code points differ: {bad[:10]}"
        assert np.count_nonzero(kind) > 0


def test_served_and_not_served():
    """What the engine takes; the rest runs the reference path (and says why); the GPU
    engine does not serve these models, device="auto" runs this engine."""
    model = wordpiece_model(_WP_CHARS)
    for normalizer, pre in (({"type": "NFC"}, None), (None, {"type": "Whitespace"}), (None, "none")):
        tok = gpu_tok.Tokenizer.from_str(wordpiece_tokenizer_json(model, normalizer=normalizer, pre_tokenizer=pre))
        assert tok._cpu_engine() is None and tok.cpu_engine_reason
        ref = tokenizers.Tokenizer.from_str(wordpiece_tokenizer_json(model, normalizer=normalizer, pre_tokenizer=pre))
        _same_ids(tok, ref, ["hello world", "東京 x"])
    tok = gpu_tok.Tokenizer.from_str(wordpiece_tokenizer_json(model))
    assert tok.cpu_engine_reason is None
    assert tok.encode_batch_ids(["hello"], device="auto").to_list() == tok.encode_batch_ids(["hello"], device="cpu").to_list()
    from gpu_tok.gpu_engine import GpuTokenizer, NotServedOnDevice, TwinBackend

    with pytest.raises(NotServedOnDevice, match="WordPiece"):
        GpuTokenizer(tok, TwinBackend())


def test_bad_input_as_the_reference_path():
    tok = gpu_tok.Tokenizer.from_str(wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS)))
    with pytest.raises(gpu_tok.InvalidText):
        tok.encode_batch_ids(["ok", "a\ud800b"], device="cpu")
    with pytest.raises(TypeError):
        tok.encode_batch_ids(["ok", 3], device="cpu")
    missing = wordpiece_model("abc", with_unk=False)
    tok = gpu_tok.Tokenizer.from_str(wordpiece_tokenizer_json(missing, added=[]))
    assert tok.encode_batch_ids(["abc a"], add_special_tokens=False, device="cpu").to_list() == [
        tokenizers.Tokenizer.from_str(wordpiece_tokenizer_json(missing, added=[])).encode("abc a", add_special_tokens=False).ids]
    with pytest.raises(ValueError, match="unk_token"):
        tok.encode_batch_ids(["abx"], device="cpu")


def test_real_bert_on_the_parity_corpus_slice():
    """bert-base-uncased through the engine on a slice of every parity file (the goldens
    hold excerpts; this holds whole chunks), against the reference."""
    from _paths import model_file, parity_files, read_text_exact

    p = model_file("bert-base-uncased")
    if not p.is_file():
        pytest.skip(f"model bert-base-uncased not available at {p}")
    files = parity_files()
    if not files:
        pytest.skip("no parity corpus")
    texts = []
    for f in files:
        try:
            s = read_text_exact(f)
        except UnicodeDecodeError:  # the invalid-UTF-8 samples: not text
            continue
        texts += [s[k:k + 2000] for k in range(0, min(len(s), 6000), 2000)]
    ours, ref = gpu_tok.Tokenizer.from_file(p), tokenizers.Tokenizer.from_file(str(p))
    assert isinstance(ours._cpu_engine(), CpuWordPieceEngine)
    _same_ids(ours, ref, texts)
    assert len(texts) > 100
