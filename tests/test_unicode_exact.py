"""Every Unicode-dependent decision of the CPU reference, against the installed reference.

``gpu_tok`` takes its Unicode data from ``gpu_tok/data/unicode_norm.json``
(measured by ``scripts/gen_unicode_norm_tables.py``), never from the running
Python's ``unicodedata`` or the ``regex`` module, whose Unicode versions differ
from the reference's crates (and from one Python to the next). Here each
normalizer, character property and character class is compared with
``tokenizers`` itself:

- by default on a deterministic sample: every 97th code point plus every code
  point the tables list (and the neighbours of every class range);
- with ``--full`` on every code point (surrogates excluded).

The alignment of the normalization forms (which original characters each
normalized character points to) is compared through the offsets of real
encodings, one token per normalized byte.
"""

from __future__ import annotations

import json
import random

import pytest

tokenizers = pytest.importorskip("tokenizers")
if tokenizers.__version__ != "0.23.1":  # pragma: no cover
    pytest.skip(
        f"the Unicode tables were measured on tokenizers==0.23.1; found {tokenizers.__version__} "
        "(re-run scripts/gen_unicode_norm_tables.py against a new pin)",
        allow_module_level=True,
    )

from tokenizers import AddedToken as RefAddedToken  # noqa: E402
from tokenizers import Tokenizer as RefTokenizer  # noqa: E402
from tokenizers import normalizers as RN  # noqa: E402
from tokenizers import pre_tokenizers as RP  # noqa: E402
from tokenizers.models import WordLevel  # noqa: E402

import gpu_tok  # noqa: E402
from _kept import kept_cache  # noqa: E402
from gpu_tok import config as C  # noqa: E402
from gpu_tok.cpu_ref.added_tokens import AddedVocabulary  # noqa: E402
from gpu_tok.cpu_ref.byte_level import BYTE_TO_CHAR  # noqa: E402
from gpu_tok.cpu_ref.normalized import PreTokenizedString  # noqa: E402
from gpu_tok.cpu_ref.normalizers import normalize_str  # noqa: E402
from gpu_tok.cpu_ref.pre_tokenizers import pre_tokenize  # noqa: E402
from gpu_tok.cpu_ref.unicode_props import tables  # noqa: E402

ALL = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]


@kept_cache(maxsize=1)
def _sample():
    T = tables()
    cps = set(range(0, 0x110000, 97))
    listed = set(T.nfd) | set(T.nfkd) | set(T.ccc) | set(T.lower_multi)
    listed |= {chr(c) for c in T.lower_1to1}
    for k, v in T.compose.items():
        listed.update(k + v)
    cps |= {ord(c) for c in listed}
    for rs in T.class_ranges.values():
        for a, b in rs:
            cps.update((a - 1, a, b, b + 1))
    # Hangul: the jamo blocks, the edges of the syllable block
    cps.update(range(0x1100, 0x1200))
    cps.update((0xABFF, 0xAC00, 0xAC01, 0xAC1B, 0xAC1C, 0xD7A3, 0xD7A4))
    return sorted(c for c in cps if 0 <= c < 0x110000 and not (0xD800 <= c <= 0xDFFF))


SWEEPS = [
    pytest.param("sample", id="sample"),
    pytest.param("all", id="all", marks=pytest.mark.full),
]


def _cps(which):
    return _sample() if which == "sample" else ALL


def test_table_header_names_the_installed_reference():
    meta = tables().meta
    assert meta["reference"] == "tokenizers"
    assert meta["reference_version"] == tokenizers.__version__
    assert meta["generator"] == "scripts/gen_unicode_norm_tables.py"


# ------------------------------------------------------------ normalizers
OURS_NORMALIZERS = {
    "NFD": C.UnicodeNormalizer("NFD"),
    "NFKD": C.UnicodeNormalizer("NFKD"),
    "NFC": C.UnicodeNormalizer("NFC"),
    "NFKC": C.UnicodeNormalizer("NFKC"),
    "Lowercase": C.Lowercase(),
    "StripAccents": C.StripAccents(),
    "NFD+StripAccents": C.NormalizerSequence((C.UnicodeNormalizer("NFD"), C.StripAccents())),
    # BertNormalizer's own classes: one option at a time, then all (clean_text drops the SEP)
    "BertClean": C.BertNormalizer(True, False, False, False),
    "BertChinese": C.BertNormalizer(False, True, False, False),
    "BertStrip": C.BertNormalizer(False, False, True, False),
    "BertLower": C.BertNormalizer(False, False, False, True),
    "Bert": C.BertNormalizer(True, True, None, True),
}
REF_NORMALIZERS = {
    "NFD": RN.NFD(),
    "NFKD": RN.NFKD(),
    "NFC": RN.NFC(),
    "NFKC": RN.NFKC(),
    "Lowercase": RN.Lowercase(),
    "StripAccents": RN.StripAccents(),
    "NFD+StripAccents": RN.Sequence([RN.NFD(), RN.StripAccents()]),
    "BertClean": RN.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False),
    "BertChinese": RN.BertNormalizer(clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=False),
    "BertStrip": RN.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False),
    "BertLower": RN.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=False, lowercase=True),
    "Bert": RN.BertNormalizer(),
}
SEP = "\x00"  # a starter that decomposes to itself: each code point is normalized on its own


