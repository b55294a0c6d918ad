"""Each pipeline component, differentially against the installed reference.

The real model files exercise the combinations real models use; this file
exercises every component and setting the loader accepts, one by one and in
combination, on a small byte-level BPE built here, with random text drawn by
hypothesis (derandomized: CI sees the same examples every run). Every field of
the ``Encoding`` and both decodes are compared with ``tokenizers`` itself.
"""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
if tokenizers.__version__ != "0.23.1":  # pragma: no cover
    pytest.skip(f"reference tokenizers==0.23.1 required, found {tokenizers.__version__}", allow_module_level=True)

import gpu_tok  # noqa: E402
from _kept import kept_dict  # noqa: E402

from _small_bpe import (  # noqa: E402
    ADDED,
    NORMALIZERS,
    POST_PROCESSORS,
    PRE_TOKENIZERS,
    bpe_model as _model,
    tokenizer_json as _tokenizer_json,
)

# ------------------------------------------------------------------ the text
_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    "    \t\n\r.,;:!?'\"-_()[]<>|/\\@#"
    "\u00a0\u3000\u2028\u0085\u200b\u00ad"
    "éÉèçñüÅΩωΣσς\u0301\u0308\u0323\u0302\u0327\u1e0b\u1e0d"
    "ﬁ²³½ⅫＡａ１٣१"
    "東京日本語한국어ひらがなカタカナ"
    "ا\u0644\u0645\u0651\u064eעברית"
    "🤖😀👍🏽\u200d❤\ufe0f🇫🇷"
    "İıẞß"
)
_PIECES = ["<|x|>", "[MASK]", "<r>", "word", "HeLLo", "hello", "  sp", "the", "The", "<|x", "MASK",
           "e\u0301", "\u1100\u1161\u11a8", "\u0041\u030a", "\u1e9b\u0323", "q\u0307\u0323", "  ", "\r\n", "1234"]

texts = st.lists(st.one_of(st.text(alphabet=_ALPHABET, max_size=12), st.sampled_from(_PIECES)), max_size=8).map("".join)

_FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask", "word_ids")

_cache = kept_dict()


def _pair_of_tokenizers(key, _json=None, **parts):
    if key not in _cache:
        js = _json if _json is not None else _tokenizer_json(**parts)
        _cache[key] = (gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js))
    return _cache[key]


def _assert_same(ours, ref, text, pair=None):
    for add in (True, False):
        a = ours.encode(text, pair, add_special_tokens=add)
        b = ref.encode(text, pair, add_special_tokens=add)
        for f in _FIELDS:
            x, y = getattr(a, f), getattr(b, f)
            if f == "offsets":
                x, y = [tuple(o) for o in x], [tuple(o) for o in y]
            assert list(x) == list(y), f"{f} differs for {text!r} / {pair!r} (add_special_tokens={add})"
        for skip in (True, False):
            try:
                want = ref.decode(b.ids, skip)
            except BaseException as e:  # the reference panics (pyo3 PanicException) on some decoder inputs
                if type(e).__name__ != "PanicException":
                    raise
                with pytest.raises(ValueError, match="the reference fails on it too"):
                    ours.decode(b.ids, skip)
                continue
            assert ours.decode(b.ids, skip) == want, f"decode differs for {text!r}"


_SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("name", sorted(NORMALIZERS))
@_SETTINGS
@given(text=texts)
def test_normalizer(name, text):
    ours, ref = _pair_of_tokenizers(("n", name), normalizer=NORMALIZERS[name])
    _assert_same(ours, ref, text)


@pytest.mark.parametrize("name", sorted(PRE_TOKENIZERS))
@_SETTINGS
@given(text=texts)
def test_pre_tokenizer(name, text):
    ours, ref = _pair_of_tokenizers(("p", name), pre_tokenizer=PRE_TOKENIZERS[name])
    _assert_same(ours, ref, text)


