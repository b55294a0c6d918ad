"""The SentencePiece engine's ids walk raw text (decision 0041): for the normalizer forms
(every " " made "▁", a "▁" put in front of each gap for form 1) ``_sp_doc`` no longer
writes the normalized gap; ``_sp_piece`` cuts the raw gap into words (a space stands
for its "▁"), keys them on their raw bytes and normalizes only the words the caches miss.

* adversarial texts (runs of spaces, "▁" in the text, spaces next to added tokens, words
  of 1 to 2,000 bytes, byte-fallback characters, the normalized added tokens' texts):
  the raw walk equals the reference and the normalized walk (``raw_walk`` off), for every
  SentencePiece model with a normalizer form, on one and two threads, through fresh and
  through tiny word caches;
* ``_spaces_in`` (a word's spaces, for the normalized length the short cache's hit needs);
* which engines walk raw text.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import gpu_tok
from gpu_tok import fast_cpu

from _kept import kept_dict
from _paths import model_path
from _samples import bench_texts

NORMALIZER_FORMS = ["llama2", "mistral-v0.1", "phi-3-mini", "gemma3"]
_TOKS: dict = kept_dict()


def tok(name: str) -> gpu_tok.Tokenizer:
    if name not in _TOKS:
        _TOKS[name] = gpu_tok.Tokenizer.from_file(str(model_path(name)))
    return _TOKS[name]


_BITS = [" ", "  ", "    ", "a", "the", "The", "\u2581", "\u2581\u2581", " \u2581", "\u00e9", "\u4e2d\u6587", "\n",
         "\t", "x" * 14, "y" * 15, "z" * 16, "q" * 40, "<s>", "</s>", "<unk>", "<0x41>", "'s", "0123", "\U0001F600",
         "\u2001", "\u2541", "<|assistant|>", "<start_of_turn>", ".", "(x,", "self."]


def adversarial_texts(n: int, seed: int) -> list:
    """Texts made of ``_BITS``, one or two very long words, and the edge cases alone."""
    rng = random.Random(seed)
    texts = ["", " ", "  ", "\u2581", " \u2581", "\u2581 ", "a", " a", "a ", "<s>", " <s>", "<s> ", "a<s>b",
             "a <s> b", "\u2581<s>", " " * 70 + "x", "x" + " " * 70, "w" * 2000, " " + "w" * 1100 + " v",
             ("ab " * 30).strip(), "\u00e9 " * 20]
    for _ in range(n):
        texts.append("".join(rng.choice(_BITS) for _ in range(rng.randint(1, 60))))
    return texts


def _ids(t, texts, threads):
    return t.encode_batch_ids(texts, add_special_tokens=False, device="cpu", num_threads=threads).to_list()


@pytest.mark.parametrize("family", NORMALIZER_FORMS)
def test_raw_walk_equals_reference_and_normalized_walk(family, monkeypatch):
    monkeypatch.setattr(fast_cpu, "_PARALLEL_MIN_BYTES", 0)
    t = tok(family)
    eng = t._cpu_engine()
    assert len(eng.raw_walk) == 8  # this family's ids walk raw text
    texts = adversarial_texts(300, 11) + bench_texts(60_000)
    want = t.encode_batch_ids(texts, add_special_tokens=False, device="ref").to_list()
    eng._wcache = None
    try:
        for threads in (1, 2, 1):  # fresh caches, then kept ones
            got = _ids(t, texts, threads)
            assert [k for k in range(len(texts)) if got[k] != want[k]] == []
        walk = eng.raw_walk
        with monkeypatch.context() as mp:  # the normalized walk on the same caches (keys of both spellings)
            mp.setattr(eng, "raw_walk", ())
            assert _ids(t, texts, 1) == want
        assert eng.raw_walk is walk
        assert [t.encode(x, add_special_tokens=False).ids for x in texts[:40]] == want[:40]
    finally:
        eng._wcache = None


@pytest.mark.parametrize("family", ["llama2", "gemma3"])
def test_raw_walk_through_tiny_caches(family, monkeypatch):
    """Word caches of a few sets and rings of 64 bytes (entries age out between a word's
    put and its next use, and keys of both spellings, raw and normalized, share the sets):
    three passes, each the reference's ids."""
    monkeypatch.setattr(fast_cpu, "_CACHE_SLOTS", 16)
    monkeypatch.setattr(fast_cpu, "_WIDE_SLOTS", 8)
    monkeypatch.setattr(fast_cpu, "_LONG_SLOTS", 4)
    monkeypatch.setattr(fast_cpu, "_LONG_BYTES", 64)
    monkeypatch.setattr(fast_cpu, "_LONG_ID_SLOTS", 32)
    t = tok(family)
    eng = t._cpu_engine()
    texts = adversarial_texts(200, 5)
    want = t.encode_batch_ids(texts, add_special_tokens=False, device="ref").to_list()
    eng._wcache = None
    try:
        for _ in range(3):
            assert _ids(t, texts, 1) == want
        assert eng._wcache[0].shape[1] == 16  # the tiny caches were used
    finally:
        eng._wcache = None


def test_spaces_in_counts_the_spaces_of_a_word():
    """``_spaces_in`` (exact: no carry between bytes) against a count in Python, on words
    of every byte value next to spaces; ``_sp_raw_len`` adds two bytes a space."""
    from numba import njit

    from gpu_tok.kernels import engine_cpu as K

    @njit
    def raw_len(buf, n):
        w0, w1, h = K.short_key(buf, 0, n)
        return K._sp_raw_len(n, w0, w1)

    rng = random.Random(3)
    for _ in range(3000):
        n = rng.randint(2, K._SHORT_KEY)
        word = bytes(rng.choice([0x20, 0x20, 0x1F, 0x21, 0xA0, 0x00, 0xFF, rng.randrange(256)]) for _ in range(n))
        buf = np.frombuffer(word + b"\0" * 16, np.uint8)
        assert raw_len(buf, n) == n + 2 * word.count(b" "), word


def test_which_engines_walk_raw_text():
    """Raw walk for the normalizer forms with word cuts; none for Metaspace (form 2) and
    none when a normalized added token's text could not be found in the raw gap."""
    assert len(tok("mistral-v0.3-metaspace")._cpu_engine().raw_walk) == 0
    eng = tok("llama2")._cpu_engine()
    K = eng.K
    mark = "\u2581".encode()
    assert len(eng._raw_walk_marker(K, [(mark + b"<s>", 1, 0)])) == 8
    assert len(eng._raw_walk_marker(K, [(mark, 5, 0)])) == 0  # nothing left but "▁"
    assert len(eng._raw_walk_marker(K, [(b"a" + mark + b"b", 5, 0)])) == 0  # a "▁" inside
    assert len(eng._raw_walk_marker(K, [])) == 8
