"""tiktoken encodings against the installed pinned reference (tiktoken==0.14.0), live.

The reference encodings are built from tiktoken's own definitions
(``tiktoken_ext.openai_public``) with the rank files read in place from
``<models>/tiktoken/*.tiktoken``; an encoding whose file is absent is skipped
with the reason. Inputs: the oracle harness's synthetic classes, tiktoken-only
classes (possessive ``\\s++$`` cases, ``'(?i:...)`` contractions in every case,
100,000-character lines) and 2 excerpts of every file of ``corpora/parity``.
``--full`` adds every parity file whole and every code point of every class.

Decision records: docs/decisions/0014-0017.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
import random
from pathlib import Path

import numpy as np
import pytest

tiktoken = pytest.importorskip("tiktoken")
import tiktoken.load  # noqa: E402
from tiktoken_ext import openai_public  # noqa: E402

import gpu_tok  # noqa: E402
from gpu_tok._util import _ONE_TEXT_CHARS  # noqa: E402
from gpu_tok.cpu_ref.models import BPEModel  # noqa: E402
from gpu_tok.cpu_ref.rust_regex import UnsupportedPattern, reference_version, translate  # noqa: E402
from gpu_tok.tiktoken_encoding import (  # noqa: E402
    TiktokenEncoding,
    load_tiktoken_bpe,
    named_definition,
    named_encodings,
)
from _paths import TESTS_DIR, model_file, models_dir, parity_dir, parity_files, read_text_exact  # noqa: E402
from _kept import kept_cache  # noqa: E402

NAMES = ["r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony"]
REFERENCE_VERSION = "0.14.0"


def test_reference_version():
    assert tiktoken.__version__ == REFERENCE_VERSION
    assert reference_version() == REFERENCE_VERSION
    import json

    data = json.loads((Path(gpu_tok.__file__).parent / "data" / "tiktoken_encodings.json").read_text())
    assert data["reference_version"] == REFERENCE_VERSION


# --------------------------------------------------------------------------- encodings

def rank_path(name: str) -> Path:
    path = models_dir() / "tiktoken" / named_definition(name)["rank_file"]
    if not path.is_file():
        pytest.skip(f"tiktoken rank file for {name!r} not available: {path} does not exist "
                    f"(set GPU_TOK_MODELS to the folder holding tiktoken/*.tiktoken)")
    return path


def _definition_from_tiktoken(name: str, loader):
    """Call tiktoken_ext.openai_public's constructor with the rank loader replaced."""
    real = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = loader
    try:
        return openai_public.ENCODING_CONSTRUCTORS[name]()
    finally:
        openai_public.load_tiktoken_bpe = real


@kept_cache
def ref(name: str):
    """The reference: tiktoken.Encoding from tiktoken's own definition and the local file."""
    path = rank_path(name)

    def local(url, expected_hash=None):
        assert url.rsplit("/", 1)[1] == path.name
        old = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = ""  # read in place, cache nothing
        try:
            return tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=expected_hash)
        finally:
            if old is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = old

    return tiktoken.Encoding(**_definition_from_tiktoken(name, local))


@kept_cache
def ours(name: str) -> TiktokenEncoding:
    return gpu_tok.Tokenizer.from_tiktoken(name, path=rank_path(name))


def test_pickled_after_use():
    """An encoding pickles as ``tiktoken.Encoding`` does, also once it has built its compiled
    engine (left out of the pickle, built again by the copy): the same ids and bytes."""
    import pickle

    enc = gpu_tok.Tokenizer.from_tiktoken("o200k_base", path=rank_path("o200k_base"))
    texts = ["Hello world, caf\u00e9 \u65e5\u672c 123  <|endoftext|>", ""]
    ids = enc.encode_batch_ids(texts, disallowed_special=(), device="cpu").to_list()
    assert enc._cpu_engine is not None
    enc2 = pickle.loads(pickle.dumps(enc))
    assert enc2._cpu_engine is None
    assert enc2.encode_batch_ids(texts, disallowed_special=(), device="cpu").to_list() == ids
    assert enc2.decode_bytes(ids[0]) == enc.decode_bytes(ids[0]) == texts[0].encode("utf-8")


