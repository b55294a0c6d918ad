"""Measure what tiktoken (the pinned reference) does, and write it as data.

Two files are written, both with the reference version in their header:

``gpu_tok/data/tiktoken_classes.json``
    The regex classes of tiktoken's pattern dialect (Rust ``fancy-regex`` over
    the ``regex`` crate), measured on every code point by running tiktoken
    itself: a custom ``tiktoken.Encoding`` whose ranks are the 256 single bytes
    and whose ``pat_str`` is just the class; ``encode_ordinary(chr(c))`` is
    non-empty iff ``c`` matches, because text outside every match is skipped.
    Also measured: which code points each printable ASCII character matches
    inside ``(?i:...)`` (simple case folding: ``(?i:s)`` matches U+017F).

``gpu_tok/data/tiktoken_encodings.json``
    The named encodings as ``tiktoken_ext.openai_public`` defines them
    (pattern, special tokens in definition order, ``explicit_n_vocab``, the rank
    file's URL and SHA-256), read by calling the constructors with the rank
    loader replaced (nothing is downloaded). For an id that several special
    tokens share (o200k_harmony: ``<|endofprompt|>`` and
    ``<|reserved_200018|>``), the string tiktoken decodes it to is measured.

    python scripts/gen_tiktoken_tables.py [--models DIR]   # DIR holds tiktoken/*.tiktoken
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import tiktoken
import tiktoken.load
from tiktoken_ext import openai_public

from gen_unicode_tables import GENERAL, SCRIPTS, ranges  # the same classes as for Oniguruma (scripts/ is on sys.path)

REPO = Path(__file__).resolve().parents[1]
OUT_CLASSES = REPO / "gpu_tok" / "data" / "tiktoken_classes.json"
OUT_ENCODINGS = REPO / "gpu_tok" / "data" / "tiktoken_encodings.json"

# Class escapes, outside and inside a bracket class (the regex crate defines them
# the same in both places; measured anyway, as for Oniguruma).
ESCAPES = [e for x in "wsd" for e in ("\\" + x, "\\" + x.upper(), "[\\" + x + "]", "[\\" + x.upper() + "]")]

NAMED = ["r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony"]

_BYTES = {bytes([b]): b for b in range(256)}
_CPS = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]


def _header() -> dict:
    return {"reference": "tiktoken", "reference_version": tiktoken.__version__,
            "generated": datetime.date.today().isoformat(), "generator": "scripts/gen_tiktoken_tables.py"}


def measure(pat_str):
    enc = tiktoken.Encoding("measure", pat_str=pat_str, mergeable_ranks=_BYTES, special_tokens={})
    encode = enc.encode_ordinary
    return [c for c in _CPS if encode(chr(c))]


def gen_classes():
    classes = {}
    for name in GENERAL + SCRIPTS:
        classes[name] = ranges(measure(r"\p{%s}" % name))
        print(f"  \\p{{{name}}}: {sum(b - a + 1 for a, b in classes[name])} code points", file=sys.stderr)
    for pat in ESCAPES:
        classes[pat] = ranges(measure(pat))
        print(f"  {pat}: {sum(b - a + 1 for a, b in classes[pat])} code points", file=sys.stderr)
    casefold = {}
    for c in range(0x20, 0x7F):
        got = measure(r"(?i:\x{%x})" % c)
        if got != [c]:
            casefold[chr(c)] = got
    return {
        **_header(),
        "classes": classes,
        "casefold": casefold,
    }


def gen_encodings(models: Path):
    seen_files = {}

    def fake_loader(url, expected_hash=None):
        seen_files["url"] = url
        seen_files["sha256"] = expected_hash
        return {b"\x00": 0}

    real = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = fake_loader
    try:
        defs = {}
        for name in NAMED:
            seen_files.clear()
            d = openai_public.ENCODING_CONSTRUCTORS[name]()
            assert d["name"] == name, (d["name"], name)
            url = seen_files["url"]
            defs[name] = {
                "pat_str": d["pat_str"],
                "special_tokens": [[k, v] for k, v in d["special_tokens"].items()],
                "explicit_n_vocab": d.get("explicit_n_vocab"),
                "rank_file": url.rsplit("/", 1)[1],
                "rank_file_url": url,
                "rank_file_sha256": seen_files["sha256"],
            }
    finally:
        openai_public.load_tiktoken_bpe = real

    for name, d in defs.items():
        by_id = {}
        for s, i in d["special_tokens"]:
            by_id.setdefault(i, []).append(s)
        shared = {i: ss for i, ss in by_id.items() if len(ss) > 1}
        d["shared_special_ids"] = {}
        if not shared:
            continue
        rank_path = models / "tiktoken" / d["rank_file"]
        if rank_path.is_file():
            ranks = tiktoken.load.load_tiktoken_bpe(str(rank_path))
            source = rank_path.name
        else:  # the special-token decoder does not depend on the ranks
            ranks = _BYTES
            source = "256 single bytes (rank file absent)"
        enc = tiktoken.Encoding(name, pat_str=d["pat_str"], mergeable_ranks=ranks,
                                special_tokens=dict(d["special_tokens"]))
        for i, ss in sorted(shared.items()):
            decoded = enc.decode_single_token_bytes(i).decode("utf-8")
            assert decoded in ss
            d["shared_special_ids"][str(i)] = decoded
            print(f"  {name}: id {i} shared by {ss}: decodes to {decoded!r} (ranks: {source})",
                  file=sys.stderr)
    return {
        **_header(),
        "encodings": defs,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=Path,
                    default=Path(os.environ.get("GPU_TOK_MODELS", REPO / ".." / "shared" / "models")))
    ap.add_argument("--only", choices=["classes", "encodings"])
    args = ap.parse_args()
    if tiktoken.__version__ != "0.14.0":
        sys.exit(f"tiktoken {tiktoken.__version__} installed; the pinned reference is 0.14.0")
    if args.only in (None, "encodings"):
        data = gen_encodings(args.models)
        OUT_ENCODINGS.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {OUT_ENCODINGS} ({OUT_ENCODINGS.stat().st_size} bytes)")
    if args.only in (None, "classes"):
        data = gen_classes()
        OUT_CLASSES.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        print(f"wrote {OUT_CLASSES} ({OUT_CLASSES.stat().st_size} bytes, {len(data['classes'])} classes, "
              f"{len(data['casefold'])} case-folded ASCII characters)")


if __name__ == "__main__":
    main()
