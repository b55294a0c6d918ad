"""The compiled pre-tokenization scanners (gpu_tok/kernels/pretok_cpu.py).

Every recognised ``(dialect, pattern)`` of ``pretok_cpu.PATTERNS`` is checked against

* the translated reference regex (``cpu_ref.regex_util.compile_onig`` + ``find_spans`` for
  Oniguruma, ``cpu_ref.rust_regex.compile_tiktoken_pattern`` for tiktoken): the spec;
* the live references where they are installed: ``tokenizers`` ``Split``/``ByteLevel``
  (Oniguruma) and a ``tiktoken.Encoding`` probe (tiktoken: a vocabulary of the 256 bytes
  plus every predicted piece and every run of up to three consecutive predicted pieces; a
  piece in the vocabulary comes back as one token, so the tokens' bytes equal the
  predicted pieces only when tiktoken cut there too)

on hand-listed tricky strings, strings built from one sample code point per class-bit
combination of the measured tables, a slice of every parity-corpus file, and hypothesis
text from an alphabet of the tricky characters. Also: the parallel plan equals the serial
scan (tiny chunks force cuts inside segments), a sync point is always a piece start,
1,000,000-character pieces scan in linear time, and the class/fold tables match their
measured sources. ``--full``: the whole parity corpus and every code point in contexts.
"""
from __future__ import annotations

import itertools
import json
import random
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from _paths import model_file, parity_dir, parity_files, read_text_exact  # noqa: E402

from gpu_tok.cpu_ref.regex_util import compile_onig, find_spans  # noqa: E402
from gpu_tok.cpu_ref.rust_regex import compile_tiktoken_pattern  # noqa: E402
from gpu_tok.kernels import pretok_cpu as P  # noqa: E402

_DATA = Path(P.__file__).resolve().parents[1] / "data"

_LABEL = {
    P.GPT2_HF: "gpt2", P.GPT2_TIKTOKEN: "r50k", P.LLAMA3_HF: "llama3", P.CL100K_TIKTOKEN: "cl100k_base",
    P.QWEN_HF: "qwen", P.O200K: "o200k",
}
COMBOS = [(d, pat, fam) for (d, pat), fam in P.PATTERNS.items()]
COMBO_IDS = [f"{fam}-{d}-{_LABEL[pat]}" for d, pat, fam in COMBOS]


# ------------------------------------------------------------------ oracles and helpers
def _rx(dialect: str, pattern: str):
    return compile_onig(pattern) if dialect == "onig" else compile_tiktoken_pattern(pattern)


def oracle_pieces(dialect: str, pattern: str, text: str):
    return [text[a:b] for a, b in find_spans(_rx(dialect, pattern), text)]


def _pack(texts):
    bs = [t.encode("utf-8") for t in texts]
    data = np.frombuffer(b"".join(bs), dtype=np.uint8)
    lens = np.array([len(b) for b in bs], dtype=np.int64)
    ends = np.cumsum(lens)
    return data, bs, ends - lens, ends


def kernel_pieces(texts, family, dialect, parallel=False, chunk=None):
    """Pieces of every text, all texts scanned as the segments of one buffer."""
    data, bs, starts, ends = _pack(texts)
    mask = np.zeros(data.shape[0], dtype=np.uint8)
    P.scan_mask(data, starts, ends, family, dialect, mask, parallel=parallel, chunk=chunk)
    out = []
    for b, s, e in zip(bs, starts, ends):
        cuts = (np.flatnonzero(mask[s:e])).tolist() + [len(b)]
        out.append([b[x:y].decode("utf-8") for x, y in zip(cuts[:-1], cuts[1:])])
    return out


def check_texts(texts, dialect, pattern, family, parallel_too=False):
    got = kernel_pieces(texts, family, dialect)
    for t, g in zip(texts, got):
        want = oracle_pieces(dialect, pattern, t)
        assert g == want, (family, dialect, t[:300])
    if parallel_too:
        assert kernel_pieces(texts, family, dialect, parallel=True, chunk=16) == got


def _skip_no_corpus():
    if not parity_dir().is_dir():
        pytest.skip(f"parity corpus not available: {parity_dir()} does not exist "
                    f"(set GPU_TOK_CORPORA to the folder holding parity/)")


# ------------------------------------------------------------------ interface
def test_families_and_known_patterns():
    assert P.FAMILIES == ("gpt2", "cl100k", "qwen", "o200k")
    for (d, pat), fam in P.PATTERNS.items():
        assert P.family_of_pattern(pat, d) == fam
    # the Oniguruma reading of the tiktoken strings with `$` is not the tiktoken one
    assert P.family_of_pattern(P.GPT2_TIKTOKEN, "onig") is None
    assert P.family_of_pattern(P.CL100K_TIKTOKEN, "onig") is None
    # Llama-3's string read by fancy-regex has Llama-3's semantics, not cl100k_base's
    assert P.family_of_pattern(P.LLAMA3_HF, "tiktoken") is None
    for d in P.DIALECTS:
        for pat in (P.GPT2_HF + " ", P.O200K.replace("{1,3}", "{1,4}"), r"\s+", ""):
            assert P.family_of_pattern(pat, d) is None
    with pytest.raises(ValueError):
        P.family_of_pattern(P.GPT2_HF, "pcre")


