"""The tokenizer.json loader: accepted spellings, refusals by name, clear errors."""

from __future__ import annotations

import base64
import copy
import json
import pickle
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpu_tok
from gpu_tok import TokenizerFileError, UnsupportedComponent
from _paths import model_file, model_path
from _small_bpe import bpe_model, tokenizer_json

BASE = json.loads(tokenizer_json())


def _load(mutate):
    data = copy.deepcopy(BASE)
    mutate(data)
    return gpu_tok.Tokenizer.from_str(json.dumps(data))


def _expect(exc, mutate, path, *words):
    with pytest.raises(exc) as info:
        _load(mutate)
    assert info.value.json_path == path, str(info.value)
    msg = str(info.value)
    assert path in msg
    for w in words:
        assert w in msg, msg
    return info.value


# ----------------------------------------------------------- malformed files
def test_invalid_json_names_line_and_column():
    with pytest.raises(TokenizerFileError) as info:
        gpu_tok.Tokenizer.from_str('{"version": "1.0",\n "model": {')
    assert "invalid JSON at line 2" in str(info.value)


def test_invalid_json_in_a_file_names_the_file(tmp_path):
    p = tmp_path / "tokenizer.json"
    p.write_text("{ nope")
    with pytest.raises(TokenizerFileError) as info:
        gpu_tok.Tokenizer.from_file(p)
    assert str(p) in str(info.value) and "invalid JSON" in str(info.value)


def test_not_utf8_file(tmp_path):
    p = tmp_path / "tokenizer.json"
    p.write_bytes(b'{"x": "\xff"}')
    with pytest.raises(TokenizerFileError, match="not valid UTF-8"):
        gpu_tok.Tokenizer.from_file(p)


def test_errors_are_value_errors():
    assert issubclass(TokenizerFileError, ValueError)
    assert issubclass(UnsupportedComponent, ValueError)


def test_missing_model():
    _expect(TokenizerFileError, lambda d: d.pop("model"), "model", "missing")


def test_wrong_version():
    _expect(TokenizerFileError, lambda d: d.update(version="2.0"), "version", "2.0")


def test_wrong_type_names_the_field():
    _expect(TokenizerFileError, lambda d: d["model"].update(merges=5), "model.merges", "expected list")
    _expect(TokenizerFileError, lambda d: d["added_tokens"][0].update(lstrip="yes"), "added_tokens[0].lstrip")
    _expect(TokenizerFileError, lambda d: d["model"]["vocab"].update(x=-1), "model.vocab['x']")


def test_merge_token_missing_from_vocab():
    def mutate(d):
        d["model"]["merges"].append("zz qq")

    err = _expect(TokenizerFileError, mutate, f"model.merges[{len(BASE['model']['merges'])}]", "'zz'", "not in the vocab")
    assert "merge" in str(err)


def test_merge_result_missing_from_vocab():
    def mutate(d):
        d["model"]["merges"].append("a b")  # "ab" is not in the small vocab

    _expect(TokenizerFileError, mutate, f"model.merges[{len(BASE['model']['merges'])}]", "'ab'")


def test_malformed_merge_string():
    _expect(TokenizerFileError, lambda d: d["model"]["merges"].insert(0, "a b c"), "model.merges[0]")


def test_regex_that_does_not_compile():
    def mutate(d):
        d["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated", "invert": False}

    _expect(TokenizerFileError, mutate, "pre_tokenizer.pattern.Regex", "cannot compile")


