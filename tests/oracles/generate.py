#!/usr/bin/env python3
"""Write the golden oracle files tests/oracles/<family>.jsonl.gz from the pinned reference.

    python tests/oracles/generate.py [--families gpt2,roberta-base,...] [--out tests/oracles]

Needs the pinned `tokenizers` (see header "reference_version"), the models
($GPU_TOK_MODELS or ../shared/models) and the corpora ($GPU_TOK_CORPORA or ../shared/corpora).
Everything is deterministic: the same reference, models and corpora give the same records
(only the header's "generated" date changes). Corpus text is never written to the goldens,
only (path, start, end, sha256) of each excerpt. See tests/oracles/README.md.
"""
from __future__ import annotations

import argparse
import bisect
import datetime
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ for the shared helpers

from _oracle_io import (  # noqa: E402
    FAMILIES,
    LONG_RECIPES,
    LONG_TEXT_THRESHOLD,
    REFERENCE,
    REFERENCE_VERSION,
    all_fields,
    golden_path,
    maybe_digest,
    recipe_text,
    write_golden,
)
from _paths import (  # noqa: E402
    ORACLES_DIR,
    corpora_dir,
    model_file,
    parity_dir,
    parity_files,
    read_text_exact,
    sha256_file,
    sha256_text,
)

# ----------------------------------------------------------------------------- corpus selection
EXCERPTS_PER_FILE = 2       # start and end of every parity file (sized for 11 families)
EXCERPT_CHARS = 200         # at most this many characters per excerpt, cut at line ends (tuned for size)
WHOLE_FILE_MAX_BYTES = 4096  # per top-level parity folder, the first file below this size, whole
WHOLE_FILES_PER_DIR = 1


def excerpt_spans(text: str, k: int | None = None, size: int | None = None) -> list[tuple[int, int]]:
    """Up to k (start, end) char spans of at most `size` chars at evenly spaced anchors
    (first anchor 0, last anchor len - size). Starts snap forward to a line start and ends back
    to a line end when a line boundary is close enough; otherwise the cut is mid-line."""
    k = EXCERPTS_PER_FILE if k is None else k
    size = EXCERPT_CHARS if size is None else size
    n = len(text)
    if n == 0:
        return []
    if n <= size:
        return [(0, n)]
    # boundaries: positions just after each "\n" (CRLF stays together), plus 0 and n
    bounds = [0] + [i + 1 for i, c in enumerate(text) if c == "\n" and i + 1 < n] + [n]
    if k <= 1:
        anchors = [0]
    else:
        anchors = [round(j * (n - size) / (k - 1)) for j in range(k)]
    spans = []
    for a in anchors:
        j = bisect.bisect_left(bounds, a)
        start = bounds[j] if j < len(bounds) and bounds[j] - a <= size // 2 and bounds[j] < n else a
        # last boundary <= start + size that is > start
        j = bisect.bisect_right(bounds, start + size) - 1
        end = bounds[j] if bounds[j] > start else min(n, start + size)
        spans.append((start, end))
    return sorted(set(spans))


def corpus_inputs() -> list[tuple[dict, str]]:
    root = corpora_dir()
    pdir = parity_dir()
    if not pdir.is_dir():
        raise SystemExit(f"corpus folder not found: {pdir} (set GPU_TOK_CORPORA)")
    files = parity_files()
    inputs: list[tuple[dict, str]] = []
    seen: set[tuple[str, int, int]] = set()

    def add(rel: str, text: str, start: int, end: int) -> None:
        if (rel, start, end) in seen:
            return
        seen.add((rel, start, end))
        piece = text[start:end]
        src = {"corpus": rel, "start": start, "end": end, "sha256": sha256_text(piece)}
        inputs.append((src, piece))

    # (1) a few whole small files: per top-level folder, the first ones under the size limit
    per_dir: dict[str, int] = {}
    for p in files:
        rel_parity = p.relative_to(pdir).as_posix()
        top = rel_parity.split("/")[0]
        if p.stat().st_size < WHOLE_FILE_MAX_BYTES and per_dir.get(top, 0) < WHOLE_FILES_PER_DIR:
            per_dir[top] = per_dir.get(top, 0) + 1
            text = read_text_exact(p)
            add(p.relative_to(root).as_posix(), text, 0, len(text))
    # (2) excerpts of every file
    for p in files:
        text = read_text_exact(p)
        rel = p.relative_to(root).as_posix()
        for start, end in excerpt_spans(text):
            add(rel, text, start, end)
    return inputs


