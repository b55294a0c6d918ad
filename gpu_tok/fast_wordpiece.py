"""``device="cpu"`` ids for WordPiece and WordLevel tokenizer.json files (decision 0025).

The normalizers served here (``BertNormalizer``, ``Lowercase``) rewrite text one character
at a time, so one ``str.translate`` normalizes a whole text: each character becomes its
normalized form, computed once per distinct character by the reference path itself, with
every white-space character made a space. ``str.split()`` then cuts the text into chunks
at the white space the pre-tokenizer removes; a chunk's ids (its punctuation isolated,
under ``BertPreTokenizer``, and each piece through the reference model,
``cpu_ref.models``) are computed once and kept in a word cache. On ASCII text the
translation is CPython's fast path (every ASCII character becomes one character or none).

Texts where that is not the reference's pipeline run the reference path whole:

- a text holding an added token's content (raw, or normalized for ``normalized``
  tokens): the reference splits on it first;
- with ``strip_accents``, a text holding a character whose NFD has a non-starter the
  normalizer keeps (a combining class above 0 that is not one of the marks it drops):
  canonical reordering could move it, which no per-character rewrite does. Such
  characters translate to ``_SENTINEL``, and a text holding it goes to the reference.

Plain Python (the heavy steps are CPython's C string functions), one thread.
``encode_batch`` (``Encoding`` objects with offsets) runs the reference path.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import chain
from typing import List, Optional, Sequence

import numpy as np

from . import config as C
from .encoding import Encoding

_CACHE_MAX = 1 << 20  # distinct chunks (and pieces) kept; a full cache is emptied
_KEEP_CHARS = 256  # longer chunks and pieces are not kept
_SENTINEL = "\U0010ffff"  # what a character the reference would reorder translates to


@lru_cache(maxsize=1)
def _python_spaces() -> tuple:
    """The code points ``str.split()`` cuts at, in this Python."""
    return tuple(o for o in range(0x110000) if chr(o).isspace())


def _punctuation_ranges():
    from .cpu_ref.unicode_props import tables

    return tables().class_ranges["punctuation"]


class _Rewrite(dict):
    """``str.translate`` table: code point -> what it becomes (computed on first use; None
    for nothing)."""

    def __init__(self, engine: "CpuWordPieceEngine"):
        super().__init__()
        self.engine = engine

    def __missing__(self, o: int) -> Optional[str]:
        v = self.engine.rewrite(chr(o))
        if any(x != " " and x.isspace() for x in v):
            self.engine.exact_split = True  # str.split() would cut there: split on " " only
        v = self[o] = v or None
        return v


class _Normalize(dict):
    """``str.translate`` table: code point -> its normalized form (computed on first use)."""

    def __init__(self, engine: "CpuWordPieceEngine"):
        super().__init__()
        self.engine = engine

    def __missing__(self, o: int) -> str:
        from .cpu_ref.normalizers import normalize_str

        norm = self.engine.norm
        v = self[o] = normalize_str(norm, chr(o)) if norm is not None else chr(o)
        return v


class CpuWordPieceEngine:
    """``encode_ids`` for a WordPiece / WordLevel model behind ``BertNormalizer`` or
    ``Lowercase`` (or none) and ``BertPreTokenizer`` or ``WhitespaceSplit``."""

    def __init__(self, cfg: C.TokenizerConfig, ref):
        from .fast_cpu import NotServed, template_ids

        if not isinstance(cfg.model, (C.WordPiece, C.WordLevel)):
            raise NotServed("not a WordPiece or WordLevel model")
        norm = cfg.normalizer
        if norm is not None and not isinstance(norm, (C.BertNormalizer, C.Lowercase)):
            raise NotServed(f"normalizer {type(norm).__name__}")
        pre = cfg.pre_tokenizer
        if not isinstance(pre, (C.BertPreTokenizer, C.WhitespaceSplit)):
            raise NotServed(f"pre-tokenizer {type(pre).__name__ if pre is not None else None}")
        self.cfg = cfg
        self.ref = ref
        self.norm = norm
        self.punct = isinstance(pre, C.BertPreTokenizer)
        self.prefix, self.suffix = template_ids(cfg, ref)
        self.exact_split = False
        self._unsafe = self._unsafe_chars()
        self.table = _Rewrite(self)
        for o in range(128):
            self.table[o]  # noqa: B018 - computed now: the common characters
        for o in _python_spaces():  # characters str.split() cuts at
            self.table[o]  # noqa: B018
        self.cache: dict = {}  # chunk -> ids
        self.pieces: dict = {}  # piece -> ids
        self._first, self._next = self._prefix_maps() if isinstance(cfg.model, C.WordPiece) else (None, None)
        self._punct_rx = self._punctuation_pattern() if self.punct else None
        # str.isalnum() (fast) says a chunk holds no punctuation: true of this Python's
        # Unicode tables unless one of the reference's punctuation characters is alphanumeric
        self._alnum_plain = not any(chr(o).isalnum() for a, b in _punctuation_ranges() for o in range(a, b + 1))
        self._special = self._special_pattern()

    # ------------------------------------------------------------ set-up
    def rewrite(self, c: str) -> str:
        """What character ``c`` becomes: normalized, white space a space (``_SENTINEL``
        for a character the reference might reorder)."""
        from .cpu_ref.normalizers import normalize_str
        from .cpu_ref.unicode_props import is_whitespace

        if c in self._unsafe or c == _SENTINEL:
            return _SENTINEL
        n = c if self.norm is None else normalize_str(self.norm, c)
        return "".join(" " if is_whitespace(x) else x for x in n)

    def _special_pattern(self):
        """Patterns of the added tokens' contents: the raw ones, searched in the text, and
        the normalized ones, searched in the text normalized (``self.norm_table``)."""
        added = self.ref.added
        raw = [t.content for t in added.map_r.values() if not t.normalized]
        norm = [added.normalized_form.get(i, t.content) for i, t in added.map_r.items() if t.normalized]
        self.norm_table = _Normalize(self) if norm else None

        def pattern(contents):
            contents = sorted(set(c for c in contents if c), key=len, reverse=True)
            return re.compile("|".join(map(re.escape, contents))) if contents else None

        # a text without any content's first character holds none (str "in" is fast)
        firsts = {c[0] for c in raw if c}
        self._firsts = sorted(firsts) if len(firsts) <= 8 else None
        return pattern(raw), pattern(norm)

    @staticmethod
    def _punctuation_pattern():
        """``re`` pattern splitting a chunk into its pieces and its punctuation characters
        (the measured class ``unicode_props.is_punctuation`` reads)."""
        cls = "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                      for a, b in _punctuation_ranges())
        return re.compile(f"([{cls}])")

    def _unsafe_chars(self) -> frozenset:
        """With strip_accents: the characters whose NFD holds a non-starter the
        normalizer keeps (see the module doc)."""
        norm = self.norm
        if not isinstance(norm, C.BertNormalizer):
            return frozenset()
        if not (norm.strip_accents if norm.strip_accents is not None else norm.lowercase):
            return frozenset()
        from .cpu_ref.unicode_props import BERT_MARK, tables

        T = tables()
        keep = {c for c in T.ccc if not T.bert_flags[ord(c)] & BERT_MARK}
        return frozenset(keep | {c for c, d in T.nfd.items() if any(x in keep for x in d)})

    # ------------------------------------------------------------ encoding
    def _needs_reference(self, text: str) -> bool:
        """A text holding an added token's content (see the module doc)."""
        raw_rx, norm_rx = self._special
        if raw_rx is not None and (self._firsts is None or any(c in text for c in self._firsts)) and raw_rx.search(text):
            return True
        return norm_rx is not None and norm_rx.search(text.translate(self.norm_table)) is not None

    def _prefix_maps(self):
        """For WordPiece: ``{text: id, or -1 when it is only the start of an entry}`` over
        every start of every vocabulary entry, for a word's first piece and (without the
        prefix) for the pieces after it."""
        first: dict = {}
        nxt: dict = {}
        prefix = self.ref.model.cfg.continuing_subword_prefix
        for t, i in self.ref.model.vocab.items():
            for m, body in ((first, t), (nxt, t[len(prefix):] if t.startswith(prefix) else None)):
                if not body:
                    continue
                for k in range(1, len(body)):
                    m.setdefault(body[:k], -1)
                m[body] = i
        return first, nxt

    def _wordpiece(self, piece: str) -> List[int]:
        """``cpu_ref.models.WordPieceModel.word``'s ids: the longest entry at each position,
        found by extending the match while it is the start of an entry (the reference
        shortens from the end; both take the longest entry)."""
        n = len(piece)
        m = self.ref.model
        if n > m.cfg.max_input_chars_per_word:
            return [i for i, _s, _e in m.word(piece)]  # the unk token (or the reference's error)
        out: List[int] = []
        start = 0
        table = self._first
        while start < n:
            best, best_end = -1, start
            end = start + 1
            while end <= n:
                i = table.get(piece[start:end])
                if i is None:
                    break
                if i >= 0:
                    best, best_end = i, end
                end += 1
            if best < 0:
                return [i for i, _s, _e in m.word(piece)]  # the unk token (or the reference's error)
            out.append(best)
            start = best_end
            table = self._next
        return out

    def _piece_ids(self, piece: str) -> List[int]:
        ids = self.pieces.get(piece)
        if ids is None:
            if self._first is not None:
                ids = self._wordpiece(piece)
            else:
                ids = [t.id for t in self.ref.model.tokenize(piece)]
            if len(piece) <= _KEEP_CHARS:
                if len(self.pieces) >= _CACHE_MAX:
                    self.pieces.clear()
                self.pieces[piece] = ids
        return ids

    def chunk_ids(self, chunk: str) -> tuple:
        """The ids of one chunk of normalized text without white space: under
        ``BertPreTokenizer`` its punctuation characters are pieces of their own."""
        if self._punct_rx is None or (self._alnum_plain and chunk.isalnum()):
            return tuple(self._piece_ids(chunk))
        ids: List[int] = []
        for piece in self._punct_rx.split(chunk):
            if piece:
                ids += self._piece_ids(piece)
        return tuple(ids)

    def encode_ids(self, texts: Sequence[str], add_special_tokens: bool, num_threads: Optional[int]):
        from .cpu_ref.pipeline import check_text

        texts = texts if isinstance(texts, list) else list(texts)
        pre = self.prefix.tolist() if add_special_tokens else []
        suf = self.suffix.tolist() if add_special_tokens else []
        table, cache = self.table, self.cache
        get = cache.get
        flat: List[int] = []
        rs = np.zeros(len(texts) + 1, np.int64)
        for k, text in enumerate(texts):
            check_text(text)
            flat += pre
            t2 = None
            if not self._needs_reference(text):
                t2 = text.translate(table)
                if _SENTINEL in t2:
                    t2 = None
            if t2 is None:
                flat += self.ref.encode(text, None, False).ids
            else:
                chunks = [w for w in t2.split(" ") if w] if self.exact_split else t2.split()
                vals = list(map(get, chunks))
                if None in vals:  # the chunks not seen yet, each once
                    miss = set(chunks).difference(cache)
                    if len(cache) + len(miss) > _CACHE_MAX:
                        cache.clear()
                        miss = set(chunks)
                    long = {}  # not kept: the cache's memory is bounded by its count
                    for w in miss:
                        if len(w) <= _KEEP_CHARS:
                            cache[w] = self.chunk_ids(w)
                        else:
                            long[w] = self.chunk_ids(w)
                    vals = list(map(get, chunks))
                    if long:
                        vals = [v if v is not None else long[w] for v, w in zip(vals, chunks)]
                flat += chain.from_iterable(vals)
            flat += suf
            rs[k + 1] = len(flat)
        return np.array(flat, np.int32), rs

    def encode_batch(self, inputs, add_special_tokens: bool, num_threads: Optional[int]) -> List[Encoding]:
        return self.ref.encode_batch(inputs, add_special_tokens)
