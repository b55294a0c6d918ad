"""The reference pipeline, stage by stage in the reference's order (DESIGN.md section 2)."""

from __future__ import annotations

import functools
from typing import Dict, List, Optional

from .. import config as C
from ..encoding import Encoding
from ..errors import InvalidText
from . import decoders, post_processors, truncation
from .added_tokens import AddedVocabulary
from .models import model_for
from .normalizers import normalize
from .pre_tokenizers import pre_tokenize


def check_text(text, what: str = "text") -> str:
    """Accept any ``str`` that is valid Unicode; refuse lone surrogates by name.

    The reference's Python binding raises ``TypeError`` for such strings
    ("TextInputSequence must be str"); we raise ``InvalidText`` (a ``TypeError``
    and a ``ValueError``) naming the first surrogate and its index.
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be str, not {type(text).__name__}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidText(
                f"{what} contains a lone surrogate U+{ord(text[e.start]):04X} at index {e.start}; "
                "it is not valid Unicode text (the reference refuses it too)"
            ) from None
    return text


def check_words(words, what: str = "text") -> List[str]:
    """A pre-tokenized input: a list or tuple of ``str`` (or a NumPy object array of
    them), each valid Unicode; anything else ``TypeError`` as the reference's binding
    says it. NumPy ``str`` arrays (dtype ``<U``) are refused by name: the reference reads
    their UCS-4 buffer as if it were text (ASCII words come out with NULs between their
    characters, others are refused)."""
    import numpy as np

    if isinstance(words, np.ndarray):
        if words.dtype.kind == "U":
            raise TypeError("a NumPy str array (dtype <U) of words is not accepted: the reference reads its UCS-4 "
                            "buffer as text; pass a list of str (or an object array)")
        if words.ndim == 1 and words.dtype.kind == "O":
            words = words.tolist()
    if not isinstance(words, (list, tuple)) or not all(isinstance(w, str) for w in words):
        raise TypeError("PreTokenizedInputSequence must be Union[List[str], Tuple[str]]")
    for w in words:
        check_text(w, what)
    return list(words)


def without_offsets(enc: Encoding) -> Encoding:
    """A sequence as the reference's ``encode_fast`` builds it (``OffsetType::None``): the
    ids only; tokens empty, offsets (0, 0), no words, type id 0 (the pair's too)."""
    n = len(enc.ids)
    return Encoding(enc.ids, [0] * n, [""] * n, [(0, 0)] * n, [0] * n, [None] * n)


def _byte_to_char(text: str) -> List[int]:
    out: List[int] = []
    for i, ch in enumerate(text):
        out.extend([i] * len(ch.encode("utf-8")))
    return out


def _token_id(i) -> int:
    """Ids are unsigned 32-bit integers in the reference; others raise as there. A bool is
    an int there too (measured, tokenizers 0.23.1: ``decode([1, True])`` is ``decode([1, 1])``;
    ``id_to_token(True)`` is token 1's)."""
    if not hasattr(i, "__index__"):
        raise TypeError(f"'{type(i).__name__}' object cannot be interpreted as an integer")
    i = i.__index__()
    if not 0 <= i <= 0xFFFFFFFF:
        raise OverflowError("out of range integral type conversion attempted")
    return i


class RefPipeline:
    def __init__(self, cfg: C.TokenizerConfig):
        self.cfg = cfg
        self.model = model_for(cfg.model)
        self.added = AddedVocabulary(cfg.added_tokens, self.model, cfg.normalizer)
        norm = cfg.normalizer
        self._normalize = None if norm is None else functools.partial(normalize, norm)  # (picklable)
        self.truncation = cfg.truncation  # set by Tokenizer.enable_truncation / no_truncation
        self.padding = cfg.padding  # likewise

    # ----------------------------------------------------------------- encode
    def _encode_single(self, text: str, type_id: int, limited: bool = False, word: Optional[int] = None) -> Encoding:
        """One sequence, before post-processing; ``limited``: with the truncation's early
        stop (``truncation.tokenize_with_limit``); ``word``: the word index every token
        gets (one word of a pre-tokenized input) instead of its piece's."""
        pts = self.added.extract_and_normalize(text, self._normalize)
        if self.cfg.pre_tokenizer is not None:
            pre_tokenize(self.cfg.pre_tokenizer, pts)
        trunc = self.truncation if limited else None
        if trunc is not None and (trunc.strategy != "only_second" or type_id != 0):
            truncation.tokenize_with_limit(pts, self.model.tokenize, trunc.max_length, trunc.direction)
        else:
            pts.tokenize(self.model.tokenize)

        n_chars = len(text)
        ids: List[int] = []
        tokens: List[str] = []
        offsets = []
        words: List[Optional[int]] = []
        for w, sp in enumerate(pts.splits):
            ns = sp.normalized
            starts, ends = ns.starts, ns.ends
            # token offsets are UTF-8 byte offsets into the piece; every byte of a
            # character carries that character's span
            char_of = None if ns.text.isascii() else _byte_to_char(ns.text)
            for t in sp.tokens:
                ids.append(t.id)
                tokens.append(t.value)
                if t.start < t.end:
                    if char_of is None:
                        s, e = starts[t.start], ends[t.end - 1]
                    else:
                        s, e = starts[char_of[t.start]], ends[char_of[t.end - 1]]
                else:  # empty token range: the reference keeps the normalized position
                    s = e = ns.shift + t.start
                if s == n_chars and n_chars:
                    # The reference converts byte offsets to characters and keeps the
                    # byte offsets when the start lies at the very end of the text.
                    s = e = len(text.encode("utf-8"))
                offsets.append((s, e))
                words.append(w if word is None else word)
        n = len(ids)
        return Encoding(ids, [type_id] * n, tokens, offsets, [0] * n, words)

    def post_process(self, enc: Encoding, pair: Optional[Encoding], add_special_tokens: bool,
                     truncate_pad: bool = True) -> Encoding:
        """The reference's ``post_process``: truncate, post-process, pad (to ``Fixed``, or to
        a multiple of ``pad_to_multiple_of``; a batch pads again to its longest).
        ``truncate_pad=False``: the post-processor alone (what the compiled engines build on)."""
        trunc = self.truncation if truncate_pad else None
        if trunc is not None:
            n_added = post_processors.added_tokens(self.cfg.post_processor, pair is not None)
            max_length = truncation.budget(trunc, n_added, add_special_tokens)
            enc, pair = truncation.truncate_encodings(enc, pair, max_length, trunc)
        out = post_processors.process(self.cfg.post_processor, [enc] if pair is None else [enc, pair],
                                      add_special_tokens)
        if truncate_pad and self.padding is not None:
            truncation.pad_encodings([out], self.padding)
        return out

    def _encode_words(self, words, type_id: int, limited: bool) -> Encoding:
        """A pre-tokenized sequence: each word encoded on its own (offsets within the word,
        word index its position), merged without growing offsets, as the reference does."""
        encs = [self._encode_single(w, type_id, limited, i) for i, w in enumerate(words)]
        return Encoding.merge(encs, False)

    def encode(self, text, pair=None, add_special_tokens: bool = True, truncate_pad: bool = True,
               is_pretokenized: bool = False, offsets: bool = True) -> Encoding:
        """``tokenizers.Tokenizer.encode``; ``truncate_pad=False`` leaves out the truncation
        and padding set on this pipeline; ``is_pretokenized``: ``text`` (and ``pair``) are
        sequences of words; ``offsets=False``: as ``encode_batch_fast`` (``without_offsets``)."""
        if is_pretokenized:
            text = check_words(text)
            enc = self._encode_words(text, 0, truncate_pad)
        else:
            check_text(text)
            enc = self._encode_single(text, 0, truncate_pad)
        pair_enc = None
        if pair is not None:
            if is_pretokenized:
                pair_enc = self._encode_words(check_words(pair, "pair"), 1, truncate_pad)
            else:
                check_text(pair, "pair")
                pair_enc = self._encode_single(pair, 1, truncate_pad)
        if not offsets:
            enc = without_offsets(enc)
            pair_enc = None if pair_enc is None else without_offsets(pair_enc)
        return self.post_process(enc, pair_enc, add_special_tokens, truncate_pad)

    def encode_batch(self, inputs, add_special_tokens: bool = True, truncate_pad: bool = True,
                     is_pretokenized: bool = False, offsets: bool = True) -> List[Encoding]:
        """``encode`` of each input: a text, or a ``(text, pair)`` tuple or list; padded
        together when padding is set (and ``truncate_pad``). ``is_pretokenized``: each
        input is a sequence of words, or a pair of such sequences (the reference's order
        of reading: words first)."""
        out = []
        for item in inputs:
            if is_pretokenized:
                try:
                    words = check_words(item)
                except TypeError:
                    if not (isinstance(item, (tuple, list)) and len(item) == 2):
                        raise TypeError("PreTokenizedEncodeInput must be Union[PreTokenizedInputSequence, "
                                        "Tuple[PreTokenizedInputSequence, PreTokenizedInputSequence]]") from None
                    out.append(self.encode(item[0], item[1], add_special_tokens, truncate_pad, True, offsets))
                else:
                    out.append(self.encode(words, None, add_special_tokens, truncate_pad, True, offsets))
            elif isinstance(item, (tuple, list)):
                if len(item) != 2:
                    raise ValueError("a pair input must have exactly two texts")
                out.append(self.encode(item[0], item[1], add_special_tokens, truncate_pad, False, offsets))
            else:
                out.append(self.encode(item, None, add_special_tokens, truncate_pad, False, offsets))
        if truncate_pad and self.padding is not None:
            truncation.pad_encodings(out, self.padding)
        return out

    # ----------------------------------------------------------------- decode
    def id_to_token(self, i: int) -> Optional[str]:
        i = _token_id(i)
        t = self.added.id_to_token(i)
        return t if t is not None else self.model.id_to_token(i)

    def token_to_id(self, token: str) -> Optional[int]:
        i = self.added.token_to_id(token)
        return i if i is not None else self.model.token_to_id(token)

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        tokens = []
        for i in [_token_id(i) for i in ids]:  # validate all ids first, as the reference does
            t = self.id_to_token(i)
            if t is None:
                continue  # unknown ids are skipped, as the reference does
            if skip_special_tokens and self.added.is_special(t):
                continue
            tokens.append(t)
        return decoders.decode(self.cfg.decoder, tokens)

    # ------------------------------------------------------------------ vocab
    def get_vocab(self, with_added_tokens: bool = True) -> Dict[str, int]:
        v = dict(self.model.vocab)
        if with_added_tokens:
            v.update(self.added.map)
        return v

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        if with_added_tokens:
            return len(self.get_vocab(True))
        return self.model.get_vocab_size()
