"""Write the grapheme cluster classes the ``Precompiled`` normalizer needs, and check
them against the pinned reference on every code point where its output shows them.

The reference cuts text into extended grapheme clusters with the Rust
``unicode-segmentation`` crate, which carries its own Unicode tables; ``Precompiled``
replaces a cluster of fewer than 6 UTF-8 bytes whole by the value of the shortest rule
that is a prefix of it. ``gpu_tok/cpu_ref/graphemes.py`` implements UAX #29's rules; the
classes it reads (Grapheme_Cluster_Break, Indic_Conjunct_Break, Extended_Pictographic)
are taken here from the ``regex`` module and written to ``gpu_tok/data/graphemes.json``.

Then both normalizers run on probes built with charsmaps of our own
(``tests/_charsmap.py``); every probe is chosen so that the cut it asks about decides
whether a cluster of fewer than 6 bytes starts with a rule (output differs) or not:

- ``after``: ``"a" + c`` with the rule ``a``: joins for Extend, ZWJ and SpacingMark;
- ``prepend`` / ``control`` / ``cr-lf`` / ``after-cr``: ``c + "a"``, ``c + U+0301``,
  ``c + LF``, ``CR + c`` with every ``c`` a rule (chunks of 4096, CR one too): Prepend
  joins what follows; Control, CR and LF join nothing, but CR + LF;
- ``hangul-*``, ``gb9c``, ``gb11``: ``context + c + U+0301`` with ``c`` a rule
  (``c`` up to U+FFFF, so that ``c + U+0301`` is under 6 bytes): whether ``c`` joins the
  Hangul jamo/syllable before it, a consonant + virama, or a pictograph + ZWJ;
- ``before-*``: ``c + fixed + U+0301`` with the fixed character a rule: whether ``c``
  joins a following jamo/syllable, starts a conjunct (consonant + virama + consonant)
  or is a pictograph before ZWJ + pictograph;
- ``linker``, ``incb-extend``, ``gb11-extend``: a consonant + ``c`` + consonant, a
  consonant + virama + ``c`` + consonant, a pictograph + ``c`` + ZWJ + pictograph;
- ``before-marks``: ``c + U+0301 + U+0308`` with the rule U+0301: a cut after ``c`` shows
  for any ``c`` (the marks' cluster is 4 bytes), where ``control`` sees only ``c`` up to
  3 bytes;
- ``fuzz``: 200,000 random sequences over a representative of every class combination,
  all rules (some removing): the rules' effects together.

A code point whose probes differ gets the classes, closest to the derived ones, under
which all its probes agree (``measured_corrections`` in the table); the fuzz must then
agree everywhere.

Not observable, so not checked: Regional_Indicator pairs (a cluster holding one is never
under 6 bytes and is read character by character either way).

    python scripts/gen_grapheme_tables.py           # writes the table, then checks it
    python scripts/gen_grapheme_tables.py --check   # checks the table in the repo
"""

from __future__ import annotations

import datetime
import itertools
import json
import sys
from pathlib import Path

import regex
import tokenizers
from tokenizers import normalizers as N

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from _charsmap import build_charsmap  # noqa: E402
from gen_unicode_tables import ranges  # noqa: E402  (scripts/ is on sys.path)

OUT = ROOT / "gpu_tok" / "data" / "graphemes.json"
CPS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
E = "\u0301"
GCB = ("CR", "LF", "Control", "Extend", "ZWJ", "Regional_Indicator", "Prepend", "SpacingMark",
       "L", "V", "T", "LV", "LVT")
INCB = ("Linker", "Consonant", "Extend")


def derive() -> dict:
    text = "".join(map(chr, CPS))

    def members(prop):
        r = regex.compile(prop)
        return ranges([ord(m.group()) for m in r.finditer(text)])

    return {
        "gcb": {g: members(r"\p{Grapheme_Cluster_Break=%s}" % g) for g in GCB},
        "incb": {k: members(r"\p{Indic_Conjunct_Break=%s}" % k) for k in INCB},
        "extended_pictographic": members(r"\p{Extended_Pictographic}"),
    }


