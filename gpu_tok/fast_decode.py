"""Decoding by table: the byte-level decoder (``decoder: ByteLevel``: gpt2, llama3, qwen3,
roberta), the SentencePiece decoder sequence (llama2, mistral, gemma3, phi-3), the
WordPiece and Metaspace decoders (bert, t5), all ``TableDecoding``, and tiktoken encodings
(``table_join``). The reference path
(``cpu_ref.pipeline.RefPipeline.decode``) runs every token through the decoders in Python,
about 1 us a token; here each id's bytes are looked up in a table made once per
tokenizer, joined, and decoded once.

The same text as the reference path, step for step (decision 0034): ids are taken as
there (a list, tuple, range or integer NumPy array of unsigned 32-bit integers, bools
included; others, and ids past the table, take the reference path, which raises or
decodes as the reference does); an id with no token (past the vocabulary) is skipped; with
``skip_special_tokens`` an id whose token string is a special added token's is skipped
(the reference checks the string). Byte-level: a token's bytes are its characters mapped
through the byte alphabet, or its UTF-8 when one of them is not in it
(``cpu_ref.decoders._byte_level_bytes``); the joined bytes decoded with
``errors="replace"``. WordPiece, Metaspace: each token as the reference path's own
function makes it, the first token kept its own way (a table each), joined. SentencePiece: a ``<0xHH>`` token is its byte, another its string
with "▁" made " ", as UTF-8; the joined bytes decoded strictly (else the reference path:
a run of byte tokens that is not UTF-8 becomes one U+FFFD per byte there), then up to
``Strip``'s count of leading spaces removed.
"""
from __future__ import annotations

from array import array
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


def _first_rest(dec):
    """For a decoder that changes each token by itself, the first token one way and the
    others another (``WordPiece``, ``Metaspace``): ``token -> (as first, as a later one)``
    through the reference path's own functions; else None."""
    from .cpu_ref import decoders as D

    if isinstance(dec, C.WordPieceDecoder):
        return lambda t: tuple(D._wordpiece(dec, [t, t]))
    if isinstance(dec, C.Metaspace):
        return lambda t: tuple(D._metaspace(dec, [t, t]))
    return None


class TableDecoding:
    """The tables of one tokenizer's ids (made from its reference pipeline, ``ref``): per id
    its bytes (a special token's empty in the ``plain`` tables), for the byte-level
    decoder, the SentencePiece sequence (``_sentencepiece_strip``), or a decoder that
    changes each token by itself, the first token its own way (``_first_rest``: then a
    table for the first token kept and one for the others)."""

    def __init__(self, ref):
        from .cpu_ref.decoders import _byte_level_bytes, byte_token

        dec = ref.cfg.decoder
        self.strip = _sentencepiece_strip(dec)
        first_rest = _first_rest(dec)
        self.kind = "byte_level" if isinstance(dec, C.ByteLevel) else "first_rest" if first_rest else "sentencepiece"
        n = max(ref.get_vocab(True).values(), default=-1) + 1
        keep: List[bytes] = [b""] * n
        firsts: List[bytes] = [b""] * n
        gone = np.ones(n, bool)  # no token: skipped whatever the flag
        special = np.zeros(n, bool)
        for i in range(n):
            t = ref.id_to_token(i)
            if t is None:
                continue
            gone[i] = False
            special[i] = ref.added.is_special(t)
            if self.kind == "byte_level":
                keep[i] = _byte_level_bytes(t)
            elif self.kind == "sentencepiece":
                x = byte_token(t)
                keep[i] = bytes((x,)) if x is not None else t.replace("\u2581", " ").encode("utf-8")
            else:
                f, r = first_rest(t)
                firsts[i], keep[i] = f.encode("utf-8"), r.encode("utf-8")
        plain = [b"" if sp else b for b, sp in zip(keep, special.tolist())]
        self._all = ByteTable(keep)  # with special tokens
        self._plain = ByteTable(plain)  # special tokens' bytes empty
        self._firsts = firsts
        self._gone = gone, gone | special  # the ids the reference drops, without and with skipping
        self._gone_bytes = tuple(g.astype(np.uint8).tobytes() for g in self._gone)  # (_first_rest_small)

    @staticmethod
    def serves(ref) -> bool:
        dec = ref.cfg.decoder
        return isinstance(dec, C.ByteLevel) or _sentencepiece_strip(dec) is not None or _first_rest(dec) is not None

    def decode(self, ids: Sequence[int], skip_special_tokens: bool) -> Optional[str]:
        """The text, or None where the reference path must decide (an item that is not an
        ``int``, or one outside ``[0, n)``: the reference raises, or skips an id past the
        vocabulary; for the SentencePiece sequence, bytes that are not UTF-8)."""
        tab = self._plain if skip_special_tokens else self._all
        if type(ids) in (list, tuple) and len(ids) <= _SMALL_IDS:  # a short list: in Python
            if self.kind == "first_rest":
                return self._first_rest_small(tab, ids, skip_special_tokens)
            data = join_small(tab, ids)
            return None if data is None else self._text(data)
        u = table_ids(tab, ids)
        if u is None:
            return None
        if self.kind == "first_rest":  # the first token the reference keeps, its own way
            kept = np.flatnonzero(~self._gone[1 if skip_special_tokens else 0][u])
            if not kept.shape[0]:
                return ""
            k = int(kept[0])
            return (self._firsts[int(u[k])] + join_table(tab, u[k + 1:])).decode("utf-8")
        return self._text(join_table(tab, u))

    def _first_rest_small(self, tab: ByteTable, ids, skip_special_tokens: bool) -> Optional[str]:
        """``decode`` of a short list for a decoder that makes the first token its own way, in
        Python (``join_small``), or None."""
        try:
            u = array("I", ids)
        except (TypeError, OverflowError):
            return None
        if u and max(u) >= tab.n:
            return None
        gone = self._gone_bytes[1 if skip_special_tokens else 0]
        for k, i in enumerate(u):
            if not gone[i]:
                items = tab.items
                return (self._firsts[i] + b"".join([items[j] for j in u[k + 1:]])).decode("utf-8")
        return ""

    def _text(self, data: bytes) -> Optional[str]:
        """The text of the joined bytes (byte-level, SentencePiece), or None (``decode``)."""
        if self.kind == "byte_level":
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