def _pre_tokenizer(path):
    """The ``pre_tokenizer`` object of a tokenizer.json, without parsing the (large) model."""
    text = path.read_text(encoding="utf-8")
    key = '"pre_tokenizer":'
    i = text.find(key)
    if i < 0:
        return json.loads(text)["pre_tokenizer"]
    j = i + len(key)
    while text[j].isspace():
        j += 1
    return json.JSONDecoder().raw_decode(text, j)[0]


def test_patterns_of_the_real_files():
    from gpu_tok.cpu_ref.byte_level import GPT2_PATTERN

    assert compile_onig(P.GPT2_HF).pattern == GPT2_PATTERN.pattern  # ByteLevel(use_regex=true)
    want = {"llama3": "cl100k", "qwen3": "qwen", "gpt-4o": "o200k", "gpt-oss": "o200k"}
    seen = 0
    for name, fam in want.items():
        path = model_file(name)
        if not path.is_file():
            continue
        pre = _pre_tokenizer(path)
        split = next(p for p in pre["pretokenizers"] if p["type"] == "Split")
        assert P.family_of_pattern(split["pattern"]["Regex"], "onig") == fam, name
        seen += 1
    for name in ("gpt2", "roberta-base"):
        path = model_file(name)
        if path.is_file():
            pre = _pre_tokenizer(path)
            assert pre["type"] == "ByteLevel" and pre.get("use_regex", True)
    encs = json.loads((_DATA / "tiktoken_encodings.json").read_text())["encodings"]
    want_tt = {"r50k_base": "gpt2", "p50k_base": "gpt2", "p50k_edit": "gpt2", "cl100k_base": "cl100k",
               "o200k_base": "o200k", "o200k_harmony": "o200k"}
    for name, fam in want_tt.items():
        assert P.family_of_pattern(encs[name]["pat_str"], "tiktoken") == fam, name
    if not seen:
        pytest.skip("no model tokenizer.json available (GPU_TOK_MODELS)")


def test_scan_mask_contract():
    texts = ["Hello world", "", "  x ", "a\n\n b", "123456"]
    data, bs, starts, ends = _pack(texts)
    # segments with gaps between them; bytes outside every segment are never written
    gap = 3
    buf = bytearray()
    s2, e2 = [], []
    for b in bs:
        buf += b"-" * gap
        s2.append(len(buf))
        buf += b
        e2.append(len(buf))
    data2 = np.frombuffer(bytes(buf), dtype=np.uint8)
    for fam in P.FAMILIES:
        for d in P.DIALECTS:
            for parallel in (False, True):
                mask = np.full(data2.shape[0], 0, dtype=np.uint8)
                P.scan_mask(data2, np.array(s2), np.array(e2), fam, d, mask, parallel=parallel, chunk=4)
                outside = np.ones(data2.shape[0], bool)
                for s, e in zip(s2, e2):
                    outside[s:e] = False
                    if e > s:
                        assert mask[s] == 1  # a non-empty segment starts a piece
                assert not mask[outside].any()
                assert set(np.unique(mask).tolist()) <= {0, 1}
    mask = np.zeros(data.shape[0], np.uint8)
    with pytest.raises(ValueError):
        P.scan_mask(data, starts, ends, "llama", "onig", mask)
    with pytest.raises(ValueError):
        P.scan_mask(data, starts, ends, "gpt2", "oniguruma", mask)
    with pytest.raises(TypeError):
        P.scan_mask(data, starts, ends, "gpt2", "onig", mask.astype(np.int32))
    with pytest.raises(ValueError):  # overlapping segments
        P.scan_mask(data, np.array([0, 2]), np.array([4, 6]), "gpt2", "onig", mask)
    with pytest.raises(ValueError):  # past the end
        P.scan_mask(data, np.array([0]), np.array([data.shape[0] + 1]), "gpt2", "onig", mask)
    P.scan_mask(data, np.zeros(0, np.int64), np.zeros(0, np.int64), "gpt2", "onig", mask)
    assert not mask.any()
    assert P.pieces("", "o200k", "tiktoken") == []


# ------------------------------------------------------------------ tables
@pytest.mark.parametrize("dialect", P.DIALECTS)
def test_class_table_matches_measured_json(dialect):
    tab = P.class_table(dialect)
    assert tab.dtype == np.uint8 and tab.shape == (0x110000,)
    assert P.class_table(dialect) is tab  # cached
    cls = json.loads((_DATA / ("onig_classes.json" if dialect == "onig" else "tiktoken_classes.json"))
                     .read_text())["classes"]

    def members(*names):
        m = np.zeros(0x110000, bool)
        for name in names:
            for a, b in cls[name]:
                m[a:b + 1] = True
        return m

    assert ((tab & P.C_WS) != 0).tolist() == members("\\s").tolist()
    assert ((tab & P.C_WS) != 0).tolist() == members("[\\s]").tolist()
    assert ((tab & P.C_L) != 0).tolist() == members("L").tolist()
    assert ((tab & P.C_N) != 0).tolist() == members("N").tolist()
    assert ((tab & P.C_M) != 0).tolist() == members("M").tolist()
    assert ((tab & P.C_UP) != 0).tolist() == members("Lu", "Lt", "Lm", "Lo", "M").tolist()
    assert ((tab & P.C_LO) != 0).tolist() == members("Ll", "Lm", "Lo", "M").tolist()
    assert np.flatnonzero(tab & P.C_NL).tolist() == [10, 13]


