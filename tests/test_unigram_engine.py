"""``device="cpu"`` for Unigram files (``gpu_tok/fast_unigram.py``), against the installed
reference: ids with and without special tokens on random text through every setting the
engine serves (Precompiled rules or none; WhitespaceSplit + Metaspace, Metaspace with and
without the prepended "▁"; the model's options), on charsmaps of our own with the texts
that cut grapheme clusters in every way the grapheme probes found, and on the texts it
sends to the reference path. The real t5-small goldens go through it in
``tests/test_cpu_engine.py``."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
if tokenizers.__version__ != "0.23.1":  # pragma: no cover
    pytest.skip(f"reference tokenizers==0.23.1 required, found {tokenizers.__version__}", allow_module_level=True)

import gpu_tok  # noqa: E402
from gpu_tok.fast_unigram import CpuUnigramEngine  # noqa: E402

from _charsmap import build_charsmap  # noqa: E402
from _small_unigram import UNIGRAM_ADDED, precompiled, unigram_model, unigram_tokenizer_json  # noqa: E402
from test_components_vs_reference import _RULE_CHARS, _SETTINGS, uni_texts  # noqa: E402
from test_graphemes import GEN  # noqa: E402
from test_wordpiece_engine import _pair as _wp_pair, _same_ids  # noqa: E402



def _pair(key, js):
    return _wp_pair(("unigram",) + key, js, CpuUnigramEngine)


_OPTIONS = [{}, {"seed": 2, "unk_id": 1}, {"seed": 3, "positive": True}, {"seed": 4, "dup": True},
            {"seed": 5, "byte_fallback": True, "bytes_present": range(256)},
            {"seed": 6, "byte_fallback": True, "bytes_present": range(0, 256, 2)}]


@pytest.mark.parametrize("options", _OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()
                                                                     if k != "bytes_present") or "default")
@pytest.mark.parametrize("pre", ["t5", "metaspace", "metaspace-first", "metaspace-never"])
@pytest.mark.parametrize("normalizer", ["rules", "none"])
@_SETTINGS
@given(texts=st.lists(uni_texts, min_size=1, max_size=4))
def test_engine_equals_the_reference(options, pre, normalizer, texts):
    js = unigram_tokenizer_json(unigram_model(**options), pre_tokenizer=pre,
                                normalizer=None if normalizer == "rules" else "none")
    ours, ref = _pair(("uni", json.dumps(options, sort_keys=True, default=list), pre, normalizer), js)
    _same_ids(ours, ref, texts)


def _char_model(chars):
    vocab = [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0]] + [[c, -1.0 - (i % 3)] for i, c in enumerate(chars)]
    return {"type": "Unigram", "unk_id": 0, "vocab": vocab + [["X0X1", -1.5], ["\u2581X", -2.0]]}


def _same_ids_under_rules(rules, chars, pres, texts):
    """Through the Precompiled ``rules`` and each pre-tokenizer of ``pres``, a character-level
    model over ``chars``: the engine serves it and its ids are the reference's."""
    norm = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(build_charsmap(rules)).decode()}
    for pre in pres:
        js = unigram_tokenizer_json(_char_model(sorted(set(chars))), normalizer=norm, pre_tokenizer=pre)
        ours = gpu_tok.Tokenizer.from_str(js)
        assert isinstance(ours._cpu_engine(), CpuUnigramEngine)
        _same_ids(ours, tokenizers.Tokenizer.from_str(js), texts)


@_SETTINGS
@given(rules=st.dictionaries(st.lists(st.sampled_from(_RULE_CHARS), min_size=1, max_size=3).map("".join),
                             st.text(alphabet="xyz\u00e9\u0301 \u03a9\u6771\U0001f600\u2581", max_size=4), max_size=10),
       texts=st.lists(st.lists(st.sampled_from(_RULE_CHARS + ["xy", "  ", "\u2581"]), max_size=12).map("".join),
                      min_size=1, max_size=6))