def test_unknown_behaviour():
    def mutate(d):
        d["pre_tokenizer"] = {"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways", "invert": False}

    _expect(TokenizerFileError, mutate, "pre_tokenizer.behavior", "Sideways")


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("mutate,path,value", [
    (lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Whitespace"}, {"type": "UnicodeScripts"}]}), "pre_tokenizer.pretokenizers[1].type", "UnicodeScripts"),
    (lambda d: d.update(normalizer={"type": "BertNormalizer"}), "normalizer.clean_text", None),
    (lambda d: d.update(decoder={"type": "WordPiece", "prefix": "##"}), "decoder.cleanup", None),
    (lambda d: d.update(post_processor={"type": "Unknown"}), "post_processor.type", "Unknown"),
    (lambda d: d["model"].update(dropout=0.1), "model.dropout", 0.1),
    (lambda d: d["model"].update(byte_fallback=True, continuing_subword_prefix="##"),
     "model.continuing_subword_prefix", "##"),
    (lambda d: d["model"].update(byte_fallback=True, end_of_word_suffix="</w>"), "model.end_of_word_suffix", "</w>"),
    (lambda d: d.update(pre_tokenizer={"type": "Metaspace", "replacement": "_", "add_prefix_space": False}),
     "pre_tokenizer.add_prefix_space", None),
    (lambda d: d.update(model={"type": "WordPiece", "vocab": {"a": 0}, "unk_token": "a"}),
     "model.max_input_chars_per_word", None),
    (lambda d: d.update(pre_tokenizer={"type": "Split", "pattern": {"Regex": r"\p{Braille}"},
                                       "behavior": "Isolated", "invert": False}),
     "pre_tokenizer.pattern.Regex", None),
])
def test_refused_by_name(mutate, path, value):
    exc = UnsupportedComponent if value is not None else TokenizerFileError
    err = _expect(exc, mutate, path)
    if value is not None:
        assert err.value == value


# measured: what the reference requires of the WordPiece family's components (it refuses
# each of these files too)
_WORDPIECE_FAMILY_REFUSED = [
    ("normalizer", {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True}, "normalizer.lowercase"),
    ("normalizer", {"type": "BertNormalizer", "clean_text": True, "lowercase": True}, "normalizer.handle_chinese_chars"),
    ("normalizer", {"type": "BertNormalizer", "clean_text": 1, "handle_chinese_chars": True, "lowercase": True},
     "normalizer.clean_text"),
    ("decoder", {"type": "WordPiece", "cleanup": True}, "decoder.prefix"),
    ("decoder", {"type": "WordPiece"}, "decoder.prefix"),
    ("model", {"type": "WordPiece", "vocab": {"a": 0}, "unk_token": "a", "max_input_chars_per_word": 9},
     "model.continuing_subword_prefix"),
    ("model", {"type": "WordPiece", "vocab": {"a": 0}, "unk_token": "a", "continuing_subword_prefix": "##",
               "max_input_chars_per_word": -1}, "model.max_input_chars_per_word"),
    ("model", {"type": "WordPiece", "vocab": {"a": 0}, "unk_token": None, "continuing_subword_prefix": "##",
               "max_input_chars_per_word": 9}, "model.unk_token"),
    ("model", {"type": "WordLevel", "vocab": {"a": 0}}, "model.unk_token"),
    ("model", {"type": "WordLevel", "unk_token": "a"}, "model.vocab"),
]


def test_wordpiece_family_optional_fields_and_models_without_type():
    """strip_accents may be missing; a model without type is WordPiece when it has the four
    WordPiece fields, else WordLevel with vocab and unk_token (the reference's order)."""
    tok = _load(lambda d: d.update(normalizer={"type": "BertNormalizer", "clean_text": True,
                                               "handle_chinese_chars": True, "lowercase": True}))
    assert tok.config.normalizer.strip_accents is None
    wp = {"vocab": {"a": 0, "##b": 1, "[UNK]": 2}, "unk_token": "[UNK]", "continuing_subword_prefix": "##",
          "max_input_chars_per_word": 100}
    assert type(_load(lambda d: d.update(model=dict(wp), pre_tokenizer=None)).config.model).__name__ == "WordPiece"
    wl = {"vocab": {"a": 0, "[UNK]": 1}, "unk_token": "[UNK]"}
    assert type(_load(lambda d: d.update(model=dict(wl), pre_tokenizer=None)).config.model).__name__ == "WordLevel"
    tokenizers = pytest.importorskip("tokenizers")
    for model in (wp, wl):
        data = copy.deepcopy(BASE)
        data.update(model=model, pre_tokenizer=None, decoder=None, added_tokens=[])
        js = json.dumps(data)
        for text in ("ab", "abc", "a"):
            assert gpu_tok.Tokenizer.from_str(js).encode(text).ids == tokenizers.Tokenizer.from_str(js).encode(text).ids


_TRUNCATION = {"max_length": 8, "strategy": "OnlyFirst", "stride": 2, "direction": "Left"}
_PADDING = {"strategy": {"Fixed": 16}, "direction": "Left", "pad_to_multiple_of": 8, "pad_id": 3, "pad_type_id": 1,
            "pad_token": "<p>"}


@pytest.mark.parametrize("truncation,padding", [
    (_TRUNCATION, None), (None, _PADDING), ({k: v for k, v in _TRUNCATION.items() if k != "direction"}, None),
    (None, dict(_PADDING, strategy="BatchLongest", pad_to_multiple_of=None)), (_TRUNCATION, _PADDING),
])
def test_truncation_and_padding_in_the_file_are_applied(truncation, padding):
    """Read and shown as the reference shows them, and applied on every encode (decision
    0029); after no_truncation() / no_padding() the ids are the reference's after the
    same calls."""
    tokenizers = pytest.importorskip("tokenizers")
    data = copy.deepcopy(BASE)
    data.update(truncation=truncation, padding=padding)
    js = json.dumps(data)
    ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
    assert ours.truncation == ref.truncation and ours.padding == ref.padding
    texts = ["the hello there " * 5, "a", ""]
    want = [e.ids for e in ref.encode_batch(texts)]
    assert ours.encode("the hello there").ids == ref.encode("the hello there").ids
    assert [e.ids for e in ours.encode_batch(texts, device="cpu")] == want
    for device in ("cpu", "ref"):
        assert ours.encode_batch_ids(texts, device=device).to_list() == want
    for o in (ours, ref):
        o.no_truncation()
        o.no_padding()
    assert ours.truncation is None and ours.padding is None
    assert ours.encode_batch_ids(texts, device="cpu").to_list() == [e.ids for e in ref.encode_batch(texts)]


@pytest.mark.parametrize("key,value,path", _WORDPIECE_FAMILY_REFUSED + [
    ("truncation", {"max_length": 8}, "truncation.strategy"),
    ("truncation", {"max_length": 8, "strategy": "LongestFirst"}, "truncation.stride"),
    ("truncation", {"strategy": "LongestFirst", "stride": 0}, "truncation.max_length"),
    ("truncation", dict(_TRUNCATION, strategy="Longest"), "truncation.strategy"),
    ("truncation", dict(_TRUNCATION, direction="Up"), "truncation.direction"),
    ("truncation", dict(_TRUNCATION, stride=-1), "truncation.stride"),
    ("truncation", [1], "truncation"),
    ("padding", {"strategy": "BatchLongest"}, "padding.direction"),
    ("padding", {k: v for k, v in _PADDING.items() if k != "pad_id"}, "padding.pad_id"),
    ("padding", {k: v for k, v in _PADDING.items() if k != "pad_token"}, "padding.pad_token"),
    ("padding", dict(_PADDING, strategy={"Fixed": -1}), "padding.strategy.Fixed"),
    ("padding", dict(_PADDING, strategy="Fixed"), "padding.strategy"),
    ("padding", dict(_PADDING, pad_token=None), "padding.pad_token"),
])
def test_refused_as_the_reference_refuses_them(key, value, path):
    """The WordPiece family's fields, truncation and padding: each file the reference
    refuses is refused, naming the field."""
    tokenizers = pytest.importorskip("tokenizers")
    data = copy.deepcopy(BASE)
    data[key] = value
    with pytest.raises(Exception):
        tokenizers.Tokenizer.from_str(json.dumps(data))
    _expect(TokenizerFileError, lambda d: d.update({key: value}), path)


def test_real_file_with_truncation_and_padding():
    """all-MiniLM-L6-v2 stores truncation to 128 and padding to 128: applied; cleared, the
    reference's ids (WordPiece engine) after the same calls."""
    p = model_file("all-MiniLM-L6-v2")
    if not p.is_file():
        pytest.skip(f"model all-MiniLM-L6-v2 not available at {p}")
    tokenizers = pytest.importorskip("tokenizers")
    ours, ref = gpu_tok.Tokenizer.from_file(p), tokenizers.Tokenizer.from_file(str(p))
    assert ours.truncation == ref.truncation and ours.padding == ref.padding
    texts = ["Hello there! na\u00efve \u4e2d\u6587 " * 40, "a", ""]
    assert ours.encode_batch_ids(texts, device="cpu").to_list() == [e.ids for e in ref.encode_batch(texts)]
    for o in (ours, ref):
        o.no_truncation()
        o.no_padding()
    texts = ["Hello there! na\u00efve \u4e2d\u6587 " * 40, "a", ""]
    assert ours.encode_batch_ids(texts, device="cpu").to_list() == [e.ids for e in ref.encode_batch(texts)]


def test_dropout_zero_is_no_dropout():
    tok = _load(lambda d: d["model"].update(dropout=0.0))
    assert tok.encode("the hello").ids == gpu_tok.Tokenizer.from_str(tokenizer_json()).encode("the hello").ids


# -------------------------------------------------------- accepted spellings
def test_merges_as_pairs_or_strings_are_the_same():
    a = gpu_tok.Tokenizer.from_str(tokenizer_json())
    pairs = bpe_model()
    pairs["merges"] = [m.split(" ") for m in pairs["merges"]]
    b = gpu_tok.Tokenizer.from_str(tokenizer_json(model=pairs))
    for text in ["the hello there", "thethe 123"]:
        assert a.encode(text).ids == b.encode(text).ids


def test_model_without_type_and_byte_level_without_use_regex():
    def mutate(d):
        d["model"].pop("type")
        d["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}

    tok = _load(mutate)
    assert tok.config.pre_tokenizer.use_regex is True
    tokenizers = pytest.importorskip("tokenizers")
    data = copy.deepcopy(BASE)
    mutate(data)
    ref = tokenizers.Tokenizer.from_str(json.dumps(data))
    for text in ["the hello  there", "a1 b2"]:
        assert tok.encode(text).tokens == ref.encode(text).tokens
        assert tok.encode(text).ids == ref.encode(text).ids


# measured: what the reference requires of a Unigram model (it refuses each of these too)
_UNIGRAM_REFUSED = [
    ({"type": "Unigram", "unk_id": 0}, "model.vocab"),
    ({"type": "Unigram", "vocab": [["a", -1.0]], "unk_id": 1}, "model.unk_id"),
    ({"type": "Unigram", "vocab": [["a", -1.0]], "unk_id": -1}, "model.unk_id"),
    ({"type": "Unigram", "vocab": [["a", -1.0]], "unk_id": 0.0}, "model.unk_id"),
    ({"type": "Unigram", "vocab": [], "unk_id": 0}, "model.vocab"),
    ({"type": "Unigram", "vocab": [["<unk>", "0"], ["a", -1]], "unk_id": 0}, "model.vocab[0]"),
    ({"type": "Unigram", "vocab": [["<unk>", 0.0, 1]], "unk_id": 0}, "model.vocab[0]"),
    ({"type": "Unigram", "vocab": [["<unk>", 0.0]], "unk_id": 0, "byte_fallback": None}, "model.byte_fallback"),
    ({"unk_id": 0}, "model"),
]


@pytest.mark.parametrize("model,path", _UNIGRAM_REFUSED)
def test_unigram_fields_refused_as_the_reference_refuses_them(model, path):
    tokenizers = pytest.importorskip("tokenizers")
    data = copy.deepcopy(BASE)
    data["model"] = model
    with pytest.raises(Exception):
        tokenizers.Tokenizer.from_str(json.dumps(data))
    _expect(TokenizerFileError, lambda d: d.update(model=model), path)


def test_unigram_accepted_spellings():
    """Measured: integer scores, unknown fields, no type (a list vocab), duplicate entries
    (the last one's id and score) and a model without unk_id all load as in the reference."""
    tokenizers = pytest.importorskip("tokenizers")
    for model in ({"type": "Unigram", "vocab": [["<unk>", 0], ["a", -1], ["b", -2]], "unk_id": 0},
                  {"type": "Unigram", "vocab": [["<unk>", 0.0], ["a", -1.0]], "unk_id": 0, "foo": 1},
                  {"vocab": [["<unk>", 0.0], ["a", -1.0], ["b", -1.5]], "unk_id": 0},
                  {"type": "Unigram", "vocab": [["<unk>", 0.0], ["a", -1.0], ["a", -5.0], ["b", -1.0], ["ab", -2.1]],
                   "unk_id": 0},
                  {"type": "Unigram", "vocab": [["a", -1.0], ["b", -1.0]], "unk_id": None},
                  {"type": "Unigram", "vocab": [["a", -1.0], ["b", -1.0]]}):
        data = copy.deepcopy(BASE)
        data["model"] = model
        data["normalizer"] = data["pre_tokenizer"] = data["decoder"] = data["post_processor"] = None
        data["added_tokens"] = []
        js = json.dumps(data)
        ours, ref = gpu_tok.Tokenizer.from_str(js), tokenizers.Tokenizer.from_str(js)
        for text in ["ab", "aabba", "bbbab"]:
            assert ours.encode(text).ids == ref.encode(text).ids, (model, text)
            assert ours.encode(text).tokens == ref.encode(text).tokens, (model, text)
        assert ours.get_vocab_size() == ref.get_vocab_size()


def test_numbers_the_reference_cannot_read():
    """NaN, Infinity and numbers beyond f64: the reference refuses the file, so do we."""
    tokenizers = pytest.importorskip("tokenizers")
    for number in ("NaN", "Infinity", "-Infinity", "1e400", "-2e309"):
        js = json.dumps(BASE)[:-1] + ', "x": {"type": "Unigram", "vocab": [["<unk>", ' + number + ']], "unk_id": 0}}'
        js = js.replace('"model":', '"old_model":').replace('"x":', '"model":')
        with pytest.raises(Exception):
            tokenizers.Tokenizer.from_str(js)
        with pytest.raises(TokenizerFileError, match="JSON"):
            gpu_tok.Tokenizer.from_str(js)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(literals=st.lists(st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(min_value=-30, max_value=0, width=32).map(repr),
    st.from_regex(r"-?[1-9][0-9]{0,25}\.[0-9]{1,30}([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.from_regex(r"-?[1-9][0-9]{0,40}", fullmatch=True),
    st.from_regex(r"-?0\.0{0,20}[1-9][0-9]{0,20}", fullmatch=True)), min_size=1, max_size=20))
def test_scores_are_read_as_the_reference_reads_them(literals):
    """``serde_f64``: each score literal read to the reference's f64 (its own re-serialised
    vocabulary gives the value), where Python's ``float`` is off by one unit in the last
    place for about a quarter of t5-small's scores. Literals the reference cannot read
    (out of range) are refused by both."""
    tokenizers = pytest.importorskip("tokenizers")
    from gpu_tok.loader import serde_f64

    for lit in literals:
        js = ('{"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null, '
              '"post_processor": null, "decoder": null, "model": {"type": "Unigram", "unk_id": 0, '
              '"vocab": [["a", ' + lit + ']]}}')
        try:
            ref = tokenizers.Tokenizer.from_str(js)
        except Exception:
            with pytest.raises(TokenizerFileError):
                gpu_tok.Tokenizer.from_str(js)
            continue
        want = json.loads(ref.to_str())["model"]["vocab"][0][1]  # shortest round-trip text of its f64
        assert serde_f64(lit) == want, lit
        assert gpu_tok.Tokenizer.from_str(js).config.model.vocab[0][1] == want


# measured: the reference fails (a Rust panic) on each of these maps
_BAD_CHARSMAPS = ["", None, "!!!", "AAAA\nAAAA", base64.b64encode(b"\0\0\0\0").decode(),
                  base64.b64encode(struct.pack("<I", 4) + b"\0\0\0\0").decode(),
                  base64.b64encode(b"\0\0\0\0\xff").decode(),
                  base64.b64encode(struct.pack("<I", 40) + b"\0\0\0\0").decode()]


@pytest.mark.parametrize("charsmap", _BAD_CHARSMAPS + ["missing"])
def test_precompiled_maps_the_reference_cannot_use_are_refused(charsmap):
    tokenizers = pytest.importorskip("tokenizers")
    norm = {"type": "Precompiled"} if charsmap == "missing" else {"type": "Precompiled", "precompiled_charsmap": charsmap}
    data = copy.deepcopy(BASE)
    data["normalizer"] = norm
    with pytest.raises(BaseException) as info:  # pyo3's PanicException is not an Exception
        ref = tokenizers.Tokenizer.from_str(json.dumps(data))
        ref.encode("a b")
    assert type(info.value).__name__ in ("PanicException", "Exception")
    _expect(TokenizerFileError, lambda d: d.update(normalizer=norm), "normalizer.precompiled_charsmap")


def test_precompiled_base64_without_padding_is_read():
    """Measured: the reference reads the map's base64 with or without its ``=`` padding."""
    from _charsmap import charsmap_b64

    tokenizers = pytest.importorskip("tokenizers")
    b64 = charsmap_b64({"a": "b", "\u00e9": "e"})
    assert b64.endswith("=")
    for text in (b64, b64.rstrip("=")):
        data = copy.deepcopy(BASE)
        data["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": text}
        js = json.dumps(data)
        assert gpu_tok.Tokenizer.from_str(js).encode("a \u00e9").ids == tokenizers.Tokenizer.from_str(js).encode("a \u00e9").ids


@pytest.mark.parametrize("nested", [False, True])
def test_precompiled_charsmap_with_json_escapes_is_read(nested):
    """Measured: a charsmap string written with JSON escapes (``\\/``, ``\\u0041``) is read as
    its text by the reference, alone or inside a Sequence; so here."""
    from _charsmap import charsmap_b64

    tokenizers = pytest.importorskip("tokenizers")
    b64 = ""
    k = 0
    while "/" not in b64 or "A" not in b64:  # a map whose base64 holds both characters
        k += 1
        b64 = charsmap_b64({"a": "b", "\u00e9": "e", "x" * k: "y"})
    norm = {"type": "Precompiled", "precompiled_charsmap": "@CHARSMAP@"}
    data = copy.deepcopy(BASE)
    data["normalizer"] = {"type": "Sequence", "normalizers": [norm]} if nested else norm
    escaped = b64.replace("/", "\\/").replace("A", "\\u0041")
    js = json.dumps(data).replace("@CHARSMAP@", escaped)
    assert "\\/" in js
    text = "a \u00e9 " + "x" * k
    assert gpu_tok.Tokenizer.from_str(js).encode(text).ids == tokenizers.Tokenizer.from_str(js).encode(text).ids


@pytest.mark.parametrize("name", ["gpt2", "llama2", "bert-base-uncased", "t5-small", "clip-vit-base-patch32",
                                  "mistral-v0.3-metaspace"])
def test_pickled_after_use(name):
    """A tokenizer pickles, as ``tokenizers.Tokenizer`` does (a ``DataLoader`` worker or a
    process pool needs it), also once it has encoded and built its compiled engine: the
    copy leaves the engine out and builds its own, and keeps the added tokens and the
    truncation and padding set before; its ids, offsets and decoding are the original's.
    (Before, such a tokenizer failed to pickle: the engine holds its kernels' module; and a
    tokenizer with a normalizer never pickled: a lambda.)"""
    t = gpu_tok.Tokenizer.from_file(str(model_path(name)))
    t.add_tokens(["zzqx"])
    texts = ["Hello world, caf\u00e9 e\u0301 \u65e5\u672c 123  spaces\tand zzqx <s> tokens", "", "a b"]
    ids = t.encode_batch_ids(texts, device="cpu").to_list()
    t.enable_truncation(max_length=7)
    t.enable_padding(pad_id=0, pad_token="[PAD]")
    encs = t.encode_batch(texts, device="cpu")
    assert t._cpu is not None  # the engine was built
    t2 = pickle.loads(pickle.dumps(t))
    assert t2._cpu is None and "_fast_decoding" not in t2.__dict__
    t2.no_truncation()
    t2.no_padding()
    assert t2.encode_batch_ids(texts, device="cpu").to_list() == ids
    t2.enable_truncation(max_length=7)
    t2.enable_padding(pad_id=0, pad_token="[PAD]")
    assert [(e.ids, e.offsets, e.attention_mask) for e in t2.encode_batch(texts, device="cpu")] == \
        [(e.ids, e.offsets, e.attention_mask) for e in encs]
    t3 = pickle.loads(pickle.dumps(t))  # truncation and padding carried over
    assert [e.ids for e in t3.encode_batch(texts, device="cpu")] == [e.ids for e in encs]
    assert t3.decode(ids[0]) == t.decode(ids[0])