@pytest.mark.parametrize("name", NAMES)
def test_named_table_equals_tiktoken_ext(name):
    """gpu_tok's stored definitions are tiktoken_ext.openai_public's, in order."""
    d = _definition_from_tiktoken(name, lambda url, expected_hash=None: {b"\x00": 0})
    ours_d = named_definition(name)
    assert ours_d["pat_str"] == d["pat_str"]
    assert list(ours_d["special_tokens"].items()) == list(d["special_tokens"].items())
    assert ours_d["explicit_n_vocab"] == d.get("explicit_n_vocab")
    assert set(named_encodings()) == set(NAMES)


def test_rank_file_from_tiktoken_cache(tmp_path, monkeypatch):
    """Without path=, the file is found where tiktoken caches it (sha1 of the URL), by hash."""
    import hashlib

    src = rank_path("r50k_base")
    d = named_definition("r50k_base")
    link = tmp_path / hashlib.sha1(d["rank_file_url"].encode()).hexdigest()
    link.symlink_to(src)  # read in place, not copied
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    enc = gpu_tok.Tokenizer.from_tiktoken("r50k_base")
    assert enc.encode("hello world") == ref("r50k_base").encode("hello world")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="pass path="):
        gpu_tok.Tokenizer.from_tiktoken("r50k_base")


def test_special_tokens_override():
    base = named_definition("cl100k_base")["special_tokens"]
    extra = {**base, "<|im_start|>": 100264, "<|im_end|>": 100265}
    a = gpu_tok.Tokenizer.from_tiktoken("cl100k_base", path=rank_path("cl100k_base"), special_tokens=extra)
    b = tiktoken.Encoding("cl100k_im", pat_str=ref("cl100k_base")._pat_str,
                          mergeable_ranks=ref("cl100k_base")._mergeable_ranks, special_tokens=extra)
    text = "<|im_start|>user\nhi<|im_end|><|endoftext|>"
    assert a.encode(text, allowed_special="all") == b.encode(text, allowed_special="all")
    assert _outcome(lambda: a.encode(text)) == _outcome(lambda: b.encode(text))
    assert a.n_vocab == b.n_vocab


def test_unknown_name_refused():
    with pytest.raises(ValueError, match="Unknown tiktoken encoding 'gpt2'"):
        gpu_tok.Tokenizer.from_tiktoken("gpt2", path="x.tiktoken")


@pytest.mark.parametrize("name", NAMES)
def test_properties(name):
    a, b = ours(name), ref(name)
    assert a.n_vocab == b.n_vocab
    assert a.max_token_value == b.max_token_value
    assert a.eot_token == b.eot_token
    assert a.special_tokens_set == b.special_tokens_set
    assert a.name == b.name
    assert isinstance(a._bpe, BPEModel)  # the one BPE engine serves both file kinds
    for i in sorted(b._special_token_values)[:50] + [0, 1, 255, 1000]:
        assert a.is_special_token(i) == b.is_special_token(i)
    assert a.token_byte_values() == b.token_byte_values()
    # the rank file is the one tiktoken pins
    assert load_tiktoken_bpe(rank_path(name)) == b._mergeable_ranks


# --------------------------------------------------------------------------- inputs

