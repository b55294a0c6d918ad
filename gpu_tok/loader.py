"""Parse ``tokenizer.json`` into the typed config of ``gpu_tok.config``.

Accepts the serialisations real files use: a model without ``type`` (legacy
files), merges as ``"a b"`` strings or ``[a, b]`` pairs, ByteLevel without
``use_regex``, Strip with ``strip_left``/``strip_right``. Anything that is not
reproduced exactly raises :class:`UnsupportedComponent` naming the JSON path;
a malformed file raises :class:`TokenizerFileError` naming the place.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from . import config as C
from .errors import TokenizerFileError, UnsupportedComponent

_BEHAVIOURS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


# ------------------------------------------------------------------- helpers
def _type_name(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(v), type(v).__name__)


def _obj(v: Any, path: str) -> Dict[str, Any]:
    if not isinstance(v, dict):
        raise TokenizerFileError(path, f"expected an object, found {_type_name(v)}")
    return v


def _get(o: Dict[str, Any], key: str, path: str, kind, default=..., nullable=False):
    p = f"{path}.{key}" if path else key
    if key not in o:
        if default is ...:
            raise TokenizerFileError(p, "missing required field")
        return default
    v = o[key]
    if v is None:
        if nullable or default is not ...:
            return None if nullable else default
        raise TokenizerFileError(p, "must not be null")
    if kind is bool:
        ok = isinstance(v, bool)
    elif kind is int:
        ok = isinstance(v, int) and not isinstance(v, bool)
    else:
        ok = isinstance(v, kind)
    if not ok:
        raise TokenizerFileError(p, f"expected {kind.__name__}, found {_type_name(v)}")
    return v


def _type(o: Dict[str, Any], path: str) -> str:
    return _get(o, "type", path, str)


def _pattern(o: Dict[str, Any], path: str) -> C.Pattern:
    p = _obj(_get(o, "pattern", path, dict), f"{path}.pattern")
    if len(p) != 1 or next(iter(p)) not in ("String", "Regex"):
        raise TokenizerFileError(f"{path}.pattern", 'expected {"String": ...} or {"Regex": ...}')
    kind = next(iter(p))
    value = _get(p, kind, f"{path}.pattern", str)
    pat = C.Pattern(kind, value)
    if kind == "Regex":
        from .cpu_ref.regex_util import compile_pattern

        try:
            compile_pattern(pat)
        except Exception as e:  # regex.error
            raise TokenizerFileError(f"{path}.pattern.Regex", f"cannot compile {value!r}: {e}") from None
    return pat


def _behaviour(o: Dict[str, Any], path: str, default=...) -> str:
    b = _get(o, "behavior", path, str, default)
    if b not in _BEHAVIOURS:
        raise TokenizerFileError(f"{path}.behavior", f"unknown behaviour {b!r} (expected one of {_BEHAVIOURS})")
    return b


# ---------------------------------------------------------------- normalizers
def parse_normalizer(v: Any, path: str):
    o = _obj(v, path)
    t = _type(o, path)
    if t in ("NFC", "NFD", "NFKC", "NFKD"):
        return C.UnicodeNormalizer(t, path)
    if t == "Lowercase":
        return C.Lowercase(path)
    if t == "Strip":
        return C.Strip(_get(o, "strip_left", path, bool, True), _get(o, "strip_right", path, bool, True), path)
    if t == "StripAccents":
        return C.StripAccents(path)
    if t == "BertNormalizer":  # measured: strip_accents may be missing or null, the others are required
        return C.BertNormalizer(_get(o, "clean_text", path, bool), _get(o, "handle_chinese_chars", path, bool),
                                _get(o, "strip_accents", path, bool, None, nullable=True), _get(o, "lowercase", path, bool),
                                path)
    if t == "Replace":
        return C.Replace(_pattern(o, path), _get(o, "content", path, str), path)
    if t == "Prepend":
        return C.Prepend(_get(o, "prepend", path, str), path)
    if t == "Precompiled":
        return _precompiled(o, path)
    if t == "Sequence":
        items = _get(o, "normalizers", path, list)
        return C.NormalizerSequence(
            tuple(parse_normalizer(x, f"{path}.normalizers[{i}]") for i, x in enumerate(items)), path
        )
    raise UnsupportedComponent(f"{path}.type", t)


def _precompiled(o: Dict[str, Any], path: str) -> C.Precompiled:
    """Measured: the field is required, a base64 string (padding optional); the reference
    fails on a map it cannot parse, and panics on first use of an empty or malformed
    trie, which is refused here when the file is read."""
    from .cpu_ref.precompiled import Charsmap, decode_charsmap

    p = f"{path}.precompiled_charsmap"
    data = decode_charsmap(_get(o, "precompiled_charsmap", path, str), p)
    return C.Precompiled(data, Charsmap(data, p), path)


# ------------------------------------------------------------- pre-tokenizers
def _byte_level(o: Dict[str, Any], path: str) -> C.ByteLevel:
    return C.ByteLevel(
        add_prefix_space=_get(o, "add_prefix_space", path, bool, True),
        trim_offsets=_get(o, "trim_offsets", path, bool, True),
        use_regex=_get(o, "use_regex", path, bool, True),
        path=path,
    )


def _metaspace(o: Dict[str, Any], path: str) -> C.Metaspace:
    rep = _get(o, "replacement", path, str)
    if len(rep) != 1:
        raise TokenizerFileError(f"{path}.replacement", f"expected one character, found {rep!r}")
    scheme = _get(o, "prepend_scheme", path, str, "always")
    if scheme not in ("always", "first", "never"):
        raise TokenizerFileError(f"{path}.prepend_scheme", f"expected always, first or never, found {scheme!r}")
    # Legacy files carry add_prefix_space (and str_rep, ignored); false means "never".
    aps = _get(o, "add_prefix_space", path, bool, None, nullable=True)
    if aps is False:
        if scheme != "never":  # measured: the reference refuses this file too
            raise TokenizerFileError(f"{path}.add_prefix_space", "add_prefix_space does not match declared prepend_scheme")
        scheme = "never"
    return C.Metaspace(rep, scheme, _get(o, "split", path, bool, True), path)


def parse_pre_tokenizer(v: Any, path: str):
    o = _obj(v, path)
    t = _type(o, path)
    if t == "ByteLevel":
        return _byte_level(o, path)
    if t == "Metaspace":
        return _metaspace(o, path)
    if t == "Split":
        return C.Split(_pattern(o, path), _behaviour(o, path), _get(o, "invert", path, bool, False), path)
    if t == "Digits":
        return C.Digits(_get(o, "individual_digits", path, bool, False), path)
    if t == "Punctuation":
        return C.Punctuation(_behaviour(o, path, "Isolated"), path)
    if t == "Whitespace":
        return C.Whitespace(path)
    if t == "WhitespaceSplit":
        return C.WhitespaceSplit(path)
    if t == "BertPreTokenizer":
        return C.BertPreTokenizer(path)
    if t == "Sequence":
        items = _get(o, "pretokenizers", path, list)
        return C.PreTokenizerSequence(
            tuple(parse_pre_tokenizer(x, f"{path}.pretokenizers[{i}]") for i, x in enumerate(items)), path
        )
    raise UnsupportedComponent(f"{path}.type", t)


# --------------------------------------------------------------------- models
_WORDPIECE_FIELDS = ("unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab")


def _model_type(o: Dict[str, Any], path: str) -> str:
    """The model's type; a legacy file without one is read as the reference reads it: BPE,
    then WordPiece, then WordLevel, then Unigram, the first whose fields are there."""
    t = o.get("type")
    if t is not None:
        if not isinstance(t, str):
            raise TokenizerFileError(f"{path}.type", f"expected str, found {_type_name(t)}")
        return t
    if "merges" in o and "vocab" in o:
        return "BPE"
    if all(k in o for k in _WORDPIECE_FIELDS):
        return "WordPiece"
    if "vocab" in o and "unk_token" in o and isinstance(o["vocab"], dict):
        return "WordLevel"
    if "vocab" in o:
        return "Unigram"
    raise TokenizerFileError(path, "no type, and the fields match no model (BPE, WordPiece, WordLevel, Unigram)")


def _vocab(o: Dict[str, Any], path: str) -> Dict[str, int]:
    vocab = _get(o, "vocab", path, dict)
    ids = vocab.values()
    if not all(type(i) is int for i in ids) or (ids and min(ids) < 0):
        for k, i in vocab.items():
            if type(i) is not int or i < 0:
                raise TokenizerFileError(f"{path}.vocab[{k!r}]", f"expected a non-negative integer id, found {i!r}")
    return vocab


def serde_f64(text: str) -> float:
    """A JSON number literal as the reference reads it into an ``f64``: ``serde_json``
    without ``float_roundtrip`` (measured, decision 0027). An integer that fits 64 bits is
    converted exactly rounded; otherwise the first digits that fit a ``u64`` make the
    significand (later ones only count in the exponent), which is multiplied or divided
    by one power of ten, itself correctly rounded. That is off by one unit in the last
    place for about a quarter of t5-small's scores, so Python's ``float`` is not used."""
    neg = text.startswith("-")
    i = 1 if neg else 0
    n = len(text)
    sig = exp = 0
    full = False  # the significand took all the digits it can
    while i < n and "0" <= text[i] <= "9":
        if full or sig > _U64_DIV10 or (sig == _U64_DIV10 and ord(text[i]) - 48 > _U64_MOD10):
            full = True
            exp += 1
        else:
            sig = sig * 10 + ord(text[i]) - 48
        i += 1
    integer = True
    if i < n and text[i] == ".":
        integer = False
        i += 1
        while i < n and "0" <= text[i] <= "9":
            if not full and (sig < _U64_DIV10 or (sig == _U64_DIV10 and ord(text[i]) - 48 <= _U64_MOD10)):
                sig = sig * 10 + ord(text[i]) - 48
                exp -= 1
            else:
                full = True
            i += 1
    if i < n and text[i] in "eE":
        integer = False
        i += 1
        pos = text[i] != "-"
        if text[i] in "+-":
            i += 1
        e = 0
        for ch in text[i:]:
            e = e * 10 + ord(ch) - 48
            if e > 0x7FFFFFFF:  # the reference stops here: 0, or out of range
                if sig and pos:
                    raise OverflowError(f"number out of range: {text}")
                return -0.0 if neg else 0.0
        exp = exp + e if pos else exp - e
    if integer and not full:
        return -float(sig) if neg else float(sig)
    f = float(sig)
    while True:
        a = -exp if exp < 0 else exp
        if a <= 308:
            if exp >= 0:
                f *= _POW10[a]
                if f == _INF:
                    raise OverflowError(f"number out of range: {text}")
            else:
                f /= _POW10[a]
            break
        if f == 0.0:
            break
        if exp >= 0:
            raise OverflowError(f"number out of range: {text}")
        f /= 1e308
        exp += 308
    return -f if neg else f


_U64_DIV10, _U64_MOD10 = divmod((1 << 64) - 1, 10)
_POW10 = [float(f"1e{k}") for k in range(309)]
_INF = float("inf")


def _unigram(o: Dict[str, Any], path: str) -> C.Unigram:
    """Measured: ``vocab`` (pairs of a string and a number) is required; ``unk_id`` may be
    missing or null, else an index into the vocabulary (which must then not be empty);
    ``byte_fallback`` defaults to false and must not be null."""
    raw = _get(o, "vocab", path, list)
    vocab = []
    for i, item in enumerate(raw):
        if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                or not isinstance(item[1], (int, float)) or isinstance(item[1], bool)):
            raise TokenizerFileError(f"{path}.vocab[{i}]", f"expected [piece, score], found {item!r}")
        score = item[1]
        vocab.append((item[0], serde_f64(str(score)) if type(score) is int else float(score)))
    unk = _get(o, "unk_id", path, int, None, nullable=True)
    if unk is not None:
        if unk < 0:
            raise TokenizerFileError(f"{path}.unk_id", f"expected a non-negative integer, found {unk}")
        if not vocab:
            raise TokenizerFileError(f"{path}.vocab", "empty, but unk_id needs an entry (EmptyVocabulary)")
        if unk >= len(vocab):
            raise TokenizerFileError(f"{path}.unk_id", f"{unk} is not an index of the {len(vocab)}-entry vocabulary")
    if o.get("byte_fallback", False) is None:
        raise TokenizerFileError(f"{path}.byte_fallback", "must not be null")
    return C.Unigram(tuple(vocab), unk, _get(o, "byte_fallback", path, bool, False), path)


def parse_model(v: Any, path: str = "model"):
    o = _obj(v, path)
    t = _model_type(o, path)
    if t == "WordPiece":  # measured: all four fields are required
        n = _get(o, "max_input_chars_per_word", path, int)
        if n < 0:
            raise TokenizerFileError(f"{path}.max_input_chars_per_word", f"expected a non-negative integer, found {n}")
        return C.WordPiece(_vocab(o, path), _get(o, "unk_token", path, str),
                           _get(o, "continuing_subword_prefix", path, str), n, path)
    if t == "WordLevel":
        return C.WordLevel(_vocab(o, path), _get(o, "unk_token", path, str), path)
    if t == "Unigram":
        return _unigram(o, path)
    if t != "BPE":
        raise UnsupportedComponent(f"{path}.type", t, "model family not supported yet")

    dropout = o.get("dropout")
    if dropout is not None:
        if not isinstance(dropout, (int, float)) or isinstance(dropout, bool):
            raise TokenizerFileError(f"{path}.dropout", f"expected a number or null, found {_type_name(dropout)}")
        if dropout != 0:
            raise UnsupportedComponent(f"{path}.dropout", dropout, "BPE dropout is random; only null (or 0) is reproduced")

    vocab = _vocab(o, path)
    raw = _get(o, "merges", path, list)
    merges: List[Tuple[str, str]]
    if all(type(m) is str for m in raw):
        merges = [tuple(m.split(" ")) for m in raw]
        bad = next((i for i, m in enumerate(merges) if len(m) != 2), None)
        if bad is not None:
            raise TokenizerFileError(f"{path}.merges[{bad}]", f"expected \"left right\", found {raw[bad]!r}")
    elif all(type(m) is list and len(m) == 2 and type(m[0]) is str and type(m[1]) is str for m in raw):
        merges = [(a, b) for a, b in raw]
    else:
        merges = []
        for i, m in enumerate(raw):
            if isinstance(m, str):
                parts = m.split(" ")
                if len(parts) != 2:
                    raise TokenizerFileError(f"{path}.merges[{i}]", f"expected \"left right\", found {m!r}")
                merges.append((parts[0], parts[1]))
            elif isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m):
                merges.append((m[0], m[1]))
            else:
                raise TokenizerFileError(f"{path}.merges[{i}]", f"expected \"a b\" or [a, b], found {m!r}")

    cfg = C.BPE(
        vocab=vocab,
        merges=tuple(merges),
        unk_token=_get(o, "unk_token", path, str, None, nullable=True),
        continuing_subword_prefix=_get(o, "continuing_subword_prefix", path, str, None, nullable=True),
        end_of_word_suffix=_get(o, "end_of_word_suffix", path, str, None, nullable=True),
        fuse_unk=_get(o, "fuse_unk", path, bool, False),
        byte_fallback=_get(o, "byte_fallback", path, bool, False),
        ignore_merges=_get(o, "ignore_merges", path, bool, False),
        path=path,
    )
    if cfg.byte_fallback and (cfg.continuing_subword_prefix or cfg.end_of_word_suffix):
        # The reference falls back on the bytes of the *decorated* symbol ("##é"), whose
        # byte tokens then outrun the piece: offsets stop being defined. Refused.
        which = "continuing_subword_prefix" if cfg.continuing_subword_prefix else "end_of_word_suffix"
        raise UnsupportedComponent(f"{path}.{which}", getattr(cfg, which),
                                   "combined with byte_fallback the reference's offsets are undefined")
    return cfg


# ------------------------------------------------------------ post-processors
def _id_pair(v: Any, path: str) -> Tuple[str, int]:
    if not (isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], int)):
        raise TokenizerFileError(path, f"expected [token, id], found {v!r}")
    return v[0], v[1]


def _template(v: Any, path: str) -> Tuple[C.TemplatePiece, ...]:
    if isinstance(v, str):
        raise UnsupportedComponent(path, v, "string templates are not supported; the file should hold the parsed form")
    if not isinstance(v, list):
        raise TokenizerFileError(path, f"expected an array, found {_type_name(v)}")
    out = []
    for i, item in enumerate(v):
        p = f"{path}[{i}]"
        item = _obj(item, p)
        if len(item) != 1 or next(iter(item)) not in ("SpecialToken", "Sequence"):
            raise TokenizerFileError(p, 'expected {"SpecialToken": ...} or {"Sequence": ...}')
        kind = next(iter(item))
        body = _obj(item[kind], f"{p}.{kind}")
        pid = _get(body, "id", f"{p}.{kind}", str)
        if kind == "Sequence" and pid not in ("A", "B"):
            raise TokenizerFileError(f"{p}.{kind}.id", f"expected 'A' or 'B', found {pid!r}")
        out.append(C.TemplatePiece(kind, pid, _get(body, "type_id", f"{p}.{kind}", int)))
    return tuple(out)


def parse_post_processor(v: Any, path: str):
    o = _obj(v, path)
    t = _type(o, path)
    if t == "ByteLevel":
        return _byte_level(o, path)
    if t == "TemplateProcessing":
        specials = {}
        st = _obj(_get(o, "special_tokens", path, dict), f"{path}.special_tokens")
        for name, spec in st.items():
            sp = f"{path}.special_tokens[{name!r}]"
            spec = _obj(spec, sp)
            ids = _get(spec, "ids", sp, list)
            toks = _get(spec, "tokens", sp, list)
            if len(ids) != len(toks):
                raise TokenizerFileError(sp, "ids and tokens must have the same length")
            specials[name] = C.SpecialTokenSpec(_get(spec, "id", sp, str), tuple(ids), tuple(toks))
        single = _template(_get(o, "single", path, (list, str)), f"{path}.single")
        pair = _template(_get(o, "pair", path, (list, str)), f"{path}.pair")
        for which, tpl in (("single", single), ("pair", pair)):
            for i, piece in enumerate(tpl):
                if piece.kind == "SpecialToken" and piece.id not in specials:
                    raise TokenizerFileError(f"{path}.{which}[{i}]", f"special token {piece.id!r} missing from special_tokens")
        return C.TemplateProcessing(single, pair, specials, path)
    if t == "RobertaProcessing":
        return C.RobertaProcessing(
            _id_pair(_get(o, "sep", path, list), f"{path}.sep"),
            _id_pair(_get(o, "cls", path, list), f"{path}.cls"),
            _get(o, "trim_offsets", path, bool, True),
            _get(o, "add_prefix_space", path, bool, True),
            path,
        )
    if t == "BertProcessing":
        return C.BertProcessing(
            _id_pair(_get(o, "sep", path, list), f"{path}.sep"),
            _id_pair(_get(o, "cls", path, list), f"{path}.cls"),
            path,
        )
    if t == "Sequence":
        items = _get(o, "processors", path, list)
        return C.ProcessorSequence(
            tuple(parse_post_processor(x, f"{path}.processors[{i}]") for i, x in enumerate(items)), path
        )
    raise UnsupportedComponent(f"{path}.type", t)


# ------------------------------------------------------------------- decoders
def parse_decoder(v: Any, path: str):
    o = _obj(v, path)
    t = _type(o, path)
    if t == "ByteLevel":
        return _byte_level(o, path)
    if t == "Metaspace":
        return _metaspace(o, path)
    if t == "ByteFallback":
        return C.ByteFallbackDecoder(path)
    if t == "Fuse":
        return C.FuseDecoder(path)
    if t == "Strip":
        content = _get(o, "content", path, str)
        if len(content) != 1:
            raise TokenizerFileError(f"{path}.content", f"expected one character, found {content!r}")
        start, stop = _get(o, "start", path, int), _get(o, "stop", path, int)
        if start < 0 or stop < 0:
            raise TokenizerFileError(path, "start and stop must be non-negative")
        return C.StripDecoder(content, start, stop, path)
    if t == "Replace":
        return C.ReplaceDecoder(_pattern(o, path), _get(o, "content", path, str), path)
    if t == "WordPiece":  # measured: both fields are required
        return C.WordPieceDecoder(_get(o, "prefix", path, str), _get(o, "cleanup", path, bool), path)
    if t == "Sequence":
        items = _get(o, "decoders", path, list)
        return C.DecoderSequence(tuple(parse_decoder(x, f"{path}.decoders[{i}]") for i, x in enumerate(items)), path)
    raise UnsupportedComponent(f"{path}.type", t)


# --------------------------------------------------------------- added tokens
def parse_added_tokens(v: Any, path: str = "added_tokens"):
    if not isinstance(v, list):
        raise TokenizerFileError(path, f"expected an array, found {_type_name(v)}")
    out = []
    for i, t in enumerate(v):
        p = f"{path}[{i}]"
        t = _obj(t, p)
        tok = C.AddedToken(
            content=_get(t, "content", p, str),
            single_word=_get(t, "single_word", p, bool, False),
            lstrip=_get(t, "lstrip", p, bool, False),
            rstrip=_get(t, "rstrip", p, bool, False),
            normalized=_get(t, "normalized", p, bool, True),
            special=_get(t, "special", p, bool, False),
        )
        out.append((_get(t, "id", p, int), tok))
    return tuple(out)


# ---------------------------------------------------- truncation and padding
def _size(o: Dict[str, Any], key: str, path: str, default=...) -> Optional[int]:
    n = _get(o, key, path, int, default, nullable=default is None)
    if n is not None and n < 0:
        raise TokenizerFileError(f"{path}.{key}", f"expected a non-negative integer, found {n}")
    return n


def _direction(o: Dict[str, Any], path: str, required: bool) -> str:
    d = _get(o, "direction", path, str, ... if required else "Right")
    if d not in ("Left", "Right"):
        raise TokenizerFileError(f"{path}.direction", f"expected Left or Right, found {d!r}")
    return d.lower()


_STRATEGIES = {"LongestFirst": "longest_first", "OnlyFirst": "only_first", "OnlySecond": "only_second"}


def _truncation(o: Dict[str, Any]) -> C.TruncationParams:
    """Measured: max_length, strategy and stride are required, direction is not."""
    max_length = _size(o, "max_length", "truncation")
    strategy = _get(o, "strategy", "truncation", str)
    if strategy not in _STRATEGIES:
        raise TokenizerFileError("truncation.strategy", f"expected LongestFirst, OnlyFirst or OnlySecond, found {strategy!r}")
    stride = _size(o, "stride", "truncation")
    return C.TruncationParams(max_length, stride, _STRATEGIES[strategy], _direction(o, "truncation", required=False))


def _padding(o: Dict[str, Any]) -> C.PaddingParams:
    """Measured: every field but pad_to_multiple_of is required."""
    strategy = _get(o, "strategy", "padding", (str, dict))
    length = None
    if strategy != "BatchLongest":
        if not (isinstance(strategy, dict) and list(strategy) == ["Fixed"]):
            raise TokenizerFileError("padding.strategy", f'expected "BatchLongest" or {{"Fixed": n}}, found {strategy!r}')
        length = _size(strategy, "Fixed", "padding.strategy")
    direction = _direction(o, "padding", required=True)
    return C.PaddingParams(length, direction, _size(o, "pad_to_multiple_of", "padding", None),
                           _size(o, "pad_id", "padding"), _size(o, "pad_type_id", "padding"),
                           _get(o, "pad_token", "padding", str))


# -------------------------------------------------------------------- the file
def parse_tokenizer(data: Any) -> C.TokenizerConfig:
    o = _obj(data, "")
    if "version" in o and o["version"] != "1.0":
        raise TokenizerFileError("version", f"unknown tokenizer version {o['version']!r} (expected '1.0')")
    truncation = None if o.get("truncation") is None else _truncation(_obj(o["truncation"], "truncation"))
    padding = None if o.get("padding") is None else _padding(_obj(o["padding"], "padding"))
    if "model" not in o:
        raise TokenizerFileError("model", "missing required field")
    model = parse_model(o["model"], "model")
    norm = o.get("normalizer")
    pre = o.get("pre_tokenizer")
    post = o.get("post_processor")
    dec = o.get("decoder")
    return C.TokenizerConfig(
        model=model,
        normalizer=None if norm is None else parse_normalizer(norm, "normalizer"),
        pre_tokenizer=None if pre is None else parse_pre_tokenizer(pre, "pre_tokenizer"),
        post_processor=None if post is None else parse_post_processor(post, "post_processor"),
        decoder=None if dec is None else parse_decoder(dec, "decoder"),
        added_tokens=parse_added_tokens(o.get("added_tokens") or [], "added_tokens"),
        truncation=truncation,
        padding=padding,
    )


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def load_str(text: str) -> C.TokenizerConfig:
    try:
        data = json.loads(text, parse_float=serde_f64, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise TokenizerFileError("", f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except (OverflowError, ValueError) as e:  # the reference refuses these numbers too
        raise TokenizerFileError("", f"invalid JSON: {e}") from None
    return parse_tokenizer(data)


def load_file(path) -> C.TokenizerConfig:
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TokenizerFileError("", f"not valid UTF-8 at byte {e.start}", file=path) from None
    try:
        return load_str(text)
    except TokenizerFileError as e:
        raise TokenizerFileError(e.json_path, e.detail, file=path) from None