def test_engine_on_charsmaps_of_our_own(rules, texts):
    """Clusters replaced whole or character by character, removals, expansions into white
    space and "▁", as the reference normalizer does them, through both pre-tokenizers."""
    chars = "".join(_RULE_CHARS) + "xyz\u00e9\u0301\u03a9\u6771\U0001f600\u2581"
    _same_ids_under_rules(rules, chars, ("t5", "metaspace", "metaspace-first"), texts)


def test_engine_on_the_grapheme_fuzz():
    """The grapheme probes' random sequences (every class combination, some rules removing)
    through the engine's compiled cluster cutting: ids equal to the reference's."""
    (_name, rules, texts), = list(GEN.fuzz(10_000, seed=3))
    norm = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(build_charsmap(rules)).decode()}
    chars = sorted(set("".join(rules) + "".join(rules.values()) + "\u2581"))
    js = unigram_tokenizer_json(_char_model(chars), normalizer=norm, pre_tokenizer="metaspace")
    ours = gpu_tok.Tokenizer.from_str(js)
    assert isinstance(ours._cpu_engine(), CpuUnigramEngine)
    _same_ids(ours, tokenizers.Tokenizer.from_str(js), texts)


@pytest.mark.parametrize("pre", ["metaspace-first-nosplit", "t5-never", "none"])
def test_settings_not_served_run_the_reference_path(pre):
    js = unigram_tokenizer_json(unigram_model(), pre_tokenizer=pre)
    ours = gpu_tok.Tokenizer.from_str(js)
    assert ours._cpu_engine() is None and ours.cpu_engine_reason
    ref = tokenizers.Tokenizer.from_str(js)
    _same_ids(ours, ref, ["hello world", "\u6771\u4eac  x", ""])


def test_other_normalizers_run_the_reference_path():
    js = unigram_tokenizer_json(unigram_model(), normalizer={"type": "NFKC"})
    ours = gpu_tok.Tokenizer.from_str(js)
    assert ours._cpu_engine() is None and "normalizer UnicodeNormalizer" in ours.cpu_engine_reason


def test_added_tokens_and_missing_unk_go_to_the_reference_path():
    """Texts holding an added token's content (raw and normalized ones) are the reference
    path's, as are those needing an unknown token the model lacks (the reference's error)."""
    added = UNIGRAM_ADDED + [
        {"id": 5, "content": "ab", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True,
         "special": False},
        {"id": 6, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": False, "normalized": False,
         "special": True}]
    js = unigram_tokenizer_json(unigram_model(), added=added)
    ours, ref = _pair(("added",), js)
    _same_ids(ours, ref, ["x </s> y", "hello <mask> world", "\uff41b c", "cab", "plain text", ""])
    js = unigram_tokenizer_json(unigram_model(unk_id=None), normalizer="none")
    ours, ref = _pair(("nounk",), js)
    _same_ids(ours, ref, ["hello world", "the end"])
    with pytest.raises(Exception, match="unk_id"):
        ref.encode("\u2603")
    with pytest.raises(ValueError, match="unk_id"):
        ours.encode_batch_ids(["fine", "\u2603"], device="cpu")


def test_long_pieces_and_the_word_cache():
    """Pieces longer than the word cache takes (15 bytes), a million-character piece, and
    the same pieces again from the cache."""
    js = unigram_tokenizer_json(unigram_model(), normalizer="none")
    ours, ref = _pair(("long",), js)
    texts = ["a" * 1_000_000, "hello" * 20 + " the", "the hello world " * 50, "\u6771\u4eac\u2603" * 40]
    _same_ids(ours, ref, texts)
    _same_ids(ours, ref, texts[1:])


def test_word_cache_sets_of_two_written_over(monkeypatch):
    """The short-piece word cache (``wordpiece_cpu.cache_get``, sets of two) with two sets:
    pieces take each other's places all the time; three passes, each equal to the
    reference."""
    import random

    from gpu_tok import fast_wordpiece

    monkeypatch.setattr(fast_wordpiece, "_CACHE_SLOTS", 4)
    monkeypatch.setattr(fast_wordpiece, "_CACHE_SLOTS_FIRST", 4)
    js = unigram_tokenizer_json(unigram_model(), normalizer="none")
    ours, ref = _pair(("sets",), js)
    rng = random.Random(7)
    pool = ["hello", "the", "world", "\u6771\u4eac", "\u2603", "ab", "x"]
    words = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 3))) for _ in range(80)]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 30))) for _ in range(200)]
    eng = ours._cpu_engine()
    assert isinstance(eng, CpuUnigramEngine)
    eng._wc = None
    for _ in range(3):
        _same_ids(ours, ref, texts)
    assert eng._wc.shape[1] == 4


