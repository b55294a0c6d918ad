"""``Tokenizer.encode`` of one text (or one pair) on the compiled engine: every field equals
HF ``tokenizers``' ``encode``, with and without special tokens, truncation and padding; texts
shorter than ``ENCODE_REF_CHARS`` characters, pre-tokenized words and values that are not
``str`` take the reference path."""

from __future__ import annotations

import pytest

import gpu_tok
from gpu_tok import tokenizer as T
from gpu_tok._util import _ONE_TEXT_CHARS
from _paths import model_path
from _samples import bench_texts

tokenizers = pytest.importorskip("tokenizers")

FIELDS = ("ids", "tokens", "offsets", "type_ids", "special_tokens_mask", "word_ids", "attention_mask",
          "sequence_ids")
MODELS = ["gpt2", "llama2", "bert-base-uncased", "qwen3", "t5-small", "roberta-base", "clip-vit-base-patch32",
          "gemma3", "all-MiniLM-L6-v2"]  # (the last stores truncation and padding of its own)
SETTINGS = ["plain", "no_special", "truncate", "pad"]


def _texts():
    docs = bench_texts(40_000)
    out = ["", "hi", "x" * (T.ENCODE_REF_CHARS - 1), "y" * T.ENCODE_REF_CHARS,
           "Caf\u0065\u0301 na\u0131ve \u00e9t\u00e9 <|endoftext|> [CLS] <s> </s> \u2581\u2581 x",
           "A line with an added token <|endoftext|> in the middle, and [SEP] [MASK] <unk> too."]
    for d in docs[::7][:6]:
        out += [d[:T.ENCODE_REF_CHARS + 1], d[:100], d[:1000], d[:6000]]
    return out


def _same(a, b, what):
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if f == "offsets":
            x, y = [tuple(o) for o in x], [tuple(o) for o in y]
        assert list(x) == list(y), (what, f)
    assert len(a.overflowing) == len(b.overflowing), what
    for k, (oa, ob) in enumerate(zip(a.overflowing, b.overflowing)):
        _same(oa, ob, (what, "overflowing", k))


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("name", MODELS)
def test_encode_of_one_text_equals_the_reference(name, setting, monkeypatch):
    p = model_path(name)
    ours, ref = gpu_tok.Tokenizer.from_file(p), tokenizers.Tokenizer.from_file(str(p))
    assert ours._cpu_engine() is not None, ours.cpu_engine_reason
    if setting == "truncate":
        for t in (ours, ref):
            t.enable_truncation(24, stride=4)
    elif setting == "pad":
        for t in (ours, ref):
            t.enable_padding(length=48, pad_id=3, pad_token="[PAD]")
    special = setting != "no_special"
    # which calls take the engine's path (encode_batch's): the texts of ENCODE_REF_CHARS or more
    engine_calls = []
    real = ours._encode_batch

    def counted(inputs, *args):
        engine_calls.append(inputs)
        return real(inputs, *args)

    monkeypatch.setattr(ours, "_encode_batch", counted)
    texts = _texts()
    for k, text in enumerate(texts):
        _same(ours.encode(text, add_special_tokens=special), ref.encode(text, add_special_tokens=special),
              (name, setting, k))
    for k in range(0, len(texts) - 1, 3):  # pairs: a text and the next
        a, b = texts[k], texts[k + 1]
        if setting == "truncate" and len(a) + len(b) > 1200:
            continue  # (longest_first over long pairs is covered by test_truncation_padding)
        _same(ours.encode(a, b, add_special_tokens=special), ref.encode(a, b, add_special_tokens=special),
              (name, setting, "pair", k))
    want = [[t] for t in texts if len(t) >= T.ENCODE_REF_CHARS]
    assert engine_calls[:len(want)] == want
    assert all(len(a) + len(b) >= T.ENCODE_REF_CHARS for [(a, b)] in engine_calls[len(want):])
    assert len(engine_calls) > len(want)  # pairs too


def test_encode_leaves_words_and_other_values_to_the_reference():
    p = model_path("gpt2")
    ours, ref = gpu_tok.Tokenizer.from_file(p), tokenizers.Tokenizer.from_file(str(p))
    words = ["Hello", " world", "and", "more words than the threshold holds"]
    _same(ours.encode(words, is_pretokenized=True), ref.encode(words, is_pretokenized=True), "words")
    _same(ours.encode(words, words[:2], is_pretokenized=True), ref.encode(words, words[:2], is_pretokenized=True),
          "word pairs")
    for bad in (None, 12, b"bytes are not text at all, whatever their length"):
        with pytest.raises(TypeError):
            ref.encode(bad)
        with pytest.raises(TypeError):
            ours.encode(bad)