# ----------------------------------------------------------------------------- synthetic classes

def _chars() -> list[tuple[str, str]]:
    cps = list(range(0x00, 0x80))            # all ASCII, NUL and controls included
    cps += list(range(0x80, 0x100))          # Latin-1 supplement incl. C1 controls, NBSP, soft hyphen
    cps += [
        # Latin extended, IPA, modifiers
        0x0100, 0x0131, 0x0130, 0x017F, 0x01C5, 0x0250, 0x02B0, 0x02BC, 0x02C6,
        # combining marks
        0x0300, 0x0301, 0x0308, 0x0327, 0x034F, 0x036F,
        # Greek, Cyrillic, Armenian, Hebrew, Arabic, Syriac, Thaana
        0x0378, 0x0391, 0x03A3, 0x03B1, 0x03C2, 0x0410, 0x0430, 0x0451, 0x04FF, 0x0531, 0x0587,
        0x05B0, 0x05D0, 0x05EA, 0x0627, 0x064B, 0x0660, 0x06F0, 0x0710, 0x0780,
        # Indic and South-East Asian
        0x0905, 0x0915, 0x093F, 0x094D, 0x0966, 0x0995, 0x09E6, 0x0B95, 0x0D15, 0x0E01, 0x0E31,
        0x0E50, 0x0E81, 0x0F40, 0x1000, 0x1780, 0x17D2,
        # Georgian, Hangul Jamo, Ethiopic, Cherokee, Canadian syllabics, Ogham, Mongolian
        0x10D0, 0x1100, 0x1161, 0x11A8, 0x1200, 0x13A0, 0x1401, 0x1680, 0x1820, 0x180E,
        # Latin/Greek extended additional
        0x1E00, 0x1E9E, 0x1F00, 0x1FBE,
        # general punctuation and spaces
        0x2000, 0x2002, 0x2007, 0x2009, 0x200A, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2010,
        0x2013, 0x2014, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2026, 0x2028, 0x2029, 0x202E,
        0x202F, 0x205F, 0x2060, 0x2066,
        # super/subscripts, currency, combining for symbols, letterlike, number forms
        0x2070, 0x00B2, 0x2080, 0x20AC, 0x20BF, 0x20DD, 0x2122, 0x2126, 0x212B, 0x2160, 0x216B,
        0x2170, 0x2189,
        # arrows, math, technical, box, shapes, misc symbols, dingbats
        0x2190, 0x2200, 0x221E, 0x2318, 0x2460, 0x2500, 0x25A0, 0x2600, 0x2639, 0x2700, 0x2764,
        0x27E8, 0x2A00, 0x2B50,
        # CJK and East Asian
        0x2E80, 0x2F00, 0x3000, 0x3001, 0x3002, 0x3005, 0x3007, 0x300C, 0x3042, 0x3099, 0x30A2,
        0x30FC, 0x3105, 0x3131, 0x3200, 0x3300, 0x3400, 0x4DBF, 0x4DC0, 0x4E00, 0x4E2D, 0x6587,
        0x8A9E, 0x9FA5, 0x9FFF, 0xA000, 0xA4D0, 0xA500, 0xA640, 0xA8E0, 0xA960, 0xAC00, 0xB098,
        0xD55C, 0xD7A3, 0xD7B0,
        # private use, compatibility, presentation forms, specials
        0xE000, 0xE8FF, 0xF8FF, 0xF900, 0xFA0E, 0xFB01, 0xFB1D, 0xFB50, 0xFDD0, 0xFDEF, 0xFDFA,
        0xFDFD, 0xFE00, 0xFE0F, 0xFE30, 0xFE50, 0xFE70, 0xFEFF, 0xFF01, 0xFF10, 0xFF21, 0xFF41,
        0xFF61, 0xFF71, 0xFFA0, 0xFFE0, 0xFFE5, 0xFFF9, 0xFFFC, 0xFFFD, 0xFFFE, 0xFFFF,
        # plane 1: historic scripts, musical, math alphanumerics, emoji, noncharacters
        0x10000, 0x10300, 0x10400, 0x10428, 0x12000, 0x13000, 0x16F00, 0x1B000, 0x1D11E, 0x1D400,
        0x1D41A, 0x1D7CE, 0x1E900, 0x1F004, 0x1F0A1, 0x1F170, 0x1F1E6, 0x1F1FF, 0x1F300, 0x1F3FB,
        0x1F3FF, 0x1F44D, 0x1F600, 0x1F64F, 0x1F680, 0x1F9D1, 0x1FA70, 0x1FAF8, 0x1FFFE, 0x1FFFF,
        # plane 2 (CJK ext B-F, compat supplement), plane 3 (ext G/H)
        0x20000, 0x20BB7, 0x2A6D6, 0x2B740, 0x2F800, 0x2FFFD, 0x2FFFF, 0x30000, 0x3134A, 0x31350,
        0x3FFFD,
        # unassigned planes 4-13 (a sample)
        0x40000, 0x50000, 0xDFFFD,
        # plane 14: tags, variation selectors supplement
        0xE0001, 0xE0020, 0xE0041, 0xE007F, 0xE0100, 0xE01EF, 0xEFFFF,
        # planes 15 and 16: supplementary private use
        0xF0000, 0xF8000, 0xFFFFD, 0xFFFFF, 0x100000, 0x10FFFD, 0x10FFFE, 0x10FFFF,
    ]
    out: list[tuple[str, str]] = []
    seen = set()
    for cp in cps:
        if cp in seen or 0xD800 <= cp <= 0xDFFF:
            continue
        seen.add(cp)
        out.append((f"char:U+{cp:04X}", chr(cp)))
    # non-ASCII samples once more in context (offsets after multi-byte characters)
    for cp in cps:
        if cp >= 0x100 and not (0xD800 <= cp <= 0xDFFF) and ("ctx", cp) not in seen:
            seen.add(("ctx", cp))
            c = chr(cp)
            out.append((f"char_in_context:U+{cp:04X}", f"x{c} {c}{c}y"))
    return out


