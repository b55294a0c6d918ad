"""Measure the reference's Unicode behaviour on every code point.

``gpu_tok``'s CPU reference must take every Unicode-dependent decision the way
the pinned reference does, whatever Python (and so whatever ``unicodedata``
version) runs it. The reference's Rust crates carry their own Unicode tables
(of various versions), so this script runs the installed reference on every
code point (surrogates excluded) and writes what it observed to
``gpu_tok/data/unicode_norm.json``:

- ``nfd`` / ``nfkd``: ``NFD().normalize_str(c)`` for every code point it changes
  (Hangul syllables excepted, see below); ``nfkd`` lists only the code points
  whose NFKD differs from their NFD. Entries are strings: the code point, then
  its full decomposition.
- ``ccc``: the canonical combining class of every code point whose NFD is
  itself, as ranges ``[first, last, rank]`` of the non-starters. Only the order
  of the classes is observable (canonical reordering is a stable sort by
  class; composition blocking compares classes), so ``rank`` is the class's
  rank among the reference's non-zero classes, measured by comparing
  ``NFD("a" + x + y)`` with ``"a" + y + x`` for pairs of non-starters.
- ``compose``: the reference's primary composites (code points ``p`` with
  ``NFC(p) == p != NFD(p)``), each as the 3-character string ``S C p`` where
  ``NFC(S + C) == p`` is the pair the composition step merges.
- Hangul syllables decompose and compose arithmetically (Unicode's algorithm,
  implemented in ``normalizers.py``); this script checks that the reference
  does exactly that on every syllable and every jamo pair instead of listing
  11,172 syllables.
- ``lower``: ``Lowercase().normalize_str(c)`` (Rust ``char::to_lowercase``) for
  every code point it changes, as strings "code point, then its lowercase".
- character classes, as ranges ``[first, last]``:
  ``combining_mark`` (StripAccents removes it), ``white_space`` (Rust
  ``char::is_whitespace``: WhitespaceSplit removes it), ``numeric`` (Rust
  ``char::is_numeric``: Digits isolates it), ``punctuation`` (the Punctuation
  pre-tokenizer removes it), ``rust_word`` / ``rust_space`` (the Rust ``regex``
  crate's ``\\w`` and ``\\s``, measured through added tokens' ``single_word``
  and ``lstrip``/``rstrip`` and cross-checked with the Whitespace
  pre-tokenizer ``\\w+|[^\\w\\s]+``).
- ``bert_classes``, as ranges, from ``BertNormalizer`` with one option on at a
  time, on every code point alone: ``removed`` (``clean_text`` drops it: NUL,
  U+FFFD and the crate's "other" categories but tab, newline and carriage
  return), ``space`` (``clean_text`` makes it " "), ``mark`` (what
  ``strip_accents`` drops after NFD: the code points whose NFD is themselves and
  that come out empty), ``chinese`` (``handle_chinese_chars`` puts a space on
  each side). ``BertPreTokenizer``'s white space and punctuation are checked to
  be the ``white_space`` and ``punctuation`` classes above.

    python scripts/gen_unicode_norm_tables.py   # writes gpu_tok/data/unicode_norm.json
"""

from __future__ import annotations

import datetime
import functools
import json
from pathlib import Path

import tokenizers
from tokenizers import AddedToken, Tokenizer
from tokenizers import normalizers as N
from tokenizers import pre_tokenizers as P
from tokenizers.models import WordLevel

from gen_unicode_tables import ranges  # scripts/ is on sys.path when run as a script

OUT = Path(__file__).resolve().parents[1] / "gpu_tok" / "data" / "unicode_norm.json"

CPS = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]

# Hangul (Unicode's arithmetic; checked against the reference below)
S_BASE, L_BASE, V_BASE, T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
L_COUNT, V_COUNT, T_COUNT = 19, 21, 28
S_COUNT = L_COUNT * V_COUNT * T_COUNT