def _load_generate():
    spec = importlib.util.spec_from_file_location("_oracle_generate", TESTS_DIR / "oracles" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_generate = _load_generate()


def tiktoken_synthetic() -> list[tuple[str, str]]:
    out = []
    # possessive \s++$ and the other whitespace alternatives, at the end of the text
    for ws in [" ", "  ", "\t", "\n", " \n", "\n ", "  \n\n", "\r\n", " \r\n ", "\u00a0", " \u3000", "\u2028"]:
        for pre in ["", "a", "a ", "hello world", "x\n", "123", "!!"]:
            out.append((f"ws_end:{pre!r}+{ws!r}", pre + ws))
            out.append((f"ws_mid:{pre!r}+{ws!r}", pre + ws + "z"))
    # '(?i:...) contractions in every case, and their case-folding relatives (U+017F, U+212A)
    for suf in ("s", "t", "d", "m", "ll", "ve", "re"):
        for combo in itertools.product(*[(c.lower(), c.upper()) for c in suf]):
            s = "'" + "".join(combo)
            for ctx in ("{0}", "it{0}", "IT{0}", " {0}", "we{0} x", "{0}{1}", "x{0}y", "1{0}", "ÉTÉ{0}"):
                out.append((f"contr:{ctx.format(s, s)}", ctx.format(s, s)))
    for s in ["'ſ", "it'ſ", "IT'ſt", "'K", "'ﬅ", "'ſſ", "don'ſ", "we'LL've", "'S'T'RE"]:
        out.append((f"fold:{s}", s))
    # digits runs around the {1,3} cut
    for n in range(1, 9):
        out.append((f"digits:{n}", "7" * n + "x" + "1" * n))
    return out


def long_lines() -> list[tuple[str, str]]:
    return [
        ("long:letters", "hello world abc xyz " * 5000),
        ("long:one_letter", "a" * 100_000),
        ("long:spaces", " " * 100_000),
        ("long:spaces_then_x", " " * 99_999 + "x"),
        ("long:digits", "1234567890" * 10_000),
        ("long:cjk", "東京都" * 33_334),
        ("long:emoji", "\U0001f600" * 100_000),
    ]


@kept_cache
def synthetic(name: str) -> list[tuple[str, str]]:
    specials = list(named_definition(name)["special_tokens"])
    fake_json = {"added_tokens": [{"content": s} for s in specials]}
    items = [(src["synthetic"], text) for src, text in _generate.synthetic_inputs(fake_json)
             if "recipe" not in src]
    return items + tiktoken_synthetic()


@kept_cache(maxsize=1)
def corpus() -> list[tuple[str, str]]:
    if not parity_dir().is_dir():
        pytest.skip(f"corpus folder not found: {parity_dir()} (set GPU_TOK_CORPORA)")
    return [(f"{src['corpus']}[{src['start']}:{src['end']}]", text) for src, text in _generate.corpus_inputs()]


def compare_ids(name, items, modes=("ordinary", "all", "none")):
    a, b = ours(name), ref(name)
    bad = []
    for label, text in items:
        for mode in modes:
            if mode == "ordinary":
                x, y = a.encode_ordinary(text), b.encode_ordinary(text)
            elif mode == "all":
                x, y = a.encode(text, allowed_special="all"), b.encode(text, allowed_special="all")
            else:
                x, y = a.encode(text, disallowed_special=()), b.encode(text, disallowed_special=())
            if x != y:
                bad.append((label, mode, x[:20], y[:20]))
    return bad


@pytest.mark.parametrize("name", NAMES)
def test_ids_synthetic(name):
    items = synthetic(name)
    bad = compare_ids(name, items)
    assert not bad, f"{len(bad)} mismatches of {len(items) * 3}; first: {bad[:3]}"


@pytest.mark.parametrize("name", NAMES)
def test_ids_corpus_excerpts(name):
    items = corpus()
    bad = compare_ids(name, items, modes=("ordinary", "all"))
    assert not bad, f"{len(bad)} mismatches of {len(items) * 2}; first: {bad[:3]}"


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
def test_ids_long_lines(name):
    bad = compare_ids(name, long_lines(), modes=("ordinary",))
    assert not bad, bad[:2]


@pytest.mark.full
@pytest.mark.parametrize("name", NAMES)
def test_ids_whole_corpus(name):
    a, b = ours(name), ref(name)
    bad = []
    for p in parity_files():
        text = read_text_exact(p)
        if a.encode_ordinary(text) != b.encode_ordinary(text):
            bad.append(p.name)
        elif a.encode(text, allowed_special="all") != b.encode(text, allowed_special="all"):
            bad.append(p.name + " (allowed_special='all')")
    assert not bad, bad


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_harmony"])
def test_encode_batch(name):
    a, b = ours(name), ref(name)
    texts = [t for _, t in synthetic(name)[:300]]
    assert a.encode_ordinary_batch(texts) == b.encode_ordinary_batch(texts)
    assert a.encode_batch(texts, allowed_special="all") == b.encode_batch(texts, allowed_special="all")
    assert a.encode_batch(texts, disallowed_special=()) == b.encode_batch(texts, disallowed_special=())
    batch = a.encode_batch_ids(texts, disallowed_special=())
    assert batch.to_list() == b.encode_batch(texts, disallowed_special=())
    assert a.encode_to_numpy("hello <|endoftext|>", allowed_special="all").tolist() == \
        b.encode_to_numpy("hello <|endoftext|>", allowed_special="all").tolist()


# --------------------------------------------------------------------------- special tokens

def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001 - the type and message are what we compare
        return (type(e).__name__, str(e))


SPECIAL_TEXTS = [
    "hello <|endoftext|> world",
    "<|endoftext|><|endoftext|>",
    "a<|endofprompt|>b<|endoftext|>c",
    "<|fim_prefix|>x<|fim_middle|>y<|fim_suffix|>",
    "<|endoftext|  <|endoftext|>>",
    "<|startoftext|><|start|>user<|message|>hi<|end|><|return|><|reserved_200100|>",
    "hello world",
    "trailing spaces before  <|endoftext|>  ",
    "x \n<|endoftext|>\n y",
]


@pytest.mark.parametrize("name", NAMES)
def test_allowed_disallowed_special(name):
    a, b = ours(name), ref(name)
    specials = sorted(b.special_tokens_set)
    some = set(specials[:2])
    kwargs = [
        {}, {"allowed_special": "all"}, {"disallowed_special": ()}, {"allowed_special": some},
        {"allowed_special": some, "disallowed_special": ()}, {"disallowed_special": some},
        {"allowed_special": {"<|endoftext|>"}, "disallowed_special": "all"},
        {"disallowed_special": {"world"}}, {"allowed_special": {"world"}},
        {"allowed_special": "all", "disallowed_special": {"hello"}},
        {"allowed_special": ["<|endoftext|>"]},  # a list: tiktoken's set difference raises TypeError
    ]
    for text in SPECIAL_TEXTS:
        for kw in kwargs:
            assert _outcome(lambda: a.encode(text, **kw)) == _outcome(lambda: b.encode(text, **kw)), (text, kw)
        assert _outcome(lambda: a.encode_batch([text, "x"])) == _outcome(lambda: b.encode_batch([text, "x"]))


def test_disallowed_message_exact():
    a, b = ours("cl100k_base"), ref("cl100k_base")
    with pytest.raises(ValueError) as ea:
        a.encode("x <|endofprompt|> y <|endoftext|>")
    with pytest.raises(ValueError) as eb:
        b.encode("x <|endofprompt|> y <|endoftext|>")
    assert str(ea.value) == str(eb.value)
    assert "'<|endofprompt|>'" in str(ea.value)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_harmony"])
def test_one_text_routes(name, monkeypatch):
    """``encode`` / ``encode_ordinary`` (and ``encode_batch_ids`` of one text of up to 1,000
    characters) take the base engine's ``text_ids`` when no special token in play (allowed
    or disallowed) occurs in the text, and the batch path otherwise; either way the outcome (ids or error) is tiktoken's. o200k_harmony has more
    special tokens than ``ordinary_ids`` searches a text for one by one: a text with their
    first character goes to the batch path."""
    from gpu_tok import fast_cpu

    a, b = ours(name), ref(name)
    a.encode_ordinary("warm")
    calls = []
    real = fast_cpu.ByteBPEEngine.text_ids
    monkeypatch.setattr(fast_cpu.ByteBPEEngine, "text_ids", lambda self, data: calls.append(1) or real(self, data))
    many = name == "o200k_harmony"
    cases = [  # (text, kwargs, whether text_ids runs)
        ("hello world", {}, True),
        ("", {}, False),  # no bytes: no kernel
        ("a < b and c <| d", {}, not many),  # first characters of the tokens, no token
        ("x <|endoftext|> y", {}, False),  # disallowed: tiktoken's ValueError
        ("x <|endoftext|> y", {"allowed_special": "all"}, False),
        ("x <|endoftext|> y", {"disallowed_special": ()}, True),  # no token in play: ordinary text
        ("hello world", {"disallowed_special": {"world"}}, False),  # a disallowed string that occurs
        ("hello world", {"allowed_special": {"world"}}, True),  # not a special token: ordinary
        ("lone \ud800 surrogate", {}, False),  # repaired as tiktoken repairs it, on the batch path
        ("caf\u00e9 \u65e5\u672c " * 300, {}, True),
    ]
    for text, kw, lean in cases:
        calls.clear()
        assert _outcome(lambda: a.encode(text, **kw)) == _outcome(lambda: b.encode(text, **kw)), (text, kw)
        assert bool(calls) == lean, (text, kw, calls)
        calls.clear()  # encode_batch_ids of the one text: the same way up to _ONE_TEXT_CHARS characters
        got = _outcome(lambda: a.encode_batch_ids([text], **kw).ids.tolist())
        assert got == _outcome(lambda: b.encode(text, **kw)), (text, kw, "encode_batch_ids")
        assert bool(calls) == (lean and len(text) <= _ONE_TEXT_CHARS), (text, kw, "encode_batch_ids")
        if not kw:
            calls.clear()
            assert a.encode_ordinary(text) == b.encode_ordinary(text), text
            assert bool(calls) == (bool(text) and "\ud800" not in text), text


def test_not_str_like_tiktoken():
    """Values that are not a ``str``: tiktoken's TypeError and message in every call (before
    2026-12-07 ours raised AttributeError from ``str.encode``)."""
    a, b = ours("cl100k_base"), ref("cl100k_base")
    calls = [
        lambda e, v: e.encode(v), lambda e, v: e.encode_ordinary(v), lambda e, v: e.encode(v, disallowed_special=()),
        lambda e, v: e.encode_batch([v]), lambda e, v: e.encode_ordinary_batch(["ok", v]),
        lambda e, v: e.encode_batch(["ok", v], allowed_special="all"),
    ]
    for v in (b"x", bytearray(b"x"), 123, None, ["a"]):
        for k, call in enumerate(calls):
            got, want = _outcome(lambda: call(a, v)), _outcome(lambda: call(b, v))
            assert got == want and want[0] == "TypeError", (v, k, got, want)

# --------------------------------------------------------------------------- decoding

@pytest.mark.parametrize("name", NAMES)
def test_decode(name):
    a, b = ours(name), ref(name)
    rng = random.Random(4)
    ids = [rng.randrange(0, b.max_token_value) for _ in range(3000)]
    ids = [i for i in ids if _outcome(lambda i=i: b.decode_single_token_bytes(i))[0] == "ok"]
    for i in ids + sorted(b._special_token_values):
        assert a.decode_single_token_bytes(i) == b.decode_single_token_bytes(i), i
    # partial UTF-8: each token alone, and random runs
    for k in range(0, len(ids), 7):
        run = ids[k:k + 7]
        assert a.decode_bytes(run) == b.decode_bytes(run)
        for errors in ("replace", "ignore", "backslashreplace", "strict"):
            assert _outcome(lambda: a.decode(run, errors=errors)) == _outcome(lambda: b.decode(run, errors=errors))
    text = "東京 🤖 naïve ſ"
    toks = b.encode(text)
    for cut in range(len(toks) + 1):
        assert a.decode(toks[:cut]) == b.decode(toks[:cut])
        assert a.decode_bytes(toks[:cut]) == b.decode_bytes(toks[:cut])
    assert a.decode_tokens_bytes(toks) == b.decode_tokens_bytes(toks)
    assert a.decode_batch([toks, toks[:1]]) == b.decode_batch([toks, toks[:1]])
    assert a.decode_bytes_batch([toks, toks[:1]]) == b.decode_bytes_batch([toks, toks[:1]])
    # runs with special tokens, as tuples and NumPy arrays (``decode_bytes`` by table)
    specials = sorted(b._special_token_values)
    runs = [[rng.choice(ids), rng.choice(specials), rng.choice(ids)] * 5 for _ in range(20)]
    assert a.decode_batch(runs) == b.decode_batch(runs)
    assert [a.decode(tuple(r)) for r in runs] == [b.decode(r) for r in runs]
    assert [a.decode(np.array(r)) for r in runs] == [b.decode(r) for r in runs]
    for bad in ([b.n_vocab + 5], [0, b.n_vocab + 1000], [-1], [True, 5], [5, 2.0], [2**40]):
        assert _outcome(lambda: a.decode(bad)) == _outcome(lambda: b.decode(bad))
        assert _outcome(lambda: a.decode_tokens_bytes(bad)) == _outcome(lambda: b.decode_tokens_bytes(bad))
        assert _outcome(lambda: a.decode_single_token_bytes(bad[-1])) == \
            _outcome(lambda: b.decode_single_token_bytes(bad[-1]))
        assert _outcome(lambda: a.decode_bytes(bad)) == _outcome(lambda: b.decode_bytes(bad))
    assert _outcome(lambda: a.decode_single_token_bytes(b.n_vocab + 5)) == \
        _outcome(lambda: b.decode_single_token_bytes(b.n_vocab + 5))
    for t in ["hello", b" world", "<|endoftext|>", "not a single token at all"]:
        assert _outcome(lambda: a.encode_single_token(t)) == _outcome(lambda: b.encode_single_token(t))


def test_harmony_shared_special_id():
    """<|endofprompt|> and <|reserved_200018|> share 200018; decode as tiktoken does."""
    a, b = ours("o200k_harmony"), ref("o200k_harmony")
    assert a.decode_single_token_bytes(200018) == b.decode_single_token_bytes(200018)
    assert a.encode("<|reserved_200018|><|endofprompt|>", allowed_special="all") == \
        b.encode("<|reserved_200018|><|endofprompt|>", allowed_special="all")


# --------------------------------------------------------------------------- offsets

def _check_offsets(enc, text, ids, char_offsets, byte_offsets):
    data = text.encode("utf-8")
    pos = 0
    for i, (bs, be), (cs, ce) in zip(ids, byte_offsets, char_offsets):
        assert bs == pos and data[bs:be] == enc.decode_single_token_bytes(i)
        pos = be
        # the characters covered are exactly those holding a byte of the token
        assert len(text[:cs].encode()) <= bs < len(text[:cs + 1].encode())
        assert len(text[:ce - 1].encode()) < be <= len(text[:ce].encode())
    assert pos == len(data)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_offsets_from_bytes(name):
    a, b = ours(name), ref(name)
    items = synthetic(name)[:600] + corpus()[:100]
    for label, text in items:
        ids, chars, bytes_ = a.encode_with_offsets(text, disallowed_special=())
        assert ids == b.encode(text, disallowed_special=())
        _check_offsets(a, text, ids, chars, bytes_)
        # tiktoken's decode_with_offsets gives each token's first character
        _, starts = b.decode_with_offsets(ids)
        assert [c[0] for c in chars] == starts, label
        assert a.decode_with_offsets(ids) == b.decode_with_offsets(ids)


def test_offsets_partial_characters():
    a = ours("cl100k_base")
    text = "x🤖東y"
    ids, chars, bytes_ = a.encode_with_offsets(text)
    _check_offsets(a, text, ids, chars, bytes_)
    # 🤖 is split across tokens in cl100k: every piece covers the whole emoji
    emoji_toks = [c for c, bo in zip(chars, bytes_) if 1 <= bo[0] < 5]
    assert len(emoji_toks) >= 2 and all(c == (1, 2) for c in emoji_toks)


# --------------------------------------------------------------------------- tokenizer.json = o200k

def _hf_texts(name):
    return [t for _, t in synthetic(name)] + [t for _, t in corpus()[::3]]


@pytest.mark.parametrize("family, encoding", [("gpt-4o", "o200k_base"), ("gpt-oss", "o200k_harmony")])
def test_tokenizer_json_same_ids_as_o200k(family, encoding):
    """The gpt-4o / gpt-oss tokenizer.json files give o200k's ids, through gpu_tok's HF path
    and through the reference tokenizers; our char offsets equal HF's."""
    path = model_file(family)
    if not path.is_file():
        pytest.skip(f"model {family!r} not available: {path} does not exist")
    tokenizers = pytest.importorskip("tokenizers")
    import json

    hf_json = json.loads(path.read_text(encoding="utf-8"))
    added = {t["content"] for t in hf_json["added_tokens"]}
    enc = ours(encoding)
    assert added <= enc.special_tokens_set
    tok = gpu_tok.Tokenizer.from_file(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    bad = []
    for text in _hf_texts(encoding):
        ids, chars, _ = enc.encode_with_offsets(text, allowed_special=added, disallowed_special=())
        mine = tok.encode(text, add_special_tokens=False)
        theirs = hf.encode(text, add_special_tokens=False)
        if not (ids == mine.ids == theirs.ids):
            bad.append((text[:40], ids[:8], mine.ids[:8]))
        elif [tuple(o) for o in theirs.offsets] != chars:
            bad.append((text[:40], "offsets", chars[:5], theirs.offsets[:5]))
    assert not bad, f"{len(bad)} mismatches; first: {bad[:3]}"


# --------------------------------------------------------------------------- custom encodings

BYTES = {bytes([b]): b for b in range(256)}


def _custom_pair(pat, ranks=None, specials=None):
    ranks = dict(BYTES) if ranks is None else ranks
    specials = {} if specials is None else specials
    return (TiktokenEncoding("custom", pat_str=pat, mergeable_ranks=ranks, special_tokens=specials),
            tiktoken.Encoding("custom", pat_str=pat, mergeable_ranks=ranks, special_tokens=specials))


def test_custom_encoding_from_ranks():
    ranks = dict(BYTES)
    for tok in [b"ab", b"abc", b"bc", b"  ", b"   ", b"\xe6\x9d", b"\xe6\x9d\xb1", b"aa", b"aaa", b"aaaa"]:
        ranks[tok] = len(ranks)
    specials = {"<|eot|>": 1000, "[MASK]": 1001}
    pats = [
        r"\S+|\s+",
        r"(?i:[abc]b|'s)|\p{L}+|\p{N}{1,2}+|\s++$|\s+(?!\S)|\s",
        r"\w+|\W",
        r"[\x{4e00}-\x{9fff}]+|\u{41}|[^\s\p{L}]++|\s+$|\s+",
        r"(?:ab)+|(?<n>c)|[\]\-x]|.",
        r"\d+|\D",
    ]
    texts = ["abcabc aaaaaaa  ab  ", "東京 ABC abC 'S 'ſ", "x]-x\n\n", "aaaa<|eot|>bbb[MASK]", "12345 a1b2",
             "  \n  ", "", "\u00a0a\u3000"]
    for pat in pats:
        a, b = _custom_pair(pat, ranks, specials)
        for t in texts:
            assert a.encode_ordinary(t) == b.encode_ordinary(t), (pat, t)
            assert a.encode(t, allowed_special="all") == b.encode(t, allowed_special="all"), (pat, t)
            assert _outcome(lambda: a.encode(t)) == _outcome(lambda: b.encode(t))
        assert a.n_vocab == b.n_vocab


def test_custom_refusals():
    dup = dict(BYTES)
    dup[b"ab"] = 5
    with pytest.raises(ValueError, match="rank 5"):
        TiktokenEncoding("x", pat_str=r"\S+", mergeable_ranks=dup, special_tokens={})
    missing = {k: v for k, v in BYTES.items() if k != b"q"}
    with pytest.raises(ValueError, match="single-byte"):
        TiktokenEncoding("x", pat_str=r"\S+", mergeable_ranks=missing, special_tokens={})
    with pytest.raises(ValueError, match="prefix"):
        TiktokenEncoding("x", pat_str=r"\S+", mergeable_ranks=BYTES, special_tokens={"<a>": 300, "<a>b": 301})
    for pat in [r"\bx", r"(?m)^x$", r"(?i)x", r"(?i:\p{L})", r"(?i:é)", r"[[:alpha:]]", r"[a&&b]",
                r"\p{Nonsense}", r"(?i:[a-z])"]:
        with pytest.raises(UnsupportedPattern):
            TiktokenEncoding("x", pat_str=pat, mergeable_ranks=BYTES, special_tokens={})
    enc = TiktokenEncoding("x", pat_str=r"x*", mergeable_ranks=BYTES, special_tokens={})
    with pytest.raises(ValueError, match="empty string"):
        enc.encode_ordinary("axb")


def test_translation_examples():
    assert translate("$") == r"\Z"
    assert translate(r"\p{N}{1,3}+") .endswith("{1,3}+")
    assert "\\U0000017f" in translate("(?i:s)")


def test_surrogates_like_tiktoken():
    a, b = ours("cl100k_base"), ref("cl100k_base")
    for t in ["a\ud800b", "\ud83d\ude00 pair", "x\udfff", "\ud800"]:
        assert a.encode_ordinary(t) == b.encode_ordinary(t)
        assert a.encode(t) == b.encode(t)


# --------------------------------------------------------------------------- classes

@pytest.mark.parametrize("klass", [r"\p{L}", r"\p{N}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}",
                                   r"\p{M}", r"\s", r"\S", r"\w", r"[^\s\p{L}\p{N}]", r"(?i:s)", r"(?i:k)"])
def test_classes_sample(klass):
    """A sample of code points (every 97th plus the non-ASCII of the synthetic inputs)."""
    a, b = _custom_pair(klass)
    cps = [c for c in range(0, 0x110000, 97) if not 0xD800 <= c <= 0xDFFF]
    cps += [ord(ch) for _, t in synthetic("cl100k_base")[:400] for ch in t]
    for c in cps:
        assert bool(a.encode_ordinary(chr(c))) == bool(b.encode_ordinary(chr(c))), hex(c)


@pytest.mark.full
@pytest.mark.parametrize("klass", [r"\p{L}", r"\p{N}", r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}",
                                   r"\p{M}", r"\s", r"\S", r"\w", r"\d"])
def test_classes_every_code_point(klass):
    a, b = _custom_pair(klass)
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        assert bool(a.encode_ordinary(chr(c))) == bool(b.encode_ordinary(chr(c))), hex(c)
