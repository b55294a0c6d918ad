"""``Tokenizer.encode`` of one text (or one pair) on the compiled engine: every field equals
HF ``tokenizers``' ``encode``, with and without special tokens, truncation and padding; texts
shorter than ``ENCODE_REF_CHARS`` characters, pre-tokenized words and values that are not
``str`` take the reference path."""

from __future__ import annotations

import pytest

import gpu_tok
from gpu_tok import tokenizer as T
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
