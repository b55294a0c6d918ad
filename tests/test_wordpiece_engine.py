"""``device="cpu"`` for WordPiece and WordLevel files (``gpu_tok/fast_wordpiece.py``), against
the installed reference: ids with and without special tokens on random text through every
setting the engine serves, on the texts it sends to the reference path (added tokens,
non-starters the normalizer keeps) and on the cases of its split and its word cache.
The real bert-base-uncased goldens go through it in ``tests/test_cpu_engine.py``."""

from __future__ import annotations


import pytest
from hypothesis import given
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
if tokenizers.__version__ != "0.23.1":  # pragma: no cover
    pytest.skip(f"reference tokenizers==0.23.1 required, found {tokenizers.__version__}", allow_module_level=True)

import gpu_tok  # noqa: E402
from gpu_tok import fast_wordpiece  # noqa: E402
from gpu_tok.fast_wordpiece import CpuWordPieceEngine  # noqa: E402

from _small_bpe import NORMALIZERS, WP_ADDED, wordpiece_model, wordpiece_tokenizer_json  # noqa: E402
from test_components_vs_reference import _SETTINGS, _WP_CHARS, wp_texts  # noqa: E402

# a Mc non-starter BertNormalizer keeps (U+1D165, combining class 216) and a character whose
# NFD holds one (U+1D15F), next to marks it drops: canonical reordering decides their order
_KEPT_NON_STARTERS = ["\U0001d165", "\U0001d15f", "a\u0301\U0001d165\u0323", "e\U0001d165\U0001d16d\u0301x"]

_cache = {}


def _pair(key, js):
    if key not in _cache:
        ours = gpu_tok.Tokenizer.from_str(js)
        assert isinstance(ours._cpu_engine(), CpuWordPieceEngine), ours.cpu_engine_reason
        _cache[key] = (ours, tokenizers.Tokenizer.from_str(js))
    return _cache[key]


def _same_ids(ours, ref, texts):
    for add in (False, True):
        got = ours.encode_batch_ids(texts, add_special_tokens=add, device="cpu").to_list()
        want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=add)]
        assert got == want, [t for t, a, b in zip(texts, got, want) if a != b][:3]


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


def test_split_on_spaces_only_when_python_would_cut_elsewhere():
    """Without clean_text, U+001C..U+001F stay: white space for Python's str.split(), not for
    the reference; the engine then splits on spaces only."""
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS), normalizer="none", pre_tokenizer={"type": "WhitespaceSplit"})
    ours, ref = _pair(("nosplit",), js)
    assert ours._cpu_engine().exact_split
    _same_ids(ours, ref, ["a\x1cb", "a\x1f b", "hello\x1dworld", "a b"])
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS))
    ours, ref = _pair(("split",), js)
    assert not ours._cpu_engine().exact_split  # clean_text drops them
    _same_ids(ours, ref, ["a\x1cb", "a\x1f b"])


def test_word_cache_emptied_when_full(monkeypatch):
    monkeypatch.setattr(fast_wordpiece, "_CACHE_MAX", 3)
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS))
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    texts = ["hello world the unaffable words " * 3, "a b c d e f g", "hello again"] * 2
    _same_ids(ours, ref, texts)
    assert len(ours._cpu_engine().cache) <= 3


def test_long_chunks_are_encoded_and_not_kept(monkeypatch):
    """Chunks and pieces longer than _KEEP_CHARS are not kept (the caches are bounded by
    count, so their entries must be short); their ids are the reference's, next to kept
    ones and repeated in one text."""
    monkeypatch.setattr(fast_wordpiece, "_KEEP_CHARS", 8)
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS, max_chars=1000))
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    long = "unaffable" * 3 + ",hello"
    texts = [f"{long} hi {long} supercalifragilistic", "a" * 300, "hello " + "b" * 9]
    _same_ids(ours, ref, texts)
    eng = ours._cpu_engine()
    assert all(len(k) <= 8 for k in list(eng.cache) + list(eng.pieces)) and "hi" in eng.cache


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


def test_alphanumeric_chunks_skip_the_punctuation_split_only_when_exact():
    """The shortcut (str.isalnum(): no punctuation to isolate) holds for this Python's
    tables, and chunks give the same ids without it."""
    js = wordpiece_tokenizer_json(wordpiece_model(_WP_CHARS))
    ours, ref = _pair(("alnum",), js)
    eng = ours._cpu_engine()
    from gpu_tok.cpu_ref.unicode_props import is_punctuation

    assert eng._alnum_plain == (not any(chr(o).isalnum() and is_punctuation(chr(o)) for o in range(0x110000)))
    chunks = ["hello", "hello,", "東京", "a1b2", "x\u00b2", "don't", "\u0660\u0661", "ab\u05beba", "word\u2019s"]
    fast = [eng.chunk_ids(c) for c in chunks]
    was, eng._alnum_plain = eng._alnum_plain, False
    try:
        assert [eng.chunk_ids(c) for c in chunks] == fast
    finally:
        eng._alnum_plain = was
    _same_ids(ours, ref, chunks)