class ByteTable:
    """Per id its bytes, or None (``bad``: the caller's own path decides), as an arena for
    ``kernels/decode_cpu.join_ids``; ``items``: the same as a list (``join_small``)."""

    def __init__(self, entries: List[Optional[bytes]]):
        self.items = entries
        self.n = len(entries)
        lens = np.fromiter((len(b) if b is not None else 0 for b in entries), np.int64, self.n)
        self.offs = np.zeros(self.n + 1, np.int64)
        np.cumsum(lens, out=self.offs[1:])
        self.arena = np.frombuffer(b"".join(b for b in entries if b is not None), np.uint8).copy()
        self.bad = np.fromiter((b is None for b in entries), np.uint8, self.n)


def table_ids(table: ByteTable, ids) -> Optional[np.ndarray]:
    """``ids`` as ``uint32``, or None where the caller's own path must decide: ``ids`` not
    a list, tuple, range or integer NumPy array; an item that is not an unsigned 32-bit
    integer (``array("I")`` takes what the reference's ``u32`` does: ints, bools, NumPy
    integers; it refuses floats, negative and larger values); one past the table."""
    if isinstance(ids, np.ndarray):
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            return None
        if ids.shape[0] and (int(ids.min()) < 0 or int(ids.max()) >= table.n):
            return None
        return np.ascontiguousarray(ids, np.uint32)
    if not isinstance(ids, (list, tuple, range)):
        return None
    try:
        u = np.frombuffer(array("I", ids), np.uint32)
    except (TypeError, OverflowError):
        return None
    if u.shape[0] and int(u.max()) >= table.n:
        return None
    return u


def join_table(table: ByteTable, u: np.ndarray) -> Optional[bytes]:
    """The bytes of ``u`` (``table_ids``') joined, or None where one is marked bad."""
    if not u.shape[0]:
        return b""
    from .kernels.decode_cpu import join_ids

    out, ok = join_ids(table.arena, table.offs, table.bad, u)
    return out.tobytes() if ok else None


# A list or tuple of at most this many ids is joined in Python (``join_small``): the kernel's
# call, with its ``uint32`` copy of the ids, costs about 4 us whatever their number; the
# Python join about 0.3 us for one id and 45 ns more an id (RESULTS 2026-12-07 05:10-05:35)
_SMALL_IDS = 64


def token_items(table: ByteTable, ids) -> Optional[List[bytes]]:
    """Each id's bytes (``table.items``), or None where ``table_ids`` or ``join_table`` would
    give None (``array("I")`` takes the ids ``table_ids`` does and refuses the others)."""
    try:
        items = table.items
        parts = [items[i] for i in array("I", ids)]
    except (TypeError, OverflowError, IndexError):
        return None
    return None if None in parts else parts


def join_small(table: ByteTable, ids) -> Optional[bytes]:
    """``table_join`` of a short list or tuple (``_SMALL_IDS``) in Python: the same bytes, or
    None (``token_items``)."""
    parts = token_items(table, ids)
    return None if parts is None else b"".join(parts)


def table_join(table: ByteTable, ids) -> Optional[bytes]:
    """``join_table`` of ``table_ids``: the bytes of ``ids``, or None (the caller's path)."""
    if type(ids) in (list, tuple) and len(ids) <= _SMALL_IDS:
        return join_small(table, ids)
    u = table_ids(table, ids)
    return None if u is None else join_table(table, u)
