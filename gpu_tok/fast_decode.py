"""Decoding by table: the byte-level decoder (``decoder: ByteLevel``: gpt2, llama3, qwen3,
roberta) and the SentencePiece decoder sequence (llama2, mistral, gemma3, phi-3), both
``TableDecoding``, and tiktoken encodings (``table_join``). The reference path
(``cpu_ref.pipeline.RefPipeline.decode``) runs every token through the decoders in Python,
about 1 us a token; here each id's bytes are looked up in a table made once per
tokenizer, joined, and decoded once.

The same text as the reference path, step for step (decision 0034): ids are taken as
there (a list, tuple, range or integer NumPy array; one whose items are not all ``int``
in ``[0, n)``, a bool among them, takes the reference path, which raises or decodes as
the reference does); an id with no token (past the vocabulary) is skipped; with
``skip_special_tokens`` an id whose token string is a special added token's is skipped
(the reference checks the string). Byte-level: a token's bytes are its characters mapped
through the byte alphabet, or its UTF-8 when one of them is not in it
(``cpu_ref.decoders._byte_level_bytes``); the joined bytes decoded with
``errors="replace"``. SentencePiece: a ``<0xHH>`` token is its byte, another its string
with "▁" made " ", as UTF-8; the joined bytes decoded strictly (else the reference path:
a run of byte tokens that is not UTF-8 becomes one U+FFFD per byte there), then up to
``Strip``'s count of leading spaces removed.
"""
from __future__ import annotations

import operator
from typing import List, Optional, Sequence

import numpy as np

from . import config as C


def _sentencepiece_strip(dec) -> Optional[int]:
    """For the SentencePiece decoder sequence ``Replace("▁", " ")``, ``ByteFallback``,
    ``Fuse``, then none or ``Strip(" ", start, 0)``: how many leading spaces it strips
    (0 without ``Strip``); None for any other decoder."""
    if not isinstance(dec, C.DecoderSequence):
        return None
    d = dec.decoders
    if (len(d) not in (3, 4) or not isinstance(d[0], C.ReplaceDecoder) or d[0].pattern.kind != "String"
            or d[0].pattern.value != "\u2581" or d[0].content != " " or not isinstance(d[1], C.ByteFallbackDecoder)
            or not isinstance(d[2], C.FuseDecoder)):
        return None
    if len(d) == 3:
        return 0
    if isinstance(d[3], C.StripDecoder) and d[3].content == " " and d[3].stop == 0 and d[3].start >= 0:
        return d[3].start
    return None


def _byte_token(t: str) -> Optional[int]:
    """The byte of a ``<0xHH>`` token (``cpu_ref.decoders._byte_fallback``'s test), else None."""
    if len(t) == 6 and t.startswith("<0x") and t.endswith(">") and all(c in "0123456789abcdefABCDEF" for c in t[3:5]):
        return int(t[3:5], 16)
    return None


class TableDecoding:
    """The tables of one tokenizer's ids (made from its reference pipeline, ``ref``): per id
    its bytes (a special token's empty in the second table), for the byte-level decoder or
    the SentencePiece sequence (``_sentencepiece_strip``)."""

    def __init__(self, ref):
        from .cpu_ref.decoders import _byte_level_bytes

        self.strip = _sentencepiece_strip(ref.cfg.decoder)  # None: the byte-level decoder
        n = max(ref.get_vocab(True).values(), default=-1) + 1
        keep: List[bytes] = [b""] * n
        plain: List[bytes] = [b""] * n
        for i in range(n):
            t = ref.id_to_token(i)
            if t is None:
                continue
            if self.strip is None:
                b = _byte_level_bytes(t)
            else:
                x = _byte_token(t)
                b = bytes((x,)) if x is not None else t.replace("\u2581", " ").encode("utf-8")
            keep[i] = b
            plain[i] = b"" if ref.added.is_special(t) else b
        self._all = keep  # with special tokens
        self._plain = plain  # special tokens' bytes empty

    @staticmethod
    def serves(ref) -> bool:
        return isinstance(ref.cfg.decoder, C.ByteLevel) or _sentencepiece_strip(ref.cfg.decoder) is not None

    def decode(self, ids: Sequence[int], skip_special_tokens: bool) -> Optional[str]:
        """The text, or None where the reference path must decide (an item that is not an
        ``int``, or one outside ``[0, n)``: the reference raises, or skips an id past the
        vocabulary; for the SentencePiece sequence, bytes that are not UTF-8)."""
        data = table_join(self._plain if skip_special_tokens else self._all, ids)
        if data is None:
            return None
        if self.strip is None:
            return data.decode("utf-8", errors="replace")
        try:
            # every run of byte tokens is UTF-8 on its own exactly when the joined bytes are
            # (the other tokens' bytes are whole characters): ByteFallback's runs decode as here
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None  # a run that is not: one U+FFFD per byte of it, the reference path's
        k = 0
        while k < self.strip and k < len(text) and text[k] == " ":
            k += 1
        return text[k:]


def table_join(table: List[Optional[bytes]], ids) -> Optional[bytes]:
    """``b"".join(table[i] for i in ids)``, or None where the caller's own path must decide:
    ``ids`` not a list, tuple, range or integer NumPy array, an item not an ``int`` (a
    bool included), outside ``[0, len(table))``, or whose entry is None."""
    if type(ids) is not list:
        if isinstance(ids, np.ndarray) and ids.ndim == 1 and ids.dtype.kind in "iu":
            ids = ids.tolist()
        elif isinstance(ids, (tuple, range)):
            ids = list(ids)
        else:
            return None
    if not ids:
        return b""
    if set(map(type, ids)) != {int} or min(ids) < 0 or max(ids) >= len(table):
        return None
    if len(ids) == 1:
        got = table[ids[0]]
        return None if got is None else got
    got = operator.itemgetter(*ids)(table)
    if None in got:
        return None
    return b"".join(got)
