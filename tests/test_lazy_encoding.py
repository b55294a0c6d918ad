"""Lazy ``Encoding`` objects (``gpu_tok.encoding.EncodingRows``): the compiled engines'
``encode_batch`` keeps each batch's fields as flat arrays and makes an encoding's lists
when a field is first read, as the reference's ``Encoding`` does. Checked here: every
field equal to the installed reference under every post-processor (the layout found by
``post_processors.single_layout``, or the eager path where a processor trims offsets by
the token strings), and lists that behave as lists (written to, padded, truncated,
copied)."""

from __future__ import annotations

import pytest

tokenizers = pytest.importorskip("tokenizers")
if tokenizers.__version__ != "0.23.1":  # pragma: no cover
    pytest.skip(f"reference tokenizers==0.23.1 required, found {tokenizers.__version__}", allow_module_level=True)

import gpu_tok  # noqa: E402
from gpu_tok.cpu_ref import post_processors  # noqa: E402
from gpu_tok.fast_cpu import layout_processor  # noqa: E402

from _encodings import diff  # noqa: E402
from _small_bpe import WP_SPECIALS, wordpiece_model, wordpiece_tokenizer_json  # noqa: E402

_CHARS = "abcdefghijklmnopqrstuvwxyz.,!?'-"


def _template(a_type, cls_type, sep_type):
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": cls_type}},
                       {"Sequence": {"id": "A", "type_id": a_type}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": sep_type}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": WP_SPECIALS}


