"""Write tests/oracles/rules.jsonl.gz: the corpora behind docs/decisions/.

Each decision record in docs/decisions/ settles one rule of the reference by
measurement; the inputs that show the rule, and the reference's answers, are
generated here from the pinned reference and replayed by tests/test_rules.py.

    python tests/oracles/generate_rules.py

Tokenizers are either a real model (``{"model": "roberta-base"}``, found via
GPU_TOK_MODELS / ../shared/models) or the small byte-level BPE of
tests/_small_bpe.py with named components (``{"small": {...}}``).
"""

from __future__ import annotations

import datetime
import gzip
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import tokenizers  # noqa: E402

from _paths import model_file, sha256_file  # noqa: E402
from _small_bpe import (  # noqa: E402
    BEHAVIOURS, NORMALIZERS, POST_PROCESSORS, PRE_TOKENIZERS, SP_DECODERS, small_wordpiece_json, sp_tokenizer_json,
    tokenizer_json,
)

from _small_unigram import small_unigram_json  # noqa: E402

OUT = HERE / "rules.jsonl.gz"

FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask", "word_ids")


def small(normalizer="none", pre_tokenizer="bytelevel-only", post_processor="none"):
    return {"small": {"normalizer": normalizer, "pre_tokenizer": pre_tokenizer, "post_processor": post_processor}}


def sp(pipeline="llama-normalizer", decoder="llama"):
    return {"sp": {"pipeline": pipeline, "decoder": decoder}}


def build_json(spec) -> str:
    if "model" in spec:
        return model_file(spec["model"]).read_text(encoding="utf-8")
    if "sp" in spec:
        return sp_tokenizer_json(pipeline=spec["sp"]["pipeline"], decoder=spec["sp"]["decoder"])
    if "wp" in spec:
        return small_wordpiece_json(**spec["wp"])
    if "uni" in spec:
        return small_unigram_json(**spec["uni"])
    s = spec["small"]
    return tokenizer_json(normalizer=NORMALIZERS[s["normalizer"]], pre_tokenizer=PRE_TOKENIZERS[s["pre_tokenizer"]],
                          post_processor=POST_PROCESSORS[s["post_processor"]])