@pytest.mark.parametrize("name", ["gpt2", "qwen3", "roberta-base", "llama3", "llama2", "gemma3", "bert-base-uncased",
                                  "t5-small"])
def test_ids_first(name, monkeypatch):
    """No truncation or padding set: ``encode`` of one text gives its ids at once (the
    byte-level engine's ``text_ids`` where none of the added tokens occurs in the text and,
    with NFC, NFC leaves it as it is; the SentencePiece engine's serial kernel, the
    WordPiece and Unigram engines' ``encode_ids`` of one text, for any text), the attention and special-token masks, type ids and sequence ids from the
    post-processor's layout, and the other fields when one is first read
    (``encoding.DeferredRow``: the whole encoding as before); every field is HF's, also after
    ``pad`` and ``truncate`` of the encoding. On the byte-level engine an added token in the
    text or a character NFC may change (qwen3), and on both a pair, truncation or padding:
    the whole encoding at once, as before."""
    from gpu_tok.encoding import DeferredRow

    p = model_path(name)
    ours, ref = gpu_tok.Tokenizer.from_file(p), tokenizers.Tokenizer.from_file(str(p))
    whole = []
    real = ours._encode_one
    monkeypatch.setattr(ours, "_encode_one", lambda *a: whole.append(a[0]) or real(*a))
    docs = [d for d in bench_texts(60_000) if "<" not in d[:700]]  # ("<": llama3's 256 special tokens begin so)
    texts = ["hello", "", "x" * (T.ENCODE_REF_CHARS + 3), "na\u00efve caf\u00e9 \u65e5\u672c \U0001f600"]
    texts += [d[:n] for d in docs[:4] + docs[-2:] for n in (40, 700)]
    for special in (True, False):
        for text in texts:
            whole.clear()
            e, r = ours.encode(text, add_special_tokens=special), ref.encode(text, add_special_tokens=special)
            assert type(e._rows) is DeferredRow, (name, text[:20])
            assert e.ids == r.ids and len(e) == len(r), (name, text[:20])
            for f in ("attention_mask", "type_ids", "special_tokens_mask", "sequence_ids"):  # from the layout
                assert getattr(e, f) == getattr(r, f), (name, f, text[:20])
            assert not whole, (name, text[:20])
            _same(e, r, (name, special, text[:20]))
            assert whole == [text]
            e, r = ours.encode(text, add_special_tokens=special), ref.encode(text, add_special_tokens=special)
            e.pad(len(r) + 3, direction="left", pad_id=7, pad_token="<pad>")
            r.pad(len(r) + 3, direction="left", pad_id=7, pad_token="<pad>")
            _same(e, r, (name, "pad", text[:20]))
            e, r = ours.encode(text, add_special_tokens=special), ref.encode(text, add_special_tokens=special)
            e.truncate(3, stride=1)
            r.truncate(3, stride=1)
            _same(e, r, (name, "truncate", text[:20]))
    contents = [t.content for t in ref.get_added_tokens_decoder().values()]
    others = [f"a {contents[0]} b", f"{contents[-1]}x"]
    if name == "qwen3":
        others.append("Cafe\u0301 au lait")  # (NFC changes it)
    any_text = name not in ("gpt2", "qwen3", "roberta-base", "llama3")  # (not the byte-level engine's check)
    for text in others:
        e, r = ours.encode(text), ref.encode(text)
        assert (type(e._rows) is DeferredRow) == any_text, (name, text)
        _same(e, r, (name, text))
    if name == "llama3":  # "<" without "<|": its special tokens' one head is not there
        e = ours.encode("if a <b> c:")
        assert type(e._rows) is DeferredRow
        _same(e, ref.encode("if a <b> c:"), (name, "<b>"))
    assert type(ours.encode("a", "b")._rows) is not DeferredRow
    for setup in (lambda t: t.enable_truncation(5), lambda t: t.enable_padding(length=9)):
        setup(ours)
        setup(ref)
        e, r = ours.encode("hello world again and again"), ref.encode("hello world again and again")
        assert type(e._rows) is not DeferredRow
        _same(e, r, (name, "set"))
        ours.no_truncation(), ours.no_padding(), ref.no_truncation(), ref.no_padding()
    import copy
    import pickle

    text = "pickled before any field is read"
    for e in (ours.encode(text), copy.deepcopy(ours.encode(text))):  # (make: a closure, not pickled)
        _same(pickle.loads(pickle.dumps(e)), ref.encode(text), (name, "pickled"))
    # the whole encoding must hold as many ids as were given first: a difference is raised
    wrong = ref.encode("hello")
    monkeypatch.setattr(ours, "_encode_one", lambda *a: gpu_tok.Encoding(ids=wrong.ids + [0]))
    e = ours.encode("hello")
    assert e.ids == wrong.ids
    with pytest.raises(RuntimeError, match="differ"):
        e.offsets