CONTEXTS = (("hangul-L", "\u1100"), ("hangul-V", "\u1161"), ("hangul-T", "\u11a8"), ("hangul-LV", "\uac00"),
            ("hangul-LVT", "\uac01"), ("gb9c", "\u0915\u094d"), ("gb11", "\u00a9\u200d"))
FIXED = {"\u1100": "X", "\u1161": "X", "\u11a8": "X", "\uac00": "X", "\uac01": "X", "\u0915": "X", "\u00a9": "X"}
AROUND = (("before-L", "%s\u1100" + E), ("before-V", "%s\u1161" + E), ("before-T", "%s\u11a8" + E),
          ("before-LV", "%s\uac00" + E), ("before-LVT", "%s\uac01" + E),
          ("before-gb9c", "%s\u094d\u0915" + E), ("before-gb11", "%s\u200d\u00a9" + E),
          ("linker", "\u0915%s\u0915" + E), ("incb-extend", "\u0915\u094d%s\u0915" + E),
          ("gb11-extend", "\u00a9%s\u200d\u00a9" + E))
MARK_RULE = {E: "Y"}  # before-marks: c + U+0301 + U+0308: cut before the marks only after Control, CR, LF


def probes(cps=CPS, chunk=4096):
    """(name, rules, texts) triples over the code points ``cps``; see the module doc."""
    yield "after", {"a": "X"}, ["a" + chr(c) for c in cps]
    rest = [c for c in cps if c not in (0, 0x301)]
    for i in range(0, len(rest), chunk):
        part = rest[i:i + chunk]
        rules = {chr(c): "X" for c in part}
        rules["\r"] = "R"
        yield "prepend", rules, [chr(c) + "a" for c in part]
        yield "control", rules, [chr(c) + E for c in part]
        yield "cr-lf", rules, [chr(c) + "\n" for c in part]
        yield "after-cr", rules, ["\r" + chr(c) for c in part]
        bmp = [c for c in part if c <= 0xFFFF]
        if bmp:
            for name, ctx in CONTEXTS:
                yield name, rules, [ctx + chr(c) + E for c in bmp]
    for name, fmt in AROUND:
        yield name, FIXED, [fmt % chr(c) for c in cps]
    yield "before-marks", MARK_RULE, ["%s\u0301\u0308" % chr(c) for c in cps]


def fuzz(n: int = 200_000, seed: int = 0):
    """Random sequences over representatives of every class combination in the table
    (one to four bytes long where there are such), all of them rules: the rules' context
    effects together, where the probes above ask about one at a time."""
    import random

    from gpu_tok.cpu_ref import graphemes as G

    P = G.props()
    by_combo = {}
    for c in CPS:
        by_combo.setdefault((P[c], len(chr(c).encode("utf-8"))), []).append(c)
    rnd = random.Random(seed)
    alphabet = sorted({rnd.choice(v) for v in by_combo.values()} | {0x0D, 0x0A, 0x61, 0x301, 0x200D, 0x94D, 0x915})
    alphabet = [chr(c) for c in alphabet if c]
    rules = {c: ("" if i % 7 == 0 else "X" + str(i % 3)) for i, c in enumerate(alphabet)}
    for i in range(0, n, 10_000):
        yield "fuzz", rules, ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(2, 7))) for _ in range(10_000)]


def run(probe_iter, stop_at_first=False):
    """Both normalizers on every probe: {probe name: [texts that differ]}, and the count."""
    from gpu_tok.cpu_ref.normalized import NormalizedString
    from gpu_tok.cpu_ref.precompiled import Charsmap, precompiled_normalize

    bad = {}
    total = 0
    built = {}
    for name, rules, texts in probe_iter:
        key = id(rules)
        if key not in built:
            built.clear()
            data = build_charsmap(rules)
            built[key] = (N.Precompiled(data), Charsmap(data))
        hf, ours = built[key]
        for t in texts:
            want = hf.normalize_str(t)
            ns = NormalizedString.from_original(t)
            precompiled_normalize(ours, ns)
            total += 1
            if ns.text != want:
                bad.setdefault(name, []).append(t)
                if stop_at_first:
                    return bad, total
    return bad, total


