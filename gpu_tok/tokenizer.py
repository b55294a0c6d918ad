"""The public ``Tokenizer`` (HF ``tokenizers`` names and conventions)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import loader
from ._util import _ONE_TEXT_CHARS, gc_paused, id_lists, text_list
from .config import AddedToken, PaddingParams, TokenizerConfig, TruncationParams
from .cpu_ref import RefPipeline
from .encoding import DeferredRow, Encoding

DEVICES = ("ref", "cpu", "auto", "cuda")

InputText = Union[str, tuple, list]


@dataclass
class TokenBatch:
    """Bulk result: all ids flat, and where each text's ids start.

    ``ids[row_splits[i]:row_splits[i + 1]]`` are the ids of text ``i``.
    """

    ids: np.ndarray  # int32[T]
    row_splits: np.ndarray  # int64[n + 1]

    def __len__(self) -> int:
        return len(self.row_splits) - 1

    def to_list(self) -> List[List[int]]:
        return id_lists(self.ids, self.row_splits)

    def to_padded(self, pad_id: int = 0, side: str = "right", length: Optional[int] = None):
        """``(ids, attention_mask)`` as ``int32[n, length]`` matrices."""
        if side not in ("right", "left"):
            raise ValueError(f"side must be 'right' or 'left', not {side!r}")
        lens = np.diff(self.row_splits)
        width = int(lens.max(initial=0)) if length is None else int(length)
        if length is not None and len(lens) and int(lens.max()) > width:
            raise ValueError(f"length={width} is shorter than the longest row ({int(lens.max())} ids)")
        n = len(lens)
        ids = np.full((n, width), pad_id, dtype=np.int32)
        mask = np.zeros((n, width), dtype=np.int32)
        for i in range(n):
            row = self.ids[self.row_splits[i]:self.row_splits[i + 1]]
            k = len(row)
            if side == "right":
                ids[i, :k] = row
                mask[i, :k] = 1
            else:
                ids[i, width - k:] = row
                mask[i, width - k:] = 1
        return ids, mask


def _unsigned(n, bits: int = 64) -> int:
    """An unsigned integer argument, refused as the reference's binding refuses it."""
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"'{type(n).__name__}' object cannot be interpreted as an integer")
    n = n.__index__()
    if n < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if n >> bits:
        raise OverflowError("out of range integral type conversion attempted")
    return n


def _token_list(tokens) -> list:
    if not isinstance(tokens, list):
        raise TypeError(f"argument 'tokens': '{type(tokens).__name__}' object cannot be converted to 'PyList'")
    return tokens


def _added_token(t, special: bool) -> AddedToken:
    """A ``str`` or an ``AddedToken`` (ours or the reference's) as ours; ``special``:
    from ``add_special_tokens`` (always special; a ``str`` is then not normalized)."""
    if isinstance(t, str):
        return AddedToken(t, special=special, normalized=not special)
    if all(hasattr(t, k) for k in ("content", "single_word", "lstrip", "rstrip", "normalized", "special")):
        return AddedToken(str(t.content), bool(t.single_word), bool(t.lstrip), bool(t.rstrip), bool(t.normalized),
                          True if special else bool(t.special))
    raise TypeError("Input must be a List[Union[str, AddedToken]]")


def _check_device(device: str) -> str:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    return device


ENCODE_REF_CHARS = 64  # ``Tokenizer.encode``: shorter texts take the reference path (as quick or quicker)


