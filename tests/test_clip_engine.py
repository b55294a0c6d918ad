"""The CLIP engine (``gpu_tok/fast_clip.py``, decision 0033): byte-level BPE with an
end-of-word suffix behind CLIP's lowercasing normalizer and split pattern, ids on
``device="cpu"``.

* (every golden record of clip-vit-base-patch32, ids and ``encode_batch`` fields: in
  ``tests/test_cpu_engine.py``, which lists the family among the served ones);
* random text built from the characters that matter here (contractions, case, the special
  tokens in other cases, white space of every kind, combining marks, letters that lowercase
  to two characters) against the pinned reference, live, on one and two threads;
* the parallel plan equals the serial one; NFC-changed documents; a ``use_regex=false``
  variant (the literal alternatives then matter); settings it does not serve are named.
"""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

import gpu_tok
from gpu_tok import fast_cpu
from _paths import model_path
from _kept import kept_dict
from _samples import bench_texts

FAMILY = "clip-vit-base-patch32"
_TOK = kept_dict()


def tok() -> gpu_tok.Tokenizer:
    if "t" not in _TOK:
        _TOK["t"] = gpu_tok.Tokenizer.from_file(str(model_path(FAMILY)))
    return _TOK["t"]


def hf_tok(d=None):
    tokenizers = pytest.importorskip("tokenizers")
    if d is None:
        return tokenizers.Tokenizer.from_file(str(model_path(FAMILY)))
    return tokenizers.Tokenizer.from_str(json.dumps(d))


def rows(batch):
    return [batch.ids[a:b].tolist() for a, b in zip(batch.row_splits[:-1], batch.row_splits[1:])]


_ATOMS = ["'", "s", "t", "re", "ve", "m", "ll", "d", "S", "T", "RE", "VE", "LL", "D", "'S", "\u2019",
          " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\x1c", "\x85", "\x0b",
          "<|startoftext|>", "<|endoftext|>", "<|STARTOFTEXT|>", "<|EndOfText|>", "<|", "|>", "<", "|", ">",
          "endoftext", "</w>", "İ", "I", "ı", "Σ", "ς", "ẞ", "Ω", "K", "Å", "ǅ", "\u0301", "\u0307", "e", "a",
          "a\u0301", "A\u030a", "\u1100\u1161", "1", "½", "٣", "Ⅻ", "①", "!", "?", "..", "—", "€", "😀",
          "👍🏽", "\u200d", "\ufe0f", "日", "ー", "ゝ", "ﬁ", "ſ", "\x00"]


def random_texts(seed: int, n: int):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(0, 12)
        if rng.random() < 0.3:
            cps = [rng.choice([rng.randint(32, 0x2FF), rng.randint(0x300, 0x36F), rng.randint(0x370, 0x1FFF),
                               rng.randint(0x2000, 0x2FFF), rng.randint(0x3000, 0xD7FF),
                               rng.randint(0xE000, 0x10FFFF)]) for _ in range(k)]
            out.append("".join(map(chr, cps)))
        else:
            out.append("".join(rng.choice(_ATOMS) for _ in range(k)))
    return out


def test_engine_serves():
    from gpu_tok.fast_clip import CpuClipEngine

    t = tok()
    assert t.cpu_engine_reason is None
    assert isinstance(t._cpu_engine(), CpuClipEngine)


@pytest.mark.parametrize("change, named", [
    (lambda d: d["normalizer"]["normalizers"].pop(), "normalizer"),
    (lambda d: d["pre_tokenizer"]["pretokenizers"][0]["pattern"].update(Regex=r"[\p{L}]+|[\p{N}]"), "pre_tokenizer"),
    (lambda d: d["model"].update(ignore_merges=True), "ignore_merges"),
    (lambda d: d["added_tokens"][0].update(lstrip=True), "lstrip"),
])
def test_declines_by_name(change, named):
    """A setting the engine does not reproduce is named in the reason, and device="cpu"
    then runs the reference path (equal to the reference)."""
    d = json.loads(model_path(FAMILY).read_text(encoding="utf-8"))
    change(d)
    t = gpu_tok.Tokenizer.from_str(json.dumps(d))
    assert t.cpu_engine_reason is not None and named in t.cpu_engine_reason
    texts = ["Hello World", "it's <|endoftext|> X", ""]
    assert t.encode_batch_ids(texts, device="cpu").to_list() == [e.ids for e in hf_tok(d).encode_batch(texts)]