# (rule, tokenizer spec, texts) — every text is encoded with and without special tokens.
CASES = [
    # 0001: which text an added token is matched against
    ("0001-added-token-match-text", small("Lowercase"),
     ["say HELLO and hello", "HeLLo<|x|>hello", "<|X|> vs <|x|>", "HELLO<|x|>HELLO", "thethe THE the"]),
    ("0001-added-token-match-text", small("ReplaceString"), ["a  sp b", "a\u2581\u2581sp", "x  spy", "  sp"]),
    ("0001-added-token-match-text", {"model": "roberta-base"}, ["<s>hello</s>", "a <pad> b", "<S>"]),
    ("0001-added-token-match-text", {"model": "llama3"},
     ["<|begin_of_text|>Hi<|eot_id|>", "<|BEGIN_OF_TEXT|>", "x<|reserved_special_token_0|>y"]),
    # 0002: what lstrip / rstrip do to the id stream, tokens, offsets and decode
    ("0002-lstrip-rstrip", {"model": "roberta-base"},
     ["Hello <mask>!", "Hello<mask>", "Hello   <mask>  x", " <mask>", "<mask> <mask>", "a\n\t<mask>"]),
    ("0002-lstrip-rstrip", small(),
     ["a [MASK]", "a   [MASK]b", "<r>  x", "[MASK][MASK]", " [MASK]", "x<r>\n\ny", "<r>   [MASK]"]),
    # a content starting with whitespace found inside the whitespace the token before took
    ("0002-lstrip-rstrip", small(), ["  sp  sp", "a  sp  spx", "<r>  sp", "[MASK]  sp  sp"]),
    # NFC runs on each gap the raw tokens leave: a mark after a token does not compose with it
    ("0001-added-token-match-text", small("NFC"),
     ["<|x|>\u0338", "<r>\u0338 e\u0301", "A\u030a x", "K\u0301<|x|>e\u0301", "\u212a [MASK]\u0301", ">\u0338"]),
    # 0004: byte-level offsets of tokens that cover part of a character
    ("0004-byte-level-partial-chars", {"model": "gpt2"}, ["東", "a東京", "🤖x", "é", "e\u0301", "👍🏽 ok"]),
    ("0004-byte-level-partial-chars", {"model": "qwen3"}, ["e\u0301x", "東京 🤖", "\u1100\u1161\u11a8"]),
    # 0005: the regex dialect (Oniguruma classes and anchors)
    ("0005-regex-dialect", small(pre_tokenizer="SplitRegex-Contiguous-False"), ["0\u00b2", "A\u200d", "x\u0558y"]),
    ("0005-regex-dialect", small(pre_tokenizer="Possessive"), ["a  \nb  \n", "x   ", "  y"]),
    ("0005-regex-dialect", {"model": "gpt-4o"}, ["\u0558abc", "A\ua7ceB", "x\U00011de0 12"]),
    # 0007: unknown characters without an unk token are dropped, and shift later offsets
    ("0007-dropped-unknowns", small(pre_tokenizer="none"), ["\u030100", "\u00e9\u00e9 ab", "x\u6771y"]),
]
CASES += [
    # 0009: the two whitespace-escape spellings (normalizer Prepend+Replace vs Metaspace)
    ("0009-escape-spellings", {"model": "llama2"}, ["<s>b", "a<s>b", "a <s>b", "  lead", "\u2581x", "hi</s>", ""]),
    ("0009-escape-spellings", {"model": "mistral-v0.3-metaspace"},
     ["<s>hello", "hello <s> world", "  two", "\u2581x", "[INST] hi [/INST]"]),
    ("0009-escape-spellings", sp("llama-normalizer"), ["<s>b", "a<s>b", "a <s>b", " x", "x<tool> y"]),
    ("0009-escape-spellings", sp("metaspace-first-True"), ["<s>hello", "hi <tool> you", " lead", "<tool>x"]),
    ("0009-escape-spellings", sp("metaspace-always-True"), ["<s>hello", "hi <tool> you", " lead", "<tool>x"]),
    ("0009-escape-spellings", sp("metaspace-never-False"), ["<s>hello", "hi <tool> you", " lead"]),
    # 0010: byte_fallback, and its offsets inside a character
    ("0010-byte-fallback", {"model": "llama2"}, ["\u6771", "a\U0001F916b", "\x00", "\u00e9\u0301"]),
    ("0010-byte-fallback", {"model": "gemma3"}, ["\U0001F916\U0001F916", "\u2581\u2581x", "a\u3000b"]),
    # 0011: the SentencePiece decoders
    *[("0011-sp-decoders", sp(decoder=d), [" hello world", "\u6771 x", "\u2581\u2581a", "<s>x</s>"])
      for d in sorted(SP_DECODERS) if d != "strip-both"],
    # 0012: rstrip added tokens and their round trip
    ("0012-rstrip-roundtrip", {"model": "phi-3-mini"}, ["hi<|end|>  \n x", "<|user|>\nq<|end|>", "<|end|>"]),
]
CASES += [
    # 0024: the WordPiece family (BertNormalizer, BertPreTokenizer, WordPiece model and decoder)
    ("0024-wordpiece", {"model": "bert-base-uncased"},
     ["H\u00e9llo W\u00f6rld!", "\u4e2d\u6587abc\u5b57", "a\x00b\ufffdc\u200bd\x7fe", "tab\tnew\nline\u3000ideo\u00a0x",
      "unaffable", "a" * 100, "a" * 101, "don't do not it's I'm", "\u0130stanbul \u01c5", "x\u0301 \u0903",
      "[CLS] x [SEP] [MASK]", "hello[MASK]world", "\U00020000\u3400", ""]),
    ("0024-wordpiece", {"wp": {"normalizer": "Bert", "max_chars": 5}}, ["hello", "hellos", "abcdef", "\u6771\u4eac", "x y"]),
    ("0024-wordpiece", {"wp": {"normalizer": "BertCased"}}, ["Hello", "hello", "\u00c9t\u00e9", "ab!cd"]),
    ("0024-wordpiece", {"wp": {"normalizer": "BertStripNoLower"}}, ["\u00e9t\u00e9", "\u00c9T\u00c9", "\u1e9e\u00df"]),
    ("0024-wordpiece", {"wp": {"normalizer": "BertLowerNoStrip", "prefix": ""}}, ["\u00e9t\u00e9 abc", "unaffable"]),
    # 0027: the Unigram family (Precompiled normalizer, grapheme clusters, Unigram model)
    ("0027-unigram", {"model": "t5-small"},
     ["\uff21\u0301b", "\uff76\uff9e", "\x01abc", "a\r\nb", "\u2460\u2461 \u2122", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
      "caf\u00e9 cafe\u0301", "\u1100\u1161\u11a8\u0301", "\u0915\u094d\u0937", "\u00a9\u200d\u00a9", "\U0001f468\u200d\U0001f469",
      "translate English to German: That is good.", "<extra_id_0> x </s>", "\u20ac100 \u00a0 x", ""]),
    ("0027-unigram", {"uni": {}}, ["A\u030a\u0301", "e\u0301\u0301x", "\x01\u200bab", "\uff21\uff41", "\u2460\u2461\u2462",
                                  "hello world", "\u2603x x\u2603 \u2603\u2603"]),
    ("0027-unigram", {"uni": {"seed": 3, "positive": True}}, ["\u2603x", "x\u2603", "\u2603\u2603x", "the hello"]),
    ("0027-unigram", {"uni": {"seed": 4, "dup": True}}, ["the ll a", "hello"]),
    ("0027-unigram", {"uni": {"seed": 6, "byte_fallback": True, "bytes_present": [0, 256, 2]}},
     ["\u2603", "\u00e9\u4e2d", "\U0001f600 x"]),
    ("0027-unigram", {"uni": {"pre_tokenizer": "metaspace-first-nosplit"}}, ["hello  world the", "  x"]),
]
for _b in BEHAVIOURS:
    for _inv in (False, True):
        CASES.append(("0003-split-behaviours", small(pre_tokenizer=f"SplitRegex-{_b}-{_inv}"),
                      ["the-final--countdown 12  a", "  lead", "trail  ", "a1b22c333", ""]))
        CASES.append(("0003-split-behaviours", small(pre_tokenizer=f"SplitString-{_b}-{_inv}"),
                      ["the final  countdown", " a ", "   "]))