def _compare_each(name, items):
    """``items``: input strings; compared in one batch, then one by one to name the culprits."""
    ours, ref = OURS_NORMALIZERS[name], REF_NORMALIZERS[name]
    text = SEP.join(items)
    if normalize_str(ours, text) == ref.normalize_str(text):
        return
    bad = [(s, normalize_str(ours, s), ref.normalize_str(s)) for s in items
           if normalize_str(ours, s) != ref.normalize_str(s)]
    shown = [(" ".join("%04X" % ord(x) for x in s), o, r) for s, o, r in bad[:10]]
    assert not bad, f"{name}: {len(bad)} inputs differ from the reference (input, ours, reference): {shown}"
    pytest.fail(f"{name}: the batch differs from the reference although each input agrees")


@pytest.mark.parametrize("which", SWEEPS)
@pytest.mark.parametrize("name", sorted(OURS_NORMALIZERS))
def test_normalizer_on_each_code_point(name, which):
    _compare_each(name, [chr(c) for c in _cps(which)])


@pytest.mark.parametrize("which", SWEEPS)
@pytest.mark.parametrize("form,decomposed_by", [("NFC", "NFD"), ("NFKC", "NFKD"), ("NFC", "NFKD")])
def test_recomposition_of_each_decomposition(form, decomposed_by, which):
    """Composition proper: the reference's decomposition of every code point, recomposed."""
    dec = REF_NORMALIZERS[decomposed_by].normalize_str
    items = {dec(chr(c)) for c in _cps(which)}
    _compare_each(form, sorted(s for s in items if len(s) > 1))


@pytest.mark.parametrize("which", SWEEPS)
def test_canonical_ordering_against_every_class(which):
    """Each measured non-starter after a mark of every class, then before it (NFD and NFC)."""
    T = tables()
    reps = {}
    for ch, r in sorted(T.ccc.items()):
        reps.setdefault(r, ch)
    cps = set(_cps(which))
    marks = [ch for ch in T.ccc if ord(ch) in cps] if which == "sample" else list(T.ccc)
    items = []
    for m in marks:
        for rep in reps.values():
            items.append("a" + m + rep)
            items.append("a" + rep + m)
    _compare_each("NFD", items)
    _compare_each("NFC", items)
    # and every code point behind a mark: a starter blocks reordering, a non-starter moves
    for name in ("NFD", "NFKC"):
        _compare_each(name, ["\u0301" + chr(c) + "\u0323" for c in _cps(which)])


@pytest.mark.parametrize("which", SWEEPS)
def test_strip_uses_the_references_whitespace(which):
    ours, ref = C.Strip(True, True), RN.Strip(left=True, right=True)
    bad = [c for c in _cps(which) if normalize_str(ours, "a" + chr(c)) != ref.normalize_str("a" + chr(c))
           or normalize_str(ours, chr(c) + "a") != ref.normalize_str(chr(c) + "a")]
    assert not bad, [hex(c) for c in bad[:20]]


# ---------------------------------------------------------- pre-tokenizers
def _ours_pre_tokenize(cfg, text):
    pts = PreTokenizedString(text)
    pre_tokenize(cfg, pts)
    return [(sp.normalized.text, (sp.normalized.starts[0], sp.normalized.ends[-1])) for sp in pts.splits]


PRE_TOKENIZERS = {
    "Whitespace": (C.Whitespace(), RP.Whitespace()),
    "WhitespaceSplit": (C.WhitespaceSplit(), RP.WhitespaceSplit()),
    "Punctuation": (C.Punctuation("Removed"), RP.Punctuation(behavior="removed")),
    "Digits": (C.Digits(True), RP.Digits(individual_digits=True)),
    "BertPreTokenizer": (C.BertPreTokenizer(), RP.BertPreTokenizer()),
}


