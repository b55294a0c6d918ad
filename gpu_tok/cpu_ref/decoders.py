"""Decoders: token strings back to text."""

from __future__ import annotations

from typing import List, Optional

from .. import config as C
from .byte_level import CHAR_TO_BYTE
from .regex_util import compile_pattern, find_spans


def _byte_level_bytes(t: str) -> bytes:
    """A token's bytes: its characters mapped back through the byte alphabet; a token with
    a character outside it is kept as its UTF-8."""
    try:
        return bytes(CHAR_TO_BYTE[c] for c in t)
    except KeyError:
        return t.encode("utf-8")


def _byte_level(tokens: List[str]) -> List[str]:
    return [b"".join(map(_byte_level_bytes, tokens)).decode("utf-8", errors="replace")]


def byte_token(t: str) -> Optional[int]:
    """The byte of a ``<0xHH>`` token (two hexadecimal digits), else None."""
    if len(t) == 6 and t.startswith("<0x") and t.endswith(">") and all(c in "0123456789abcdefABCDEF" for c in t[3:5]):
        return int(t[3:5], 16)
    return None


def _byte_fallback(tokens: List[str]) -> List[str]:
    """Runs of <0xXX> tokens become their UTF-8 text, or one U+FFFD per byte if invalid."""
    out: List[str] = []
    pending = bytearray()

    def flush():
        if pending:
            try:
                out.append(pending.decode("utf-8"))
            except UnicodeDecodeError:
                out.extend(["\ufffd"] * len(pending))
            pending.clear()

    for t in tokens:
        b = byte_token(t)
        if b is not None:
            pending.append(b)
        else:
            flush()
            out.append(t)
    flush()
    return out


def _strip(cfg: C.StripDecoder, tokens: List[str]) -> List[str]:
    out = []
    for t in tokens:
        start = 0
        for i in range(min(cfg.start, len(t))):
            if t[i] == cfg.content:
                start = i + 1
            else:
                break
        stop = len(t)
        for i in range(cfg.stop):
            j = len(t) - i - 1
            if j < 0:
                # the reference panics here (index underflow); refuse by name instead
                raise ValueError(f"{cfg.path}: Strip decoder with stop={cfg.stop} met the token {t!r}, which is "
                                 f"shorter than stop and all {cfg.content!r}: the reference fails on it too")
            if t[j] == cfg.content:
                stop = j
            else:
                break
        out.append(t[start:stop])
    return out


def _metaspace(cfg: C.Metaspace, tokens: List[str]) -> List[str]:
    rep = cfg.replacement
    out = []
    for i, t in enumerate(tokens):
        if i == 0 and cfg.prepend_scheme != "never":
            out.append(t.replace(rep, ""))  # every replacement in the first token goes
        else:
            out.append(t.replace(rep, " "))
    return out


def _replace(cfg: C.ReplaceDecoder, tokens: List[str]) -> List[str]:
    rx = compile_pattern(cfg.pattern)
    out = []
    for t in tokens:
        parts = []
        last = 0
        for a, b in find_spans(rx, t):
            parts.append(t[last:a])
            parts.append(cfg.content)
            last = b
        parts.append(t[last:])
        out.append("".join(parts))
    return out


# the WordPiece decoder's clean-up, in the reference's order
_WORDPIECE_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                      (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def _wordpiece(cfg: C.WordPieceDecoder, tokens: List[str]) -> List[str]:
    """Every token but the first: its ``prefix`` removed, or a space put before it; then,
    with ``cleanup``, each token (not the joined text) cleaned up."""
    out = []
    p = cfg.prefix
    for i, t in enumerate(tokens):
        if i:
            t = t[len(p):] if t.startswith(p) else " " + t
        if cfg.cleanup:
            for a, b in _WORDPIECE_CLEANUP:
                t = t.replace(a, b)
        out.append(t)
    return out


def decode_chain(cfg, tokens: List[str]) -> List[str]:
    if isinstance(cfg, C.DecoderSequence):
        for sub in cfg.decoders:
            tokens = decode_chain(sub, tokens)
        return tokens
    if isinstance(cfg, C.ByteLevel):
        return _byte_level(tokens)
    if isinstance(cfg, C.ByteFallbackDecoder):
        return _byte_fallback(tokens)
    if isinstance(cfg, C.FuseDecoder):
        return ["".join(tokens)]
    if isinstance(cfg, C.StripDecoder):
        return _strip(cfg, tokens)
    if isinstance(cfg, C.Metaspace):
        return _metaspace(cfg, tokens)
    if isinstance(cfg, C.ReplaceDecoder):
        return _replace(cfg, tokens)
    if isinstance(cfg, C.WordPieceDecoder):
        return _wordpiece(cfg, tokens)
    raise TypeError(f"unknown decoder {cfg!r}")  # pragma: no cover


def decode(cfg, tokens: List[str]) -> str:
    if cfg is None:
        return " ".join(tokens)
    return "".join(decode_chain(cfg, tokens))