# 0029: truncation and padding (settings as the reference's enable_truncation / enable_padding
# take them); each case is one encode_batch, with and without special tokens
_LONG = "the hello word a b x <|x|> the hello a b x é 12 hello the"
BATCH_CASES = [
    # the early stop: overflowing holds what the tokenized pieces held past the window
    ("0029-truncation-padding", small(pre_tokenizer="WhitespaceSplit"), {"max_length": 3}, None,
     ["a b c d e f g h", "hello the", ""]),
    ("0029-truncation-padding", small(pre_tokenizer="WhitespaceSplit"), {"max_length": 4, "stride": 2}, None,
     ["hello hello hello", "a b c d e f g h"]),
    # left: the kept pieces' word ids start at 0
    ("0029-truncation-padding", small(pre_tokenizer="WhitespaceSplit", post_processor="Template"),
     {"max_length": 8, "direction": "left", "stride": 1}, {"direction": "left", "length": 9},
     ["a b c d e f g h", ("x y", _LONG), (_LONG, "a")]),
    # max_length under the post-processor's tokens: the subtraction wraps, only the early stop cuts
    ("0029-truncation-padding", small(pre_tokenizer="WhitespaceSplit", post_processor="Template"), {"max_length": 2},
     None, [_LONG, "a"]),
    # the strategies on pairs; only_second does not stop the first sequence early
    ("0029-truncation-padding", small(pre_tokenizer="ByteLevelRegex", post_processor="Bert"),
     {"max_length": 9, "strategy": "longest_first"}, {"pad_to_multiple_of": 4}, [(_LONG, _LONG[:20]), (_LONG[:9], _LONG)]),
    ("0029-truncation-padding", small(pre_tokenizer="ByteLevelRegex", post_processor="Roberta"),
     {"max_length": 12, "strategy": "only_second", "stride": 2}, None, [("a b", _LONG)]),
    ("0029-truncation-padding", small(pre_tokenizer="ByteLevelRegex", post_processor="Sequence"),
     {"max_length": 10, "strategy": "only_first"}, {"pad_id": 5, "pad_type_id": 1, "pad_token": "<pad>"},
     [(_LONG, "x"), ("a", "b c")]),
    # errors: a single input with only_second, a sequence too short to cut
    ("0029-truncation-padding", small(pre_tokenizer="ByteLevelRegex"), {"max_length": 4, "strategy": "only_second"},
     None, [_LONG]),
    ("0029-truncation-padding", small(pre_tokenizer="ByteLevelRegex"), {"max_length": 4, "strategy": "only_first"},
     None, [("a", _LONG)]),
    # padding alone; no post-processor: the pads are sequence 0 too
    ("0029-truncation-padding", small(pre_tokenizer="WhitespaceSplit"), None, {"direction": "left"},
     ["a b c", "a", ""]),
    ("0029-truncation-padding", {"model": "bert-base-uncased"}, {"max_length": 16, "stride": 4},
     {"length": 20}, ["The quick brown fox jumps over the lazy dog, again and again and again.",
                      ("Who jumps?", "The quick brown fox jumps over the lazy dog, again and again.")]),
]