@pytest.mark.parametrize("which", SWEEPS)
@pytest.mark.parametrize("name", sorted(PRE_TOKENIZERS))
def test_pre_tokenizer_classes_on_each_code_point(name, which):
    """Every code point between two ``a``s and between two spaces (its class decides the cuts)."""
    ours, ref = PRE_TOKENIZERS[name]
    cps = _cps(which)
    for glue in ("a", " "):
        text = glue + glue.join(map(chr, cps)) + glue
        got, want = _ours_pre_tokenize(ours, text), ref.pre_tokenize_str(text)
        if got != want:
            bad = [c for c in cps if _ours_pre_tokenize(ours, glue + chr(c) + glue)
                   != ref.pre_tokenize_str(glue + chr(c) + glue)]
            pytest.fail(f"{name} (glue {glue!r}) differs on {len(bad)} code points: {[hex(c) for c in bad[:20]]}")


# ------------------------------------------------------------ added tokens
class _NoModel:
    def get_vocab_size(self):
        return 2

    def token_to_id(self, token):
        return {"<m>": 0, "[UNK]": 1}.get(token)


ADDED_OPTIONS = {"single_word": "{}<m>.", "lstrip": ".{}<m>", "rstrip": "<m>{}."}


@pytest.mark.parametrize("which", SWEEPS)
@pytest.mark.parametrize("option", sorted(ADDED_OPTIONS))
def test_added_token_word_and_space_classes(option, which):
    """single_word looks at Rust regex ``\\w`` next to the match; lstrip/rstrip widen over ``\\s``."""
    ref = RefTokenizer(WordLevel({"<m>": 0, "[UNK]": 1}, unk_token="[UNK]"))
    ref.add_tokens([RefAddedToken("<m>", normalized=False, **{option: True})])
    ours = AddedVocabulary([(0, C.AddedToken("<m>", normalized=False, **{option: True}))], _NoModel(), None)
    fmt = ADDED_OPTIONS[option]
    text = "".join(fmt.format(chr(c)) for c in _cps(which))
    if option == "single_word":  # and on the other side of the match
        text += "".join(".<m>" + chr(c) for c in _cps(which))
    enc = ref.encode(text, add_special_tokens=False)
    want = [tuple(o) for i, o in zip(enc.ids, enc.offsets) if i == 0]
    got = [(a, b) for i, a, b in ours._find_matches(text, ours.raw_trie) if i is not None]
    assert got == want


def test_added_tokens_end_to_end():
    """The same classes through the whole pipeline, on the characters where they matter."""
    T = tables()
    chars = ["a", " ", "\u00a0", "\u3000", "\u200b", "\u200d", "_", "\u0301", "1", "\u0661", "\u00b2", "\u2028",
             "\u180e", "\u0085", ".", "\u16ee", "\u1885", "\u3007"]
    for name in ("rust_word", "rust_space"):
        for a, b in T.class_ranges[name][:40]:
            chars += [chr(a), chr(b)]
    added = [{"id": 0, "content": "<w>", "single_word": True, "lstrip": False, "rstrip": False,
              "normalized": False, "special": False},
             {"id": 0, "content": "<s>", "single_word": False, "lstrip": True, "rstrip": True,
              "normalized": False, "special": True}]
    js = _tokenizer_json(None, added)
    ours, ref = gpu_tok.Tokenizer.from_str(js), RefTokenizer.from_str(js)
    for c in chars:
        for text in (c + "<w>" + c, "x<w>" + c, c + "<w>.", c + c + "<s>" + c + c, "<s>" + c):
            a, b = ours.encode(text), ref.encode(text)
            assert (list(a.ids), [tuple(o) for o in a.offsets]) == (list(b.ids), [tuple(o) for o in b.offsets]), text


# --------------------------------------------------------------- alignment
def _tokenizer_json(normalizer, added=()):
    """Byte-level model without merges after a split into single characters: one token per
    normalized byte, so the offsets show where every normalized character points."""
    vocab = {c: i for i, c in enumerate(BYTE_TO_CHAR)}
    for t in added:
        vocab[t["content"]] = len(vocab)
    model = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
             "vocab": vocab, "merges": []}
    pre = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    return json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": list(added),
                       "normalizer": normalizer, "pre_tokenizer": pre, "post_processor": None,
                       "decoder": None, "model": model})


ALIGN_NORMALIZERS = {
    "NFC": {"type": "NFC"},
    "NFD": {"type": "NFD"},
    "NFKC": {"type": "NFKC"},
    "NFKD": {"type": "NFKD"},
    "Lowercase": {"type": "Lowercase"},
    "NFD+StripAccents": {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}]},
    "NFKC+Lowercase": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
    "Bert": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
             "lowercase": True},
}