@pytest.mark.parametrize("seed", [1, 2])
def test_random_text_equals_reference(seed):
    texts = random_texts(seed, 4000)
    big = "".join(texts)
    texts += [big, big.upper(), "".join(t for t in texts[:500] if "\u0301" not in t and "\u030a" not in t)]
    want = [e.ids for e in hf_tok().encode_batch(texts)]
    for threads in (1, 2):
        got = tok().encode_batch_ids(texts, device="cpu", num_threads=threads).to_list()
        bad = [i for i in range(len(texts)) if got[i] != want[i]]
        assert not bad, f"threads={threads}: {len(bad)} differ, first {texts[bad[0]][:200]!r}"


def test_parallel_equals_serial_and_reference(monkeypatch):
    texts = bench_texts(60_000)
    texts = texts + [" ".join(texts).replace("\n", " ")[:200_000], "", "x", "<|endoftext|>" * 3]
    t = tok()
    want = t.encode_batch_ids(texts, add_special_tokens=False, device="ref").to_list()
    serial = t.encode_batch_ids(texts, add_special_tokens=False, device="cpu", num_threads=1).to_list()
    monkeypatch.setattr(fast_cpu, "_PARALLEL_MIN_BYTES", 0)
    par = t.encode_batch_ids(texts, add_special_tokens=False, device="cpu", num_threads=2).to_list()
    assert serial == want
    assert par == want


def test_scratch_kept_and_never_shared(monkeypatch):
    """The ids path's scratch (``low``, ``buf``, the piece bounds) is kept between calls
    (``KeptArray``s under the engine's lock): a smaller batch after a larger one reuses it
    (its bytes past the batch's end are the last batch's), ids returned earlier do not
    change, four threads at once (those finding it held make their own), one call while
    another holds the lock, and a batch with added tokens and NFC documents after it; all
    equal to the reference."""
    import threading

    monkeypatch.setattr(fast_cpu, "_PARALLEL_MIN_BYTES", 0)
    t = gpu_tok.Tokenizer.from_file(str(model_path(FAMILY)))
    eng = t._cpu_engine()
    texts = bench_texts(60_000) + random_texts(7, 300) + ["x <|endoftext|> y", "Cafe\u0301 " * 30]
    want = t.encode_batch_ids(texts, device="ref").to_list()
    for threads in (1, 2):
        first = t.encode_batch_ids(texts, device="cpu", num_threads=threads)
        assert first.to_list() == want
        bufs = [k._buf for k in eng._kept]
        assert all(b is not None for b in bufs)
        later = texts[::-1][::2]
        assert t.encode_batch_ids(later, device="cpu", num_threads=threads).to_list() == want[::-1][::2]
        assert all(k._buf is b for k, b in zip(eng._kept, bufs))
        assert first.to_list() == want
    results = [None] * 4

    def run(k):
        results[k] = t.encode_batch_ids(texts[k::3] + texts, device="cpu", num_threads=2).to_list()

    workers = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for k in range(4):
        assert results[k] == want[k::3] + want
    with eng._lock:  # held: the call makes its own scratch
        assert t.encode_batch_ids(texts[:80], device="cpu").to_list() == want[:80]


def test_nfc_documents():
    """Documents NFC changes are normalized gap by gap and run again; where a raw token
    would match the normalized text differently, the reference path."""
    from gpu_tok.cpu_ref.pipeline import check_text

    texts = ["Cafe\u0301 A\u030angstro\u0308m", "e\u0301<|endoftext|>\u0301X", "<|endoftext|>\u0338",
             "\u1100\u1161\u11a8 DON'T", "plain text", "x>\u0338<|endoftext|>", "<|endoftext|>\u0301"]
    eng = tok()._cpu_engine()
    data, offsets = fast_cpu.pack(texts, check_text)
    # set aside: the decomposed letters, and ">" + U+0338 (NFC: U+226F), even where the ">"
    # ends a raw token: the reference normalizes the gap after the token alone (unchanged)
    assert eng._run(data, offsets, True, 1)[2].tolist() == [1, 1, 1, 1, 0, 1, 0]
    got = tok().encode_batch_ids(texts, device="cpu").to_list()
    assert got == [e.ids for e in hf_tok().encode_batch(texts)]


