"""tiktoken encodings (``*.tiktoken`` rank files), exactly as ``tiktoken==0.14.0`` encodes them.

>>> import gpu_tok
>>> enc = gpu_tok.Tokenizer.from_tiktoken("cl100k_base", path="cl100k_base.tiktoken")
>>> enc.encode("hello world")
[15339, 1917]

``TiktokenEncoding`` has tiktoken's ``Encoding`` API names (``encode``,
``encode_ordinary``, ``encode_batch``, ``decode``, ``decode_bytes``,
``decode_single_token_bytes``, ``n_vocab``, ``eot_token``, ...) plus
``encode_with_offsets`` and ``encode_batch_ids``. It never imports tiktoken.

How each rule was settled (by running tiktoken) is in docs/decisions/0014-0017:

- **Pre-tokenization** (0014): ``pat_str`` is translated from the Rust
  ``fancy-regex`` dialect by ``cpu_ref.rust_regex`` with classes measured from
  tiktoken on every code point.
- **BPE** (0015): the same ``cpu_ref.models.BPEModel`` that serves
  ``tokenizer.json`` files, with a byte-level vocabulary (each byte spelled
  through ``byte_level.BYTE_TO_CHAR``), ``ignore_merges`` (tiktoken looks a
  whole piece up first) and a merge table in which the pair (a, b) has the rank
  of the token ``a + b``: tiktoken merges the adjacent pair whose concatenated
  bytes have the lowest rank, leftmost on ties, and the rank is the new id.
- **Special tokens** (0016): the Python-side ``disallowed_special`` check and
  the allowed-token search, with tiktoken's exception types and messages.
- **Offsets** (0017): derived from the bytes of each token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import AbstractSet, Collection, Dict, Iterable, List, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import regex

from . import config as C
from ._util import _ONE_TEXT_CHARS, id_lists, text_list
from .cpu_ref.pipeline import _token_id
from .cpu_ref.byte_level import BYTE_TO_CHAR
from .cpu_ref.models import BPEModel
from .cpu_ref.rust_regex import compile_tiktoken_pattern
from .fast_decode import ByteTable, table_join, token_items

_DATA = Path(__file__).resolve().parent / "data" / "tiktoken_encodings.json"

# bytes.decode("latin-1").translate(_TO_BYTE_CHARS) spells bytes as the byte-level alphabet
_TO_BYTE_CHARS = {b: BYTE_TO_CHAR[b] for b in range(256)}


def _byte_chars(b: bytes) -> str:
    return b.decode("latin-1").translate(_TO_BYTE_CHARS)


# --------------------------------------------------------------------------- rank files

def load_tiktoken_bpe(path: Union[str, os.PathLike]) -> Dict[bytes, int]:
    """Read a ``.tiktoken`` rank file: one ``<base64 token> <rank>`` per line."""
    ranks: Dict[bytes, int] = {}
    data = Path(path).read_bytes()
    for line in data.splitlines():
        if not line:
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError("expected two fields")
            ranks[base64.b64decode(parts[0], validate=True)] = int(parts[1])
        except Exception as e:
            raise ValueError(f"Error parsing line {line!r} in {path}") from e
    return ranks


@lru_cache(maxsize=1)
def _named_table() -> dict:
    return json.loads(_DATA.read_text(encoding="utf-8"))


def named_encodings() -> List[str]:
    """Names ``Tokenizer.from_tiktoken`` knows (as tiktoken 0.14.0 defines them)."""
    return list(_named_table()["encodings"])


def named_definition(name: str) -> dict:
    """``pat_str``, ``special_tokens`` (dict), ``explicit_n_vocab``, rank file name/URL/SHA-256."""
    table = _named_table()["encodings"]
    if name not in table:
        raise ValueError(
            f"Unknown tiktoken encoding {name!r}; known: {', '.join(table)}. "
            "Build a custom one with gpu_tok.TiktokenEncoding(name, pat_str=..., "
            "mergeable_ranks=..., special_tokens=...)"
        )
    d = dict(table[name])
    d["special_tokens"] = {s: i for s, i in d["special_tokens"]}
    return d


def _tiktoken_cache_candidates(url: str) -> List[Path]:
    """Where tiktoken itself caches a downloaded rank file (``read_file_cached``)."""
    dirs = []
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]))
            break
    else:
        dirs.append(Path(tempfile.gettempdir()) / "data-gym-cache")
    key = hashlib.sha1(url.encode()).hexdigest()
    return [d / key for d in dirs]


def find_rank_file(name: str) -> Path:
    """The rank file of a named encoding in tiktoken's cache (checked against its SHA-256)."""
    d = named_definition(name)
    tried = []
    for cand in _tiktoken_cache_candidates(d["rank_file_url"]):
        tried.append(str(cand))
        if cand.is_file() and hashlib.sha256(cand.read_bytes()).hexdigest() == d["rank_file_sha256"]:
            return cand
    raise FileNotFoundError(
        f"no rank file for {name!r}: pass path=<{d['rank_file']}> "
        f"(looked in tiktoken's cache: {', '.join(tried)}; gpu_tok downloads nothing)"
    )


