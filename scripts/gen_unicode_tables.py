"""Measure the reference's regex character classes on every code point.

The reference compiles Split/Replace/ByteLevel patterns with Oniguruma, whose
Unicode tables are older than those of the ``regex`` module, and whose ``\\w``,
``\\h`` differ from ``regex``'s. ``gpu_tok`` therefore rewrites every class
escape of a pattern into explicit ranges taken from this table, measured by
running the pinned reference itself (a ``Split`` pre-tokenizer per class, over
a string of all code points).

    python scripts/gen_unicode_tables.py   # writes gpu_tok/data/onig_classes.json
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import tokenizers
from tokenizers import Regex, pre_tokenizers

OUT = Path(__file__).resolve().parents[1] / "gpu_tok" / "data" / "onig_classes.json"

GENERAL = ["L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No",
           "P", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So",
           "Z", "Zs", "Zl", "Zp", "C", "Cc", "Cf", "Co", "Cn"]
SCRIPTS = ["Han", "Hiragana", "Katakana", "Hangul", "Latin", "Cyrillic", "Greek", "Arabic", "Hebrew",
           "Thai", "Devanagari", "Common", "Inherited"]
# Class escapes are measured in both places they can stand, outside and inside a
# bracket class: Oniguruma's \w differs between the two (inside a class it leaves
# out the six Latin-1 No characters U+00B2, B3, B9, BC, BD, BE).
ESCAPES = [e for x in "wsdh" for e in ("\\" + x, "\\" + x.upper(), "[\\" + x + "]", "[\\" + x.upper() + "]")]


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def measure(pattern, codepoints, text):
    pt = pre_tokenizers.Split(Regex(pattern), behavior="removed")
    kept = bytearray(len(codepoints))
    for _piece, (a, b) in pt.pre_tokenize_str(text):
        kept[a:b] = b"\x01" * (b - a)
    return [codepoints[i] for i in range(len(codepoints)) if not kept[i]]


def main():
    cps = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]
    text = "".join(map(chr, cps))
    classes = {}
    for name in GENERAL + SCRIPTS:
        classes[name] = ranges(measure(r"\p{%s}" % name, cps, text))
    for pat in ESCAPES:
        classes[pat] = ranges(measure(pat, cps, text))
    data = {
        "reference": "tokenizers",
        "reference_version": tokenizers.__version__,
        "generated": datetime.date.today().isoformat(),
        "generator": "scripts/gen_unicode_tables.py",
        "classes": classes,
    }
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes, {len(classes)} classes)")


if __name__ == "__main__":
    main()