_BERT = {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}
# name -> (post_processor, whether the lazy layout serves it: a processor that trims offsets
# first, its rows trimmed, then laid out as the same processor without the trim,
# ``fast_cpu.layout_processor``; one that trims after adding tokens is not served)
_PROCESSORS = {
    "none": ("none", True),
    "template": (_template(0, 0, 0), True),
    "template-type-ids": (_template(1, 2, 3), True),
    "template-suffix-only": ({"type": "TemplateProcessing",
                              "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                         {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                              "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                              "special_tokens": WP_SPECIALS}, True),
    "bert": (_BERT, True),
    "roberta": ({"type": "RobertaProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2], "trim_offsets": False,
                 "add_prefix_space": False}, True),
    "roberta-trim": ({"type": "RobertaProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2], "trim_offsets": True,
                      "add_prefix_space": True}, True),
    "bytelevel": ({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True}, True),
    "bytelevel-trim": ({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
                       True),
    "sequence-trim": ({"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        _template(0, 1, 0)]}, True),
    "sequence-trim-last": ({"type": "Sequence", "processors": [
        _template(0, 1, 0), {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}]},
        False),
    "sequence": ({"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": True},
        _template(0, 1, 0)]}, True),
    "template-pair-specials": ({"type": "TemplateProcessing",
                                "single": [{"Sequence": {"id": "A", "type_id": 3}}],
                                "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 2}},
                                         {"Sequence": {"id": "A", "type_id": 1}},
                                         {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                                         {"SpecialToken": {"id": "[CLS]", "type_id": 4}},
                                         {"Sequence": {"id": "B", "type_id": 0}},
                                         {"SpecialToken": {"id": "[SEP]", "type_id": 5}}],
                                "special_tokens": WP_SPECIALS}, True),
    "template-b-first": ({"type": "TemplateProcessing",
                          "single": [{"Sequence": {"id": "A", "type_id": 0}}],
                          "pair": [{"Sequence": {"id": "B", "type_id": 1}},
                                   {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                                   {"Sequence": {"id": "A", "type_id": 0}}],
                          "special_tokens": WP_SPECIALS}, True),
}
# whether a pair's layout is served lazily (``post_processors.pair_layout``), where it
# differs from the single text's: the second text first is not
_PAIR_LAZY = {"template-b-first": False}
_TEXTS = ["hello world", "", "a", "the end, again!", "zz [MASK] top", "   ", "x" * 300 + " y"]


def _tokenizers(pp):
    js = wordpiece_tokenizer_json(wordpiece_model(_CHARS), post_processor=pp)
    ours = gpu_tok.Tokenizer.from_str(js)
    assert ours._cpu_engine() is not None, ours.cpu_engine_reason
    return ours, tokenizers.Tokenizer.from_str(js)


@pytest.mark.parametrize("name", sorted(_PROCESSORS))
def test_every_field_as_the_reference_under_each_post_processor(name):
    pp, lazy = _PROCESSORS[name]
    ours, ref = _tokenizers(pp)
    for add in (False, True):
        lay = layout_processor(ours.config.post_processor)[0]
        assert (post_processors.single_layout(lay, add) is not None) == lazy
        got = ours.encode_batch(_TEXTS, add_special_tokens=add, device="cpu")
        # the lazy ones: no list made yet ("[MASK]", an added token, goes to the reference path)
        assert sum(e._rows is not None for e in got) == (len(_TEXTS) - 1 if lazy else 0)
        want = ref.encode_batch(_TEXTS, add_special_tokens=add)
        for text, a, b in zip(_TEXTS, got, want):
            assert len(a) == len(b), text
            assert diff(a, b) is None, (text, diff(a, b))
        # encode_batch_fast (no tokens, offsets or words): lazy on every text
        got = ours.encode_batch_fast(_TEXTS, add_special_tokens=add, device="cpu")
        assert sum(e._rows is not None for e in got) == (len(_TEXTS) if lazy else 0)
        for text, a, b in zip(_TEXTS, got, ref.encode_batch_fast(_TEXTS, add_special_tokens=add)):
            assert diff(a, b) is None, (text, diff(a, b))


@pytest.mark.parametrize("name", sorted(_PROCESSORS))
def test_pairs_as_the_reference_under_each_post_processor(name):
    """Pairs (and a batch of pairs and texts): lazy as ``encoding.PairRows`` where
    ``post_processors.pair_layout`` finds the processor's layout, every field and the
    sequence ids equal to the reference's, with and without padding; ``encode_batch_fast``
    likewise."""
    from gpu_tok.encoding import PairRows

    pp, lazy = _PROCESSORS[name]
    lazy = _PAIR_LAZY.get(name, lazy)
    ours, ref = _tokenizers(pp)
    pairs = [(a, b) for a in _TEXTS for b in _TEXTS[:4]]
    for add in (False, True):
        lay = layout_processor(ours.config.post_processor)[0]
        assert (post_processors.pair_layout(lay, add) is not None) == lazy
        for batch in (pairs, pairs[:5] + _TEXTS):
            for pad in (None, {"direction": "left", "pad_to_multiple_of": 8}):
                for t in (ours, ref):
                    t.no_padding()
                    if pad is not None:
                        t.enable_padding(**pad)
                got = ours.encode_batch(batch, add_special_tokens=add, device="cpu")
                # "[MASK]" (an added token) is the reference path's: its pairs are not lazy
                n_lazy = sum(isinstance(x, tuple) and "[MASK]" not in x[0] + x[1] for x in batch)
                assert sum(isinstance(e._rows, PairRows) for e in got) == (n_lazy if lazy else 0)
                for item, a, b in zip(batch, got, ref.encode_batch(batch, add_special_tokens=add)):
                    assert diff(a, b) is None, (item, diff(a, b))
                    assert a.sequence_ids == b.sequence_ids, item
                # encode_batch_fast (the second text's type id 0 before the post-processor): lazy on every pair
                got = ours.encode_batch_fast(batch, add_special_tokens=add, device="cpu")
                n_pairs = sum(isinstance(x, tuple) for x in batch)
                assert sum(isinstance(e._rows, PairRows) for e in got) == (n_pairs if lazy else 0)
                for item, a, b in zip(batch, got, ref.encode_batch_fast(batch, add_special_tokens=add)):
                    assert diff(a, b) is None, (item, diff(a, b))
                    assert a.sequence_ids == b.sequence_ids, item


def test_lazy_fields_are_lists_of_their_own():
    ours, ref = _tokenizers(_BERT)
    e, f = ours.encode_batch(["hello world", "hello world"], device="cpu")
    assert e._rows is f._rows and e._rows is not None  # one batch's arrays
    e.ids.append(99)
    e.tokens[0] = "changed"
    assert e.ids[-1] == 99 and len(e) == len(f) + 1 and e.tokens[0] == "changed"
    assert f.ids == ref.encode("hello world").ids and f.tokens[0] == "[CLS]"
    e.ids = [1, 2]
    assert e.ids == [1, 2]
    # padded, truncated, copied: as the reference's
    g, h = ours.encode_batch(["hello world again", "a b"], device="cpu")
    rg, rh = ref.encode_batch(["hello world again", "a b"])
    for x in (g, rg):
        x.pad(12, direction="left", pad_id=0, pad_token="[PAD]")
    for x in (h, rh):
        x.truncate(3, stride=1)
    assert diff(g, rg) is None and diff(h, rh) is None
    c = g.copy()
    c.ids[0] = 5
    assert g.ids[0] == 0 and diff(g, rg) is None
    # padding kept for the lists' making (no list made yet), then padded again
    for kw in ({"direction": "right", "pad_id": 7, "pad_type_id": 2, "pad_token": "<p>"}, {"direction": "left"}):
        (x,), (y,) = ours.encode_batch(["a b c"], device="cpu"), ref.encode_batch(["a b c"])
        assert x._untouched()
        for e in (x, y):
            e.pad(9, **kw)
        assert len(x) == 9 and x._untouched()
        for e in (x, y):
            e.pad(11, direction="left")
        assert diff(x, y) is None and x.sequence_ids == y.sequence_ids


def test_padding_set_on_the_tokenizer():
    ours, ref = _tokenizers(_template(1, 2, 3))
    for t in (ours, ref):
        t.enable_padding(direction="left", pad_to_multiple_of=8, pad_id=0, pad_token="[PAD]")
    for a, b in zip(ours.encode_batch(_TEXTS, device="cpu"), ref.encode_batch(_TEXTS)):
        assert diff(a, b) is None
    for a, b in zip(ours.encode_batch_fast(_TEXTS, device="cpu"), ref.encode_batch_fast(_TEXTS)):
        assert diff(a, b) is None


def test_generators_read_once():
    """A generator of texts gives what its list gives (truncation set: it is read twice)."""
    ours, _ref = _tokenizers(_BERT)
    ours.enable_truncation(max_length=4)
    for f in (ours.encode_batch, ours.encode_batch_fast):
        want = [e.ids for e in f(_TEXTS, device="cpu")]
        assert [e.ids for e in f((t for t in _TEXTS), device="cpu")] == want and len(want) == len(_TEXTS)


def test_ids_and_offsets_of_chunks_of_rows_handed_out_once(monkeypatch):
    """``EncodingRows._chunk_row``: rows' ``ids`` and ``offsets`` lists made a chunk of rows
    at a time, read in any order, each row's list its own (a second encoding on the same
    row gets a new, equal one); a chunk of more than ``_CHUNK_IDS`` tokens read a row at a
    time. Every list equals the NumPy way (``tolist``, tuples of ``tolist``)."""
    import random

    import numpy as np

    from gpu_tok import encoding as E

    monkeypatch.setattr(E, "_CHUNK", 4)
    monkeypatch.setattr(E, "_CHUNK_IDS", 40)
    rng = np.random.default_rng(5)
    lens = rng.integers(0, 9, 30)
    lens[12:16] = 30  # a chunk of 120 tokens: row by row
    bounds = np.zeros(31, np.int64)
    np.cumsum(lens, out=bounds[1:])
    N = int(bounds[-1])
    ids = rng.integers(0, 1 << 20, N).astype(np.int32)
    starts = rng.integers(0, 5000, N).astype(np.int64)
    ends = starts + rng.integers(0, 9, N)
    rows = E.EncodingRows(ids, None, starts, ends, None, bounds, 0)
    order = list(range(30))
    random.Random(3).shuffle(order)
    got = {}
    for d in order:
        e = E.Encoding._lazy(rows, d)
        if d % 2:
            got[d] = (e.ids, e.offsets)
        else:  # offsets read first
            o = e.offsets
            got[d] = (e.ids, o)
    for d in range(30):
        a, b = bounds[d], bounds[d + 1]
        assert got[d] == (ids[a:b].tolist(), list(zip(starts[a:b].tolist(), ends[a:b].tolist())))
    assert rows._chunks[("ids", 3)] is False and rows._chunks[("offsets", 3)] is False
    assert all(rows._chunks[(f, c)] is not False for f in ("ids", "offsets") for c in (0, 1, 2, 4, 5, 6, 7))
    again = E.Encoding._lazy(rows, 5)
    assert (again.ids, again.offsets) == got[5] and again.ids is not got[5][0] and again.offsets is not got[5][1]
    assert len({id(v[0]) for v in got.values()}) == len({id(v[1]) for v in got.values()}) == 30


def test_token_strings_of_chunks_of_rows(monkeypatch):
    """``TokenStrings.rows`` through ``EncodingRows._chunk_row``: a chunk's token strings in
    one compiled call, the texts (added or unknown tokens' own text) put at their
    positions, in the rows they fall in; equal to ``TokenStrings.row`` of each row."""
    import numpy as np

    from gpu_tok import encoding as E

    monkeypatch.setattr(E, "_CHUNK", 4)
    monkeypatch.setattr(E, "_CHUNK_IDS", 40)
    rng = np.random.default_rng(8)
    lens = rng.integers(0, 9, 30)
    lens[12:16] = 30
    bounds = np.zeros(31, np.int64)
    np.cumsum(lens, out=bounds[1:])
    N = int(bounds[-1])
    vocab = np.array([f"t{i}" for i in range(1000)], dtype=object)
    ids = rng.integers(0, 1000, N).astype(np.int32)
    pos = np.unique(np.concatenate([bounds[1:-1][lens[1:] > 0][:6], rng.integers(0, N, 12)])).astype(np.int64)
    texts = [f"<text {p}>" for p in pos.tolist()]
    toks = E.TokenStrings(vocab, ids, pos, texts)
    rows = E.EncodingRows(ids, toks, None, None, None, bounds, 0)
    want = [toks.row(int(bounds[d]), int(bounds[d + 1])) for d in range(30)]
    got = [E.Encoding._lazy(rows, d).tokens for d in reversed(range(30))][::-1]
    assert got == want and sum(t.startswith("<text") for row in got for t in row) == len(pos)
    assert rows._chunks[("tokens", 3)] is False and rows._chunks[("tokens", 0)] is not False