# --------------------------------------------------------------------------- BPE tables

class _ConcatRankMerges:
    """Merge table of a tiktoken encoding, in the shape ``BPEModel`` expects.

    ``get((a, b))`` is ``(rank, rank)`` of the token whose bytes are
    ``bytes(a) + bytes(b)`` (tiktoken ranks are also the ids), else ``None``.
    Computed on demand: listing every pair of o200k_base would take millions of
    entries.
    """

    __slots__ = ("_id_bytes", "_ranks")

    def __init__(self, id_bytes: Dict[int, bytes], ranks: Dict[bytes, int]):
        self._id_bytes = id_bytes
        self._ranks = ranks

    def get(self, pair: Tuple[int, int]):
        ib = self._id_bytes
        r = self._ranks.get(ib[pair[0]] + ib[pair[1]])
        return None if r is None else (r, r)


# --------------------------------------------------------------------------- special tokens

@lru_cache(maxsize=128)
def _literal_alternation(tokens: frozenset):
    """Leftmost occurrence of any of ``tokens``; at one position the longest wins."""
    return regex.compile("|".join(regex.escape(t) for t in sorted(tokens, key=lambda t: (-len(t), t))))


def raise_disallowed_special_token(token: str):
    # tiktoken's exception type and message, word for word (measured: docs/decisions/0016)
    raise ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )


def _repair_text(text: str) -> str:
    """What tiktoken encodes when a ``str`` is not valid UTF-8 (it holds surrogates):
    surrogate pairs become their character, lone surrogates U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _valid_text(text: str) -> str:
    if not isinstance(text, str):  # tiktoken's TypeError (its core's message)
        raise TypeError("'None' is not an instance of 'str'" if text is None
                        else f"'{type(text).__name__}' object is not an instance of 'str'")
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _repair_text(text)


def _checked_text(disallowed_special):
    """``_valid_text`` for a batch with disallowed strings: a value that is not a ``str`` meets
    tiktoken's disallowed check first, and raises its TypeError (``pack``'s check)."""

    def check(text):
        if not isinstance(text, str):
            _literal_alternation(frozenset(disallowed_special)).search(text)
        return _valid_text(text)

    return check


# --------------------------------------------------------------------------- the encoding

class TiktokenEncoding:
    """One tiktoken encoding: tiktoken's ``Encoding`` API, gpu_tok's engine.

    Construct like ``tiktoken.Encoding(name, pat_str=..., mergeable_ranks=...,
    special_tokens=..., explicit_n_vocab=None)``, or get a named one with
    ``gpu_tok.Tokenizer.from_tiktoken(name, path=...)``.

    Refused at construction (tiktoken panics or gives answers that depend on
    its hash-map order): duplicate ranks, ranks lacking one of the 256 single
    bytes, an empty special token, a special token that is a prefix of another,
    and pattern constructs ``cpu_ref.rust_regex`` does not reproduce.
    """

    def __init__(self, name: str, *, pat_str: str, mergeable_ranks: Dict[bytes, int],
                 special_tokens: Dict[str, int], explicit_n_vocab: Optional[int] = None,
                 _shared_special_ids: Optional[Dict[int, str]] = None):
        self.name = name
        self._pat_str = pat_str
        self._mergeable_ranks = mergeable_ranks
        self._special_tokens = special_tokens
        self.max_token_value = max(max(mergeable_ranks.values()), max(special_tokens.values(), default=0))
        if explicit_n_vocab:
            assert len(mergeable_ranks) + len(special_tokens) == explicit_n_vocab
            assert self.max_token_value == explicit_n_vocab - 1
        self._special_token_values = set(special_tokens.values())

        # ---- refusals (tiktoken panics, or its answer depends on hash order)
        id_bytes: Dict[int, bytes] = {}
        for b, r in mergeable_ranks.items():
            if r in id_bytes:
                raise ValueError(f"mergeable_ranks: rank {r} is given to both {id_bytes[r]!r} and {b!r} "
                                 "(tiktoken panics: 'Encoder and decoder must be of equal length')")
            id_bytes[r] = b
        missing = [b for b in range(256) if bytes([b]) not in mergeable_ranks]
        if missing:
            raise ValueError(f"mergeable_ranks lacks the single-byte tokens {missing[:8]}"
                             f"{' ...' if len(missing) > 8 else ''}: gpu_tok requires all 256 "
                             "(tiktoken panics on text that needs a missing one)")
        if "" in special_tokens:
            raise ValueError("special_tokens: the empty string is not supported as a special token")
        specials_sorted = sorted(special_tokens)
        for a, b in zip(specials_sorted, specials_sorted[1:]):
            if b.startswith(a):
                raise ValueError(
                    f"special_tokens: {a!r} is a prefix of {b!r}; which one tiktoken matches "
                    "depends on its hash-map order, so gpu_tok refuses this set")

        # ---- pre-tokenizer (raises UnsupportedPattern, a ValueError, like tiktoken's ValueError)
        self._pattern = compile_tiktoken_pattern(pat_str)

        # ---- the BPE engine: the one BPEModel, byte-level vocab, whole-piece lookup first
        self._ranks = mergeable_ranks
        vocab = {_byte_chars(b): r for b, r in mergeable_ranks.items()}
        cfg = C.BPE(vocab=vocab, merges=(), ignore_merges=True, path="tiktoken")
        self._bpe = BPEModel(cfg, merges=_ConcatRankMerges(id_bytes, mergeable_ranks))

        # ---- decoding
        self._decoder = id_bytes
        self._special_decoder: Dict[int, bytes] = {}
        self._ambiguous_special_ids: Dict[int, List[str]] = {}
        by_id: Dict[int, List[str]] = {}
        for s, i in special_tokens.items():
            by_id.setdefault(i, []).append(s)
        shared = _shared_special_ids or {}
        for i, ss in by_id.items():
            if len(ss) == 1:
                self._special_decoder[i] = ss[0].encode("utf-8")
            elif i in shared and shared[i] in ss:
                self._special_decoder[i] = shared[i].encode("utf-8")
            else:
                self._ambiguous_special_ids[i] = ss
        self._special_rx = _literal_alternation(frozenset(special_tokens)) if special_tokens else None
        self._cpu_engine = None
        self._cpu_reason: Optional[str] = None
        self._all_specials = frozenset(special_tokens)
        self._play: Dict[tuple, frozenset] = {}  # _in_play's sets, per (allowed, disallowed)

    def __getstate__(self) -> dict:
        """Pickled without what is built on first use (the compiled CPU and GPU engines, the
        byte table), as ``tiktoken.Encoding`` pickles: an unpickled copy builds its own (an
        encoding that had encoded could not be pickled before: the engine holds its
        kernels' module)."""
        state = dict(self.__dict__)
        for key in ("_gpu_engines", "_bytes_tab"):
            state.pop(key, None)
        state["_cpu_engine"], state["_cpu_reason"] = None, None
        return state

    def __repr__(self) -> str:
        return f"<TiktokenEncoding {self.name!r}>"

    # ------------------------------------------------------------------ properties
    @property
    def eot_token(self) -> int:
        return self._special_tokens["<|endoftext|>"]

    @property
    def special_tokens_set(self) -> set:
        return set(self._special_tokens)

    @property
    def n_vocab(self) -> int:
        return self.max_token_value + 1

    def is_special_token(self, token: int) -> bool:
        assert isinstance(token, int)
        return token in self._special_token_values

    def token_byte_values(self) -> List[bytes]:
        return sorted(self._ranks)

    # ------------------------------------------------------------------ core
    def _piece_ids(self, piece: str) -> List[int]:
        toks = self._bpe.tokenize(_byte_chars(piece.encode("utf-8")))
        return [t.id for t in toks]

    def _encode_ordinary_segment(self, text: str, out: List[int]) -> None:
        piece_ids = self._piece_ids
        for m in self._pattern.finditer(text):
            piece = m.group()
            if not piece:
                raise ValueError(
                    f"pat_str matched the empty string at {m.start()} (tiktoken panics on an empty piece)")
            out.extend(piece_ids(piece))

    def _resolve_special(self, allowed_special, disallowed_special):
        if allowed_special == "all":
            allowed_special = self.special_tokens_set
        if disallowed_special == "all":
            disallowed_special = self.special_tokens_set - allowed_special
        if disallowed_special and not isinstance(disallowed_special, frozenset):
            disallowed_special = frozenset(disallowed_special)
        return allowed_special, disallowed_special

    def _in_play(self, allowed_special, disallowed_special) -> frozenset:
        """The strings ``encode`` treats other than as ordinary text: the allowed special tokens
        and the disallowed strings (``_resolve_special``'s), one frozenset per pair (kept for
        the defaults: ``encode(text)`` in a loop makes none)."""
        key = (allowed_special, disallowed_special)
        try:
            got = self._play.get(key)
        except TypeError:  # an unhashable set
            got, key = None, None
        if got is None:
            allowed = frozenset(allowed_special) & frozenset(self._special_tokens) if allowed_special else frozenset()
            got = allowed | (frozenset(disallowed_special) if disallowed_special else frozenset())
            if key is not None and len(self._play) < 64:
                self._play[key] = got
        return got

    def _encode_checked(self, text: str, allowed_special, disallowed_special) -> List[int]:
        if disallowed_special:
            m = _literal_alternation(disallowed_special).search(text)
            if m is not None:
                raise_disallowed_special_token(m.group())
        text = _valid_text(text)
        out: List[int] = []
        rx = self._special_rx
        allowed = set(allowed_special) & set(self._special_tokens) if allowed_special else set()
        if rx is None or not allowed:
            self._encode_ordinary_segment(text, out)
            return out
        start = 0
        while True:
            find = start
            m = None
            while True:
                m = rx.search(text, find)
                if m is None or m.group() in allowed:
                    break
                find = m.start() + 1
            end = len(text) if m is None else m.start()
            self._encode_ordinary_segment(text[start:end], out)
            if m is None:
                return out
            out.append(self._special_tokens[m.group()])
            start = m.end()

    # ------------------------------------------------------------------ encoding API
    # ------------------------------------------------------------------ compiled engine
    def _cpu(self):
        """The compiled CPU engine (``gpu_tok/fast_cpu.py``), or None where it does not serve
        this encoding (then the reference path runs; ``cpu_engine_reason`` says why)."""
        if self._cpu_engine is None and self._cpu_reason is None:
            from .fast_cpu import CpuTiktokenEngine, NotServed

            try:
                self._cpu_engine = CpuTiktokenEngine(self._pat_str, self._decoder, self._special_tokens)
            except NotServed as e:
                self._cpu_reason = str(e)
        return self._cpu_engine

    @property
    def cpu_engine_reason(self) -> Optional[str]:
        self._cpu()
        return self._cpu_reason

    def _fast_batch(self, texts: Sequence[str], allowed_special, disallowed_special, num_threads):
        """``(ids, row_splits)`` from the compiled engine, or None (then the caller runs the reference path)."""
        eng = self._cpu()
        if eng is None:
            return None
        texts = text_list(texts)
        with eng.text.hold() as kept:  # the packed text lives only in this block
            check = _checked_text(disallowed_special) if disallowed_special else _valid_text
            data, offsets, hint = eng.pack(texts, check, num_threads, kept)
            if disallowed_special and eng.contains_any(data, offsets, frozenset(disallowed_special), hint).any():
                return None  # the reference path raises tiktoken's error for the first such text
            allowed = frozenset(allowed_special) & frozenset(self._special_tokens) if allowed_special else frozenset()
            return eng.encode_ids(data, offsets, allowed, num_threads, hint)

    @staticmethod
    def _rows(ids: np.ndarray, rs: np.ndarray) -> List[List[int]]:
        return id_lists(ids, rs)

    # ------------------------------------------------------------------ encoding API
    def encode_ordinary(self, text: str) -> List[int]:
        """Ids of ``text`` with special tokens treated as ordinary text."""
        eng = self._cpu()
        if eng is not None:
            ids = eng.ordinary_ids(text, frozenset())  # (None: a lone surrogate, not a str)
            if ids is not None:
                return ids
        got = self._fast_batch([text], frozenset(), frozenset(), 1)
        if got is not None:
            return got[0].tolist()
        out: List[int] = []
        self._encode_ordinary_segment(_valid_text(text), out)
        return out

    def encode(self, text: str, *, allowed_special: Union[Literal["all"], AbstractSet[str]] = frozenset(),
               disallowed_special: Union[Literal["all"], Collection[str]] = "all") -> List[int]:
        """tiktoken's ``encode``: text equal to a disallowed special token raises ``ValueError``."""
        every = isinstance(disallowed_special, str) and disallowed_special == "all"
        allowed_special, disallowed_special = self._resolve_special(allowed_special, disallowed_special)
        if not isinstance(text, str):  # the disallowed check first, as tiktoken's (its TypeError)
            return self._encode_checked(text, allowed_special, disallowed_special)
        eng = self._cpu()
        if eng is not None:  # text in which no special token in play occurs is ordinary text
            # (with disallowed_special="all", every special token is allowed or disallowed)
            play = self._all_specials if every else self._in_play(allowed_special, disallowed_special)
            ids = eng.ordinary_ids(text, play)
            if ids is not None:
                return ids
        got = self._fast_batch([text], allowed_special, disallowed_special, 1)
        if got is not None:
            return got[0].tolist()
        return self._encode_checked(text, allowed_special, disallowed_special)

    def encode_to_numpy(self, text: str, *, allowed_special=frozenset(), disallowed_special="all") -> np.ndarray:
        return np.asarray(self.encode(text, allowed_special=allowed_special,
                                      disallowed_special=disallowed_special), dtype=np.uint32)

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8) -> List[List[int]]:
        """tiktoken's batch API on the compiled engine (``num_threads`` capped at the cores)."""
        got = self._fast_batch(text, frozenset(), frozenset(), num_threads)
        if got is not None:
            return self._rows(*got)
        return [self.encode_ordinary(t) for t in text]

    def encode_batch(self, text: Sequence[str], *, num_threads: int = 8,
                     allowed_special=frozenset(), disallowed_special="all") -> List[List[int]]:
        allowed_special, disallowed_special = self._resolve_special(allowed_special, disallowed_special)
        if not isinstance(disallowed_special, frozenset):
            disallowed_special = frozenset(disallowed_special)
        got = self._fast_batch(text, allowed_special, disallowed_special, num_threads)
        if got is not None:
            return self._rows(*got)
        return [self._encode_checked(t, allowed_special, disallowed_special) for t in text]

    def encode_batch_ids(self, texts: Iterable[str], *, allowed_special=frozenset(),
                         disallowed_special="all", num_threads: Optional[int] = None, device: str = "cpu",
                         return_numpy: bool = False):
        """All ids flat plus row splits (``gpu_tok.TokenBatch``), the bulk form.

        ``device="ref"`` runs the plain-Python reference path; ``"cpu"`` the compiled
        engine (``num_threads`` workers, default all cores); ``"cuda"`` the GPU engine
        (CuPy arrays unless ``return_numpy``, as ``Tokenizer.encode_batch_ids``); ``"auto"``
        the GPU engine where a device is usable, else the compiled engine.
        """
        from .tokenizer import TokenBatch, _check_device

        _check_device(device)
        texts = text_list(texts)
        allowed_special, disallowed_special = self._resolve_special(allowed_special, disallowed_special)
        if device in ("cuda", "auto"):
            from .gpu_engine import tiktoken_batch_ids

            got = tiktoken_batch_ids(self, texts, allowed_special, disallowed_special, device, num_threads,
                                     return_numpy)
            if got is not None:
                return TokenBatch(*got)
        if device != "ref":
            if len(texts) == 1 and type(texts[0]) is str and len(texts[0]) <= _ONE_TEXT_CHARS:
                eng = self._cpu()  # one short text: as encode, where no special token in play occurs
                ids = eng.ordinary_ids(texts[0], self._in_play(allowed_special, disallowed_special)) if eng else None
                if ids is not None:
                    return TokenBatch(np.array(ids, np.int32), np.array((0, len(ids)), np.int64))
            got = self._fast_batch(texts, allowed_special, disallowed_special, num_threads)
            if got is not None:
                return TokenBatch(*got)
        rows = [self._encode_checked(t, allowed_special, disallowed_special) for t in texts]
        splits = np.zeros(len(rows) + 1, dtype=np.int64)
        if rows:
            np.cumsum([len(r) for r in rows], out=splits[1:])
        ids = np.fromiter((i for r in rows for i in r), dtype=np.int32, count=int(splits[-1]))
        return TokenBatch(ids, splits)

    def encode_single_token(self, text_or_bytes: Union[str, bytes]) -> int:
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        r = self._ranks.get(text_or_bytes)
        if r is not None:
            return r
        try:
            s = text_or_bytes.decode("utf-8")
        except UnicodeDecodeError:
            s = None
        if s is not None and s in self._special_tokens:
            return self._special_tokens[s]
        raise KeyError(text_or_bytes)

    def encode_with_offsets(self, text: str, *, allowed_special=frozenset(), disallowed_special="all"
                            ) -> Tuple[List[int], List[Tuple[int, int]], List[Tuple[int, int]]]:
        """``(ids, char_offsets, byte_offsets)``, both offsets derived from each token's bytes.

        ``byte_offsets[k]`` is the exact span of token ``k`` in ``text.encode("utf-8")``
        (they tile the text). ``char_offsets[k]`` covers every character that has a byte
        in the token: a token that begins or ends inside a multi-byte character covers
        the whole character (several tokens can then share a span). When ``text`` holds
        surrogates, offsets refer to the repaired text tiktoken encodes (see
        ``_repair_text``).
        """
        ids = self.encode(text, allowed_special=allowed_special, disallowed_special=disallowed_special)
        return (ids,) + self._offsets(_valid_text(text), ids)

    def _offsets(self, text: str, ids: List[int]):
        # byte -> index of the character holding it
        char_of_byte: List[int] = []
        for ci, ch in enumerate(text):
            o = ord(ch)
            char_of_byte.extend([ci] * (1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4))
        byte_offsets: List[Tuple[int, int]] = []
        char_offsets: List[Tuple[int, int]] = []
        pos = 0
        for i in ids:
            n = len(self.decode_single_token_bytes(i))
            byte_offsets.append((pos, pos + n))
            if n:
                char_offsets.append((char_of_byte[pos], char_of_byte[pos + n - 1] + 1))
            else:
                c = char_of_byte[pos] if pos < len(char_of_byte) else len(text)
                char_offsets.append((c, c))
            pos += n
        if pos != len(char_of_byte):  # cannot happen: the tokens' bytes are the text's bytes
            raise AssertionError("token bytes do not tile the text")
        return char_offsets, byte_offsets

    # ------------------------------------------------------------------ decoding API
    def _token_bytes(self, token: int) -> Optional[bytes]:
        b = self._decoder.get(token)
        if b is None:
            b = self._special_decoder.get(token)
            if b is None and token in self._ambiguous_special_ids:
                raise ValueError(
                    f"id {token} is shared by the special tokens {self._ambiguous_special_ids[token]}; "
                    "which one tiktoken decodes it to depends on its hash-map order, so gpu_tok refuses")
        return b

    def _bytes_table(self):
        """Per id its bytes, None where it has none or is an ambiguous special id
        (``decode_bytes``' ``fast_decode.ByteTable``; made on first use)."""
        tab = self.__dict__.get("_bytes_tab")
        if tab is None:
            n = max([*self._decoder, *self._special_decoder], default=-1) + 1
            tab = [None] * n
            for i, b in self._decoder.items():
                tab[i] = b
            for i, b in self._special_decoder.items():
                if tab[i] is None and i not in self._ambiguous_special_ids:
                    tab[i] = b
            tab = self._bytes_tab = ByteTable(tab)
        return tab

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        got = table_join(self._bytes_table(), tokens)  # None: an id the loop below refuses, or not an int
        if got is not None:
            return got
        # every id converted first, as tiktoken's u32s are (measured, tiktoken 0.14.0: a
        # float raises TypeError, -1 or 2^32 OverflowError, before an unknown id's KeyError)
        tokens = [_token_id(t) for t in tokens]
        parts = []
        for t in tokens:
            b = self._token_bytes(t)
            if b is None:
                raise KeyError(f"Invalid token for decoding: {t}")
            parts.append(b)
        return b"".join(parts)

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        token = _token_id(token)  # as tiktoken's u32: a float TypeError, -1 OverflowError
        b = self._token_bytes(token)
        if b is None:
            raise KeyError(str(token))
        return b

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> List[bytes]:
        got = token_items(self._bytes_table(), tokens)  # None: an id the loop below refuses, or not an int
        if got is not None:
            return got
        tokens = [_token_id(t) for t in tokens]  # every id converted first, as tiktoken's
        return [self.decode_single_token_bytes(t) for t in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> Tuple[str, List[int]]:
        """tiktoken's ``decode_with_offsets``: text, and per token the index of the first
        character holding one of its bytes (strict UTF-8)."""
        token_bytes = self.decode_tokens_bytes(tokens)
        offsets = []
        chars_before = 0
        for tb in token_bytes:
            starts_inside = bool(tb) and 0x80 <= tb[0] < 0xC0
            offsets.append(max(0, chars_before - starts_inside))
            chars_before += sum(1 for c in tb if not 0x80 <= c < 0xC0)
        return b"".join(token_bytes).decode("utf-8", errors="strict"), offsets

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace",
                     num_threads: int = 8) -> List[str]:
        return [self.decode(t, errors=errors) for t in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> List[bytes]:
        return [self.decode_bytes(t) for t in batch]


def from_tiktoken(name: str, path: Union[str, os.PathLike, None] = None,
                  special_tokens: Optional[Dict[str, int]] = None) -> TiktokenEncoding:
    """A named encoding (``r50k_base``, ``p50k_base``, ``p50k_edit``, ``cl100k_base``,
    ``o200k_base``, ``o200k_harmony``) with tiktoken 0.14.0's pattern and special tokens.

    ``path``: the ``.tiktoken`` rank file (``o200k_harmony`` and ``p50k_edit`` use
    ``o200k_base.tiktoken`` and ``p50k_base.tiktoken``); without it, tiktoken's cache
    is searched. ``special_tokens`` replaces the named special tokens (pass
    ``{**named_definition(name)["special_tokens"], ...}`` to extend them).
    """
    d = named_definition(name)
    rank_path = Path(path) if path is not None else find_rank_file(name)
    ranks = load_tiktoken_bpe(rank_path)
    if special_tokens is None:
        return TiktokenEncoding(name, pat_str=d["pat_str"], mergeable_ranks=ranks,
                                special_tokens=d["special_tokens"], explicit_n_vocab=d["explicit_n_vocab"],
                                _shared_special_ids={int(k): v for k, v in d["shared_special_ids"].items()})
    return TiktokenEncoding(name, pat_str=d["pat_str"], mergeable_ranks=ranks,
                            special_tokens=dict(special_tokens))
