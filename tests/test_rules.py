"""Replay tests/oracles/rules.jsonl.gz: the corpora behind the decision records.

Each record is the pinned reference's answer for one input that shows a rule
settled in docs/decisions/ (the record's ``rule`` names the file).
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest

import gpu_tok
from _paths import ORACLES_DIR, model_file, sha256_file
from _kept import kept_dict
from _small_bpe import NORMALIZERS, POST_PROCESSORS, PRE_TOKENIZERS, small_wordpiece_json, sp_tokenizer_json, tokenizer_json
from _small_unigram import small_unigram_json

RULES = ORACLES_DIR / "rules.jsonl.gz"
FIELDS = ("ids", "tokens", "offsets", "type_ids", "attention_mask", "special_tokens_mask", "word_ids")


def _load():
    with gzip.open(RULES, "rt", encoding="ascii") as f:
        lines = [json.loads(line) for line in f]
    return lines[0], lines[1:]


HEADER, RECORDS = _load()
BY_RULE = defaultdict(list)
for _r in RECORDS:
    BY_RULE[_r["rule"]].append(_r)

_cache = kept_dict()


def _tokenizer(spec):
    key = json.dumps(spec, sort_keys=True)
    if key not in _cache:
        if "model" in spec:
            path = model_file(spec["model"])
            if not path.is_file():
                pytest.skip(f"model {spec['model']!r} not available at {path}")
            want = HEADER["model_sha256"][spec["model"]]
            if sha256_file(path) != want:
                pytest.fail(f"{path} changed since rules.jsonl.gz was generated (sha256 {want})")
            _cache[key] = gpu_tok.Tokenizer.from_file(path)
        elif "sp" in spec:
            _cache[key] = gpu_tok.Tokenizer.from_str(sp_tokenizer_json(**spec["sp"]))
        elif "wp" in spec:
            _cache[key] = gpu_tok.Tokenizer.from_str(small_wordpiece_json(**spec["wp"]))
        elif "uni" in spec:
            _cache[key] = gpu_tok.Tokenizer.from_str(small_unigram_json(**spec["uni"]))
        else:
            s = spec["small"]
            _cache[key] = gpu_tok.Tokenizer.from_str(tokenizer_json(
                normalizer=NORMALIZERS[s["normalizer"]], pre_tokenizer=PRE_TOKENIZERS[s["pre_tokenizer"]],
                post_processor=POST_PROCESSORS[s["post_processor"]]))
    return _cache[key]


def test_header():
    assert HEADER["reference"] == "tokenizers"
    assert HEADER["reference_version"] == "0.23.1"


@pytest.mark.parametrize("rule", sorted(BY_RULE))
def test_rule(rule):
    failures = []
    for rec in BY_RULE[rule]:
        tok = _tokenizer(rec["tokenizer"])
        if "inputs" in rec:
            failures += _batch_record(tok, rec)
            continue
        text = rec["text"] if "text" in rec else "".join(map(chr, rec["codepoints"]))
        add = rec["add_special_tokens"]
        if "error" in rec:
            with pytest.raises(TypeError):
                tok.encode(text, add_special_tokens=add)
            continue
        enc = tok.encode(text, add_special_tokens=add)
        got = {f: ([list(o) for o in getattr(enc, f)] if f == "offsets" else list(getattr(enc, f))) for f in FIELDS}
        got["decode_skip_special"] = tok.decode(rec["ids"], skip_special_tokens=True)
        got["decode_keep_special"] = tok.decode(rec["ids"], skip_special_tokens=False)
        for f, v in got.items():
            if v != rec[f]:
                failures.append(f"{rec['tokenizer']} {text!r} add_special_tokens={add}: {f}: ours {v!r} != ref {rec[f]!r}")
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:10])


def _encoding_record(enc) -> dict:
    rec = {f: ([list(o) for o in getattr(enc, f)] if f == "offsets" else list(getattr(enc, f)))
           for f in FIELDS + ("sequence_ids",)}
    rec["n_sequences"] = enc.n_sequences
    rec["overflowing"] = [_encoding_record(o) for o in enc.overflowing]
    return rec


def _batch_record(tok, rec) -> list:
    """One encode_batch with the record's truncation and padding (decision 0029)."""
    tok.no_truncation()
    tok.no_padding()
    try:
        if rec["truncation"] is not None:
            tok.enable_truncation(**rec["truncation"])
        if rec["padding"] is not None:
            tok.enable_padding(**rec["padding"])
        inputs = [tuple(x) if isinstance(x, list) else x for x in rec["inputs"]]
        where = f"{rec['tokenizer']} {rec['truncation']} {rec['padding']} add_special_tokens={rec['add_special_tokens']}"
        out = []
        for device in ("ref", "cpu"):
            try:
                got = [_encoding_record(e) for e in tok.encode_batch(inputs, add_special_tokens=rec["add_special_tokens"],
                                                                     device=device)]
            except gpu_tok.TruncationError as e:
                if str(e) != rec.get("error"):
                    out.append(f"{where} {device}: raised {e}, ref {rec.get('error', 'no error')}")
                continue
            if "error" in rec:
                out.append(f"{where} {device}: no error, ref {rec['error']}")
            elif got != rec["encodings"]:
                out.append(f"{where} {device}: ours {got} != ref {rec['encodings']}")
        return out
    finally:
        tok.no_truncation()
        tok.no_padding()
