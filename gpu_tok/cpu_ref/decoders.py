"""Decoders: token strings back to text."""

from __future__ import annotations

from typing import List

from .. import config as C
from .byte_level import CHAR_TO_BYTE


def _byte_level(tokens: List[str]) -> List[str]:
    buf = bytearray()
    for t in tokens:
        try:
            buf += bytes(CHAR_TO_BYTE[c] for c in t)
        except KeyError:
            # A token with a character outside the byte alphabet is kept as its UTF-8.
            buf += t.encode("utf-8")
    return [buf.decode("utf-8", errors="replace")]


def decode_chain(cfg, tokens: List[str]) -> List[str]:
    if isinstance(cfg, C.DecoderSequence):
        for sub in cfg.decoders:
            tokens = decode_chain(sub, tokens)
        return tokens
    if isinstance(cfg, C.ByteLevel):
        return _byte_level(tokens)
    raise TypeError(f"unknown decoder {cfg!r}")  # pragma: no cover


def decode(cfg, tokens: List[str]) -> str:
    if cfg is None:
        return " ".join(tokens)
    return "".join(decode_chain(cfg, tokens))