def test_long_piece_cache_rings_and_a_second_caller(monkeypatch):
    """Pieces of 16..1024 bytes go through the long-piece cache: here with an index of one
    four-way set and rings of 64 bytes and 32 ids, so entries are evicted and written over
    all the time; three passes, each equal to the reference; then a call made while
    another holds the engine's lock (it gets small caches of its own), equal too."""
    import random

    from gpu_tok import fast_cpu

    monkeypatch.setattr(fast_cpu, "_LONG_SLOTS", 4)
    monkeypatch.setattr(fast_cpu, "_LONG_BYTES", 64)
    monkeypatch.setattr(fast_cpu, "_LONG_ID_SLOTS", 32)
    js = unigram_tokenizer_json(unigram_model(), normalizer="none")
    ours, ref = _pair(("long-cache",), js)
    rng = random.Random(31)
    pool = ["hello", "the", "world", "\u6771\u4eac", "\u2603", "ab", "x"]
    words = ["".join(rng.choice(pool) for _ in range(rng.randint(2, 24))) for _ in range(120)]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(80)]
    assert any(16 <= len(w.encode()) + 3 <= 64 for w in words) and any(len(w.encode()) > 64 for w in words)
    eng = ours._cpu_engine()
    assert isinstance(eng, CpuUnigramEngine)
    eng._wc = eng._lc = None
    for _ in range(3):
        _same_ids(ours, ref, texts)
    assert eng._lc[0].shape[1] == 5  # the tiny long cache was the one used
    with eng._lock:
        _same_ids(ours, ref, texts)


def test_engine_on_the_grapheme_probes():
    """The grapheme probes (every rule of UAX #29 the reference's output shows: CR LF,
    Prepend, marks, Hangul, conjuncts, emoji ZWJ sequences) on a sample of code points,
    through the engine: ids equal to the reference's."""
    from test_graphemes import _sample

    cps = _sample()[::4]
    groups = {}
    for _name, rules, texts in GEN.probes(cps):
        key = id(rules)
        if key not in groups:
            groups[key] = (rules, [])
        groups[key][1].extend(texts)
    for rules, texts in groups.values():
        data = build_charsmap(rules)
        norm = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(data).decode()}
        chars = sorted(set("".join(texts) + "".join(rules.values()) + "\u2581") - {" "})
        js = unigram_tokenizer_json(_char_model(chars), normalizer=norm, pre_tokenizer="metaspace")
        ours = gpu_tok.Tokenizer.from_str(js)
        assert isinstance(ours._cpu_engine(), CpuUnigramEngine)
        ref = tokenizers.Tokenizer.from_str(js)
        got = ours.encode_batch_ids(texts, add_special_tokens=False, device="cpu").to_list()
        want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
        bad = [t for t, a, b in zip(texts, got, want) if a != b]
        assert not bad, [" ".join(f"U+{ord(c):04X}" for c in t) for t in bad[:5]]


def test_expanding_rules_past_the_fused_kernels_slots():
    """A rule that turns 3 bytes into many pieces: the pre-tokenized text outgrows the
    kernel's scratch (twice the document) and its ids the document's slot (bytes + 4), so
    those documents run again into slots of the size they need; the others do not."""
    rules = {"\u2460": "a b c d e f g h i j k l", "\u2461": "xy", "\u00e9": ""}
    texts = ["\u2460", "x \u2460\u2460 y", "plain", "\u2461\u00e9\u2461", "\u2460" * 50, "", "ab " * 30 + "\u2460"]
    _same_ids_under_rules(rules, "abcdefghijklxyz\u00e9\u2460\u2461\u2581", ("t5", "metaspace", "metaspace-never"), texts)


