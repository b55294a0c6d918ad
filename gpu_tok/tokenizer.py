"""The public ``Tokenizer`` (HF ``tokenizers`` names and conventions)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from . import loader
from .config import AddedToken, TokenizerConfig
from .cpu_ref import RefPipeline
from .encoding import Encoding
from .errors import UnsupportedComponent

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
        rs = self.row_splits
        return [self.ids[rs[i]:rs[i + 1]].tolist() for i in range(len(rs) - 1)]

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


def _snake(name: str) -> str:
    """``LongestFirst`` -> ``longest_first`` (the reference's Python spelling)."""
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _check_device(device: str) -> str:
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    return device


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
        self._truncation = cfg.truncation  # the file's, refused until no_truncation()
        self._padding = cfg.padding  # likewise, until no_padding()

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
        """The file's truncation in the reference's form (``tokenizers.Tokenizer.truncation``),
        or None. gpu_tok does not apply it: encoding raises ``UnsupportedComponent`` while it
        is set; ``no_truncation()`` clears it, as in the reference."""
        t = self._truncation
        if t is None:
            return None
        return {"max_length": t.get("max_length"), "stride": t.get("stride", 0),
                "strategy": _snake(t.get("strategy", "LongestFirst")), "direction": t.get("direction", "Right").lower()}

    @property
    def padding(self) -> Optional[dict]:
        """The file's padding in the reference's form (``tokenizers.Tokenizer.padding``), or
        None; not applied, as ``truncation``."""
        p = self._padding
        if p is None:
            return None
        strategy = p.get("strategy", "BatchLongest")
        return {"length": strategy.get("Fixed") if isinstance(strategy, dict) else None,
                "pad_to_multiple_of": p.get("pad_to_multiple_of"), "pad_id": p.get("pad_id", 0),
                "pad_token": p.get("pad_token", "[PAD]"), "pad_type_id": p.get("pad_type_id", 0),
                "direction": p.get("direction", "Right").lower()}

    def no_truncation(self) -> None:
        """Encode without the file's truncation (``tokenizers.Tokenizer.no_truncation``)."""
        self._truncation = None

    def no_padding(self) -> None:
        """Encode without the file's padding (``tokenizers.Tokenizer.no_padding``)."""
        self._padding = None

    def _refuse_unapplied(self) -> None:
        for key, value, call in (("truncation", self._truncation, "no_truncation()"),
                                 ("padding", self._padding, "no_padding()")):
            if value is not None:
                raise UnsupportedComponent(
                    key, dict(value), f"{key} stored in the file is not applied by gpu_tok yet; call {call} to "
                    "encode without it (the reference's ids after the same call)")

    # --------------------------------------------------------------- encoding
    def encode(self, sequence: str, pair: Optional[str] = None, is_pretokenized: bool = False,
               add_special_tokens: bool = True) -> Encoding:
        """Encode one text (and optionally its pair), as ``tokenizers.Tokenizer.encode``."""
        self._refuse_unapplied()
        if is_pretokenized:
            raise NotImplementedError("is_pretokenized=True (lists of words) is not supported yet")
        return self._ref.encode(sequence, pair, add_special_tokens)

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
        is the GPU's form).
        """
        _check_device(device)
        self._refuse_unapplied()
        if is_pretokenized:
            raise NotImplementedError("is_pretokenized=True (lists of words) is not supported yet")
        if device != "ref":
            eng = self._cpu_engine()
            if eng is not None:
                return eng.encode_batch(inputs if isinstance(inputs, list) else list(inputs),
                                        add_special_tokens, num_threads)
        return self._ref.encode_batch(inputs, add_special_tokens)

    def encode_batch_ids(self, texts: Iterable[str], add_special_tokens: bool = True,
                         device: str = "auto", num_threads: Optional[int] = None,
                         return_numpy: bool = False) -> TokenBatch:
        """Encode many texts into one flat ``TokenBatch`` (ids + row_splits).

        ``device`` and ``num_threads`` as in ``encode_batch``, except ``"cuda"``: the GPU
        engine (``gpu_tok/gpu_engine.py``; ``DeviceNotAvailable`` without a usable device,
        ``NotServedOnDevice`` for a tokenizer it does not serve), and ``"auto"``: the GPU
        engine when a CUDA device is usable and serves this tokenizer, else the CPU
        engine. On the GPU the arrays are CuPy arrays (DLPack-convertible) unless
        ``return_numpy`` (or CuPy is not installed, or under the Numba simulator).
        """
        _check_device(device)
        self._refuse_unapplied()
        if device in ("cuda", "auto"):
            from .gpu_engine import tokenizer_batch_ids

            texts = texts if isinstance(texts, list) else list(texts)
            got = tokenizer_batch_ids(self, texts, add_special_tokens, device, num_threads, return_numpy)
            if got is not None:
                return TokenBatch(*got)
        if device != "ref":
            eng = self._cpu_engine()
            if eng is not None:
                ids, rs = eng.encode_ids(texts, add_special_tokens, num_threads)
                return TokenBatch(ids, rs)
        rows = [self._ref.encode(t, None, add_special_tokens).ids for t in texts]
        splits = np.zeros(len(rows) + 1, dtype=np.int64)
        if rows:
            np.cumsum([len(r) for r in rows], out=splits[1:])
        ids = np.fromiter((i for r in rows for i in r), dtype=np.int32, count=int(splits[-1]))
        return TokenBatch(ids, splits)

    # --------------------------------------------------------------- decoding
    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._ref.decode(ids, skip_special_tokens)

    def decode_batch(self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True) -> List[str]:
        return [self._ref.decode(ids, skip_special_tokens) for ids in sequences]

    # ------------------------------------------------------------------ vocab
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
