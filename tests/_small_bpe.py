"""A small byte-level BPE and named component configurations, for tests and rule corpora.

Shared by tests/test_components_vs_reference.py and tests/oracles/generate_rules.py:
``tokenizer_json(normalizer=..., pre_tokenizer=..., post_processor=...)`` builds a
complete tokenizer.json around the 256 byte-level characters plus a few merges,
with the pre-tokenizer followed by ``ByteLevel(use_regex=false)`` so that every
text is encodable.
"""

from __future__ import annotations

import json

from gpu_tok.cpu_ref.byte_level import BYTE_TO_CHAR

# ----------------------------------------------------------------- the model
_MERGES = [("t", "h"), ("th", "e"), ("Ġ", "the"), ("i", "n"), ("e", "r"), ("Ġ", "a"), ("a", "n"),
           ("an", "d"), ("Ġ", "t"), ("o", "n"), ("Ġ", "in"), ("l", "l"), ("e", "ll"), ("h", "ell"),
           ("Ã", "©"), ("Ġ", "Ġ"), ("ĠĠ", "ĠĠ"), ("1", "2"), ("12", "3"), ("Ċ", "Ċ")]


def _vocab():
    vocab = {c: i for i, c in enumerate(BYTE_TO_CHAR)}
    for a, b in _MERGES:
        vocab.setdefault(a + b, len(vocab))
    return vocab


def bpe_model(**extra):
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


def tokenizer_json(normalizer=None, pre_tokenizer=None, post_processor=None, added=ADDED, model=None):
    """A tokenizer.json (str) around the small BPE; ``pre_tokenizer="none"`` means no pre-tokenizer."""
    if pre_tokenizer is None:
        pre = BL_NOREGEX
    elif pre_tokenizer == "none":
        pre = None  # the model sees raw characters: most are unknown and dropped
    else:
        pre = {"type": "Sequence", "pretokenizers": [pre_tokenizer, BL_NOREGEX]}
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post_processor,
        "decoder": BL_DECODER, "model": model or bpe_model(),
    })


def split(pattern, behavior, invert=False, kind="Regex"):
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


def bert_normalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True):
    return {"type": "BertNormalizer", "clean_text": clean_text, "handle_chinese_chars": handle_chinese_chars,
            "strip_accents": strip_accents, "lowercase": lowercase}


NORMALIZERS.update({
    "Bert": bert_normalizer(),
    "BertCased": bert_normalizer(lowercase=False),
    "BertNoClean": bert_normalizer(clean_text=False),
    "BertNoChinese": bert_normalizer(handle_chinese_chars=False),
    "BertStripNoLower": bert_normalizer(strip_accents=True, lowercase=False),
    "BertLowerNoStrip": bert_normalizer(strip_accents=False, lowercase=True),
    "BertAllOff": bert_normalizer(False, False, False, False),
})

PRE_TOKENIZERS = {"none": "none", "bytelevel-only": BL_NOREGEX}
for _b in BEHAVIOURS:
    for _inv in (False, True):
        PRE_TOKENIZERS[f"SplitRegex-{_b}-{_inv}"] = split(r"\d+|\s+|[^\w\s]", _b, _inv)
        PRE_TOKENIZERS[f"SplitString-{_b}-{_inv}"] = split(" ", _b, _inv, kind="String")
    PRE_TOKENIZERS[f"Punctuation-{_b}"] = {"type": "Punctuation", "behavior": _b}
PRE_TOKENIZERS.update({
    "Digits": {"type": "Digits", "individual_digits": False},
    "DigitsIndividual": {"type": "Digits", "individual_digits": True},
    "Whitespace": {"type": "Whitespace"},
    "WhitespaceSplit": {"type": "WhitespaceSplit"},
    "ByteLevelRegex": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "ByteLevelPrefix": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "Lookahead": split(r"\s+(?!\S)|\s+|\p{L}+|\p{N}{1,3}|[^\s\p{L}\p{N}]+", "Isolated"),
    "Possessive": split(r"\s++$|\s+|\p{L}+|[^\s\p{L}]+", "Isolated"),
    "Sequence": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Digits", "individual_digits": True}]},
    "BertPreTokenizer": {"type": "BertPreTokenizer"},
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



# --------------------------------------------- a small SentencePiece-style BPE
# "▁" marks a word start; <0xXX> byte tokens for byte_fallback; <unk> for the rest.
_SP_CHARS = list("\u2581abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'-<>/|é")
_SP_MERGES = [("\u2581", "t"), ("h", "e"), ("\u2581t", "he"), ("\u2581", "a"), ("i", "n"), ("\u2581", "in"),
              ("e", "r"), ("\u2581", "\u2581"), ("l", "l"), ("e", "ll"), ("h", "ell"), ("\u2581", "hell"),
              ("\u2581hell", "o"), ("1", "2")]


def sp_model(**extra):
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for c in _SP_CHARS:
        vocab.setdefault(c, len(vocab))
    for a, b in _SP_MERGES:
        vocab.setdefault(a + b, len(vocab))
    m = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
         "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
         "vocab": vocab, "merges": [[a, b] for a, b in _SP_MERGES]}
    m.update(extra)
    return m


SP_ADDED = [
    {"id": 0, "content": "<unk>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
    {"id": 1, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True, "special": True},
    {"id": 2, "content": "</s>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True},
    {"id": 0, "content": "<|end|>", "single_word": False, "lstrip": False, "rstrip": True, "normalized": False, "special": True},
    {"id": 0, "content": "<tool>", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": False},
]

_STRIP_SPACE = {"type": "Strip", "content": " ", "start": 1, "stop": 0}
SP_DECODERS = {
    "llama": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}, _STRIP_SPACE]},
    "gemma": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
    "metaspace-always": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
    "metaspace-never": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "never", "split": True},
    "metaspace-legacy": {"type": "Metaspace", "replacement": "\u2581", "str_rep": "\u2581", "add_prefix_space": True},
    "bytefallback-only": {"type": "ByteFallback"},
    "strip-both": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"},
                                                    {"type": "Strip", "content": "\u2581", "start": 2, "stop": 3}]},
    "replace-regex": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"Regex": "\u2581+"}, "content": "_"}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
    "none": None,
}