@pytest.mark.parametrize("name", ["gpt2", "llama2"])
def test_batch_of_one_ids_first(name):
    """``encode_batch([text])`` (``transformers`` encodes one text so) gives the encoding ids
    first as ``encode`` does, every field HF's ``encode_batch``; ``device="ref"``, a batch of
    two, a tuple and pre-tokenized words keep their paths; a bad device raises as before."""
    from gpu_tok.encoding import DeferredRow

    p = model_path(name)
    ours, ref = gpu_tok.Tokenizer.from_file(p), tokenizers.Tokenizer.from_file(str(p))
    for text in ["hello", "", "The quick brown fox. " * 40]:
        for special in (True, False):
            [e] = ours.encode_batch([text], add_special_tokens=special)
            assert type(e._rows) is DeferredRow
            _same(e, ref.encode_batch([text], add_special_tokens=special)[0], (name, text[:10], special))
    assert type(ours.encode_batch(["hello"], device="ref")[0]._rows) is not DeferredRow
    assert all(type(e._rows) is not DeferredRow for e in ours.encode_batch(["hello", "world"]))
    assert type(ours.encode_batch(("hello",))[0]._rows) is not DeferredRow
    _same(ours.encode_batch([["hello", "world"]], is_pretokenized=True)[0],
          ref.encode_batch([["hello", "world"]], is_pretokenized=True)[0], (name, "words"))
    with pytest.raises(ValueError):
        ours.encode_batch(["hello"], device="tpu")


@pytest.mark.parametrize("name", ["gpt2", "qwen3", "llama2", "gemma3", "bert-base-uncased", "clip-vit-base-patch32"])
def test_batch_ids_of_one_text(name, monkeypatch):
    """``encode_batch_ids([text])``: a short text by the byte-level or SentencePiece engine's
    ``quick_ids`` (a longer one, and the other engines, by the batch path), every time the ids
    of HF's ``encode``, with and without special tokens, truncated too; a text ``quick_ids``
    leaves to the batch path (an added token in it) still right."""
    from gpu_tok import fast_cpu as F

    p = model_path(name)
    ours, ref = gpu_tok.Tokenizer.from_file(p), tokenizers.Tokenizer.from_file(str(p))
    eng = ours._cpu_engine()
    quick = isinstance(eng, (F.CpuTokenizerEngine, F.CpuSentencePieceEngine))
    calls = []
    if quick:
        real = type(eng).quick_ids
        monkeypatch.setattr(type(eng), "quick_ids", lambda self, t, add: calls.append(t) or real(self, t, add))
    added = ref.id_to_token(max(ref.get_vocab(with_added_tokens=True).values()))
    for text in ["hello", "", "caf\u00e9 e\u0301 \u4e2d", f"a {added} b", "The quick brown fox. " * 40,
                 "x" * (_ONE_TEXT_CHARS + 1)]:
        for special in (True, False):
            calls.clear()
            b = ours.encode_batch_ids([text], add_special_tokens=special)
            want = ref.encode(text, add_special_tokens=special).ids
            assert b.ids.tolist() == want and b.row_splits.tolist() == [0, len(want)], (name, text[:12], special)
            assert calls == ([text] if quick and len(text) <= _ONE_TEXT_CHARS else []), (name, text[:12])
    ours.enable_truncation(5)
    ref.enable_truncation(5)
    assert ours.encode_batch_ids(["The quick brown fox jumps"]).ids.tolist() == ref.encode("The quick brown fox jumps").ids
