"""Small Unigram models and SentencePiece-shaped tokenizer.json files, for tests and rule corpora.

Shared by tests/test_components_vs_reference.py and tests/oracles/generate_rules.py.
Scores come from a few values only, so that many segmentations tie and the reference's
tie rule (the first offer wins) is exercised.
"""

from __future__ import annotations

import json
import random

from _charsmap import charsmap_b64

UNIGRAM_CHARS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?'-()") + \
    list("éèçñüåωσ東京日本語한국어ひらがな") + ["\u2581"]
UNIGRAM_WORDS = ["▁the", "▁a", "▁hello", "hello", "▁world", "world", "wor", "ld", "▁wor", "he", "llo", "▁he", "ll",
                 "in", "ing", "▁in", "▁th", "th", "the", "er", "▁an", "and", "▁and", "東京", "日本語", "▁東京", "é",
                 "▁é", "ab", "abc", "bc", "▁ab", "12", "123", "1234", "▁1", "▁\u2581", "\u2581\u2581"]
SCORES = [-1.0, -2.0, -2.5, -3.0, -4.0, -8.5, -10.0, -12.0]


def unigram_model(seed=0, unk_id=0, byte_fallback=False, bytes_present=(), positive=False, dup=False,
                  chars=UNIGRAM_CHARS, words=UNIGRAM_WORDS):
    """``<unk>``, ``<s>``, ``</s>`` then ``chars`` and ``words`` with scores drawn (seeded)
    from ``SCORES`` (shifted to positive values with ``positive``); ``<0xXX>`` entries
    for the bytes in ``bytes_present``; ``dup`` repeats a few entries with other scores."""
    rnd = random.Random(seed)
    shift = 30.0 if positive else 0.0
    vocab = [["<unk>", 0.0], ["<s>", 0.0], ["</s>", 0.0]]
    vocab += [[f"<0x{b:02X}>", 0.0] for b in bytes_present]
    seen = set()
    for t in list(chars) + list(words):
        if t not in seen:
            seen.add(t)
            vocab.append([t, rnd.choice(SCORES) + shift])
    # "☃" alone is unknown: "☃x" scores half a point above, "x☃" half a point below, the
    # path through the unknown token (lowest score - 10) and "x" (with positive scores,
    # where they are not the lowest themselves)
    low = min(sc for _t, sc in vocab)
    sx = dict(vocab)["x"]
    vocab += [["☃x", low - 10 + sx + 0.5], ["x☃", low - 10 + sx - 0.5]]
    if dup:
        for t in ("▁the", "a", "ll"):
            vocab.append([t, rnd.choice(SCORES) + shift])
    m = {"type": "Unigram", "unk_id": unk_id, "vocab": vocab}
    if byte_fallback:
        m["byte_fallback"] = True
    return m


UNIGRAM_ADDED = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                  "special": True} for i, t in enumerate(["<unk>", "<s>", "</s>"])]
UNIGRAM_TEMPLATE = {
    "type": "TemplateProcessing",
    "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
             {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "</s>", "type_id": 1}}],
    "special_tokens": {"</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}},
}
# T5's pre-tokenizer and decoder (legacy fields), and the current form
LEGACY_METASPACE = {"type": "Metaspace", "replacement": "\u2581", "str_rep": "\u2581", "add_prefix_space": True}
UNIGRAM_PRE_TOKENIZERS = {
    "t5": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, LEGACY_METASPACE]},
    "metaspace": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    "metaspace-first-nosplit": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": False},
    "metaspace-first": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True},
    "metaspace-never": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": True},
    "t5-never": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, dict(
        LEGACY_METASPACE, add_prefix_space=False, prepend_scheme="never")]},
    "none": None,
}

# rules in the spirit of nmt_nfkc: compatibility forms, a removal, an expansion, rules
# for clusters (base + mark), white space and controls
PRECOMPILED_RULES = {
    "Ａ": "A", "ａ": "a", "１": "1", "ﬁ": "fi", "™": "TM", "①": "1", "\u00a0": " ", "\u3000": " ",
    "\x01": "", "\u200b": "", "e\u0301": "é", "A\u030a": "Å", "ｶﾞ": "ガ", "\t": " ", "\r\n": "\n",
    "\u1100\u1161": "가", "é": "e\u0301", "Ω": "ω", "①②": "12",
}


def precompiled(rules=None):
    return {"type": "Precompiled", "precompiled_charsmap": charsmap_b64(PRECOMPILED_RULES if rules is None else rules)}


def unigram_tokenizer_json(model, normalizer=None, pre_tokenizer="t5", decoder=None, post_processor=None,
                           added=UNIGRAM_ADDED):
    """A T5-shaped tokenizer.json (str) around ``model``: ``normalizer`` (default the
    Precompiled rules above; "none": none), the named pre-tokenizer, ``$A </s>``, the
    Metaspace decoder (with ByteFallback first when the model has byte_fallback)."""
    if decoder is None:
        decoder = LEGACY_METASPACE
        if model.get("byte_fallback"):
            decoder = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, LEGACY_METASPACE]}

    def part(given, default):
        return default if given is None else None if given == "none" else given

    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": part(normalizer, precompiled()),
        "pre_tokenizer": UNIGRAM_PRE_TOKENIZERS[pre_tokenizer],
        "post_processor": part(post_processor, UNIGRAM_TEMPLATE),
        "decoder": part(decoder, None),
        "model": model,
    })


def small_unigram_json(pre_tokenizer="t5", **options):
    """``{"uni": {...}}`` of a rule record: ``unigram_model(**options)`` in the T5 shape."""
    if "bytes_present" in options:
        options["bytes_present"] = range(*options["bytes_present"])  # [start, stop, step] in JSON
    return unigram_tokenizer_json(unigram_model(**options), pre_tokenizer=pre_tokenizer)