def _check_table_against_regexes(cps):
    text = "".join(chr(c) for c in cps)
    cps = np.asarray(cps)
    for dialect in P.DIALECTS:
        tab = P.class_table(dialect)
        for bit, pat in [(P.C_WS, r"\s"), (P.C_L, r"\p{L}"), (P.C_N, r"\p{N}"),
                         (P.C_UP, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"), (P.C_LO, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
                         (P.C_WS | P.C_L | P.C_N, r"[\s\p{L}\p{N}]")]:
            got = np.zeros(0x110000, bool)
            got[[ord(c) for c in _rx(dialect, pat).findall(text)]] = True
            assert (((tab[cps] & bit) != 0) == got[cps]).all(), (dialect, pat)


def test_class_table_matches_the_translated_regexes():
    """The table bits are what the translators' compiled classes match (a sample of code points)."""
    _check_table_against_regexes([c for c in range(0x110000)
                                  if (c < 0x3400 or c % 61 == 0) and not 0xD800 <= c <= 0xDFFF])


@pytest.mark.full
def test_full_class_table_every_code_point():
    _check_table_against_regexes([c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF])


def test_fold_tables():
    """(?i:x) for the contraction letters: s also matches U+017F, in both dialects; the other
    letters their two cases; gpt2's contractions are case-sensitive."""
    on, tt, cs = P.fold_table("onig"), P.fold_table("tiktoken"), P.fold_table(None)
    assert np.array_equal(on, tt)
    for x in "dlmrtve":
        assert np.flatnonzero(on == ord(x)).tolist() == [ord(x.upper()), ord(x)]
    assert np.flatnonzero(on == ord("s")).tolist() == [ord("S"), ord("s"), 0x17F]
    assert sorted(np.flatnonzero(cs).tolist()) == sorted(map(ord, "dlmrstve"))
    assert (cs[np.flatnonzero(cs)] == np.flatnonzero(cs)).all()
    casefold = json.loads((_DATA / "tiktoken_classes.json").read_text())["casefold"]
    for x in "dlmrstve":
        assert np.flatnonzero(tt == ord(x)).tolist() == sorted(casefold[x])


# ------------------------------------------------------------------ synthetic inputs
TRICKY = [
    "", " ", "  ", "\n", "\r\n", "\n\r", " \n", "\n ", "a", "'", "''", "'s", "'S", "'ſ", "'K", "'k",
    "'ll", "'LL", "'lL", "'Ll", "'l", "'re", "'RE", "'rE", "'ve", "'Ve", "'m", "'M", "'d", "'D", "'t", "'T",
    "'x", "'1", "' s", "''s", "x's", "X'S", "don't", "DON'T", "they're", "THEY'RE", "y'all", "'sss", "'ſſ",
    "a's's", "!'s", " 's", "\n's", "1's", "'\n", "'s\n", "it's'", "He said 'hello'",
    "Hello world", " Hello", "  Hello", "   Hello", "\tHello", "\t\tHello", " \tHello", "\t Hello",
    "hello  ", "hello \n", "hello\n  ", "a\n  ", "a \n ", "a\n\n", "a\n \n", "a \r\n \r\n  ", "x\r\n\r\ny",
    "  \n\n  x", "\n\n\n", "   ", "\t", "x \t y", "x\t \ty", "x  \t\ty", " \r\n \r\n  z", "\u3000x", "\u3000\u3000x",
    "\xa0x", " \xa0x", "\x85x", "\u2028x", "\x0b\x0cx",
    "123", "1234", "1234567", " 1234", "a1234b", "１２３４", "٣٤٥٦", "Ⅻ", "½¾", "x²³", "1,234.56",
    "!!!", " !!!", "!!!x", "!x", "!!x", "?!\n", "x/y", "a/\n/b", "--\r\n", "...\n\n", " ...\n/", "/\n/x",
    "\x00", "a\x00b", "\x00\x00", " \x00", "\x00'", "\x00's",
    "😀", "😀😀", " 😀x", "x😀", "👍🏽", "𝐀𝐁c", "𠀀𠀁", "a\u0301", "\u0301", "\u0301a", "\u0301A", "\u0301A ",
    "A\u0301", " \u0301x", "x \u0301", "'\u0301s", "\u0301's", "AB\u02b0CD ef", "ǅungla", "ǅ", "ʰʰA", "Aʰ", "AʰB",
    "HTTPServer", "iPhone", "McDonald's", "ÉCOLE", "école", "İstanbul", "ßtraße", "ʕʔ", "\u0295x",
    "中文字符", "中文，字符", " 中文", "日本語のテキスト", "한국어 텍스트", "עברית", "العربية", "हिन्दी", "ไทย",
    "Привет, мир!", "ΑΒΓ αβγ", "\u0378", "\ue000", "\uffff", "\U0010ffff", "\U000e0001", "\u200b", "\u200d",
    "x\u200dy", "\ufeffx", "\u0558", "\ua7ce",
]


def _class_samples(dialect):
    """One to three code points for every distinct class-bit combination of the table."""
    tab = P.class_table(dialect)
    rng = np.random.default_rng(0)
    out = []
    valid = np.ones(0x110000, bool)
    valid[0xD800:0xE000] = False
    for v in np.unique(tab):
        cps = np.flatnonzero((tab == v) & valid)
        out += sorted({int(cps[0]), int(cps[-1]), int(rng.choice(cps))})
    return [chr(c) for c in out]


_SPECIALS = [" ", "  ", "\n", "\r", "\t", "'", "s", "S", "ſ", "l", "L", "r", "e", "E", "v", "d", "t", "m",
             "K", "x", "A", "1", "/", "!", "\u0301", "ʰ", "\u3000", "\x00", "😀"]
_SMALL = [" ", "\n", "\r", "'", "s", "ſ", "l", "e", "A", "a", "ʰ", "\u0301", "1", "!", "/", "\t"]


def _generated(dialect):
    samples = _class_samples(dialect)
    alpha = samples + _SPECIALS
    texts = ["".join(p) for p in itertools.product(alpha, repeat=2)]
    texts += ["".join(p) for p in itertools.product(_SMALL, repeat=3)]
    for c in samples:  # each sample in the contexts where the alternatives compete
        texts += [c * 4, f" {c}x", f"x{c} ", f"{c}'s", f"'{c}", f"{c}  {c}", f"\n{c}\n", f"1{c}1", f"A{c}a",
                  f"{c}A{c}a", f" {c}{c}!", f"{c}\r\n", f"{c}/\n"]
    rng = random.Random(1)
    for _ in range(400):
        texts.append("".join(rng.choice(alpha) for _ in range(rng.randint(1, 24))))
    return texts


@pytest.mark.parametrize("dialect,pattern,family", COMBOS, ids=COMBO_IDS)
def test_tricky_strings(dialect, pattern, family):
    check_texts(TRICKY, dialect, pattern, family, parallel_too=True)
    for t in TRICKY:
        assert P.pieces(t, family, dialect) == oracle_pieces(dialect, pattern, t), t


@pytest.mark.parametrize("dialect,pattern,family", COMBOS, ids=COMBO_IDS)
def test_class_combinations(dialect, pattern, family):
    check_texts(_generated(dialect), dialect, pattern, family)


# ------------------------------------------------------------------ live references
def _hf_pieces(pattern, text):
    from tokenizers import Regex
    from tokenizers.pre_tokenizers import Split

    return [text[a:b] for _, (a, b) in Split(Regex(pattern), behavior="isolated").pre_tokenize_str(text)]


def _tiktoken_probe(pattern, texts, predicted, k=3):
    """tiktoken's own cut of every text equals ``predicted`` (lists of str), by the vocabulary probe."""
    import tiktoken

    vocab = {bytes([b]) for b in range(256)}
    pred_b = [[p.encode("utf-8") for p in ps] for ps in predicted]
    for ps in pred_b:
        for i in range(len(ps)):
            acc = b""
            for j in range(i, min(i + k, len(ps))):
                acc += ps[j]
                vocab.add(acc)
    ranks = {b: r for r, b in enumerate(sorted(vocab, key=lambda x: (len(x), x)))}
    enc = tiktoken.Encoding("gpu_tok_probe", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    bad = []
    for t, ps in zip(texts, pred_b):
        got = [enc.decode_single_token_bytes(x) for x in enc.encode_ordinary(t)]
        if got != ps:
            bad.append(t)
    return bad


def _live_texts():
    texts = list(TRICKY) + _generated("onig")[::13]
    if parity_dir().is_dir():
        for f in parity_files():
            texts.append(read_text_exact(f)[:250])
    return texts


@pytest.mark.parametrize("dialect,pattern,family", [c for c in COMBOS if c[0] == "onig"],
                         ids=[i for c, i in zip(COMBOS, COMBO_IDS) if c[0] == "onig"])
def test_live_tokenizers_reference(dialect, pattern, family):
    pytest.importorskip("tokenizers")
    texts = _live_texts()
    for t, got in zip(texts, kernel_pieces(texts, family, dialect)):
        assert got == _hf_pieces(pattern, t), t[:200]


@pytest.mark.parametrize("dialect,pattern,family", [c for c in COMBOS if c[0] == "tiktoken"],
                         ids=[i for c, i in zip(COMBOS, COMBO_IDS) if c[0] == "tiktoken"])
def test_live_tiktoken_reference(dialect, pattern, family):
    pytest.importorskip("tiktoken")
    texts = [t for t in _live_texts() if t]
    assert _tiktoken_probe(pattern, texts, kernel_pieces(texts, family, dialect)) == []


def test_tiktoken_probe_detects_a_wrong_cut():
    """The probe is sensitive: Llama-3's cut of "a\\n  " is not cl100k_base's."""
    pytest.importorskip("tiktoken")
    texts = ["a\n  ", "x\n\t "]
    assert P.pieces(texts[0], "cl100k", "onig") == ["a", "\n", "  "]
    assert P.pieces(texts[0], "cl100k", "tiktoken") == ["a", "\n  "]
    assert _tiktoken_probe(P.CL100K_TIKTOKEN, texts, kernel_pieces(texts, "cl100k", "onig")) == texts
    assert _tiktoken_probe(P.LLAMA3_HF, texts, kernel_pieces(texts, "cl100k", "onig")) == []


def test_dialect_differences():
    """gpt2, qwen and o200k cut the same in both dialects; cl100k (Llama-3 / cl100k_base)
    differs only in a white-space run at the end of the text that holds a line break
    before other white space: one piece in cl100k_base (``\\s++$``), two in Llama-3."""
    for t in ["a\n  ", "a \n ", "x\r\n\t", "\n \n  ", "x\n\n \t"]:
        assert P.pieces(t, "cl100k", "onig") != P.pieces(t, "cl100k", "tiktoken"), t
    texts = TRICKY + _generated("onig")[::5] + _corpus_texts(800)
    for t in texts:
        for fam in ("gpt2", "qwen", "o200k"):
            assert P.pieces(t, fam, "onig") == P.pieces(t, fam, "tiktoken"), (fam, t)
        hf, tt = P.pieces(t, "cl100k", "onig"), P.pieces(t, "cl100k", "tiktoken")
        if hf != tt:
            j = len(tt) - 1
            assert hf[:j] == tt[:j] and "".join(hf[j:]) == tt[j] and tt[j].isspace(), t
            assert any(c in tt[j] for c in "\r\n") and tt[j][-1] not in "\r\n", t


def _corpus_texts(n_chars):
    if not parity_dir().is_dir():
        return []
    return [read_text_exact(f)[:n_chars] for f in parity_files()]


# ------------------------------------------------------------------ corpus slice
def _corpus_slice(n_chars=400):
    _skip_no_corpus()
    files = parity_files()
    if not files:
        pytest.skip(f"parity corpus {parity_dir()} holds no files")
    return [read_text_exact(f)[:n_chars] for f in files]


@pytest.mark.parametrize("dialect,pattern,family", COMBOS, ids=COMBO_IDS)
def test_parity_corpus_slice(dialect, pattern, family):
    texts = _corpus_slice()
    check_texts(texts, dialect, pattern, family)
    # the same text cut into lines (segments that end right before/after line breaks)
    lines = [ln for t in texts[::4] for ln in t.splitlines(keepends=True)]
    check_texts(lines, dialect, pattern, family)


# ------------------------------------------------------------------ parallel plan
@pytest.mark.parametrize("family", P.FAMILIES)
def test_parallel_equals_serial(family):
    rng = random.Random(7)
    texts = list(TRICKY) + _generated("onig")[::11]
    if parity_dir().is_dir():
        texts += [read_text_exact(f)[:2000] for f in parity_files()[::8]]
    blob = "".join(texts)
    layouts = [texts, [blob], ["1" * 5000, " " * 5000, "\n" * 300 + "x" * 3000, blob[:20000]]]
    tiny = [rng.choice(texts)[: rng.randint(0, 6)] for _ in range(1500)]
    layouts.append(tiny)
    for d in P.DIALECTS:
        for lay in layouts:
            serial = kernel_pieces(lay, family, d)
            for chunk in (1, 7, 1000, None):
                assert kernel_pieces(lay, family, d, parallel=True, chunk=chunk) == serial, (d, chunk)


def _sync_positions(text, dialect):
    """Byte positions where the parallel plan may cut: after a letter, before a character
    that is neither a letter, a mark nor an apostrophe."""
    tab = P.class_table(dialect)
    out, pos, prev = [], 0, None
    for ch in text:
        k = int(tab[ord(ch)])
        if prev is not None and prev & P.C_L and not k & (P.C_L | P.C_M) and ch != "'":
            out.append(pos)
        prev = k
        pos += len(ch.encode("utf-8"))
    return out


_ALPHABET = (
    [" "] * 6 + ["\n"] * 3 + ["\r", "\t", "\x0b", "\xa0", "\u3000", "\u2028", "\x85"]
    + ["'"] * 4 + list("sStTlLrReEvVmMdDkK") + ["ſ", "\u212a"] + list("axyzAXYZ")
    + ["é", "É", "ß", "İ", "ǅ", "ʰ", "ʕ", "\u0295", "中", "文", "あ", "ア", "한"]
    + ["я", "Я", "α", "Ω", "ا", "ع", "א", "क", "ि", "ก"]
    + ["\u0301", "\u0308", "\u0903", "\u20dd", "\u0558", "\ua7ce"]
    + list("0123456789") + ["٣", "１", "Ⅻ", "½", "²", "߀"]
    + list("!?.,;:-_()[]{}\"/\\@#$%^&*+=<>|~`") + ["“", "”", "’", "…", "—", "€"]
    + ["😀", "👍", "🏽", "𝐀", "𠀀", "\U0010ffff", "\U000e0001", "\ue000", "\u0378", "\uffff", "\u200b", "\u200d", "\x00"]
)


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_ALPHABET), min_size=0, max_size=40).map("".join))
def test_hypothesis_all_patterns(text):
    for (dialect, pattern), family in P.PATTERNS.items():
        got = P.pieces(text, family, dialect)
        assert got == oracle_pieces(dialect, pattern, text), (family, dialect)


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.sampled_from(_ALPHABET), min_size=0, max_size=60).map("".join))
def test_hypothesis_sync_points_are_piece_starts(text):
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    for fam in P.FAMILIES:
        for d in P.DIALECTS:
            mask = np.zeros(data.shape[0], np.uint8)
            P.scan_mask(data, np.array([0]), np.array([data.shape[0]]), fam, d, mask, parallel=False)
            for p in _sync_positions(text, d):
                assert mask[p] == 1, (fam, d, p)