@pytest.mark.parametrize("name", sorted(POST_PROCESSORS))
@_SETTINGS
@given(text=texts, pair=st.one_of(st.none(), texts))
def test_post_processor(name, text, pair):
    pre = PRE_TOKENIZERS["ByteLevelRegex"]
    ours, ref = _pair_of_tokenizers(("pp", name), pre_tokenizer=pre, post_processor=POST_PROCESSORS[name])
    _assert_same(ours, ref, text, pair)


@pytest.mark.parametrize("ignore_merges", [False, True])
@_SETTINGS
@given(text=texts)
def test_bpe_options(ignore_merges, text):
    model = _model(ignore_merges=ignore_merges, unk_token=None)
    ours, ref = _pair_of_tokenizers(("m", ignore_merges), pre_tokenizer=PRE_TOKENIZERS["ByteLevelRegex"], model=model)
    _assert_same(ours, ref, text)


def test_unknown_characters_with_and_without_unk():
    """A model whose vocab lacks most characters: unknowns dropped (no unk) or mapped, fused or not."""
    vocab = {"<unk>": 0, "a": 1, "b": 2, "ab": 3, " ": 4}
    for unk, fuse in ((None, False), ("<unk>", False), ("<unk>", True)):
        model = {"type": "BPE", "unk_token": unk, "fuse_unk": fuse, "vocab": vocab, "merges": [["a", "b"]]}
        js = json.dumps({"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None,
                         "post_processor": None, "decoder": None, "model": model})
        ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
        for text in ["ab", "abxyab", "xyz", "a b c", "éé ab 東京", ""]:
            _assert_same(ours, ref, text)


def test_added_token_ids_follow_the_reference_not_the_file():
    """Ids in the file are ignored by the reference: it assigns them in file order."""
    added = [dict(t, id=999) for t in ADDED]
    js = _tokenizer_json(added=added)
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    assert ours.get_vocab() == ref.get_vocab()
    assert ours.get_vocab_size() == ref.get_vocab_size()
    assert ours.get_vocab_size(False) == ref.get_vocab_size(False)
    for t in ADDED:
        assert ours.token_to_id(t["content"]) == ref.token_to_id(t["content"])
    for i in range(ref.get_vocab_size() + 2):
        assert ours.id_to_token(i) == ref.id_to_token(i)
    theirs = {i: (t.content, t.single_word, t.lstrip, t.rstrip, t.normalized, t.special)
              for i, t in ref.get_added_tokens_decoder().items()}
    mine = {i: (t.content, t.single_word, t.lstrip, t.rstrip, t.normalized, t.special)
            for i, t in ours.get_added_tokens_decoder().items()}
    assert mine == theirs


# ---------------------------------------------- SentencePiece-style BPE files
from _small_bpe import SP_DECODERS, SP_PIPELINES, sp_model, sp_tokenizer_json  # noqa: E402

_SP_PIECES = ["<s>", "</s>", "<|end|>", "<tool>", "\u2581", "\u2581\u2581", " ", "  ", "hello", "the", "The",
              "é", "e\u0301", "東", "🤖", "\x00", "<unk>", "<0x41>", "ab<s>", "x <s>", "<|end|>  \n"]
sp_texts = st.lists(st.one_of(st.text(alphabet=_ALPHABET, max_size=10), st.sampled_from(_SP_PIECES)),
                    max_size=8).map("".join)


@pytest.mark.parametrize("pipeline", sorted(SP_PIPELINES))
@_SETTINGS
@given(text=sp_texts)
def test_sentencepiece_pipeline(pipeline, text):
    ours, ref = _pair_of_tokenizers(("sp", pipeline), _json=sp_tokenizer_json(pipeline=pipeline))
    _assert_same(ours, ref, text)


@pytest.mark.parametrize("pipeline", sorted(SP_PIPELINES))
@_SETTINGS
@given(texts=st.lists(sp_texts, min_size=1, max_size=4))
def test_sentencepiece_engine_encodings(pipeline, texts):
    """encode_batch on device="cpu" (the compiled engine where it serves the pipeline):
    every field of every encoding, pairs too, as the reference's."""
    from _encodings import diff

    ours, ref = _pair_of_tokenizers(("sp", pipeline), _json=sp_tokenizer_json(pipeline=pipeline))
    batch = texts + [(texts[0], texts[-1])]
    for add in (False, True):
        for item, a, b in zip(batch, ours.encode_batch(batch, add_special_tokens=add, device="cpu"),
                              ref.encode_batch(batch, add_special_tokens=add)):
            d = diff(a, b)
            assert d is None, (item, d)