SP_PIPELINES = {
    # (normalizer, pre_tokenizer)
    "llama-normalizer": ({"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"}, {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}, None),
    "gemma-replace": ({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
                      {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": False}),
}
for _scheme in ("first", "always", "never"):
    for _split in (True, False):
        SP_PIPELINES[f"metaspace-{_scheme}-{_split}"] = (
            None, {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": _scheme, "split": _split})
SP_PIPELINES["metaspace-legacy"] = (None, {"type": "Sequence", "pretokenizers": [
    {"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "\u2581", "str_rep": "\u2581", "add_prefix_space": True}]})


def sp_tokenizer_json(pipeline="llama-normalizer", decoder="llama", model=None, added=SP_ADDED, post_processor=None):
    normalizer, pre = SP_PIPELINES[pipeline]
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": post_processor,
        "decoder": SP_DECODERS[decoder], "model": model or sp_model(),
    })


# ----------------------------------------------------- a small WordPiece model
# Every character of ``chars`` alone and after the prefix, plus some longer entries, so
# that longest-match-first has choices to make; [UNK] for the rest.
_WP_WORDS = ["hello", "hell", "he", "##llo", "##ll", "##lo", "the", "##the", "##e", "word", "wor", "##ld", "##rd",
             "unaff", "##able", "##ab", "東京", "##京都", "##s", "##ing", "don", "'", "##'t", "12", "##34", "##3", "supercali", "##fragilistic", "supercalifragilistic"]


def wordpiece_model(chars, prefix="##", max_chars=100, unk="[UNK]", with_unk=True):
    vocab = {}
    for t in ["[PAD]", unk if with_unk else "[PAD2]", "[CLS]", "[SEP]", "[MASK]"] + list(chars) \
            + [prefix + c for c in chars] + [w.replace("##", prefix) for w in _WP_WORDS]:
        vocab.setdefault(t, len(vocab))
    return {"type": "WordPiece", "unk_token": unk, "continuing_subword_prefix": prefix,
            "max_input_chars_per_word": max_chars, "vocab": vocab}


WP_SPECIALS = {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
               "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}
# BERT's five special tokens, raw; [MASK] with lstrip
WP_ADDED = [{"id": i, "content": t, "single_word": False, "lstrip": t == "[MASK]", "rstrip": False, "normalized": False,
             "special": True} for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])]


def wordpiece_tokenizer_json(model, normalizer=None, pre_tokenizer=None, decoder=None, post_processor=None,
                             added=WP_ADDED):
    """A BERT-shaped tokenizer.json (str) around ``model``: BertNormalizer, BertPreTokenizer,
    [CLS] A [SEP] (pair: [CLS] A [SEP] B [SEP]) and the WordPiece decoder unless given
    ("none": no such component)."""
    template = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                         {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                "special_tokens": WP_SPECIALS}
    def part(given, default):
        return default if given is None else None if given == "none" else given

    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": part(normalizer, bert_normalizer()),
        "pre_tokenizer": part(pre_tokenizer, {"type": "BertPreTokenizer"}),
        "post_processor": part(post_processor, template),
        "decoder": part(decoder, {"type": "WordPiece", "prefix": "##", "cleanup": True}),
        "model": model,
    })


# the WordPiece tokenizers of the rule corpora (tests/oracles/generate_rules.py, tests/test_rules.py)
RULE_WP_CHARS = sorted(set("abcdefghijklmnopqrstuvwxyz0123456789.,!?'-東京ßı"))


def small_wordpiece_json(normalizer="Bert", prefix="##", max_chars=100):
    """``{"wp": {...}}`` of a rule record: the small WordPiece over ``RULE_WP_CHARS``."""
    return wordpiece_tokenizer_json(wordpiece_model(RULE_WP_CHARS, prefix=prefix, max_chars=max_chars),
                                    normalizer=NORMALIZERS[normalizer],
                                    decoder={"type": "WordPiece", "prefix": prefix, "cleanup": True})