def hangul_decompose(s: int) -> str:
    i = s - S_BASE
    out = chr(L_BASE + i // (V_COUNT * T_COUNT)) + chr(V_BASE + (i % (V_COUNT * T_COUNT)) // T_COUNT)
    if i % T_COUNT:
        out += chr(T_BASE + i % T_COUNT)
    return out


def hangul_compose(a: int, b: int):
    if L_BASE <= a < L_BASE + L_COUNT and V_BASE <= b < V_BASE + V_COUNT:
        return chr(S_BASE + ((a - L_BASE) * V_COUNT + (b - V_BASE)) * T_COUNT)
    if S_BASE <= a < S_BASE + S_COUNT and (a - S_BASE) % T_COUNT == 0 and T_BASE < b < T_BASE + T_COUNT:
        return chr(a + b - T_BASE)
    return None


def per_char(fn):
    return {c: fn(chr(c)) for c in CPS}


# --------------------------------------------------------------- normalization
def measure_normalization():
    nfd, nfkd, nfc = N.NFD().normalize_str, N.NFKD().normalize_str, N.NFC().normalize_str
    D = per_char(nfd)
    KD = per_char(nfkd)
    C = per_char(nfc)
    KC = per_char(N.NFKC().normalize_str)

    # Hangul syllables: arithmetic, checked
    for s in range(S_BASE, S_BASE + S_COUNT):
        assert D[s] == KD[s] == hangul_decompose(s), hex(s)
        assert C[s] == KC[s] == chr(s), hex(s)
    # every pair of a jamo / syllable with a jamo: NFC must follow the arithmetic
    firsts = list(range(0x1100, 0x1200)) + list(range(S_BASE - 1, S_BASE + S_COUNT + 1))
    for a in firsts:
        for b in range(0x1100, 0x1200):
            h = hangul_compose(a, b)
            assert nfc(chr(a) + chr(b)) == (h if h is not None else chr(a) + chr(b)), (hex(a), hex(b))

    def hangul(c):
        return S_BASE <= c < S_BASE + S_COUNT

    nfd_tab = {c: d for c, d in D.items() if d != chr(c) and not hangul(c)}
    nfkd_tab = {c: d for c, d in KD.items() if d != D[c] and not hangul(c)}
    # decompositions are full: every character they produce is stable under both
    for c in CPS:
        assert all(D[ord(x)] == x for x in D[c]) and all(KD[ord(x)] == x for x in KD[c]), hex(c)

    # --- canonical combining classes of the NFD-stable code points
    # Two probes of different classes: every non-starter reorders with one of them.
    p1, p2 = "\u0301", "\u0323"
    assert nfd("a" + p1 + p2) == "a" + p2 + p1, "probes must be non-starters of different classes"
    stable = [c for c in CPS if D[c] == chr(c)]
    nonstarters = []
    for c in stable:
        x = chr(c)
        moved = False
        for p in (p1, p2):
            if x != p and nfd("a" + p + x) == "a" + x + p or nfd("a" + x + p) == "a" + p + x:
                moved = True
        if moved or x in (p1, p2):
            nonstarters.append(x)
    assert p1 in nonstarters and p2 in nonstarters

    def cmp(x, y):
        if x == y:
            return 0
        r = nfd("a" + x + y)
        if r == "a" + y + x:
            return 1
        assert r == "a" + x + y, (x, y, r)
        r2 = nfd("a" + y + x)
        if r2 == "a" + x + y:
            return -1
        assert r2 == "a" + y + x, (x, y, r2)
        return 0

    ordered = sorted(nonstarters, key=functools.cmp_to_key(cmp))
    groups = [[ordered[0]]]
    for x in ordered[1:]:
        if cmp(groups[-1][0], x) == 0:
            groups[-1].append(x)
        else:
            groups.append([x])
    reps = [g[0] for g in groups]
    rank = {}
    for r, g in enumerate(groups, start=1):
        for x in g:
            rank[x] = r
    # full check: every non-starter against every class representative
    for x in nonstarters:
        for r, rep in enumerate(reps, start=1):
            want = (rank[x] > r) - (rank[x] < r)
            assert cmp(x, rep) == want, (x, rep)
    ccc = []
    for c in sorted(ord(x) for x in nonstarters):
        r = rank[chr(c)]
        if ccc and ccc[-1][1] == c - 1 and ccc[-1][2] == r:
            ccc[-1][1] = c
        else:
            ccc.append([c, c, r])

    # --- composition pairs
    compose = []
    for c in CPS:
        if hangul(c) or C[c] != chr(c) or D[c] == chr(c):
            continue
        d = D[c]
        found = None
        for j in range(len(d) - 1, -1, -1):
            rest = d[:j] + d[j + 1:]
            s = nfc(rest)
            if len(s) == 1 and nfc(s + d[j]) == chr(c):
                found = (s, d[j])
                break
        assert found is not None, hex(c)
        compose.append(found[0] + found[1] + chr(c))
    # every pair must compose in the reference, and the composed code points are starters
    for t in compose:
        assert nfc(t[0] + t[1]) == t[2], t
    return nfd_tab, nfkd_tab, ccc, compose, len(groups)


# ----------------------------------------------------------------- lowercase
def measure_lowercase():
    lo = N.Lowercase().normalize_str
    return {c: l for c, l in per_char(lo).items() if l != chr(c)}


# ------------------------------------------------------------------- classes
ALL = "".join(map(chr, CPS))


def covered(pieces, n):
    kept = bytearray(n)
    for _p, (a, b) in pieces:
        kept[a:b] = b"\x01" * (b - a)
    return kept


def measure_classes():
    out = {}
    # combining marks: StripAccents removes them (each code point occurs once)
    kept = set(N.StripAccents().normalize_str(ALL))
    out["combining_mark"] = [c for c in CPS if chr(c) not in kept]
    # char::is_whitespace: WhitespaceSplit removes it
    k = covered(P.WhitespaceSplit().pre_tokenize_str(ALL), len(CPS))
    out["white_space"] = [c for i, c in enumerate(CPS) if not k[i]]
    # Punctuation pre-tokenizer, behaviour "removed"
    k = covered(P.Punctuation(behavior="removed").pre_tokenize_str(ALL), len(CPS))
    out["punctuation"] = [c for i, c in enumerate(CPS) if not k[i]]
    # char::is_numeric: Digits(individual) isolates it; interleave a non-numeric "a"
    assert P.Digits(individual_digits=True).pre_tokenize_str("aa") == [("aa", (0, 2))]
    text = "".join(chr(c) + "a" for c in CPS)
    single = {a for _p, (a, b) in P.Digits(individual_digits=True).pre_tokenize_str(text) if b == a + 1 and a % 2 == 0}
    out["numeric"] = [c for i, c in enumerate(CPS) if 2 * i in single]

    # Whitespace pre-tokenizer (Rust regex \w+|[^\w\s]+): interleave a word char "a"
    assert P.Whitespace().pre_tokenize_str("aa") == [("aa", (0, 2))]
    pieces = P.Whitespace().pre_tokenize_str(text)
    k = covered(pieces, len(text))
    alone = {a for _p, (a, b) in pieces if b == a + 1 and a % 2 == 0}
    ws_word, ws_other, ws_removed = set(), set(), set()
    for i, c in enumerate(CPS):
        if not k[2 * i]:
            ws_removed.add(c)
        elif 2 * i in alone:
            ws_other.add(c)
        else:
            ws_word.add(c)

    # Rust regex \w through an added token's single_word; \s through lstrip and rstrip
    def tok(**kw):
        t = Tokenizer(WordLevel({"<m>": 0, "[UNK]": 1}, unk_token="[UNK]"))
        t.add_tokens([AddedToken("<m>", normalized=False, **kw)])
        return t

    def token_starts(t, s):
        e = t.encode(s, add_special_tokens=False)
        return [o for i, o in zip(e.ids, e.offsets) if i == 0]

    # ".<m>c": the token stays iff c is not \w ("." checked to be a non-word char)
    got = {a for a, _b in token_starts(tok(single_word=True), "".join(".<m>" + chr(c) for c in CPS))}
    assert got, "'.' must not be a word character"
    word = {c for i, c in enumerate(CPS) if 5 * i + 1 not in got}
    # ".c<m>": with lstrip the token starts at c iff c is \s
    starts = {a for a, _b in token_starts(tok(lstrip=True), "".join("." + chr(c) + "<m>" for c in CPS))}
    space_l = {c for i, c in enumerate(CPS) if 5 * i + 1 in starts}
    assert all(5 * i + 1 in starts or 5 * i + 2 in starts for i in range(len(CPS)))
    # "<m>c.": with rstrip the token ends after c iff c is \s
    ends = {b for _a, b in token_starts(tok(rstrip=True), "".join("<m>" + chr(c) + "." for c in CPS))}
    space_r = {c for i, c in enumerate(CPS) if 5 * i + 4 in ends}
    assert space_l == space_r, sorted(space_l ^ space_r)[:10]
    assert ws_word == word, sorted(ws_word ^ word)[:10]
    assert ws_removed == space_l - word, sorted(ws_removed ^ (space_l - word))[:10]
    out["rust_word"] = sorted(word)
    out["rust_space"] = sorted(space_l)
    return {k: ranges(v) for k, v in out.items()}


def measure_bert_classes(classes):
    def bert(**on):
        kw = dict(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=False)
        kw.update(on)
        return N.BertNormalizer(**kw).normalize_str

    clean, chinese, strip, nfd = bert(clean_text=True), bert(handle_chinese_chars=True), bert(strip_accents=True), N.NFD().normalize_str
    out = {"removed": [], "space": [], "mark": [], "chinese": []}
    for c in CPS:
        ch = chr(c)
        r = clean(ch)
        if r == "":
            out["removed"].append(c)
        elif r == " " and ch != " ":
            out["space"].append(c)
        else:
            assert r == ch, hex(c)
        r = chinese(ch)
        if r == " " + ch + " ":
            out["chinese"].append(c)
        else:
            assert r == ch, hex(c)
        if nfd(ch) == ch and strip(ch) == "":
            out["mark"].append(c)
    marks = set(out["mark"])
    for c in CPS:  # strip_accents is NFD, then the marks dropped
        assert strip(chr(c)) == "".join(x for x in nfd(chr(c)) if ord(x) not in marks), hex(c)
    # BertPreTokenizer: white space removed, punctuation isolated, between word characters "a"
    text = "".join(chr(c) + "a" for c in CPS)
    pieces = P.BertPreTokenizer().pre_tokenize_str(text)
    k = covered(pieces, len(text))
    alone = {a for _p, (a, b) in pieces if b == a + 1 and a % 2 == 0}
    ws = ranges([c for i, c in enumerate(CPS) if not k[2 * i]])
    punct = ranges([c for i, c in enumerate(CPS) if 2 * i in alone])
    assert ws == classes["white_space"] and punct == classes["punctuation"], "BertPreTokenizer's classes differ"
    return {k: ranges(v) for k, v in out.items()}


def main():
    nfd_tab, nfkd_tab, ccc, compose, n_classes = measure_normalization()
    lower = measure_lowercase()
    classes = measure_classes()
    bert_classes = measure_bert_classes(classes)
    data = {
        "reference": "tokenizers",
        "reference_version": tokenizers.__version__,
        "generated": datetime.date.today().isoformat(),
        "generator": "scripts/gen_unicode_norm_tables.py",
        "hangul": "arithmetic (S=AC00 L=1100 V=1161 T=11A7, 19*21*28), checked on every syllable and jamo pair",
        "nfd": [chr(c) + d for c, d in sorted(nfd_tab.items())],
        "nfkd": [chr(c) + d for c, d in sorted(nfkd_tab.items())],
        "ccc": ccc,
        "compose": compose,
        "lower": [chr(c) + low for c, low in sorted(lower.items())],
        "classes": classes,
        "bert_classes": bert_classes,
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes): nfd {len(nfd_tab)}, nfkd {len(nfkd_tab)}, "
          f"ccc {len(ccc)} ranges / {n_classes} classes, compose {len(compose)}, lower {len(lower)}, "
          + ", ".join(f"{k} {len(v)} ranges" for k, v in classes.items())
          + ", bert " + ", ".join(f"{k} {len(v)} ranges" for k, v in bert_classes.items()))


if __name__ == "__main__":
    main()
