"""Documents given as UTF-8 already in memory (``gpu_tok._util.PackedTexts``, what the corpus
job's reader hands the engines): a sequence of ``str`` to whoever reads it as one, packed by
the engines from its bytes, and the same ids as the list of those ``str``s on every engine."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import gpu_tok
from gpu_tok._util import PackedTexts, text_list

from _paths import model_path, models_dir
from _samples import bench_texts

# added tokens, text NFC changes (qwen3), empty documents, a NUL, runs of spaces, CJK, emoji
EDGE = ["", "a", "<|endoftext|> hi<|endoftext|>", "[CLS] x [SEP] [MASK]", "<s> hello</s> <unk>", "cafe\u0301 e\u0301",
        "\u00c5ngstr\u00f6m \u212b", "\x00 nul", "  many   spaces \n\n\t end ", "\u4e2d\u6587 \U0001f600 x", "\ufeffbom"]


def packed(texts, gap=b"\n#"):
    """``texts`` as a ``PackedTexts`` over one buffer, with bytes between the documents (the
    reader's buffer holds the JSON around each field)."""
    bs = [t.encode("utf-8") for t in texts]
    buf = np.frombuffer(b"".join(gap + b for b in bs) + gap, np.uint8).copy()
    sizes = np.array([len(b) for b in bs], np.int64)
    ends = np.cumsum(sizes + len(gap))
    return PackedTexts.from_buffer(buf, ends - sizes, ends)


def test_a_sequence_of_str():
    texts = ["one", "", "\u00e9t\u00e9 \u4e2d", "\U0001f600", "last"]
    p = packed(texts)
    assert len(p) == 5 and list(p) == texts and [p[k] for k in range(-5, 5)] == texts[-5:] + texts
    assert list(p[1:4]) == texts[1:4] and list(p[::-1]) == texts[::-1] and isinstance(p[1:4], PackedTexts)
    with pytest.raises(IndexError):
        p[5]
    assert text_list(p) is p and text_list(texts) is texts and text_list(tuple(texts)) == texts
    assert pickle.loads(pickle.dumps(p)) == texts  # travels as its documents
    q = PackedTexts.join([p[:2], packed(["x", "y"]), p[2:]])
    assert list(q) == texts[:2] + ["x", "y"] + texts[2:] and len(q.owners) == 2
    assert len(PackedTexts.join([])) == 0 and PackedTexts.join([p]) is p
    del p
    assert list(q)[4] == texts[2]  # the buffers live as long as a sequence that reads them


def _texts():
    return EDGE + bench_texts(30_000)


class _Decodes:
    """Counts the documents of ``PackedTexts`` read as ``str``."""

    def __init__(self, monkeypatch):
        self.n = 0
        get, it = PackedTexts.__getitem__, PackedTexts.__iter__

        def getitem(p, k):
            self.n += not isinstance(k, slice)
            return get(p, k)

        def iterate(p):
            for t in it(p):
                self.n += 1
                yield t
        monkeypatch.setattr(PackedTexts, "__getitem__", getitem)
        monkeypatch.setattr(PackedTexts, "__iter__", iterate)


@pytest.mark.parametrize("name", ["gpt2", "llama3", "qwen3", "roberta-base", "llama2", "gemma3", "bert-base-uncased",
                                  "t5-small", "clip-vit-base-patch32"])
def test_same_ids_as_the_strs(name, monkeypatch):
    """Every CPU engine family: ``encode_batch_ids`` of the ``PackedTexts`` equals that of the
    ``str``s, with and without special tokens; of the plain bench documents no ``str`` is
    made (the engine packed their bytes), and with the edge cases only for the documents an
    engine sends to the reference path."""
    t = gpu_tok.Tokenizer.from_file(str(model_path(name)))
    assert t.cpu_engine_reason is None, t.cpu_engine_reason
    texts = _texts()
    p = packed(texts)
    decodes = _Decodes(monkeypatch)
    for add in (False, True):
        want = t.encode_batch_ids(texts, add_special_tokens=add, device="cpu")
        got = t.encode_batch_ids(p, add_special_tokens=add, device="cpu")
        assert np.array_equal(got.row_splits, want.row_splits) and np.array_equal(got.ids, want.ids), (name, add)
    assert decodes.n < 2 * len(EDGE), (name, decodes.n)
    decodes.n = 0
    plain = bench_texts(30_000)
    got = t.encode_batch_ids(packed(plain), device="cpu")
    want = t.encode_batch_ids(plain, device="cpu")
    assert np.array_equal(got.ids, want.ids) and np.array_equal(got.row_splits, want.row_splits)
    assert decodes.n == 0, (name, decodes.n)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_same_ids_as_the_strs_tiktoken(name, monkeypatch):
    from gpu_tok.tiktoken_encoding import named_definition

    path = models_dir() / "tiktoken" / named_definition(name)["rank_file"]
    if not path.is_file():
        pytest.skip(f"rank file not available: {path}")
    enc = gpu_tok.Tokenizer.from_tiktoken(name, path=path)
    texts = _texts()
    p = packed(texts)
    decodes = _Decodes(monkeypatch)
    for allowed in (frozenset(), "all"):
        want = enc.encode_batch_ids(texts, allowed_special=allowed, disallowed_special=())
        got = enc.encode_batch_ids(p, allowed_special=allowed, disallowed_special=())
        assert np.array_equal(got.row_splits, want.row_splits) and np.array_equal(got.ids, want.ids), (name, allowed)
    assert decodes.n == 0
    with pytest.raises(ValueError, match="disallowed special token"):  # still found in the bytes
        enc.encode_batch_ids(p)