def encoding_record(enc) -> dict:
    rec = {f: ([list(o) for o in getattr(enc, f)] if f == "offsets" else list(getattr(enc, f)))
           for f in FIELDS + ("sequence_ids",)}
    rec["n_sequences"] = enc.n_sequences
    rec["overflowing"] = [encoding_record(o) for o in enc.overflowing]
    return rec


# 0006: texts the reference refuses (lone surrogates)
REFUSED = [("0006-invalid-text", {"model": "gpt2"}, ["a\ud800b", "\udfff", "ok\udbff\udc00"])]


def main():
    cache = {}
    records = []
    models = {}
    def tokenizer_for(spec):
        key = json.dumps(spec, sort_keys=True)
        if key not in cache:
            cache[key] = tokenizers.Tokenizer.from_str(build_json(spec))
            if "model" in spec:
                models[spec["model"]] = sha256_file(model_file(spec["model"]))
        return cache[key]

    for rule, spec, texts in CASES + REFUSED:
        tok = tokenizer_for(spec)
        for text in texts:
            for add in (True, False):
                rec = {"rule": rule, "tokenizer": spec, "text": text, "add_special_tokens": add}
                if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
                    # JSON would join a high+low surrogate pair into one character: store code points
                    del rec["text"]
                    rec["codepoints"] = [ord(c) for c in text]
                try:
                    enc = tok.encode(text, add_special_tokens=add)
                except Exception as e:  # the reference refuses the input
                    rec["error"] = type(e).__name__
                    records.append(rec)
                    continue
                for f in FIELDS:
                    v = getattr(enc, f)
                    rec[f] = [list(o) for o in v] if f == "offsets" else list(v)
                rec["decode_skip_special"] = tok.decode(enc.ids, skip_special_tokens=True)
                rec["decode_keep_special"] = tok.decode(enc.ids, skip_special_tokens=False)
                records.append(rec)
    for rule, spec, trunc, pad, inputs in BATCH_CASES:
        tok = tokenizer_for(spec)
        tok.no_truncation()
        tok.no_padding()
        if trunc is not None:
            tok.enable_truncation(**trunc)
        if pad is not None:
            tok.enable_padding(**pad)
        for add in (True, False):
            rec = {"rule": rule, "tokenizer": spec, "truncation": trunc, "padding": pad,
                   "inputs": [list(x) if isinstance(x, tuple) else x for x in inputs], "add_special_tokens": add}
            try:
                rec["encodings"] = [encoding_record(e) for e in tok.encode_batch(inputs, add_special_tokens=add)]
            except BaseException as e:  # noqa: BLE001 - the reference refuses (or panics): its message
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                rec["error"] = str(e)
            records.append(rec)
        tok.no_truncation()
        tok.no_padding()
    header = {"kind": "header", "reference": "tokenizers", "reference_version": tokenizers.__version__,
              "generated": datetime.date.today().isoformat(), "generator": "tests/oracles/generate_rules.py",
              "model_sha256": models}
    with gzip.GzipFile(OUT, "wb", mtime=0) as f:
        for obj in [header] + records:
            f.write((json.dumps(obj, ensure_ascii=True, sort_keys=True) + "\n").encode("ascii"))
    print(f"wrote {OUT}: {len(records)} records, {OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