def test_sentencepiece_engine_serves_the_pipelines():
    from gpu_tok.fast_cpu import CpuSentencePieceEngine

    served = [p for p in sorted(SP_PIPELINES) if isinstance(gpu_tok.Tokenizer.from_str(
        sp_tokenizer_json(pipeline=p))._cpu_engine(), CpuSentencePieceEngine)]
    assert {"llama-normalizer", "metaspace-first-False", "metaspace-always-False"} <= set(served), served


@pytest.mark.parametrize("decoder", sorted(SP_DECODERS))
@_SETTINGS
@given(text=sp_texts)
def test_sentencepiece_decoder(decoder, text):
    ours, ref = _pair_of_tokenizers(("spd", decoder), _json=sp_tokenizer_json(decoder=decoder))
    _assert_same(ours, ref, text)


@pytest.mark.parametrize("options", [
    {"byte_fallback": False},
    {"byte_fallback": False, "fuse_unk": False},
    {"byte_fallback": True, "fuse_unk": False},
    {"byte_fallback": False, "unk_token": None},
    {"byte_fallback": False, "continuing_subword_prefix": "##"},
    {"byte_fallback": False, "end_of_word_suffix": "</w>"},
    {"byte_fallback": True, "ignore_merges": True},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@_SETTINGS
@given(text=sp_texts)
def test_sentencepiece_model_options(options, text):
    model = sp_model(**options)
    if options.get("continuing_subword_prefix") or options.get("end_of_word_suffix"):
        # decorated symbols: add them to the vocab so that merges can be written
        pre, suf = options.get("continuing_subword_prefix") or "", options.get("end_of_word_suffix") or ""
        for tok in list(model["vocab"]):
            model["vocab"].setdefault(pre + tok, len(model["vocab"]))
            model["vocab"].setdefault(tok + suf, len(model["vocab"]))
            model["vocab"].setdefault(pre + tok + suf, len(model["vocab"]))
        model["merges"] = [[a, pre + b] for a, b in model["merges"] if a + b in model["vocab"]]
        for a, b in model["merges"]:
            model["vocab"].setdefault(a + b[len(pre):], len(model["vocab"]))
    key = ("spm", json.dumps(options, sort_keys=True))
    ours, ref = _pair_of_tokenizers(key, _json=sp_tokenizer_json(model=model))
    _assert_same(ours, ref, text)


# ------------------------------------------------------ WordPiece and WordLevel
from _small_bpe import wordpiece_model, wordpiece_tokenizer_json  # noqa: E402

# characters BertNormalizer treats apart: controls it drops (NUL, DEL, U+FFFD, format and
# private-use characters), white space it makes a space, CJK ideographs, nonspacing marks
# and combining marks that are not nonspacing (U+0903), characters whose NFD has marks
_BERT_EXTRA = "\x00\x01\x7f\x0b\x0c\x1f\ufffd\ue000\u200d\u2060\ufeff\u0600\U000e0001\u0903\u0488\u1ab0\u20dd" \
              "\u1680\u2007\u202f\u205f\u3000\u4e00\u9fff\u3400\uf900\U00020000\U0002a6df\u3041\uac00" \
              "ÀÁÂÃÄÅàáâãäåǅǄǆ\u1e9e\u212b\u2126ﬀ"
_WP_CHARS = sorted(set("abcdefghijklmnopqrstuvwxyz0123456789.,;:!?'\"-_()[]<>|/\\@#éèçñüåωσς東京日本語한국어ひらがな"
                       + "ıß" + "ABCDEFGHIJKLMNOPQRSTUVWXYZÉΣΩ"))
_WP_PIECES = ["hello", "Hello", "HELLO", "helloing", "unaffable", "the", "words", "world", "don't", "I'm", " do not",
              "[MASK]", " [MASK]", "[CLS]", "[UNK]", "##ll", "東京都", "12345", "supercalifragilistic", "supercali", "a" * 12, "é" * 7, "  ", "\t\n\r"]
wp_texts = st.lists(st.one_of(st.text(alphabet=_ALPHABET + _BERT_EXTRA, max_size=12), st.sampled_from(_WP_PIECES)),
                    max_size=8).map("".join)


@pytest.mark.parametrize("normalizer", ["Bert", "BertCased", "BertNoClean", "BertNoChinese", "BertStripNoLower",
                                        "BertLowerNoStrip", "BertAllOff"])
@_SETTINGS
@given(text=wp_texts)
def test_wordpiece_pipeline(normalizer, text):
    """BertNormalizer (each option), BertPreTokenizer, WordPiece, template, WordPiece decoder."""
    ours, ref = _pair_of_tokenizers(("wp", normalizer), _json=wordpiece_tokenizer_json(
        wordpiece_model(_WP_CHARS), normalizer=NORMALIZERS[normalizer]))
    _assert_same(ours, ref, text)
    _assert_same(ours, ref, text, text[::-1])


@pytest.mark.parametrize("options", [
    {"prefix": "##", "max_chars": 100},
    {"prefix": "##", "max_chars": 5},
    {"prefix": "##", "max_chars": 0},
    {"prefix": "", "max_chars": 100},
    {"prefix": "@@", "max_chars": 100},
    {"prefix": "##", "max_chars": 100, "unk": "<oov>"},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@_SETTINGS
@given(text=wp_texts)
def test_wordpiece_model_options(options, text):
    """Longest match first with other prefixes, the word-length limit and another unk token,
    through pre-tokenizers that leave long pieces (WhitespaceSplit, none) as well."""
    model = wordpiece_model(_WP_CHARS, **options)
    prefix = options["prefix"]
    for pre in ({"type": "BertPreTokenizer"}, {"type": "WhitespaceSplit"}, "none"):
        ours, ref = _pair_of_tokenizers(("wpm", json.dumps(options, sort_keys=True), str(pre)), _json=wordpiece_tokenizer_json(
            model, pre_tokenizer=pre, decoder={"type": "WordPiece", "prefix": prefix, "cleanup": False}))
        _assert_same(ours, ref, text)


@pytest.mark.parametrize("cleanup", [True, False])
@_SETTINGS
@given(tokens=st.lists(st.sampled_from(_WP_PIECES + [".", "?", "!", ",", "'", "n't", "'m", "'s", "'ve", "'re", "do",
                                                      "not", "##.", "## ", "#", "##"] + _WP_CHARS[:20]), max_size=12))
def test_wordpiece_decoder(cleanup, tokens):
    """The decoder on any token sequence: each known token's id decoded both ways."""
    model = wordpiece_model(_WP_CHARS)
    for t in tokens:
        model["vocab"].setdefault(t, len(model["vocab"]))
    js = wordpiece_tokenizer_json(model, decoder={"type": "WordPiece", "prefix": "##", "cleanup": cleanup})
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    ids = [ref.token_to_id(t) for t in tokens]
    for skip in (True, False):
        assert ours.decode(ids, skip) == ref.decode(ids, skip)


def test_wordpiece_and_wordlevel_without_their_unk_token_fail_as_the_reference_does():
    """A piece that needs an unk token the vocabulary lacks: the reference raises, so do we
    (naming the token); pieces that do not need it encode."""
    for model in (wordpiece_model("abc", with_unk=False),
                  {"type": "WordLevel", "vocab": {"a": 0, "b": 1, "[CLS]": 2, "[SEP]": 3}, "unk_token": "[UNK]"}):
        js = wordpiece_tokenizer_json(model, added=[], decoder="none")
        ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
        _assert_same(ours, ref, "a b")
        for text in ("a x", "abcabc" * 30):
            if model["type"] == "WordLevel" and text != "a x":
                continue
            with pytest.raises(Exception, match="Missing"):
                ref.encode(text)
            with pytest.raises(ValueError, match=r"unk_token '\[UNK\]' is not in the vocabulary"):
                ours.encode(text)


@_SETTINGS
@given(text=wp_texts)
def test_wordlevel(text):
    """WordLevel: whole pieces looked up, [UNK] for the rest, behind BertPreTokenizer and
    behind WhitespaceSplit (long pieces)."""
    vocab = {t: i for i, t in enumerate(["[UNK]", "[CLS]", "[SEP]", "hello", "the", "world", "a", "b", ".", ",", "'",
                                         "東", "京", "don", "t", "i", "m"] + _WP_CHARS)}
    model = {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    for pre in ({"type": "BertPreTokenizer"}, {"type": "WhitespaceSplit"}):
        js = wordpiece_tokenizer_json(model, pre_tokenizer=pre, added=[], decoder="none", post_processor="none")
        ours, ref = _pair_of_tokenizers(("wl", str(pre)), _json=js)
        _assert_same(ours, ref, text)


# ------------------------------------------------------ Unigram and Precompiled
from _charsmap import build_charsmap  # noqa: E402
from _small_unigram import UNIGRAM_WORDS, unigram_model, unigram_tokenizer_json  # noqa: E402

from gpu_tok.cpu_ref.normalizers import normalize_str  # noqa: E402
from gpu_tok.loader import parse_normalizer  # noqa: E402

_UNI_PIECES = _WP_PIECES + UNIGRAM_WORDS + ["Ａ\u0301b", "e\u0301\u0301", "ｶﾞ", "①②③", "\r\n\r", "\x01a\x01",
                                            "\u1100\u1161\u11a8", "\u1100\u1161x", "日本語のテキスト", "☃x", "x☃x", "☃☃x"]
uni_texts = st.lists(st.one_of(st.text(alphabet=_ALPHABET + "Ａａ１ﬁ™①②ｶﾞ\x01\u200b", max_size=12),
                               st.sampled_from(_UNI_PIECES)), max_size=8).map("".join)


@pytest.mark.parametrize("options", [
    {},
    {"seed": 1},
    {"seed": 2, "unk_id": 1},
    {"seed": 3, "positive": True},
    {"seed": 4, "dup": True},
    {"seed": 5, "byte_fallback": True, "bytes_present": range(256)},
    {"seed": 6, "byte_fallback": True, "bytes_present": range(0, 256, 2)},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items() if k != "bytes_present") or "default")
@pytest.mark.parametrize("pre", ["t5", "metaspace", "metaspace-first-nosplit", "none"])
@_SETTINGS
@given(text=uni_texts)
def test_unigram(options, pre, text):
    """Unigram's best path (many ties: scores from a few values), the unknown token (fused),
    byte fallback with all or half of the byte tokens, positive scores, another unk_id,
    duplicate entries; behind the Precompiled rules and each pre-tokenizer."""
    model = unigram_model(**options)
    ours, ref = _pair_of_tokenizers(("uni", json.dumps(options, sort_keys=True, default=list), pre),
                                    _json=unigram_tokenizer_json(model, pre_tokenizer=pre))
    _assert_same(ours, ref, text)
    _assert_same(ours, ref, text, text[::-1])


def test_unigram_without_unk_id_fails_as_the_reference_does():
    model = unigram_model(unk_id=None)
    js = unigram_tokenizer_json(model, normalizer="none")
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    _assert_same(ours, ref, "hello world")
    for text in ("hello ☃", "☃"):
        with pytest.raises(Exception, match="unk_id"):
            ref.encode(text)
        with pytest.raises(ValueError, match="unk_id"):
            ours.encode(text)


_RULE_CHARS = ["a", "b", "e", "A", "\u0301", "\u0308", "\u093f", "\u0600", "\r", "\n", "\x01", "\u200d", "\u1100",
               "\u1161", "\u11a8", "\uac00", "©", "\U0001f600", "\U0001f3fb", "\U00010000", "\u0915", "\u094d", "Ａ",
               "\u00a0", " ", "\u3000"]


@_SETTINGS
@given(rules=st.dictionaries(st.lists(st.sampled_from(_RULE_CHARS), min_size=1, max_size=3).map("".join),
                             st.text(alphabet="xyzé\u0301 Ω東\U0001f600", max_size=4), max_size=10),
       texts=st.lists(st.lists(st.sampled_from(_RULE_CHARS + ["xy", "  "]), max_size=12).map("".join),
                      min_size=1, max_size=6))
def test_precompiled_rules(rules, texts):
    """Precompiled on rule sets of our own (tests/_charsmap.py): clusters of fewer than 6
    bytes replaced whole by their shortest rule, the rest character by character, removals
    and expansions (offsets through a character-level Unigram), clusters cut by CR LF,
    Prepend, marks, ZWJ sequences, Hangul, conjuncts."""
    data = build_charsmap(rules)
    ref_norm = tokenizers.normalizers.Precompiled(data)
    norm = {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(data).decode()}
    chars = sorted(set("".join(_RULE_CHARS) + "xyzé\u0301Ω東\U0001f600\u2581"))
    model = {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0]]
             + [[c, -1.0 - (i % 3)] for i, c in enumerate(chars)] + [["xy", -1.5], ["Ωx", -2.0]]}
    js = unigram_tokenizer_json(model, normalizer=norm, pre_tokenizer="none")
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    cfg = parse_normalizer(norm, "normalizer")
    for t in texts:
        assert normalize_str(cfg, t) == ref_norm.normalize_str(t), f"normalized text differs for {t!r}"
        _assert_same(ours, ref, t)


@pytest.mark.parametrize("family", ["gpt2", "llama3", "qwen3", "roberta-base", "llama2", "mistral-v0.3-metaspace",
                                    "gemma3", "phi-3-mini", "bert-base-uncased", "t5-small"])
def test_decode_by_table_equals_reference(family):
    """``decode`` / ``decode_batch`` through ``fast_decode`` (each id's bytes from a table,
    joined, decoded once; byte-level and SentencePiece decoders) give the pinned HF
    ``tokenizers``' text with and without special tokens: the bench texts' ids; random ids
    over the whole vocabulary and the added tokens (invalid UTF-8 between tokens, runs of
    byte tokens that are not UTF-8, special tokens anywhere); ids past
    the vocabulary (skipped); empty and one-id sequences; tuples. Items the reference
    refuses (a bool, a negative id, a float) raise the same error types."""
    import random

    import numpy as np
    from _paths import model_path
    from _samples import bench_texts

    path = str(model_path(family))
    ours, ref = gpu_tok.Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(path)
    assert ours._decoding() is not None
    n = ref.get_vocab_size(with_added_tokens=True)
    top = max(ref.get_vocab(with_added_tokens=True).values())
    rng = random.Random(4)
    rows = [e.ids for e in ref.encode_batch(bench_texts(20_000), add_special_tokens=False)]
    specials = sorted(ref.get_added_tokens_decoder())
    rows += [[rng.randrange(n) for _ in range(rng.randint(0, 40))] for _ in range(300)]
    rows += [[rng.choice(specials), rng.randrange(top + 1)] * 3 for _ in range(30)]
    byte_ids = [i for t, i in ref.get_vocab().items() if len(t) == 6 and t.startswith("<0x")]
    rows += [[rng.choice(byte_ids) for _ in range(rng.randint(1, 6))] + [rng.randrange(n)] for _ in range(60)
             if byte_ids]
    rows += [[], [0], [top], [top + 1], [top + 5, 10, top + 1], [rng.randrange(256) for _ in range(50)], [1, True]]
    for skip in (True, False):
        want = ref.decode_batch(rows, skip_special_tokens=skip)
        assert ours.decode_batch(rows, skip_special_tokens=skip) == want
        assert [ours.decode(tuple(r), skip_special_tokens=skip) for r in rows[-40:]] == want[-40:]
        assert [ours.decode(np.array(r, np.int64), skip_special_tokens=skip) for r in rows[-40:-1]] == want[-40:-1]
    for bad in ([3, -1], [2, 1.0], [2**32]):
        with pytest.raises(Exception) as theirs:
            ref.decode(bad)
        with pytest.raises(type(theirs.value)):
            ours.decode(bad)
