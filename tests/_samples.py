"""Texts the engine tests draw: every golden record of a family, and the first bytes of the
bench corpus (skipping, with the reason, when the files are not there)."""
from __future__ import annotations

import json

import pytest

from _oracle_io import TextSource, golden_path, iter_golden
from _paths import corpora_dir, parity_dir


def golden_records(family: str):
    """``[(record, text)]`` of every golden record (corpus records only where the corpus is)."""
    path = golden_path(family)
    if not path.is_file():
        pytest.skip(f"no golden file {path}")
    it = iter_golden(path)
    next(it)
    src = TextSource(corpora_dir())
    have_corpus = parity_dir().is_dir()
    out = []
    for r in it:
        if r.get("kind") != "record" or ("corpus" in r["source"] and not have_corpus):
            continue
        out.append((r, src.text(r["source"])))
    return out


def bench_texts(limit_bytes: int):
    """The documents of each bench file until ``limit_bytes`` of it are taken."""
    root = corpora_dir() / "bench"
    if not root.is_dir():
        pytest.skip(f"bench corpus not available: {root}")
    out = []
    for f in sorted(root.glob("*.jsonl")):
        n = 0
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                t = json.loads(line)["text"]
                out.append(t)
                n += len(t.encode("utf-8"))
                if n > limit_bytes:
                    break
    return out