class Tokenizer:
    """A tokenizer loaded from a Hugging Face ``tokenizer.json``.

    Every method gives exactly what ``tokenizers.Tokenizer`` (the pinned
    reference) gives for the same file and input.
    """

    def __init__(self, cfg: TokenizerConfig):
        self.config = cfg
        self._ref = RefPipeline(cfg)
        self._cpu = None  # the compiled engine, built on first use
        self._cpu_reason: Optional[str] = None

    def __getstate__(self) -> dict:
        """Pickled without what is built on first use (the compiled CPU and GPU engines, with
        their kept caches and locks, and the decoding tables): an unpickled copy builds its
        own. Before, a tokenizer that had encoded could not be pickled (the engine holds its
        kernels' module), as a ``DataLoader`` worker or a process pool needs it to be."""
        state = dict(self.__dict__)
        for key in ("_gpu_engines", "_fast_decoding"):
            state.pop(key, None)
        state["_cpu"], state["_cpu_reason"] = None, None
        return state

    def _cpu_engine(self):
        """The compiled CPU engine, or None when it does not serve this tokenizer."""
        if self._cpu is None and self._cpu_reason is None:
            from .fast_cpu import NotServed, cpu_engine_for

            try:
                self._cpu = cpu_engine_for(self.config, self._ref)
            except NotServed as e:
                self._cpu_reason = str(e)
        return self._cpu

    @property
    def cpu_engine_reason(self) -> Optional[str]:
        """Why ``device="cpu"`` runs the reference path for this tokenizer (None when compiled)."""
        self._cpu_engine()
        return self._cpu_reason

    # ---------------------------------------------------------------- loading
    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "Tokenizer":
        return cls(loader.load_file(path))

    @classmethod
    def from_str(cls, json_text: str) -> "Tokenizer":
        return cls(loader.load_str(json_text))

    @classmethod
    def from_pretrained(cls, name: str) -> "Tokenizer":
        """Resolve ``name`` through ``GPU_TOK_MODELS``, the HF cache, then the Hub."""
        from .resolve import resolve_tokenizer

        return cls.from_file(resolve_tokenizer(name))

    @classmethod
    def from_tiktoken(cls, name: str, path: Union[str, Path, None] = None,
                      special_tokens: Optional[Dict[str, int]] = None):
        """A tiktoken encoding (``cl100k_base``, ``o200k_base``, ...) read from its rank file.

        Returns a ``gpu_tok.TiktokenEncoding`` (tiktoken's ``Encoding`` API, not this
        class): see ``gpu_tok/tiktoken_encoding.py``.
        """
        from .tiktoken_encoding import from_tiktoken

        return from_tiktoken(name, path=path, special_tokens=special_tokens)

    # ------------------------------------------------- truncation and padding
    @property
    def truncation(self) -> Optional[dict]:
        """The truncation applied on encoding, in the reference's form
        (``tokenizers.Tokenizer.truncation``), or None. It starts as the file's."""
        t = self._ref.truncation
        return None if t is None else t.as_dict()

    @property
    def padding(self) -> Optional[dict]:
        """The padding applied on encoding (``tokenizers.Tokenizer.padding``), or None."""
        p = self._ref.padding
        return None if p is None else p.as_dict()

    def enable_truncation(self, max_length: int, stride: int = 0, strategy: str = "longest_first",
                          direction: str = "right") -> None:
        """Truncate every encoding to ``max_length`` tokens, the post-processor's included
        (``tokenizers.Tokenizer.enable_truncation``): what is cut off goes to
        ``Encoding.overflowing`` in windows repeating ``stride`` tokens."""
        from .cpu_ref import post_processors
        from .cpu_ref.truncation import check_stride

        max_length, stride = _unsigned(max_length), _unsigned(stride)
        if strategy not in ("longest_first", "only_first", "only_second"):
            raise ValueError(f"Unknown `strategy`: `{strategy}`. Use one of `longest_first`, `only_first`, or "
                             "`only_second`")
        if direction not in ("left", "right"):
            raise ValueError(f"Unknown `direction`: `{direction}`. Use one of `left` or `right`.")
        t = TruncationParams(max_length, stride, strategy, direction)
        check_stride(t, post_processors.added_tokens(self.config.post_processor, False))
        self._ref.truncation = t

    def no_truncation(self) -> None:
        """Encode without truncation (``tokenizers.Tokenizer.no_truncation``)."""
        self._ref.truncation = None

    def enable_padding(self, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0,
                       pad_token: str = "[PAD]", length: Optional[int] = None,
                       pad_to_multiple_of: Optional[int] = None) -> None:
        """Pad every encoding to ``length`` tokens, or a batch to its longest
        (``tokenizers.Tokenizer.enable_padding``), rounded up to ``pad_to_multiple_of``."""
        if direction not in ("left", "right"):
            raise ValueError(f"Unknown `direction`: `{direction}`. Use one of `left` or `right`")
        if not isinstance(pad_token, str):
            raise TypeError(f"'{type(pad_token).__name__}' is not an instance of 'str'")
        self._ref.padding = PaddingParams(
            None if length is None else _unsigned(length), direction,
            None if pad_to_multiple_of is None else _unsigned(pad_to_multiple_of),
            _unsigned(pad_id, 32), _unsigned(pad_type_id, 32), pad_token)

    def no_padding(self) -> None:
        """Encode without padding (``tokenizers.Tokenizer.no_padding``)."""
        self._ref.padding = None

    # --------------------------------------------------------------- encoding
    def encode(self, sequence: str, pair: Optional[str] = None, is_pretokenized: bool = False,
               add_special_tokens: bool = True) -> Encoding:
        """Encode one text (and optionally its pair), as ``tokenizers.Tokenizer.encode``;
        ``is_pretokenized``: lists of words, each encoded on its own (its word index, offsets
        within it), as the reference does.

        Ids first (decision record 0039): one ``str`` with no truncation or padding set, on
        the byte-level engine where none of the added tokens occurs in it (and, with an NFC
        normalizer, NFC leaves it as it is), or on the SentencePiece, WordPiece or Unigram
        engine: its ids are made at once (the engines' ``quick_ids``, 8-45 us), the masks,
        type ids and sequence ids from the post-processor's layout, the other fields when one
        is first read (``encoding.DeferredRow``), as below. Otherwise, a text (and its pair) the compiled
        engine serves is encoded by it, as ``encode_batch([...])[0]`` (the reference's
        ``encode`` is its batch of one: same truncation, post-processor and padding);
        anything else (pre-tokenized words, a value that is not a ``str``) takes the
        reference path, which raises the reference's errors, and so do texts of fewer than
        ``ENCODE_REF_CHARS`` characters in all (a call of the engine costs 80-100 us for a
        short text, the reference path 25-35 us for 5 characters and about as much as the
        engine's at 50-60: decision record 0038)."""
        if pair is None and not is_pretokenized:
            e = self._ids_first(sequence, add_special_tokens,
                                lambda: self._encode_one(sequence, None, add_special_tokens))
            if e is not None:
                return e
        return self._encode_one(sequence, pair, add_special_tokens, is_pretokenized)

    def _ids_first(self, text, add_special_tokens: bool, make) -> Optional[Encoding]:
        """The encoding of one ``str`` with its ids made now (the engine's ``quick_ids``), the
        masks, type ids and sequence ranges from the post-processor's layout, the rest by
        ``make()`` (the whole encoding) when first read (``encoding.DeferredRow``; decision
        0039); None where truncation or padding is set, or the engine has no ``quick_ids`` or
        leaves this text to the caller's path."""
        if type(text) is not str or self._ref.truncation is not None or self._ref.padding is not None:
            return None
        quick = getattr(self._cpu_engine(), "quick_ids", None)
        ids = quick(text, add_special_tokens) if quick is not None else None
        if ids is None:
            return None
        return Encoding._lazy(DeferredRow(ids, make, self._single_layout(add_special_tokens)), 0)

    def _single_layout(self, add_special_tokens: bool):
        """``post_processors.single_layout`` of the post-processor (without its offset trim,
        ``fast_cpu.layout_processor``): ``(type_id, layout)`` of the tokens it puts around one
        text's, or None."""
        from .cpu_ref import post_processors
        from .fast_cpu import layout_processor

        return post_processors.single_layout(layout_processor(self.config.post_processor)[0], add_special_tokens)

    def _encode_one(self, sequence, pair, add_special_tokens: bool, is_pretokenized: bool = False) -> Encoding:
        """``encode`` on the engine's batch path (long enough texts) or the reference path."""
        if (not is_pretokenized and type(sequence) is str and (pair is None or type(pair) is str)
                and len(sequence) + (0 if pair is None else len(pair)) >= ENCODE_REF_CHARS
                and self._cpu_engine() is not None):
            return self.encode_batch([sequence if pair is None else (sequence, pair)],
                                     add_special_tokens=add_special_tokens, device="cpu")[0]
        return self._ref.encode(sequence, pair, add_special_tokens, True, is_pretokenized)

    def encode_batch(self, inputs: Sequence[InputText], is_pretokenized: bool = False,
                     add_special_tokens: bool = True, device: str = "auto",
                     num_threads: Optional[int] = None) -> List[Encoding]:
        """Encode many texts (or ``(text, pair)`` tuples).

        ``device``: ``"ref"`` runs the plain-Python reference path; ``"cpu"`` and
        ``"auto"`` the compiled CPU engine (``gpu_tok/fast_cpu.py``) where it serves
        the tokenizer (``cpu_engine_reason`` says why not; then the reference path
        runs), with ``num_threads`` workers (default: all cores). Results are
        identical on every device. ``"cuda"`` runs the CPU engine here too: ``Encoding``
        objects need offsets, which the GPU engine does not compute (``encode_batch_ids``
        is the GPU's form). With truncation set, texts and pairs take the engine's encodings
        cut as the reference's early stop cuts them (``fast_cpu.truncated_batch``: the
        ``overflowing`` windows and word ids follow it); padding is applied to the engine's
        encodings. ``is_pretokenized``: each input a list of words (or a pair of such
        lists), on the reference path. A list of one text (a caller's batch of one, as
        ``transformers`` makes of one text) gives its encoding ids first, as ``encode`` does.
        """
        if type(inputs) is list and len(inputs) == 1 and not is_pretokenized and device != "ref":
            _check_device(device)
            text = inputs[0]
            e = self._ids_first(text, add_special_tokens,
                                lambda: self._batch_of_one(text, add_special_tokens, device, num_threads))
            if e is not None:
                return [e]
        with gc_paused():
            return self._encode_batch(inputs, is_pretokenized, add_special_tokens, device, num_threads)

    def _batch_of_one(self, text: str, add_special_tokens: bool, device: str, num_threads: Optional[int]) -> Encoding:
        """``encode_batch([text])[0]`` without the ids-first path."""
        with gc_paused():
            return self._encode_batch([text], False, add_special_tokens, device, num_threads)[0]

    def _encode_batch(self, inputs, is_pretokenized: bool, add_special_tokens: bool, device: str,
                      num_threads: Optional[int]) -> List[Encoding]:
        _check_device(device)
        if is_pretokenized:  # lists of words: the reference path
            return self._ref.encode_batch(inputs, add_special_tokens, True, True)
        if device != "ref":
            eng = self._cpu_engine()
            inputs = inputs if isinstance(inputs, list) else list(inputs)
            if eng is not None and self._ref.truncation is not None:  # cut as the reference's early stop
                from .fast_cpu import truncated_batch

                out = truncated_batch(eng, self._ref, inputs, add_special_tokens, num_threads)
            elif eng is not None:
                out = eng.encode_batch(inputs, add_special_tokens, num_threads)
            if eng is not None:
                if self._ref.padding is not None:
                    from .cpu_ref.truncation import pad_encodings

                    pad_encodings(out, self._ref.padding)
                return out
        return self._ref.encode_batch(inputs, add_special_tokens)

    def encode_batch_fast(self, inputs: Sequence[InputText], is_pretokenized: bool = False,
                          add_special_tokens: bool = True, device: str = "auto",
                          num_threads: Optional[int] = None) -> List[Encoding]:
        """``tokenizers.Tokenizer.encode_batch_fast``: ``encode_batch`` without offsets (tokens
        empty but the post-processor's, offsets (0, 0), no word ids), from the compiled
        engines where they serve the tokenizer (with truncation set, as ``encode_batch``)."""
        with gc_paused():
            return self._encode_batch_fast(inputs, is_pretokenized, add_special_tokens, device, num_threads)

    def _encode_batch_fast(self, inputs, is_pretokenized: bool, add_special_tokens: bool, device: str,
                           num_threads: Optional[int]) -> List[Encoding]:
        from .cpu_ref import post_processors
        from .cpu_ref.pipeline import without_offsets
        from .cpu_ref.truncation import pad_encodings
        from .encoding import EncodingRows, PairRows

        _check_device(device)
        inputs = inputs if isinstance(inputs, list) else list(inputs)  # (read more than once below)
        if is_pretokenized or device == "ref" or self._cpu_engine() is None:
            return self._ref.encode_batch(inputs, add_special_tokens, True, is_pretokenized, False)
        from .fast_cpu import layout_processor, split_pairs, truncated_batch

        eng = self._cpu_engine()
        if self._ref.truncation is not None:  # cut as the reference's early stop cuts them
            out = truncated_batch(eng, self._ref, inputs, add_special_tokens, num_threads, offsets=False)
            if self._ref.padding is not None:
                pad_encodings(out, self._ref.padding)
            return out
        firsts, seconds, pair_at = split_pairs(inputs)
        # (a processor that trims offsets trims nothing here: every offset is (0, 0))
        pp = layout_processor(self.config.post_processor)[0]
        single = post_processors.single_layout(pp, add_special_tokens) if len(seconds) < len(firsts) else None
        pair = post_processors.pair_layout(pp, add_special_tokens, 0) if seconds else None
        if (single is not None or len(seconds) == len(firsts)) and (pair is not None or not seconds):
            # lazy encodings (encoding.EncodingRows, PairRows)
            ids, rs = eng.encode_ids(firsts, False, num_threads)
            a = EncodingRows(ids, None, None, None, None, rs, 0)
            laid = a.with_layout(*single) if single is not None else None
            if seconds:
                ids, rs = eng.encode_ids(seconds, False, num_threads)
                both = PairRows(a, EncodingRows(ids, None, None, None, None, rs, 0), pair)
            out = [Encoding._lazy(laid, d) if j < 0 else Encoding._lazy(both, both.add(d, j))
                   for d, j in enumerate(pair_at)]
            if self._ref.padding is not None:
                pad_encodings(out, self._ref.padding)
            return out

        def rows(texts):
            if not texts:
                return []
            return id_lists(*eng.encode_ids(texts, False, num_threads))

        a, b = rows(firsts), rows(seconds)
        out = [self._ref.post_process(without_offsets(Encoding(a[i])),
                                      None if j < 0 else without_offsets(Encoding(b[j])), add_special_tokens, False)
               for i, j in enumerate(pair_at)]
        if self._ref.padding is not None:
            pad_encodings(out, self._ref.padding)
        return out

    def encode_batch_ids(self, texts: Iterable[str], add_special_tokens: bool = True,
                         device: str = "auto", num_threads: Optional[int] = None,
                         return_numpy: bool = False) -> TokenBatch:
        """Encode many texts into one flat ``TokenBatch`` (ids + row_splits): the ids
        ``encode_batch`` gives, truncation and padding included.

        ``device`` and ``num_threads`` as in ``encode_batch``, except ``"cuda"``: the GPU
        engine (``gpu_tok/gpu_engine.py``; ``DeviceNotAvailable`` without a usable device,
        ``NotServedOnDevice`` for a tokenizer it does not serve), and ``"auto"``: the GPU
        engine when a CUDA device is usable and serves this tokenizer, else the CPU
        engine. On the GPU the arrays are CuPy arrays (DLPack-convertible) unless
        ``return_numpy`` (or CuPy is not installed, or under the Numba simulator).
        """
        _check_device(device)
        texts = text_list(texts)
        trunc, pad = self._ref.truncation, self._ref.padding
        if trunc is None and pad is None:
            got = self._batch_ids(texts, add_special_tokens, device, num_threads, return_numpy)
            return TokenBatch(*got) if got is not None else self._ref_batch_ids(texts, add_special_tokens)
        from . import ids_post
        from .cpu_ref import post_processors
        from .fast_cpu import template_ids

        n_added = post_processors.added_tokens(self.config.post_processor, False)
        if device == "ref" or ids_post.wraps(trunc, n_added, add_special_tokens):
            return self._ref_batch_ids(texts, add_special_tokens)
        got = self._batch_ids(texts, False, device, num_threads, return_numpy)
        if got is None:
            return self._ref_batch_ids(texts, add_special_tokens)
        ids, rs = got
        on_device = hasattr(ids, "get")
        if on_device:
            ids, rs = ids.get(), rs.get()
        prefix, suffix = template_ids(self.config, self._ref)
        ids, rs = ids_post.apply(ids, rs, prefix, suffix, trunc, pad, n_added, add_special_tokens)
        if on_device:
            from .gpu_engine import _cupy

            ids, rs = _cupy().asarray(ids), _cupy().asarray(rs)
        return TokenBatch(ids, rs)

    def _batch_ids(self, texts: List[str], add_special_tokens: bool, device: str,
                   num_threads: Optional[int], return_numpy: bool):
        """``(ids, row_splits)`` from the GPU or CPU engine (no truncation or padding), or
        None where neither serves (or ``device="ref"``)."""
        if device in ("cuda", "auto"):
            from .gpu_engine import tokenizer_batch_ids

            got = tokenizer_batch_ids(self, texts, add_special_tokens, device, num_threads, return_numpy)
            if got is not None:
                return got
        if device != "ref":
            eng = self._cpu_engine()
            if eng is not None:
                if len(texts) == 1 and type(texts[0]) is str and len(texts[0]) <= _ONE_TEXT_CHARS:
                    from .fast_cpu import one_text_ids  # one short text: without the batch set-up

                    got = one_text_ids(eng, texts[0], add_special_tokens)
                    if got is not None:
                        return got
                return eng.encode_ids(texts, add_special_tokens, num_threads)
        return None

    def _ref_batch_ids(self, texts: List[str], add_special_tokens: bool) -> TokenBatch:
        rows = [e.ids for e in self._ref.encode_batch(texts, add_special_tokens)]
        splits = np.zeros(len(rows) + 1, dtype=np.int64)
        if rows:
            np.cumsum([len(r) for r in rows], out=splits[1:])
        ids = np.fromiter((i for r in rows for i in r), dtype=np.int32, count=int(splits[-1]))
        return TokenBatch(ids, splits)

    def post_process(self, encoding: Encoding, pair: Optional[Encoding] = None,
                     add_special_tokens: bool = True) -> Encoding:
        """``tokenizers.Tokenizer.post_process``: truncation, the post-processor and padding
        applied to encodings made without special tokens (new objects; the arguments are
        left as they are)."""
        return self._ref.post_process(encoding.copy(), None if pair is None else pair.copy(), add_special_tokens)

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        """How many tokens the post-processor adds (``tokenizers.Tokenizer.num_special_tokens_to_add``)."""
        from .cpu_ref import post_processors

        return post_processors.added_tokens(self.config.post_processor, is_pair)

    # --------------------------------------------------------------- decoding
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        fast = self._decoding()
        text = fast.decode(ids, skip_special_tokens) if fast is not None else None
        return text if text is not None else self._ref.decode(ids, skip_special_tokens)

    def decode_batch(self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True) -> List[str]:
        return [self.decode(ids, skip_special_tokens) for ids in sequences]

    def _decoding(self):
        """The decoder's tables (``fast_decode``), made on first use; None for a decoder it
        does not serve (the reference path decodes)."""
        d = self.__dict__.get("_fast_decoding", False)
        if d is False:
            from .fast_decode import TableDecoding

            d = TableDecoding(self._ref) if TableDecoding.serves(self._ref) else None
            self._fast_decoding = d
        return d

    # ------------------------------------------------------------------ vocab
    def add_tokens(self, tokens) -> int:
        """Add tokens (``str``, normalized and not special, or ``AddedToken``) to the added
        vocabulary, as ``tokenizers.Tokenizer.add_tokens``; returns how many were added."""
        return self._add([_added_token(t, False) for t in _token_list(tokens)])

    def add_special_tokens(self, tokens) -> int:
        """``tokenizers.Tokenizer.add_special_tokens``: as ``add_tokens``, every token
        special (a ``str`` is also not normalized)."""
        return self._add([_added_token(t, True) for t in _token_list(tokens)])

    def _add(self, tokens) -> int:
        n = self._ref.added.add_tokens(tokens)
        # the compiled engines were built from the added vocabulary: built again on next use
        self._cpu = None
        self._cpu_reason = None
        self.__dict__.pop("_gpu_engines", None)
        self.__dict__.pop("_fast_decoding", None)  # the decoding tables too
        return n

    def token_to_id(self, token: str) -> Optional[int]:
        return self._ref.token_to_id(token)

    def id_to_token(self, id: int) -> Optional[str]:
        return self._ref.id_to_token(id)

    def get_vocab(self, with_added_tokens: bool = True) -> Dict[str, int]:
        return self._ref.get_vocab(with_added_tokens)

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        return self._ref.get_vocab_size(with_added_tokens)

    def get_added_tokens_decoder(self) -> Dict[int, AddedToken]:
        return dict(sorted(self._ref.added.map_r.items()))
