"""Golden-file format shared by tests/oracles/generate.py and tests/test_parity_oracles.py.

One file per family: tests/oracles/<family>.jsonl.gz, one JSON object per line.
Line 1 is a header ({"kind": "header", ...}); every other line is a record
({"kind": "record", ...}) holding the reference output for one (text, add_special_tokens)
pair. See tests/oracles/README.md for the full description.

Both sides turn an Encoding into plain JSON values with `encoding_fields` and shrink
long records with `digest`, so the comparison is like for like.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
from pathlib import Path
from typing import Any, Iterator

from _paths import ORACLES_DIR, read_text_exact, sha256_text

# Families with committed goldens: byte-level BPE (issue 2), SentencePiece-style BPE (issue 3), WordPiece.
FAMILIES: list[str] = ["gpt2", "roberta-base", "llama3", "qwen3", "gpt-4o", "gpt-oss",
                       "llama2", "mistral-v0.1", "mistral-v0.3-metaspace", "gemma3", "phi-3-mini",
                       "bert-base-uncased", "t5-small", "clip-vit-base-patch32"]

REFERENCE = "tokenizers"
REFERENCE_VERSION = "0.23.1"

# Texts longer than this are stored with every field replaced by digest(field).
LONG_TEXT_THRESHOLD = 100_000

# The synthetic million-character lines, stored by recipe (text = repeat * times).
LONG_RECIPES: dict[str, dict] = {
    "long_line_letters": {"repeat": "hello world abc xyz ", "times": 50_000},  # letters and spaces
    "long_line_one_letter": {"repeat": "a", "times": 1_000_000},             # one word, no spaces
}

ENCODING_FIELDS = (
    "ids",
    "tokens",
    "offsets",
    "type_ids",
    "attention_mask",
    "special_tokens_mask",
    "word_ids",
)
DECODE_FIELDS = ("decode_skip_special", "decode_keep_special")  # skip_special_tokens=True / False
FIELDS = ENCODING_FIELDS + DECODE_FIELDS


def golden_path(family: str, out_dir: Path | None = None) -> Path:
    return Path(out_dir or ORACLES_DIR) / f"{family}.jsonl.gz"


# --------------------------------------------------------------------------- values

def digest(field: Any) -> dict:
    """Stand-in for a field of a long record: its length and the SHA-256 of json.dumps(field).

    ``json.dumps`` writes a tuple as it writes a list, so offsets from the binding (tuples)
    and from a golden file (lists) give the same digest without first copying the field
    into lists (that copy was most of test_cpu_engine's time on the long records)."""
    payload = json.dumps(field)  # default separators, ensure_ascii=True: fixed on both sides
    return {"count": len(field), "sha256": hashlib.sha256(payload.encode("utf-8")).hexdigest()}


def encoding_fields(enc: Any) -> dict:
    """The Encoding's fields as plain JSON values (works for tokenizers.Encoding and ours)."""
    return {
        "ids": [int(i) for i in enc.ids],
        "tokens": [str(t) for t in enc.tokens],
        "offsets": [[int(s), int(e)] for (s, e) in enc.offsets],
        "type_ids": [int(i) for i in enc.type_ids],
        "attention_mask": [int(i) for i in enc.attention_mask],
        "special_tokens_mask": [int(i) for i in enc.special_tokens_mask],
        "word_ids": [None if w is None else int(w) for w in enc.word_ids],
    }


def all_fields(tok: Any, text: str, add_special_tokens: bool) -> dict:
    """encode + both decodes, for any object with the tokenizers-like API."""
    enc = tok.encode(text, add_special_tokens=add_special_tokens)
    out = encoding_fields(enc)
    ids = out["ids"]
    out["decode_skip_special"] = tok.decode(ids, skip_special_tokens=True)
    out["decode_keep_special"] = tok.decode(ids, skip_special_tokens=False)
    return out


def maybe_digest(fields: dict, text_len: int) -> tuple[dict, bool]:
    if text_len > LONG_TEXT_THRESHOLD:
        return {k: digest(v) for k, v in fields.items()}, True
    return fields, False


# --------------------------------------------------------------------------- sources

class SourceError(Exception):
    """The text of a record cannot be rebuilt (corpus file missing or changed)."""


def recipe_text(recipe: dict) -> str:
    """Rebuild a synthetic long text from its recipe: {"repeat": str, "times": int}."""
    keys = set(recipe)
    if keys != {"repeat", "times"}:
        raise SourceError(f"unknown recipe keys {sorted(keys)}")
    return recipe["repeat"] * int(recipe["times"])


def is_corpus_source(source: dict) -> bool:
    return "corpus" in source


def is_long(record: dict) -> bool:
    return bool(record.get("digested"))


def describe_source(source: dict) -> str:
    if "corpus" in source:
        return f"corpus {source['corpus']}[{source['start']}:{source['end']}]"
    if "recipe" in source:
        r = source["recipe"]
        return f"synthetic {source['synthetic']} (recipe {r['repeat']!r} x {r['times']})"
    text = source["text"]
    shown = repr(text if len(text) <= 60 else text[:60] + "...")
    return f"synthetic {source['synthetic']} {shown}"


class TextSource:
    """Rebuilds record texts; caches corpus files. corpora_root is the folder holding parity/."""

    def __init__(self, corpora_root: Path):
        self.root = Path(corpora_root)
        self._files: dict[str, str] = {}

    def file_text(self, rel: str) -> str:
        if rel not in self._files:
            path = self.root / rel
            if not path.is_file():
                raise SourceError(f"corpus file missing: {path}")
            self._files[rel] = read_text_exact(path)
        return self._files[rel]

    def text(self, source: dict) -> str:
        if "corpus" in source:
            whole = self.file_text(source["corpus"])
            start, end = int(source["start"]), int(source["end"])
            if end > len(whole):
                raise SourceError(
                    f"corpus file {source['corpus']} is shorter ({len(whole)} chars) than the "
                    f"excerpt [{start}:{end}]; regenerate the goldens"
                )
            text = whole[start:end]
            got = sha256_text(text)
            if got != source["sha256"]:
                raise SourceError(
                    f"corpus excerpt {source['corpus']}[{start}:{end}] changed: sha256 {got} != "
                    f"golden {source['sha256']}; the corpus differs from the one the goldens were "
                    f"made from (regenerate with tests/oracles/generate.py)"
                )
            return text
        if "recipe" in source:
            return recipe_text(source["recipe"])
        if "text" in source:
            return source["text"]
        raise SourceError(f"unknown source {source!r}")


# --------------------------------------------------------------------------- files

def write_golden(path: Path, header: dict, records: list[dict]) -> int:
    """Write header + records as gzip'd JSON lines (reproducible bytes: mtime 0, no name)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        for obj in [header, *records]:
            line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            gz.write(line.encode("utf-8") + b"\n")
    data = buf.getvalue()
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return len(data)


def iter_golden(path: Path) -> Iterator[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def read_golden(path: Path) -> tuple[dict, list[dict]]:
    it = iter_golden(path)
    header = next(it, None)
    if not header or header.get("kind") != "header":
        raise ValueError(f"{path}: first line is not a header")
    records = list(it)
    return header, records


# --------------------------------------------------------------------------- comparison

def _window(seq: Any, i: int, before: int = 3, after: int = 5) -> str:
    lo = max(0, i - before)
    return f"[{lo}:{i + after}] {seq[lo:i + after]!r}"


def _first_diff(a: Any, b: Any) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def diff_field(name: str, expected: Any, actual: Any, text: str | None = None,
               expected_offsets: list | None = None) -> str | None:
    """None if equal, else a short description: first differing position and windows."""
    if expected == actual:
        return None
    if isinstance(expected, dict) and "sha256" in expected and "count" in expected:
        if not isinstance(actual, dict):
            actual = digest(actual)
        if expected == actual:
            return None
        return (f"{name}: digest differs: expected count={expected['count']} "
                f"sha256={expected['sha256'][:16]}..., got count={actual['count']} "
                f"sha256={actual['sha256'][:16]}...")
    if isinstance(expected, (list, str)) and isinstance(actual, (list, str)):
        i = _first_diff(expected, actual)
        if isinstance(expected, str):
            lo = max(0, i - 20)
            msg = (f"{name}: first difference at char {i} (len expected {len(expected)}, got "
                   f"{len(actual)}); expected [{lo}:{i + 20}] {expected[lo:i + 20]!r}, "
                   f"got {actual[lo:i + 20]!r}")
        else:
            msg = (f"{name}: first difference at position {i} (len expected {len(expected)}, got "
                   f"{len(actual)}); expected {_window(expected, i)}, got {_window(actual, i)}")
            if text is not None and expected_offsets and i < len(expected_offsets):
                s, e = expected_offsets[i]
                msg += f"; text near expected offsets {(s, e)}: {text[max(0, s - 10):e + 10]!r}"
        return msg
    return f"{name}: expected {expected!r}, got {actual!r}"


def compare_fields(expected: dict, actual: dict, text: str | None = None) -> list[str]:
    """Field-by-field comparison; returns one message per differing field."""
    problems = []
    offsets = expected.get("offsets")
    offsets = offsets if isinstance(offsets, list) else None
    for name in FIELDS:
        if name not in expected:
            problems.append(f"{name}: missing from the golden record")
            continue
        msg = diff_field(name, expected[name], actual.get(name), text, offsets)
        if msg:
            problems.append(msg)
    return problems