def test_use_regex_false_variant():
    """With ``ByteLevel(use_regex=false)`` the pattern's pieces are the words: a literal
    alternative formed by lowercasing ("<|ENDOFTEXT|>") is one piece, which the engine
    leaves to the reference path."""
    d = json.loads(model_path(FAMILY).read_text(encoding="utf-8"))
    d["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = False
    t = gpu_tok.Tokenizer.from_str(json.dumps(d))
    assert t.cpu_engine_reason is None
    texts = ["<|ENDOFTEXT|>", "a <|EndOfText|>b", "<|STARTOFTEXT|>", "x<|endoftext|>y"] + random_texts(3, 1500)
    want = [e.ids for e in hf_tok(d).encode_batch(texts)]
    assert t.encode_batch_ids(texts, device="cpu").to_list() == want
    assert want[0] != [e.ids for e in hf_tok().encode_batch(texts[:1])][0]  # the variant differs there


_FIELDS = ("ids", "tokens", "offsets", "word_ids", "type_ids", "special_tokens_mask", "attention_mask")


@pytest.mark.parametrize("seed", [3])
def test_encode_batch_fields_equal_reference(seed):
    """Every ``encode_batch`` field (offsets through the lowercasing: U+0130 gives two
    characters, both with its span; byte-level tokens that split a character), both flags,
    one and two threads; ``device="auto"`` (the CPU engine here) gives the same ids."""
    texts = random_texts(seed, 3000)
    texts += ["İK Hello  World", "ΩΣ<|endoftext|>it's <|STARTOFTEXT|>x", "a😀b", "  x  ", "".join(texts[:400])]
    for flag in (True, False):
        want = [[getattr(e, f) for f in _FIELDS] for e in hf_tok().encode_batch(texts, add_special_tokens=flag)]
        for threads in (1, 2):
            encs = tok().encode_batch(texts, add_special_tokens=flag, device="cpu", num_threads=threads)
            got = [[getattr(e, f) for f in _FIELDS] for e in encs]
            bad = [i for i in range(len(texts)) if got[i] != want[i]]
            assert not bad, f"flag={flag} threads={threads}: {len(bad)} differ, first {texts[bad[0]][:100]!r}"
    assert (tok().encode_batch_ids(texts, device="auto").to_list()
            == [e.ids for e in hf_tok().encode_batch(texts)])


def test_eow_symbol_never_output():
    """The extra 0xFF symbol (id = vocabulary size) is merged first in every piece, so it
    never reaches the output; a one-byte piece becomes the byte's suffixed token."""
    t = tok()
    eng = t._cpu_engine()
    size = max(eng.ref.model.vocab.values()) + 1
    b = t.encode_batch_ids(random_texts(4, 2000), device="cpu")
    assert b.ids.shape[0] > 0 and int(np.max(b.ids)) < size
    assert t.encode_batch_ids(["a"], add_special_tokens=False, device="cpu").to_list() == [[eng.ref.model.vocab["a</w>"]]]


def test_added_tokens_in_the_engine():
    """Raw tokens (matched on the raw text) and normalized ones (on the lowercased gaps)
    are taken by the engine itself, not the reference path, in the file and in a variant
    with a normalized token that is none of the pattern's literals."""
    from gpu_tok.cpu_ref.pipeline import check_text

    d = json.loads(model_path(FAMILY).read_text(encoding="utf-8"))
    d["added_tokens"].append({"id": 49408, "content": "<Foo>", "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": True, "special": False})
    variant = gpu_tok.Tokenizer.from_str(json.dumps(d))
    texts = ["<|STARTOFTEXT|>x <|endoftext|> Y", "a<|startoftext|>b<|endoftext|>c", "<|StartOfText|>",
             "<FOO>bar <foo> <Foo>", "x<fOo>y", "İ<|endoftext|>İ"]
    for t, hf in ((tok(), hf_tok()), (variant, hf_tok(d))):
        eng = t._cpu_engine()
        data, offsets = fast_cpu.pack(texts, check_text)
        assert eng._run(data, offsets, True, 1)[2].tolist() == [0] * len(texts)
        assert t.encode_batch_ids(texts, device="cpu").to_list() == [e.ids for e in hf.encode_batch(texts)]
    assert 49408 in variant.encode_batch_ids(texts[3:4], device="cpu").ids.tolist()


def test_documents_around_a_skipped_one():
    """A document step 5 sends to the reference path, between two the engine encodes: its
    pieces are taken out, and the pieces before and after it are not run together."""
    texts = ["one two <|", "<|ENDOFTEXT|> x", "three", "<|EndOfText|>", "four five"]
    for threads in (1, 2):
        got = tok().encode_batch_ids(texts, device="cpu", num_threads=threads).to_list()
        assert got == [e.ids for e in hf_tok().encode_batch(texts)]


@pytest.mark.parametrize("setup", ["truncate77_pad", "truncate5_left_stride_pad", "pad_only"])
def test_truncation_and_padding(setup):
    """CLIP's usual call (truncation to 77, padding): texts and pairs from the engine's
    encodings cut by the early stop (``fast_cpu.truncated_batch``); padding alone (``encode_batch_fast``: the engine's ids as lazy rows);
    every field and the overflowing windows as the reference's."""
    ours, hf = gpu_tok.Tokenizer.from_file(str(model_path(FAMILY))), hf_tok()
    for t in (ours, hf):
        if setup == "truncate77_pad":
            t.enable_truncation(77)
        elif setup != "pad_only":
            t.enable_truncation(5, stride=1, direction="left")
        t.enable_padding(pad_id=49407, pad_token="<|endoftext|>")
    texts = random_texts(9, 1500) + ["a photo of a cat " * 20, "<|endoftext|> " * 40, "İ" * 100]
    inputs = [texts] + ([[(texts[i], texts[i + 1]) for i in range(0, 200, 2)]] if setup != "truncate5_left_stride_pad"
                        else [])
    for inp in inputs:
        for fast in (False, True):
            o = (ours.encode_batch_fast if fast else ours.encode_batch)(inp, device="cpu")
            h = (hf.encode_batch_fast if fast else hf.encode_batch)(inp)
            bad = [i for i in range(len(inp)) if [getattr(o[i], f) for f in _FIELDS] != [getattr(h[i], f) for f in _FIELDS]
                   or [x.ids for x in o[i].overflowing] != [x.ids for x in h[i].overflowing]]
            assert not bad, f"fast={fast}: {len(bad)} differ, first {inp[bad[0]]!r}"


@pytest.mark.parametrize("threads", [1, 2])
def test_items_in_two_passes_equal_numpys(threads, monkeypatch):
    """``_pieces`` without added tokens takes its items from ``clip_cpu.item_counts`` /
    ``item_fill``; with ``record`` it takes the NumPy steps (gathers, documents left out, the
    -2 items where two pieces in a row are not back to back): the same items, with and
    without ``runs``; with documents NFC or step 5 sends to the reference path (a lowercased
    literal: its pieces taken out between others) and empty ones."""
    c = tok()._cpu_engine()
    texts = bench_texts(300_000)
    texts[5:5] = ["a <|ENDOFTEXT|> b", "", "   ", "e\u0301 x"]
    texts[40:40] = ["x <|ENDOFTEXT|>y z"]
    data, off = fast_cpu.pack(texts, None)
    from gpu_tok import fast_clip

    calls = []
    real = fast_clip._items
    monkeypatch.setattr(fast_clip, "_items", lambda *a: calls.append(1) or real(*a))
    skip0 = c.engine._nfc_changed(data, off, None).astype(np.uint8)
    seps = 0
    for runs in (True, False):
        got_skip, want_skip = skip0.copy(), skip0.copy()
        got = c._pieces(data, off, got_skip, None, threads, threads > 1, runs=runs)
        want = c._pieces(data, off, want_skip, None, threads, threads > 1, record=True, runs=runs)[:5]
        assert np.array_equal(got_skip, want_skip) and got_skip[[5, 8, 40]].all() and not skip0[[5, 40]].any()
        for g, w in zip(got[1:], want[1:]):
            assert g.dtype == w.dtype and np.array_equal(g, w), runs
        seps += int((got[3] == -2).sum())
        assert runs or (got[3] == -1).all()
    assert seps >= 2 and len(calls) == 2  # where step 5's documents were taken out (and between blocks)