def _whitespace() -> list[tuple[str, str]]:
    out = []
    for n in range(1, 11):
        out.append((f"spaces_{n}", " " * n))
    for n in (1, 2, 3, 5):
        out.append((f"spaces_{n}_before_word", " " * n + "word"))
        out.append((f"spaces_{n}_after_word", "word" + " " * n))
        out.append((f"spaces_{n}_between", "a" + " " * n + "b"))
    for n in range(1, 5):
        out.append((f"tabs_{n}", "\t" * n))
    items = {
        "lf": "\n", "lf_2": "\n\n", "lf_4": "\n\n\n\n", "crlf": "\r\n", "crlf_2": "\r\n\r\n", "cr": "\r",
        "cr_2": "\r\r", "vt": "\x0b", "ff": "\x0c", "mixed_1": " \t\n", "mixed_2": "\t \r\n \n",
        "mixed_3": " \n \n ", "mixed_4": "\n\t\t\n  \n", "a__b": "a  b", "a_lf_b": "a \n b",
        "a_lflf_b": "a\n\nb", "a_tabtab_b": "a\t\tb", "a_crlf_b": "a\r\nb", "a_cr_b": "a\rb",
        "lead_trail": "  hello  world  ", "lead": " hello", "trail": "hello ", "trail_lf": "hello\n",
        "spaces_lf": "x   \n", "spaces_lf_spaces": "  \n  ", "crlf_lines": "hello\r\nworld\r\n",
        "lf_lines": "line1\nline2\n", "indent_code": "def f():\n    return 1\n\n\n",
        "nbsp": "\u00a0", "a_nbsp_b": "a\u00a0b", "nbsp_word": "\u00a0word", "ideographic_space": "\u3000",
        "a_u3000_b": "a\u3000b", "line_sep": "\u2028", "a_u2028_b": "a\u2028b", "para_sep": "\u2029",
        "nel": "\u0085", "a_nel_b": "a\u0085b", "zwsp": "\u200b", "a_zwsp_b": "a\u200bb",
        "thin_space": "a\u2009b", "nnbsp": "a\u202fb", "bom": "\ufeff", "bom_word": "\ufeffword",
        "ogham_space": "a\u1680b", "mvs": "a\u180eb", "em_space_run": "\u2003\u2003x",
        "space_then_nbsp": " \u00a0 x", "space_lf_word": " \nword", "many_spaces_word": " " * 30 + "x",
        "space_punct": "a , b . c", "space_digits": " 1 22 333",
    }
    out.extend(items.items())
    return out