FIXED = [
    "e\u0301", "cafe\u0301 ", "\u00e9", "\u1100\u1161\u11a8", "\u1100\u1161", "\uac00\u11a8",
    "\u1100\u1161\u11a8\u11a8", "\u1100\u1100\u1161\u1161", "\u11a8\u1161",
    "q\u0307\u0323", "q\u0323\u0307", "\u1e9b\u0323", "\u1e0b\u0323", "\u0958", "\u212b", "\u2126", "\u00c5\u0323",
    "\ufb01", "\u338f", "\u00bd", "\ufb03\u0301", "\u0301", "\u0301\u0323a", "a\u0301\u0301", "a\u0323\u0302",
    "\u0344", "\u0f73", "\u0f75\u0f71", "\u1f80\u0345", "\u01d5", "\u0385", "\u3300", "\u0b47\u0b3e",
    "\u0b4b", "\u09c7\u09be", "\u0130", "I\u0307", "\u03a3\u0391\u03a3", "\u1e9e", "A\u030a\u0323\u0301",
    "\u0041\u0338\u0301", "\u2260\u0323", "\u0627\u0653", "\u05b0\u0591\u05b0", "\U0001d15e\U0001d165",
    "\U00011938", "\U00011935\U00011930", "\u32ff", "\ua7f2", "\U00010781", "\u0898\u0323", "a\u0898\u0323\u0301",
    # BertNormalizer: dropped controls, spaces made of white space, CJK ideographs with their spaces
    "\u4e2d\u6587", "a\x00b\ufffdc\u200d", "\u3000x\t\u00a0", "\u00c0\u4e00\u0301", "\x7f\u4e00\x7f", "\ue000\u0303",
]


@kept_cache(maxsize=1)
def _random_sequences():
    T = tables()
    rng = random.Random(20231)
    marks = sorted(T.ccc)
    comp = sorted(k + v for k, v in T.compose.items())
    dec = sorted(T.nfd)
    compat = sorted(set(T.nfkd) - set(T.nfd))
    lower = sorted(T.lower_multi) + [chr(c) for c in sorted(T.lower_1to1)]
    base = ["a", "e", "q", " ", "A", "\u0301", "\u0323", "\u0345", "\u0334", "\u1e9b", "\u212b", "\u1100", "\u1161",
            "\u11a8", "\uac00", "\uac01", "\u0b47", "\u0b3e"]
    out = []
    for _ in range(800):
        parts = []
        for _ in range(rng.randint(1, 16)):
            r = rng.random()
            if r < 0.35:
                parts.append(rng.choice(marks))
            elif r < 0.5:
                t = rng.choice(comp)
                parts.append(rng.choice([t[0], t[1], t[2], t[:2]]))
            elif r < 0.6:
                parts.append(rng.choice(dec))
            elif r < 0.7:
                parts.append(rng.choice(compat))
            elif r < 0.78:
                parts.append(chr(rng.choice([rng.randint(0x1100, 0x11FF), rng.randint(0xAC00, 0xD7A3)])))
            elif r < 0.85:
                parts.append(rng.choice(lower))
            else:
                parts.append(rng.choice(base))
        out.append("".join(parts))
    return out


@kept_cache
def _pair(name):
    js = _tokenizer_json(ALIGN_NORMALIZERS[name])
    return gpu_tok.Tokenizer.from_str(js), RefTokenizer.from_str(js)


@pytest.mark.parametrize("name", sorted(ALIGN_NORMALIZERS))
def test_alignment_offsets(name):
    ours, ref = _pair(name)
    texts = FIXED + ["x" + s + "y" for s in FIXED] + list(_random_sequences())
    for text in texts:
        a, b = ours.encode(text), ref.encode(text)
        got = (list(a.tokens), [tuple(o) for o in a.offsets])
        want = (list(b.tokens), [tuple(o) for o in b.offsets])
        assert got == want, f"{name}: offsets differ for {' '.join('%04X' % ord(c) for c in text)}"


def test_long_line_is_linear():
    """A 1,000,000-character line normalizes in a few seconds."""
    import time

    rng = random.Random(7)
    pool = "abcdefghij \u00e9\u0301\u0323\u1100\u1161\u11a8\uac00\u212b\ufb01\u00bd\u0130\u03a3"
    text = "".join(rng.choice(pool) for _ in range(1_000_000))
    for name in ("NFC", "NFKD", "Lowercase"):
        t = time.perf_counter()
        out = normalize_str(OURS_NORMALIZERS[name], text)
        elapsed = time.perf_counter() - t
        assert out == REF_NORMALIZERS[name].normalize_str(text)
        assert elapsed < 15, f"{name} took {elapsed:.1f}s on 1,000,000 characters"