# ------------------------------------------------------------------ linear time
_LONG = {
    "letters": "a", "upper": "A", "modifier": "ʰ", "marks": "\u0301", "digits": "1", "spaces": " ",
    "newlines": "\n", "space-newline": " \n", "punct": "!", "apostrophes": "'", "cjk": "中",
    "upper-modifier": "Aʰ", "space-letter": " a", "emoji": "😀",
}


def _time_scan(text, family, dialect):
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    mask = np.zeros(data.shape[0], np.uint8)
    t = time.perf_counter()
    P.scan_mask(data, np.array([0]), np.array([data.shape[0]]), family, dialect, mask, parallel=False)
    return time.perf_counter() - t, int(mask.sum())


@pytest.mark.parametrize("family", P.FAMILIES)
def test_linear_time_on_million_character_pieces(family):
    P.pieces("warm up", family, "onig")
    for name, unit in _LONG.items():
        small = unit * (100_000 // len(unit))
        big = unit * (1_000_000 // len(unit))
        t_small = min(_time_scan(small, family, "onig")[0] for _ in range(3))
        t_big, n_big = _time_scan(big + "x", family, "onig")
        assert n_big >= 1
        # loose: a quadratic scan would take ~100x; allow 40x plus scheduling noise
        assert t_big < 40 * t_small + 1.0, (name, t_small, t_big)


# ------------------------------------------------------------------ exhaustive (--full)
@pytest.mark.full
@pytest.mark.parametrize("dialect,pattern,family", COMBOS, ids=COMBO_IDS)
def test_full_parity_corpus(dialect, pattern, family):
    _skip_no_corpus()
    texts = [read_text_exact(f) for f in parity_files()]
    check_texts(texts, dialect, pattern, family)
    blob = "\n".join(texts)
    assert kernel_pieces([blob], family, dialect, parallel=True, chunk=4096) == kernel_pieces([blob], family, dialect)


@pytest.mark.full
@pytest.mark.parametrize("dialect,pattern,family", COMBOS, ids=COMBO_IDS)
def test_full_every_code_point_in_contexts(dialect, pattern, family):
    cps = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    contexts = ["{c}", " {c}", "{c}x", "'{c}", "{c}'s", "A{c}a ", "\n{c}\n", "{c}{c}1"]
    for ctx in contexts:
        texts = ["".join(ctx.format(c=c) for c in cps[i:i + 4096]) for i in range(0, len(cps), 4096)]
        check_texts(texts, dialect, pattern, family)


@pytest.mark.full
def test_full_live_references_on_the_parity_corpus():
    _skip_no_corpus()
    pytest.importorskip("tokenizers")
    pytest.importorskip("tiktoken")
    texts = [read_text_exact(f) for f in parity_files()]
    for dialect, pattern, family in COMBOS:
        got = kernel_pieces(texts, family, dialect)
        if dialect == "onig":
            for t, g in zip(texts, got):
                assert g == _hf_pieces(pattern, t), (family, t[:200])
        else:
            assert _tiktoken_probe(pattern, texts, got) == [], family


@pytest.mark.full
def test_full_onig_case_folding_is_the_live_reference():
    """Oniguruma's (?i:x) in tokenizers 0.23.1 matches what the fold table says, on every code point."""
    pytest.importorskip("tokenizers")
    from tokenizers import Regex
    from tokenizers.pre_tokenizers import Split

    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    fold = P.fold_table("onig")
    for x in "stremvld":
        kept = Split(Regex(f"(?i:{x})"), behavior="removed").pre_tokenize_str(every)
        removed = np.ones(len(every), bool)
        for _, (a, b) in kept:
            removed[a:b] = False
        got = sorted(ord(every[i]) for i in np.flatnonzero(removed))
        assert got == sorted(np.flatnonzero(fold == ord(x)).tolist()), x


# ------------------------------------------------------------------ 64-byte SIMD windows
_ASCII_TRICKY = list("  \n\n\r\t\x0b\x0c'''sStTmMdDrReEvVlLaZx09.,;-/_()\"!") + ["\x00", "\x1f", "\x7f"]


def _window_texts(seed, n, non_ascii):
    """Texts of 60-400 characters drawn mostly from the ASCII characters where the
    pattern's alternatives compete (so the scanners' 64-byte windows settle many pieces),
    a few with a non-ASCII character (windows that must stop before it)."""
    rng = random.Random(seed)
    alpha = _ASCII_TRICKY + (non_ascii if rng.random() < 0.5 else [])
    out = []
    for _ in range(n):
        t = "".join(rng.choice(alpha) for _ in range(rng.randint(60, 400)))
        if non_ascii and rng.random() < 0.3:
            k = rng.randrange(len(t))
            t = t[:k] + rng.choice(non_ascii) + t[k:]
        out.append(t)
    return out


@pytest.mark.parametrize("dialect,pattern,family", COMBOS, ids=COMBO_IDS)
def test_simd_windows_equal_the_reference(dialect, pattern, family):
    """The scanners cut pure-ASCII text 64 bytes at a time from bit masks of the byte
    classes; these texts (packed into one buffer, so the windows run across the texts'
    ends too) hold every ASCII rule's corner: contractions after a space or a newline,
    whitespace runs before letters, digits and punctuation, segment ends."""
    texts = _window_texts(7, 700, ["é", "\xa0", "中", "\u0301", "ſ", "K", "😀", "\x85", "２"])
    texts += ["a" * 70 + "'s" + " " * 3 + "x", "1" * 130, " " * 65 + "x", "x" + "\n" * 64 + " y", "'ll'LL'Re're" * 9]
    check_texts(texts, dialect, pattern, family, parallel_too=True)


def _two_byte_chars():
    """Every two-byte character of the windows' lead bytes (``P._PAIR_LEADS``) and of the
    lead bytes around them (C2, CB..CF, D2, D3: letters, marks, signs and modifier letters
    the windows must stop before), one of each."""
    leads = [0xC2] + list(range(0xC3, 0xD4))
    return [bytes([lead, cont]).decode("utf-8") for lead in leads for cont in range(0x80, 0xC0)]


@pytest.mark.parametrize("dialect,pattern,family", COMBOS, ids=COMBO_IDS)
def test_simd_windows_two_byte_letters(dialect, pattern, family):
    """The windows read Latin-1, Latin Extended-A/B, IPA and basic Cyrillic letters as
    letters (o200k: only those of one case). Texts of ASCII where the rules compete with
    every two-byte character of those lead bytes and their neighbours (the exceptions, the
    multiplication and division signs and U+017F, which ``(?i:'s)`` matches, among them),
    words in either case next to each other, and each character after ASCII in the
    contexts where case and class decide a cut; packed into one buffer so that characters
    fall on every window position."""
    two = _two_byte_chars()
    assert len(two) == 18 * 64
    rng = random.Random(11)
    words = ["été", "ÉTÉ", "Été", "straße", "Łódź", "ſ", "'ſ", "x×y", "a÷b", "Привет", "ПРИВЕТ", "мИр", "ѢѣѤ",
             "ÀÿĀſƀɏ", "ΑΒΓαβγ", "ʰʰ", "a\u0301", "µ", "ª", "\xa0"]
    alpha = _ASCII_TRICKY + words
    texts = []
    for _ in range(500):
        parts = []
        for _ in range(rng.randint(10, 60)):
            r = rng.random()
            parts.append(rng.choice(two) if r < 0.35 else rng.choice(alpha))
        texts.append("".join(parts))
    texts += ["".join(two[k:k + 64]) for k in range(0, len(two), 64)]  # each lead byte's 64 in a row
    texts += [" " + c * 40 + "'s " + c.upper() * 3 + c for c in ("é", "ñ", "я", "ł", "ə")]
    # each character where case and class decide the cut, after ASCII a window starts on
    ctx = ("{c}Ab", "A{c}b", "a{c}B", "AB{c}", "{c}{c}A", "{c}'s", "'{c}", "x'{c}", " {c}1", "1{c}", "{c}\n")
    texts += ["xyz " + " xyz ".join(x.format(c=c) for x in ctx) for c in two]
    check_texts(texts, dialect, pattern, family, parallel_too=True)


def test_two_byte_letter_ranges_are_checked():
    """``_check_pairs`` refuses tables where a window letter is not a plain letter (so a
    changed class table cannot make the windows cut otherwise than the scalar code)."""
    for family in P.FAMILIES:
        for dialect in P.DIALECTS:
            P._check_pairs(family, P.class_table(dialect), P.fold_table(None if family == "gpt2" else dialect))
    tab = P.class_table("onig").copy()
    tab[0x00E9] = P.C_N  # é as a digit
    with pytest.raises(ValueError, match="U\\+00E9"):
        P._check_pairs("gpt2", tab, P.fold_table(None))
    fold = np.zeros(0x500, np.uint8)  # the onig table stops after U+017F
    fold[:P.fold_table("onig").shape[0]] = P.fold_table("onig")
    fold[0x0430] = ord("s")  # Cyrillic a folding to s
    with pytest.raises(ValueError, match="U\\+0430"):
        P._check_pairs("cl100k", P.class_table("onig"), fold)
    tab = P.class_table("onig").copy()
    tab[0x0416] |= P.C_LO  # Ж upper and lower case at once
    with pytest.raises(ValueError, match="U\\+0416"):
        P._check_pairs("o200k", tab, P.fold_table("onig"))


def test_two_byte_letter_masks_match_their_constants():
    """``_window_pairs``' range literals (``range_mask64`` needs literal bounds) against the
    ``_PAIR_*`` constants that ``_check_pairs`` holds against the tables: every two-byte
    character of lead bytes C2..D3, at every even offset of a 64-byte window but the last,
    is read as a letter (o200k: upper or lower) exactly when the constants say so, both its
    bytes and no other."""
    from numba import njit

    @njit
    def masks(data, i, fam):
        return P._window_pairs(data, i, fam)

    def wanted(family, lead, cont):
        if family == "o200k":
            up = any(lead == a and lo <= cont <= hi for a, lo, hi in P._PAIR_O200K_UPPER)
            low = any(lead == a and lo <= cont <= hi for a, lo, hi in P._PAIR_O200K_LOWER)
            return up or low, up, low
        m = any(a <= lead <= b for a, b in P._PAIR_LEADS) and (lead, cont) not in P._PAIR_EXCEPTIONS
        return m, m, m

    seen = 0
    for family, fam in (("gpt2", P._F_GPT2), ("o200k", P._F_O200K), ("cl100k", P._F_CL100K)):
        for lead in range(0xC2, 0xD4):
            for cont in range(0x80, 0xC0):
                for off in (0, 2, 30, 62):
                    buf = np.full(64 + 8, ord("a"), np.uint8)
                    buf[off], buf[off + 1] = lead, cont
                    high, acc, up, low = masks(buf, 0, fam)
                    both = np.uint64(3) << np.uint64(off)
                    want = wanted(family, lead, cont)
                    for got, w in zip((acc, up, low), want):
                        assert int(got) == (int(both) if w else 0), (family, hex(lead), hex(cont), off)
                    assert int(high) == (0 if want[0] else int(both)), (family, hex(lead), hex(cont), off)
                    seen += want[0]
    assert seen > 3 * 4 * 300  # the letters are many: not a check that passes on empty masks


@pytest.mark.parametrize("family", ["gpt2", "cl100k", "qwen", "o200k"])
def test_each_family_compiles_its_own_scanner_only(family, monkeypatch):
    """The family reaches the scanning kernels as a marker (``family_marker``: one compiled
    copy per family) and each kernel names the families' scanners in an ``if`` on ``code =
    len(fam)`` in its own body, which Numba prunes before it inlines them (decision 0036: a
    cold start's compile, gpt2, 75 -> 50 s; a helper holding the ``if`` was inlined with
    every family in it, then pruned). A fresh compile of ``_scan_range`` for the family:
    the functions Numba inlined into it (each goes through ``InlineWorker``'s front end)
    are its own window and piece function, no other family's. It still cuts as the serial
    scan does."""
    import numba

    from _inliner import record_inlined

    own = {"gpt2": "gpt2", "cl100k": "cl100k", "qwen": "cl100k", "o200k": "o200k"}[family]
    fam, end_whole, tab, fold = P._prepare(family, "onig")
    assert len(fam) == P._FAMILY_CODE[family]
    inlined = record_inlined(monkeypatch)
    scan = numba.njit(P._scan_range.py_func)  # a fresh dispatcher: compiled here, not loaded
    text = "He said 'twas  fine, 42 times.\n\tOK é中文 " * 4
    data = np.frombuffer(bytearray(text.encode() + b"\0" * 64), np.uint8)
    n = len(text.encode())
    mask = np.zeros(data.shape[0], np.uint8)
    scan(data, 0, n, n, fam, end_whole, tab, fold, mask)
    monkeypatch.undo()
    want = np.zeros(data.shape[0], np.uint8)
    P.scan_mask(data, np.array([0], np.int64), np.array([n], np.int64), family, "onig", want, parallel=False)
    assert np.array_equal(mask, want) and int(mask.sum()) > 20
    for other in ("gpt2", "cl100k", "o200k"):
        for fn in (f"_{other}_window", f"_{other}_starts", f"_piece_{other}"):
            assert (fn in inlined) == (other == own), (family, fn, sorted(inlined))


def test_gpt2_window_compiles_without_byte_inserts():
    """gpt2's 64-byte window (``_gpt2_starts``) keeps its ASCII class masks on 64-bit words
    (``_intrinsics.opaque64``, decision 0018's addendum of 2026-12-02): without it LLVM
    turned their shifts back into shuffles of the compare vectors, lowered on AVX2 as 120
    ``vpinsrb`` through the stack (the serial scan 2.4x slower). The compiled window must
    hold none; the window's masks are the same either way (the scanner tests)."""
    import platform
    import re

    import numba

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the check reads x86-64 assembly")

    @numba.njit
    def window(data, i, e, stop):
        return P._gpt2_starts(data, i, e, stop)

    data = np.frombuffer(b"He said 'twas  fine, 42 times.\n\tOK " * 4, np.uint8).copy()
    m = int(window(data, 0, data.shape[0], data.shape[0]))
    assert m & 1 and m != 1  # a real window: it settles several piece starts
    asm = "\n".join(window.inspect_asm().values())
    assert re.search(r"^\s+v?pcmpeqb\s", asm, re.M)  # the compares are vector ones
    assert not re.search(r"^\s+v?pinsrb\s", asm, re.M)