def _contractions() -> list[tuple[str, str]]:
    out = []
    for suf in ("s", "t", "re", "ve", "m", "ll", "d"):
        lower, upper, mixed = "'" + suf, "'" + suf.upper(), "'" + suf[0].upper() + suf[1:]
        out += [
            (f"contr_{suf}_alone", lower),
            (f"contr_{suf}_lower", "it" + lower),
            (f"contr_{suf}_upper", "IT" + upper),
            (f"contr_{suf}_mixed", "We" + mixed),
            (f"contr_{suf}_mixed2", "we'" + (suf[0] + suf[1:].upper() if len(suf) > 1 else suf.upper())),
            (f"contr_{suf}_space", " they" + lower + " x"),
            (f"contr_{suf}_curly", "it\u2019" + suf),
            (f"contr_{suf}_curly_upper", "IT\u2019" + suf.upper()),
            (f"contr_{suf}_after_digit", "1" + lower),
            (f"contr_{suf}_after_space", "x " + lower),
        ]
    out += [
        ("dont", "don't"), ("DONT", "DON'T"), ("DonT", "Don'T"), ("dont_curly", "don\u2019t"),
        ("its_caps", "IT'S"), ("WeRe", "We'Re"), ("sentence", "I'm sure you're right; we'll see, they'd've"),
        ("shout", "I'M SHOUTING, DON'T YOU'LL"), ("rock_n_roll", "rock 'n' roll"), ("tis", "'tis"),
        ("yall", "y'all"), ("quotes3", "'''"), ("double", "it''s"), ("oclock", "o'clock"),
        ("lamour", "l'amour"), ("aint", "ain't"), ("shouldntve", "shouldn't've"),
        ("quoted", "'hello' \"world\""), ("backtick", "it`s"), ("prime", "it\u2032s"),
        ("modifier_apostrophe", "it\u02bcs"), ("fullwidth_apostrophe", "it\uff07s"),
        ("apostrophe_space", "it' s"), ("apostrophe_end", "dogs'"), ("lone_apostrophe", "'"),
        ("S_contraction_nonascii", "ÉTÉ'S été's"),
    ]
    return out