def varied(name: str, t: str) -> int:
    """The code point a differing probe asks about."""
    if name == "after":
        return ord(t[1])
    if name == "fuzz":
        raise SystemExit(f"the fuzz differs on {' '.join(f'U+{ord(c):04X}' for c in t)}: look at it by hand")
    if name in ("prepend", "control", "cr-lf") or name.startswith("before-"):
        return ord(t[0])
    if name in ("linker", "gb11-extend", "after-cr"):
        return ord(t[1])
    if name == "incb-extend":
        return ord(t[2])
    return ord(t[len(dict(CONTEXTS)[name])])


def correct(data: dict, cps) -> list:
    """For each code point whose probes differ, the classes (closest to the derived ones)
    under which all its probes agree with the reference; written into ``data``."""
    from gpu_tok.cpu_ref import graphemes as G

    P = G.props()
    fixes = []
    for c in sorted(cps):
        old = P[c]
        combos = sorted(((g | (k << G._INCB_SHIFT) | (x * G._EXTPICT)) for g in range(len(G.GCB_NAMES))
                         for k in range(4) for x in (0, 1)),
                        key=lambda v: ((v & 0x0F) != (old & 0x0F)) + ((v & 0x30) != (old & 0x30))
                        + ((v & 0x80) != (old & 0x80)))
        for v in combos:
            P[c] = v
            bad, _ = run(probes([c], chunk=1), stop_at_first=True)
            if not bad:
                break
        else:
            P[c] = old
            raise SystemExit(f"U+{c:04X}: no classes reproduce the reference")
        fixes.append([c, G.GCB_NAMES[v & 0x0F], G.INCB_NAMES[(v >> G._INCB_SHIFT) & 3], bool(v & G._EXTPICT)])
    # write the corrected classes back as ranges
    gcb = {g: [] for g in GCB}
    incb = {k: [] for k in INCB}
    ext = []
    for c in CPS:
        v = P[c]
        if v & 0x0F:
            gcb[G.GCB_NAMES[v & 0x0F]].append(c)
        if (v >> G._INCB_SHIFT) & 3:
            incb[G.INCB_NAMES[(v >> G._INCB_SHIFT) & 3]].append(c)
        if v & G._EXTPICT:
            ext.append(c)
    data["gcb"] = {g: ranges(v) for g, v in gcb.items()}
    data["incb"] = {k: ranges(v) for k, v in incb.items()}
    data["extended_pictographic"] = ranges(ext)
    data["measured_corrections"] = fixes
    return fixes


def report(bad: dict, total: int, limit_examples: int = 5) -> None:
    for name, ex in bad.items():
        print(f"{name}: {len(ex)} differ, e.g. " + ", ".join(
            " ".join(f"U+{ord(c):04X}" for c in t) for t in ex[:limit_examples]))
    print(f"{total} probes, {sum(map(len, bad.values()))} differ")


def main():
    from gpu_tok.cpu_ref import graphemes as G

    if "--check" not in sys.argv:
        data = {
            "reference": "tokenizers",
            "reference_version": tokenizers.__version__,
            "derived_from": f"regex {regex.__version__} (Unicode properties), corrected by measurement",
            "generated": datetime.date.today().isoformat(),
        }
        data.update(derive())
        OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
        G._PROPS = None
        bad, total = run(probes())
        report(bad, total)
        diff = {varied(name, t) for name, ts in bad.items() for t in ts}
        fixes = correct(data, diff)
        for c, g, k, x in fixes:
            print(f"measured: U+{c:04X} {g} InCB={k} ExtPict={x}")
        OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
        G._PROPS = None
        print(f"wrote {OUT}")
    bad, total = run(itertools.chain(probes(), fuzz()))
    report(bad, total)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