def test_blocks_of_documents_on_two_threads(monkeypatch):
    """On the parallel plan (forced): documents that run again into slots of their own
    (expanding rules), unknown characters whose token's text takes more slots than the
    document's ids (``uni_ids``'s ``ubuf`` bytes), empty documents, in blocks of the work
    queue; ids and every field equal the reference's."""
    from gpu_tok import fast_cpu

    monkeypatch.setattr(fast_cpu, "_PARALLEL_MIN_BYTES", 0)
    rules = {"\u2460": "a b c d e f g h i j k l", "\u2461": "xy", "\u00e9": ""}
    parts = ["\u2460", "x \u2460\u2460 y", "plain", "\u2461\u00e9\u2461", "", "ab " * 9, "\U0001f600\u6771q",
             "z\u03a9\u03a9 \U0001f600", " ", "\u2460" * 30]
    texts = ["".join(parts[(k * 7 + j) % len(parts)] for j in range(k % 5)) for k in range(300)]
    _same_ids_under_rules(rules, "abcdefghijklpqxyz\u00e9\u2460\u2461\u2581", ("t5", "metaspace"), texts)


def test_encodings_follow_the_alignment_rule():
    """``encode_batch``'s offsets through the Precompiled alignment rule (decision 0027),
    every field equal to the reference's: a removal at the very start (it removes nothing:
    the next character takes the dropped one's span and every later one stays shifted), a
    removal after an expansion (the expansion's last inserted character becomes a
    replacement), clusters replaced whole, expansions into pieces, unknown characters
    (their token string is their normalized text)."""
    rules = {"\u00e9": "", "\u2460": "abc", "e\u0301": "z", "\uff76\uff9e": "\u30ac", "\u2461": "x y",
             "\u2462": "q\u2603"}
    texts = ["\u00e9ab", "\u00e9\u00e9x y", "\u2460\u00e9", "x\u2460\u00e9 b", "\u2460\u00e9\u00e9 y", "\u00e9\u2460",
             "e\u0301\u00e9 b", "\uff76\uff9e\u00e9", "\u2461\u00e9 z", "\u00e9", "\u00e9 \u00e9", "a \u2461 \u00e9",
             "\u2603x \u2603\u2603 y\u2603", "\u2462\u00e9\u2603", " \u00e9 a", "\u00e9\u2460\u2461 e\u0301e\u0301"]
    _same_ids_under_rules(rules, "abcxyzq\u30ac\u2581", ("t5", "metaspace", "metaspace-never"), texts)


def test_edge_input_as_the_reference():
    """NUL bytes (they end a rule lookup), controls, empty text; a lone surrogate is refused
    by name, as the reference refuses it."""
    js = unigram_tokenizer_json(unigram_model())
    ours, ref = _pair(("edge",), js)
    _same_ids(ours, ref, ["a\x00b", "\x00", "x \x00\u0301 y", "\u00a0\x00\u3000", "e\u0301\x00", "\r\n\x00\n",
                          "\ufeffab", "\u200d\u200d", ""])
    with pytest.raises(gpu_tok.InvalidText):
        ours.encode_batch_ids(["ok", "a\ud800b"], device="cpu")


_XLMR_NORMALIZER = {"type": "Sequence", "normalizers": [
    precompiled(), {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}


@pytest.mark.parametrize("pre", ["t5", "metaspace"])
@_SETTINGS
@given(texts=st.lists(uni_texts, min_size=1, max_size=4))
def test_xlmr_style_normalizer(pre, texts):
    """Precompiled then Replace(" {2,}", " ") (XLM-R's normalizer): served behind
    WhitespaceSplit (which removes the spaces whole), the reference path behind Metaspace
    alone (where the spaces become "▁"); ids equal to the reference's either way."""
    js = unigram_tokenizer_json(unigram_model(seed=7), normalizer=_XLMR_NORMALIZER, pre_tokenizer=pre)
    ours = gpu_tok.Tokenizer.from_str(js)
    assert isinstance(ours._cpu_engine(), CpuUnigramEngine) == (pre == "t5"), ours.cpu_engine_reason
    _same_ids(ours, tokenizers.Tokenizer.from_str(js), texts + ["a  b   c", "  x  "])