def _special_lookalikes(tokenizer_json: dict) -> list[tuple[str, str]]:
    added = [t["content"] for t in tokenizer_json.get("added_tokens", [])]
    chosen: list[str] = []
    for c in added[:3] + added[-2:]:
        if c not in chosen:
            chosen.append(c)
    out = []
    for k, c in enumerate(chosen):
        variants = {
            "alone": c, "in_word": f"a{c}b", "spaced": f" {c} ", "twice": c + c, "after_word": f"x {c}",
            "before_lf": c + "\n", "after_lf": "\n" + c, "in_sentence": f"Hello {c} world{c}!",
            "minus_last": c[:-1], "minus_first": c[1:], "upper": c.upper(), "lower": c.lower(),
            "broken_inside": c[: len(c) // 2] + " " + c[len(c) // 2:], "doubled_first": c[:1] + c,
        }
        for v, text in variants.items():
            if text:
                out.append((f"special[{k}]:{v}", text))
    return out


def _digits() -> list[tuple[str, str]]:
    out = [(f"ascii_digits_{n}", ("1234567890" * 2)[:n]) for n in range(1, 13)]
    out += [(f"digits_spaced_{n}", " " + "9876543210"[:n]) for n in (1, 3, 4, 7)]
    out += [
        ("zeros", "0000000"), ("number_commas", "1,234,567.89"), ("pi", "3.14159"),
        ("negative", "-42"), ("sci", "1e10 6.02e23"), ("hex", "0x1F 0xdeadBEEF"), ("date", "2024-01-01"),
        ("version", "v1.2.3"), ("phone", "+1 (555) 123-4567"), ("long_run", "1" * 40),
        ("arabic_indic", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669"),
        ("ext_arabic_indic", "\u06f0\u06f1\u06f2\u06f3"), ("devanagari", "\u0967\u0968\u0969\u096a"),
        ("bengali", "\u09e7\u09e8\u09e9"), ("thai", "\u0e51\u0e52\u0e53"), ("fullwidth", "\uff11\uff12\uff13\uff14\uff15"),
        ("superscripts", "x\u00b2\u00b3 10\u2076"), ("subscripts", "H\u2082O"), ("roman", "\u216b \u217b"),
        ("circled", "\u2460\u2461\u2462"), ("math_bold_digits", "\U0001d7ce\U0001d7cf"),
        ("mixed", "abc123def"), ("mixed_2", "123abc"), ("mixed_script_digits", "\u0663abc \u0967\u09683"),
        ("digits_punct", "1.2.3.4,5;6"), ("fractions", "\u00bd \u2153 1/2"),
    ]
    return out


def _emoji() -> list[tuple[str, str]]:
    return [
        ("grin", "\U0001f600"), ("thumbs_tone", "\U0001f44d\U0001f3fd"),
        ("family_zwj", "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"),
        ("rainbow_flag", "\U0001f3f3\ufe0f\u200d\U0001f308"), ("flags", "\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea"),
        ("flag_us", "\U0001f1fa\U0001f1f8"), ("keycap_1", "1\ufe0f\u20e3"), ("keycap_hash", "#\ufe0f\u20e3"),
        ("england_tag_flag", "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"),
        ("heart_vs16", "\u2764\ufe0f"), ("smile_vs15", "\u263a\ufe0e"), ("sentence", "I \u2764\ufe0f NY \U0001f5fd"),
        ("triple", "\U0001f600\U0001f600\U0001f600"), ("in_word", "a\U0001f600b"), ("spaced", " \U0001f600 "),
        ("technologist", "\U0001f9d1\U0001f3fb\u200d\U0001f4bb"),
        ("couple_tones", "\U0001f469\U0001f3fe\u200d\U0001f91d\u200d\U0001f469\U0001f3fc"),
        ("melting", "\U0001fae0"), ("emoji_text_mix", "ok\U0001f44cdone\U0001f389!"),
        ("lone_zwj", "a\u200db"), ("lone_regional", "\U0001f1e6 x"),
    ]


def _misc() -> list[tuple[str, str]]:
    return [
        ("empty", ""), ("hello", "Hello world"), ("hello_punct", "Hello, world!"), ("bang_run", "!!!"),
        ("dots", "..."), ("interrobang", "?!?!"), ("dashes", "----"), ("equals", "===="),
        ("handle_tag", "@user #tag"), ("url", "https://example.com/a?b=c&d=e#f"), ("email", "user@example.com"),
        ("code", "def f(x):\n    return x + 1\n"), ("code_c", "x=1;y=2;if(x<y){return -1;}"),
        ("json", '{"a": [1, 2], "b": null}'), ("html", "<html><body>hi</body></html>"),
        ("mixed_scripts", "Hello \u043c\u0438\u0440 \u4e16\u754c \u0645\u0631\u062d\u0628\u0627"),
        ("japanese", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3002"), ("korean", "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8"),
        ("thai", "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22"), ("arabic", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629"),
        ("hebrew_niqqud", "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd"),
        ("e_combining", "e\u0301 caf\u00e9 cafe\u0301"), ("a_ring", "\u00c5 A\u030a \u212b"),
        ("ligature", "\ufb01le \ufb02ow"), ("jamo_decomposed", "\u1100\u1161\u11a8"),
        ("fullwidth_latin", "\uff48\uff45\uff4c\uff4c\uff4f"), ("long_word", "a" * 300),
        ("supercali", "supercalifragilisticexpialidocious"), ("long_nonascii_word", "\u0100" * 50),
        ("nul_pair", "\x00\x00"), ("nul_inside", "a\x00b"), ("replacement", "\ufffd\ufffd"), ("del", "\x7f"),
        ("ansi", "\x1b[31mred\x1b[0m"), ("dotless_i", "\u0130stanbul \u0131"), ("sharp_s", "Stra\u00dfe STRASSE \u1e9e"),
        ("greek_final_sigma", "\u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3 \u03bf\u03b4\u03c5\u03c3\u03c3\u03b5\u03cd\u03c2"),
        ("rtl_override", "abc\u202edef\u202cghi"), ("zero_width_joiners", "a\u200c\u200d\u2060b"),
        ("soft_hyphen", "hy\u00adphen"), ("tabs_in_text", "col1\tcol2\tcol3"),
        ("letters_digits_punct", "abc123!@#\u00e9\u00e8\u00ea"), ("underscores", "__init__ snake_case_name"),
        ("camel", "camelCaseWordHTTPServer"), ("path", "/usr/local/bin/python3.11"),
    ]


def _sentencepiece(tokenizer_json: dict) -> list[tuple[str, str]]:
    """Texts that probe the SentencePiece escapes: leading spaces, a literal ▁, added tokens at edges."""
    out = [
        ("escape_alone", "\u2581"), ("escape_run", "\u2581\u2581\u2581x"), ("escape_words", "\u2581hello \u2581world"),
        ("escape_mid", "x\u2581y"), ("space_escape", " \u2581"), ("lead_spaces", "   lead"), ("lead_one", " x"),
        ("trail_spaces", "x   "), ("lead_tab", "\tx"), ("lead_newline", "\nx y"),
    ]
    added = [t["content"] for t in tokenizer_json.get("added_tokens", [])]
    for k, c in enumerate(added[:3]):
        out += [
            (f"tok[{k}]:after_letter", f"a{c}"), (f"tok[{k}]:at_start_then_text", f"{c}x y"),
            (f"tok[{k}]:after_space", f" {c}"), (f"tok[{k}]:then_escape", f"{c}\u2581x"),
            (f"tok[{k}]:after_escape", f"\u2581{c}"), (f"tok[{k}]:then_spaces", f"{c}  x"),
        ]
    return out


def synthetic_inputs(tokenizer_json: dict) -> list[tuple[dict, str]]:
    groups = [
        ("misc", _misc()), ("char", _chars()), ("ws", _whitespace()), ("contraction", _contractions()),
        ("special", _special_lookalikes(tokenizer_json)), ("digits", _digits()), ("emoji", _emoji()),
        ("sp", _sentencepiece(tokenizer_json)),
    ]
    out: list[tuple[dict, str]] = []
    seen: set[str] = set()
    for group, items in groups:
        for name, text in items:
            if text in seen:
                continue
            seen.add(text)
            assert len(text) <= LONG_TEXT_THRESHOLD
            full_name = name if name.startswith(group) else f"{group}:{name}"
            out.append(({"synthetic": full_name, "text": text}, text))
    for name, recipe in LONG_RECIPES.items():
        text = recipe_text(recipe)
        assert len(text) > LONG_TEXT_THRESHOLD
        out.append(({"synthetic": name, "recipe": recipe}, text))
    return out


# ----------------------------------------------------------------------------- driver

def generate_family(family: str, out_dir: Path, corpus: list[tuple[dict, str]]) -> tuple[int, int, float]:
    import tokenizers

    if tokenizers.__version__ != REFERENCE_VERSION:
        raise SystemExit(f"tokenizers {tokenizers.__version__} installed, goldens need {REFERENCE_VERSION}")
    path = model_file(family)
    if not path.is_file():
        raise SystemExit(f"model not found: {path} (set GPU_TOK_MODELS)")
    t0 = time.perf_counter()
    tok = tokenizers.Tokenizer.from_file(str(path))
    tokenizer_json = json.loads(path.read_text(encoding="utf-8"))
    inputs = synthetic_inputs(tokenizer_json)
    long_inputs = [x for x in inputs if "recipe" in x[0]]
    inputs = [x for x in inputs if "recipe" not in x[0]] + corpus + long_inputs
    header = {
        "kind": "header",
        "reference": REFERENCE,
        "reference_version": tokenizers.__version__,
        "model": family,
        "model_sha256": sha256_file(path),
        "generated": datetime.datetime.now(datetime.timezone.utc).date().isoformat(),
        "generator": "tests/oracles/generate.py",
        "selection": {
            "excerpts_per_file": EXCERPTS_PER_FILE,
            "excerpt_chars": EXCERPT_CHARS,
            "whole_file_max_bytes": WHOLE_FILE_MAX_BYTES,
            "long_text_threshold": LONG_TEXT_THRESHOLD,
        },
    }
    records = []
    for source, text in inputs:
        for flag in (True, False):
            fields, digested = maybe_digest(all_fields(tok, text, flag), len(text))
            rec = {"kind": "record", "i": len(records), "source": source, "add_special_tokens": flag}
            if digested:
                rec["digested"] = True
            rec.update(fields)
            records.append(rec)
    size = write_golden(golden_path(family, out_dir), header, records)
    return len(records), size, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    global EXCERPTS_PER_FILE, EXCERPT_CHARS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", default=",".join(FAMILIES),
                    help="comma-separated family names (folders of the models dir); default: %(default)s")
    ap.add_argument("--out", default=str(ORACLES_DIR), help="output folder (default: tests/oracles)")
    ap.add_argument("--excerpts-per-file", type=int, default=EXCERPTS_PER_FILE,
                    help="excerpts per parity file (default %(default)s; changes the goldens)")
    ap.add_argument("--excerpt-chars", type=int, default=EXCERPT_CHARS,
                    help="max characters per excerpt (default %(default)s; changes the goldens)")
    args = ap.parse_args(argv)
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    out_dir = Path(args.out)
    EXCERPTS_PER_FILE, EXCERPT_CHARS = args.excerpts_per_file, args.excerpt_chars
    t0 = time.perf_counter()
    corpus = corpus_inputs()
    print(f"corpus: {len(corpus)} excerpts from {corpora_dir() / 'parity'} ({time.perf_counter() - t0:.1f} s)")
    total = 0
    for family in families:
        n, size, secs = generate_family(family, out_dir, corpus)
        total += size
        print(f"{family:24s} {n:6d} records  {size / 1e6:7.3f} MB  {secs:6.1f} s  -> {golden_path(family, out_dir)}")
    print(f"total {total / 1e6:.3f} MB in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
