"""Each pipeline component, differentially against the installed reference.

The real model files exercise the combinations real models use; this file
exercises every component and setting the loader accepts, one by one and in
combination, on a small byte-level BPE built here, with random text drawn by
hypothesis (derandomized: CI sees the same examples every run). Every field of
the ``Encoding`` and both decodes are compared with ``tokenizers`` itself.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tokenizers = pytest.importorskip("tokenizers")
if tokenizers.__version__ != "0.23.1":  # pragma: no cover
    pytest.skip(f"reference tokenizers==0.23.1 required, found {tokenizers.__version__}", allow_module_level=True)

import gpu_tok  # noqa: E402
from gpu_tok.cpu_ref.byte_level import BYTE_TO_CHAR  # noqa: E402

# ----------------------------------------------------------------- the model
_MERGES = [("t", "h"), ("th", "e"), ("Ġ", "the"), ("i", "n"), ("e", "r"), ("Ġ", "a"), ("a", "n"),
           ("an", "d"), ("Ġ", "t"), ("o", "n"), ("Ġ", "in"), ("l", "l"), ("e", "ll"), ("h", "ell"),
           ("Ã", "©"), ("Ġ", "Ġ"), ("ĠĠ", "ĠĠ"), ("1", "2"), ("12", "3"), ("Ċ", "Ċ")]


def _vocab():
    vocab = {c: i for i, c in enumerate(BYTE_TO_CHAR)}
    for a, b in _MERGES:
        vocab.setdefault(a + b, len(vocab))
    return vocab


def _model(**extra):
    m = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
         "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
         "vocab": _vocab(), "merges": [f"{a} {b}" for a, b in _MERGES]}
    m.update(extra)
    return m


BL_NOREGEX = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
BL_DECODER = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}

ADDED = [
    {"id": 0, "content": "<|x|>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
    {"id": 0, "content": "[MASK]", "single_word": False, "lstrip": True, "rstrip": False, "normalized": False, "special": True},
    {"id": 0, "content": "<r>", "single_word": False, "lstrip": False, "rstrip": True, "normalized": False, "special": False},
    {"id": 0, "content": "word", "single_word": True, "lstrip": False, "rstrip": False, "normalized": False, "special": False},
    {"id": 0, "content": "HeLLo", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True, "special": False},
    {"id": 0, "content": "  sp", "single_word": False, "lstrip": True, "rstrip": True, "normalized": True, "special": True},
    {"id": 0, "content": "the", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False},
]


def _tokenizer_json(normalizer=None, pre_tokenizer=None, post_processor=None, added=ADDED, model=None):
    if pre_tokenizer is None:
        pre = BL_NOREGEX
    elif pre_tokenizer == "none":
        pre = None  # the model sees raw characters: most are unknown and dropped
    else:
        pre = {"type": "Sequence", "pretokenizers": [pre_tokenizer, BL_NOREGEX]}
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post_processor,
        "decoder": BL_DECODER, "model": model or _model(),
    })


def _split(pattern, behavior, invert=False, kind="Regex"):
    return {"type": "Split", "pattern": {kind: pattern}, "behavior": behavior, "invert": invert}


BEHAVIOURS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]

NORMALIZERS = {
    "none": None,
    "NFC": {"type": "NFC"},
    "NFD": {"type": "NFD"},
    "NFKC": {"type": "NFKC"},
    "NFKD": {"type": "NFKD"},
    "Lowercase": {"type": "Lowercase"},
    "Strip": {"type": "Strip", "strip_left": True, "strip_right": True},
    "StripLeft": {"type": "Strip", "strip_left": True, "strip_right": False},
    "StripRight": {"type": "Strip", "strip_left": False, "strip_right": True},
    "StripAccents": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]},
    "ReplaceString": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    "ReplaceRegex": {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
    "ReplaceDelete": {"type": "Replace", "pattern": {"Regex": "[aeiou]"}, "content": ""},
    "Prepend": {"type": "Prepend", "prepend": "\u2581"},
    "LlamaLike": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                      {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
    "BertLike": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"},
                                                     {"type": "Strip", "strip_left": True, "strip_right": True}]},
    "NFKCLower": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
}

PRE_TOKENIZERS = {"none": "none", "bytelevel-only": BL_NOREGEX}
for _b in BEHAVIOURS:
    for _inv in (False, True):
        PRE_TOKENIZERS[f"SplitRegex-{_b}-{_inv}"] = _split(r"\d+|\s+|[^\w\s]", _b, _inv)
        PRE_TOKENIZERS[f"SplitString-{_b}-{_inv}"] = _split(" ", _b, _inv, kind="String")
    PRE_TOKENIZERS[f"Punctuation-{_b}"] = {"type": "Punctuation", "behavior": _b}
PRE_TOKENIZERS.update({
    "Digits": {"type": "Digits", "individual_digits": False},
    "DigitsIndividual": {"type": "Digits", "individual_digits": True},
    "Whitespace": {"type": "Whitespace"},
    "WhitespaceSplit": {"type": "WhitespaceSplit"},
    "ByteLevelRegex": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "ByteLevelPrefix": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "Lookahead": _split(r"\s+(?!\S)|\s+|\p{L}+|\p{N}{1,3}|[^\s\p{L}\p{N}]+", "Isolated"),
    "Possessive": _split(r"\s++$|\s+|\p{L}+|[^\s\p{L}]+", "Isolated"),
    "Sequence": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": True}]},
})

_SPECIALS = {"[CLS]": {"id": "[CLS]", "ids": [260], "tokens": ["[CLS]"]},
             "[SEP]": {"id": "[SEP]", "ids": [261, 262], "tokens": ["[SEP]", "[SEP2]"]}}
POST_PROCESSORS = {
    "none": None,
    "ByteLevelTrim": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "ByteLevelTrimNoPrefix": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True},
    "ByteLevelNoTrim": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False},
    "Template": {"type": "TemplateProcessing",
                 "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                            {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                 "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                          {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                          {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                 "special_tokens": _SPECIALS},
    "Roberta": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": True, "add_prefix_space": True},
    "RobertaNoTrim": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0], "trim_offsets": False, "add_prefix_space": False},
    "Bert": {"type": "BertProcessing", "sep": ["[SEP]", 102], "cls": ["[CLS]", 101]},
    "Sequence": {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": _SPECIALS}]},
}

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

_cache = {}


def _pair_of_tokenizers(key, **parts):
    if key not in _cache:
        js = _tokenizer_json(**parts)
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
            assert ours.decode(b.ids, skip) == ref.decode(b.ids, skip), f"decode differs for {text!r}"


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
