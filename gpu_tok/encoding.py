"""``Encoding``: one encoded sequence, with Hugging Face's field names and semantics.

The fields, and the operations the pipeline applies to them (``set_sequence_id``,
``merge_with``, ``truncate``, ``pad``), follow the reference's ``Encoding`` step for step
(docs/decisions/0029-truncation-padding.md): which input a token came from is kept as
*ranges* per sequence, as there, so ``sequence_ids`` after padding or truncation is what
the reference reports.
"""

from __future__ import annotations

from itertools import repeat
from typing import Dict, List, Optional, Tuple

import numpy as np

from . import _util
from ._util import int_row, pair_row

_CHUNK = 64  # rows whose ids / offsets / tokens lists EncodingRows makes in one call (_chunk_row) ...
_CHUNK_IDS = 8192  # ... where they hold at most this many tokens


_DIRECTIONS = ("left", "right")


def check_direction(direction: str) -> str:
    if direction not in _DIRECTIONS:
        raise ValueError(f"Unknown `direction`: `{direction}`. Use one of `left` or `right`")
    return direction


class Encoding:
    """The result of encoding one text (or pair), field for field as HF ``tokenizers.Encoding``.

    - ``ids``: token ids;
    - ``type_ids``: segment ids set by the post-processor;
    - ``tokens``: token strings;
    - ``offsets``: ``(start, end)`` in *characters* of the input text; ``(0, 0)`` for
      tokens the post-processor or padding added;
    - ``attention_mask``: 1 for every token, 0 for padding;
    - ``special_tokens_mask``: 1 for tokens the post-processor or padding added, else 0
      (added tokens found in the text count as 0, as in the reference);
    - ``word_ids``: index of the pre-tokenized piece a token came from, ``None``
      for tokens the post-processor or padding added;
    - ``sequence_ids``: which input of a pair (0 or 1) a token came from, ``None`` outside
      every sequence's range (``sequence_ranges``);
    - ``overflowing``: the windows truncation cut off, each an ``Encoding``.
    """

    __slots__ = ("_ids", "_type_ids", "_tokens", "_offsets", "_attention_mask", "_special_tokens_mask",
                 "_word_ids", "_seq_ranges", "overflowing", "_rows", "_row", "_pad")

    def __init__(self, ids=None, type_ids=None, tokens=None, offsets=None, special_tokens_mask=None,
                 word_ids=None, sequence_ranges: Optional[Dict[int, Tuple[int, int]]] = None,
                 attention_mask=None, overflowing=None):
        self._rows = None  # a lazy encoding's EncodingRows (None: every field is a list here)
        self._pad = None  # a lazy encoding's padding, not yet applied: (count, direction, id, type id, token)
        self._ids = ids if ids is not None else []
        n = len(self._ids)
        self._type_ids = type_ids if type_ids is not None else [0] * n
        self._tokens = tokens if tokens is not None else []
        self._offsets = offsets if offsets is not None else []
        self._special_tokens_mask = special_tokens_mask if special_tokens_mask is not None else [0] * n
        self._attention_mask = attention_mask if attention_mask is not None else [1] * n
        self._word_ids = word_ids if word_ids is not None else [None] * n
        # sequence id -> (start, end) token range; empty: one sequence covering everything
        self._seq_ranges: Dict[int, Tuple[int, int]] = dict(sequence_ranges) if sequence_ranges else {}
        self.overflowing: List["Encoding"] = overflowing if overflowing is not None else []

    @classmethod
    def _lazy(cls, rows: "EncodingRows", row: int) -> "Encoding":
        """Encoding ``row`` of ``rows``: each field's list is made when it is first read
        (as the reference's ``Encoding`` makes its Python lists on access)."""
        e = cls.__new__(cls)
        e._rows = rows
        e._row = row
        e._ids = e._type_ids = e._tokens = e._offsets = None
        e._attention_mask = e._special_tokens_mask = e._word_ids = None
        e._pad = None
        e._seq_ranges = None  # made from the rows when first read (sequence_ranges)
        e.overflowing = []
        return e

    @property
    def sequence_ranges(self) -> Dict[int, Tuple[int, int]]:
        """Sequence id -> ``(start, end)`` token range (empty: one sequence covering
        everything); a lazy encoding's made from its rows when first read."""
        r = self._seq_ranges
        if r is None:
            r = self._seq_ranges = self._rows.ranges(self._row)
        return r

    @sequence_ranges.setter
    def sequence_ranges(self, value: Dict[int, Tuple[int, int]]) -> None:
        self._seq_ranges = value

    def _relaid(self, rows) -> "Encoding":
        """This lazy encoding, none of whose fields is read yet, moved onto ``rows`` (the
        same row of the same arrays with a post-processor's layout,
        ``EncodingRows.with_layout``): what ``_lazy(rows, row)`` would make, without a
        new object."""
        self._rows = rows
        self._seq_ranges = None
        return self

    def __len__(self) -> int:
        if self._ids is None:
            return self._rows.length(self._row) + (self._pad[0] if self._pad is not None else 0)
        return len(self._ids)

    def _untouched(self) -> bool:
        """A lazy encoding none of whose lists is made yet."""
        return (self._rows is not None and self._ids is None and self._type_ids is None and self._tokens is None
                and self._offsets is None and self._attention_mask is None and self._special_tokens_mask is None
                and self._word_ids is None)

    @property
    def words(self) -> List[Optional[int]]:
        return self.word_ids

    # ------------------------------------------------------------ sequences
    @property
    def n_sequences(self) -> int:
        return len(self.sequence_ranges) or 1

    def sequence_range(self, seq: int) -> Tuple[int, int]:
        return self.sequence_ranges.get(seq, (0, len(self.ids)))

    @property
    def sequence_ids(self) -> List[Optional[int]]:
        out: List[Optional[int]] = [None] * len(self.ids)
        for seq in range(self.n_sequences):
            a, b = self.sequence_range(seq)
            out[a:b] = [seq] * (b - a)
        return out

    def set_sequence_id(self, seq: int) -> None:
        self.sequence_ranges[seq] = (0, len(self.ids))

    # ------------------------------------------------------------ alignment
    # (as the reference's Encoding: positions outside a sequence, or past the end, are None)
    def token_to_sequence(self, token_index: int) -> Optional[int]:
        if token_index > len(self.ids):
            return None
        if not self.sequence_ranges:
            return 0
        for seq, (a, b) in self.sequence_ranges.items():
            if a <= token_index < b:
                return seq
        return None

    def token_to_chars(self, token_index: int) -> Optional[Tuple[int, int]]:
        if self.token_to_sequence(token_index) is None or token_index >= len(self.offsets):
            return None
        return self.offsets[token_index]

    def token_to_word(self, token_index: int) -> Optional[int]:
        if self.token_to_sequence(token_index) is None or token_index >= len(self.word_ids):
            return None
        return self.word_ids[token_index]

    def word_to_tokens(self, word_index: int, sequence_index: int = 0) -> Optional[Tuple[int, int]]:
        a, b = self.sequence_range(sequence_index)
        if b > len(self.word_ids) or a > b:
            return None
        start = end = None
        for i, w in enumerate(self.word_ids[a:b]):
            if w is not None and w > word_index:  # None sorts first, as in the reference
                break
            if w == word_index:
                start = i if start is None else start
                end = i + 1
        return None if start is None else (a + start, a + end)

    def word_to_chars(self, word_index: int, sequence_index: int = 0) -> Optional[Tuple[int, int]]:
        span = self.word_to_tokens(word_index, sequence_index)
        if span is None or span[1] == 0:
            return None
        return self.offsets[span[0]][0], self.offsets[span[1] - 1][1]

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> Optional[int]:
        a, b = self.sequence_range(sequence_index)
        if b > len(self.offsets) or a > b:
            return None
        for i, (s, e) in enumerate(self.offsets[a:b]):
            if s <= char_pos < e:
                return a + i
        return None

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> Optional[int]:
        t = self.char_to_token(char_pos, sequence_index)
        return None if t is None else self.token_to_word(t)

    # ------------------------------------------------------------ merging
    def merge_with(self, pair: "Encoding", growing_offsets: bool) -> None:
        """Append ``pair``; the overflowing windows combine as in the reference (each of
        ours with ``pair`` and with each of its windows, then ours whole with each of its)."""
        overflowings = []
        for mine in self.overflowing:
            n = mine.copy()
            n.merge_with(pair.copy(), growing_offsets)
            overflowings.append(n)
            for other in pair.overflowing:
                n = mine.copy()
                n.merge_with(other.copy(), growing_offsets)
                overflowings.append(n)
        for other in pair.overflowing:
            n = self.copy()
            n.merge_with(other.copy(), growing_offsets)
            overflowings.append(n)
        base = len(self.ids)
        for seq, (a, b) in pair.sequence_ranges.items():
            self.sequence_ranges[seq] = (base + a, base + b)
        self.ids += pair.ids
        self.type_ids += pair.type_ids
        self.tokens += pair.tokens
        self.word_ids += pair.word_ids
        start = self.offsets[-1][1] if growing_offsets and self.offsets else 0
        self.offsets += [(s + start, e + start) for s, e in pair.offsets] if start else pair.offsets
        self.special_tokens_mask += pair.special_tokens_mask
        self.attention_mask += pair.attention_mask
        self.overflowing = overflowings

    @staticmethod
    def merge(encodings: List["Encoding"], growing_offsets: bool = True) -> "Encoding":
        """One encoding of ``encodings`` in order (``tokenizers.Encoding.merge``)."""
        out = Encoding()
        for e in encodings:
            out.merge_with(e, growing_offsets)
        return out

    def copy(self) -> "Encoding":
        return Encoding(list(self.ids), list(self.type_ids), list(self.tokens), list(self.offsets),
                        list(self.special_tokens_mask), list(self.word_ids), self.sequence_ranges,
                        list(self.attention_mask), [o.copy() for o in self.overflowing])

    def _slice(self, a: int, b: int) -> "Encoding":
        return Encoding(self.ids[a:b], self.type_ids[a:b], self.tokens[a:b], self.offsets[a:b],
                        self.special_tokens_mask[a:b], self.word_ids[a:b], None, self.attention_mask[a:b])

    # ------------------------------------------------------------ truncation
    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        """Keep ``max_length`` tokens; what is cut off becomes ``overflowing`` windows of
        ``max_length`` tokens, each repeating the ``stride`` tokens before it (as the
        reference's ``Encoding::truncate``)."""
        check_direction(direction)
        n = len(self.ids)
        if max_length >= n:
            return
        if max_length == 0:
            whole = self._slice(0, n)
            whole.sequence_ranges = dict(self.sequence_ranges)
            whole.overflowing = self.overflowing
            self.__init__(overflowing=[whole])
            return
        if stride >= max_length:
            from .cpu_ref.truncation import stride_error

            raise stride_error(max_length)  # the reference panics here (PanicException): its words
        step = max_length - stride
        parts: List[Tuple[int, int]] = []
        if direction == "right":
            for start in range(0, n, step):
                stop = min(start + max_length, n)
                parts.append((start, stop))
                if stop == n:
                    break
        else:
            for last in range(n - 1, -1, -step):
                stop = last + 1
                start = max(stop - max_length, 0)
                parts.append((start, stop))
                if start == 0:
                    break
        first = self._slice(*parts[0])
        first.overflowing = [self._slice(a, b) for a, b in parts[1:]]
        self.__init__(first.ids, first.type_ids, first.tokens, first.offsets, first.special_tokens_mask,
                      first.word_ids, None, first.attention_mask, first.overflowing)

    # ------------------------------------------------------------ padding
    def pad(self, length: int, *, direction: str = "right", pad_id: int = 0, pad_type_id: int = 0,
            pad_token: str = "[PAD]") -> None:
        """Pad to ``length`` tokens (the overflowing windows too); longer encodings are kept."""
        check_direction(direction)
        for o in self.overflowing:
            o.pad(length, direction=direction, pad_id=pad_id, pad_type_id=pad_type_id, pad_token=pad_token)
        if self._pad is None and self._untouched():  # kept for the lists' making
            k = length - len(self)
            if k > 0:
                self._pad = (k, direction, pad_id, pad_type_id, pad_token)
                if direction == "left":
                    self.sequence_ranges = {s: (a + k, b + k) for s, (a, b) in self.sequence_ranges.items()}
            return
        k = length - len(self.ids)
        if k <= 0:
            return
        if direction == "left":
            self.ids[:0] = [pad_id] * k
            self.type_ids[:0] = [pad_type_id] * k
            self.tokens[:0] = [pad_token] * k
            self.word_ids[:0] = [None] * k
            self.attention_mask[:0] = [0] * k
            self.special_tokens_mask[:0] = [1] * k
            self.offsets[:0] = [(0, 0)] * k
            self.sequence_ranges = {s: (a + k, b + k) for s, (a, b) in self.sequence_ranges.items()}
        else:
            self.ids += [pad_id] * k
            self.type_ids += [pad_type_id] * k
            self.tokens += [pad_token] * k
            self.word_ids += [None] * k
            self.attention_mask += [0] * k
            self.special_tokens_mask += [1] * k
            self.offsets += [(0, 0)] * k

    def __repr__(self) -> str:
        return (f"Encoding(num_tokens={len(self.ids)}, attributes=[ids, type_ids, tokens, offsets, "
                f"attention_mask, special_tokens_mask, overflowing])")


def _field(name: str) -> property:
    """``Encoding.<name>``: the list, made from the encoding's ``EncodingRows`` on first read."""
    key = "_" + name
    slot = getattr(Encoding, key)  # the slot's descriptor
    get, put = slot.__get__, slot.__set__
    # the padding's value for this field: an item of the encoding's _pad, or a constant
    at = {"ids": 2, "type_ids": 3, "tokens": 4}.get(name)
    const = {"offsets": (0, 0), "attention_mask": 0, "special_tokens_mask": 1, "word_ids": None}.get(name)

    def fget(self):
        v = get(self)
        if v is None:
            v = self._rows.field(name, self._row)
            pad = self._pad
            if pad is not None:
                k, direction = pad[0], pad[1]
                fill = pad[at] if at is not None else const
                if direction == "left":  # (v: the list just made for this read, padded in place)
                    v[0:0] = [fill] * k
                else:
                    v.extend(repeat(fill, k))
            put(self, v)
        return v

    def fset(self, v):
        put(self, v)

    return property(fget, fset, doc=f"``{name}`` (a list)")


for _name in ("ids", "type_ids", "tokens", "offsets", "attention_mask", "special_tokens_mask", "word_ids"):
    setattr(Encoding, _name, _field(_name))
del _name


class TokenStrings:
    """The strings of flat tokens, made when a range of them is read (``EncodingRows.field``)
    rather than for every token of a batch up front (a gather of a million objects, 15 ms
    per 4 MB of text, that encodings whose tokens nobody reads paid): token ``k``'s string
    is ``vocab[ids[k]]`` (``vocab``: an object array of the model's token strings by id),
    or, at the positions ``pos`` (sorted ``int64``), ``text[j]`` for ``pos[j]`` (an added
    token found in the text, or an unknown token: the text it stands for; its id may be
    past ``vocab``). ``[a:b]`` gives an object array (new, the caller's own); an index
    array gives another ``TokenStrings`` of those tokens. Never written to."""

    __slots__ = ("vocab", "ids", "pos", "text", "_ptrs")

    def __init__(self, vocab: np.ndarray, ids: np.ndarray, pos: Optional[np.ndarray] = None, text=()):
        self.vocab, self.ids = vocab, ids
        self.pos = np.zeros(0, np.int64) if pos is None else np.asarray(pos, np.int64)
        self.text = list(text)
        self._ptrs = None

    def __len__(self) -> int:
        return self.ids.shape[0]

    def row(self, a: int, b: int) -> list:
        """``self[a:b].tolist()``; a long row by a compiled loop from the vocabulary's item
        addresses (``_util.object_row``: one reference taken per token, no object array
        between)."""
        ids = self.ids
        if (b - a < _util._ROW_MIN or not _util._ITEMS_OK or ids.dtype != np.int32 or not ids.flags.c_contiguous
                or int(ids[a:b].min()) < 0 or int(ids[a:b].max()) >= self.vocab.shape[0]):
            return self[a:b].tolist()
        if self._ptrs is None:
            self._ptrs = _util.object_addresses(self.vocab)
        return self._put_texts(_util.object_row(ids, a, b, self._ptrs), a, b)

    def rows(self, bounds: np.ndarray) -> List[list]:
        """``[self.row(bounds[r], bounds[r + 1]) for r ...]``, the lists made in one compiled
        call (``_util.object_lists`` over the vocabulary's item addresses), then the texts
        put at their positions."""
        ids = self.ids
        a, b = int(bounds[0]), int(bounds[-1])
        R = bounds.shape[0] - 1
        if (not _util._ITEMS_OK or ids.dtype != np.int32 or not ids.flags.c_contiguous
                or (b > a and (int(ids[a:b].min()) < 0 or int(ids[a:b].max()) >= self.vocab.shape[0]))):
            bl = bounds.tolist()
            return [self.row(bl[r], bl[r + 1]) for r in range(R)]
        if self._ptrs is None:
            self._ptrs = _util.object_addresses(self.vocab)
        out = _util.object_lists(ids, np.require(bounds, np.int64, ("C",)), self._ptrs)
        i, j = np.searchsorted(self.pos, (a, b)).tolist()
        if j > i:
            at = self.pos[i:j]
            row = (np.searchsorted(bounds, at, side="right") - 1).tolist()
            for k, p, rr in zip(range(i, j), at.tolist(), row):
                out[rr][p - int(bounds[rr])] = self.text[k]
        return out

    def _put_texts(self, out, a: int, b: int):
        """``out`` (tokens ``a..b``'s strings) with the texts at their positions."""
        i, j = np.searchsorted(self.pos, (a, b)).tolist()
        for k in range(i, j):
            out[int(self.pos[k]) - a] = self.text[k]
        return out

    def __getitem__(self, key):
        if isinstance(key, slice):
            a, b, step = key.indices(self.ids.shape[0])
            if step != 1:
                raise IndexError("TokenStrings: only contiguous slices")
            # (a text's id past vocab: replaced by its text)
            return self._put_texts(self.vocab.take(self.ids[a:b], mode="clip"), a, b)
        idx = np.asarray(key, np.int64)
        if not self.pos.shape[0] or not idx.shape[0]:
            return TokenStrings(self.vocab, self.ids[idx])
        loc = np.minimum(np.searchsorted(self.pos, idx), self.pos.shape[0] - 1)
        hit = np.flatnonzero(self.pos[loc] == idx)
        return TokenStrings(self.vocab, self.ids[idx], hit, [self.text[k] for k in loc[hit].tolist()])


class DeferredRow:
    """The rows of one ``Encoding._lazy`` encoding (row 0) whose ids are known and whose other
    fields come from ``make()``, the whole encoding made another way, called when one of them
    is first read: ``Tokenizer.encode`` of a text ``CpuTokenizerEngine.quick_ids`` serves,
    whose ids most callers read alone. With ``single`` (``post_processors.single_layout``'s
    ``(type_id, (before, after, ranges))`` of the post-processor that put its tokens around
    the ids), ``type_ids``, ``special_tokens_mask``, ``attention_mask`` and the sequence
    ranges are made from it, as ``EncodingRows`` makes them, without the whole encoding
    (``ids`` and ``attention_mask``: what a model takes). The whole encoding's ids are these
    ids (two computations of the same thing, equal in the tests); one of another length is
    raised as a bug (``RuntimeError``; comparing the ids themselves made the whole
    encoding's ids list, up to a third of its cost). It has no overflowing windows (no
    truncation)."""

    __slots__ = ("ids", "make", "_full", "single")

    _FILL = {"type_ids": None, "special_tokens_mask": 0, "attention_mask": 1}

    def __init__(self, ids: List[int], make, single=None):
        self.ids, self.make, self._full, self.single = ids, make, None, single

    def _whole(self) -> "Encoding":
        e = self._full
        if e is None:
            e = self.make()
            if len(e) != len(self.ids) or e.overflowing:  # (the ids themselves: the tests'; their list costs)
                raise RuntimeError("gpu_tok: the engine's ids of this text differ from its whole encoding's "
                                   "(a bug: please report the text and tokenizer)")
            self._full, self.make = e, None
        return e

    def __getstate__(self):  # pickled with the whole encoding, made now (``make`` is a closure)
        return self.ids, None, self._whole(), self.single

    def __setstate__(self, state):
        self.ids, self.make, self._full, self.single = state

    def length(self, d: int) -> int:
        return len(self.ids)

    def _text_tokens(self) -> int:
        """The tokens between the layout's before and after."""
        _type_id, (before, after, _ranges) = self.single
        return len(self.ids) - len(before["ids"]) - len(after["ids"])

    def ranges(self, d: int) -> Dict[int, Tuple[int, int]]:
        if self.single is None:
            return dict(self._whole().sequence_ranges)
        n = self._text_tokens()
        return {seq: (a, a + n) for seq, a in self.single[1][2]}

    def field(self, name: str, d: int) -> list:
        if name == "ids":
            return list(self.ids)
        if self.single is not None and name in self._FILL:
            type_id, (before, after, _ranges) = self.single
            fill = type_id if name == "type_ids" else self._FILL[name]
            return before[name] + [fill] * self._text_tokens() + after[name]
        return list(getattr(self._whole(), name))


class EncodingRows:
    """Many encodings' fields as flat arrays, from which ``Encoding._lazy`` encodings make
    their lists when a field is read: row ``d``'s tokens are ``ids[bounds[d]:bounds[d + 1]]``
    (``tokens``: their strings, a ``TokenStrings`` or an object array; ``starts``/``ends`` their offsets;
    ``words`` their word ids, all of them ints; ``encode_batch_fast``'s rows have none of
    these three, None: empty strings, ``(0, 0)`` and None then), each with ``type_id``, special-token mask 0
    and attention 1, between the fields of the ``layout``'s tokens before and after
    (``layout``: ``(before, after, ranges)``, ``before``/``after`` a dict of field name to
    list, ``ranges`` a list of ``(sequence, start)`` giving the range
    ``(start, start + n)`` of a row of ``n`` tokens; None: no tokens around, no
    ranges). The arrays are never written to."""

    __slots__ = ("ids", "tokens", "starts", "ends", "words", "bounds", "type_id", "before", "after", "_ranges",
                 "_nb", "_na", "added", "_bl", "_chunks")

    _EMPTY = {f: [] for f in ("ids", "type_ids", "tokens", "offsets", "attention_mask", "special_tokens_mask",
                              "word_ids")}

    def __init__(self, ids, tokens, starts, ends, words, bounds, type_id: int, layout=None):
        self.ids, self.tokens, self.starts, self.ends, self.words = ids, tokens, starts, ends, words
        self.bounds = bounds
        self.type_id = type_id
        before, after, ranges = layout if layout is not None else (self._EMPTY, self._EMPTY, [])
        self.before, self.after, self._ranges = before, after, ranges
        self._nb, self._na = len(before["ids"]), len(after["ids"])
        self.added = None  # the engines' rows: which tokens are added tokens found in the text (None: none)
        self._bl = None  # bounds as a list of ints, made at the first field read (_row_bounds)
        self._chunks = None  # (field, chunk) -> rows' ids / offsets / tokens lists made _CHUNK rows at a time (_chunk_row)

    def with_layout(self, type_id: int, layout) -> "EncodingRows":
        """The same rows with another type id and ``layout`` (the arrays shared)."""
        return EncodingRows(self.ids, self.tokens, self.starts, self.ends, self.words, self.bounds, type_id, layout)

    def length(self, d: int) -> int:
        bl = self._bl if self._bl is not None else self._row_bounds()
        return bl[d + 1] - bl[d] + self._nb + self._na

    def ranges(self, d: int) -> Dict[int, Tuple[int, int]]:
        if not self._ranges:
            return {}
        bl = self._bl if self._bl is not None else self._row_bounds()
        n = bl[d + 1] - bl[d]
        return {seq: (a, a + n) for seq, a in self._ranges}

    def _row_bounds(self) -> list:
        bl = self._bl
        if bl is None:
            bl = self._bl = self.bounds.tolist()
        return bl

    def _chunk_row(self, name: str, d: int) -> Optional[list]:
        """Row ``d``'s ``ids``, ``offsets`` or ``tokens`` from the lists of its chunk of
        ``_CHUNK`` rows, made at once where the chunk holds at most ``_CHUNK_IDS`` tokens
        (``_util.id_lists`` / ``pair_lists`` / ``TokenStrings.rows``: one compiled call, where
        a call per row of a few tokens cost more than its items), each handed out once;
        None for a row whose list was handed out already and for a chunk of more tokens
        (then the caller's row at a time: a new list; reading one row should not make many
        long ones)."""
        chunks = self._chunks
        if chunks is None:
            chunks = self._chunks = {}
        c = d // _CHUNK
        key = (name, c)
        lists = chunks.get(key)
        if lists is None:
            bl = self._bl
            lo, hi = c * _CHUNK, min(c * _CHUNK + _CHUNK, len(bl) - 1)
            if bl[hi] - bl[lo] > _CHUNK_IDS:
                lists = chunks[key] = False
            elif name == "ids":
                base = bl[lo]
                lists = chunks[key] = _util.id_lists(self.ids[base:bl[hi]], self.bounds[lo:hi + 1] - base)
            elif name == "tokens":
                lists = chunks[key] = self.tokens.rows(self.bounds[lo:hi + 1])
            else:
                lists = chunks[key] = _util.pair_lists(self.starts, self.ends, self.bounds[lo:hi + 1])
        if lists is False:
            return None
        got = lists[d - c * _CHUNK]
        lists[d - c * _CHUNK] = None
        return got

    def field(self, name: str, d: int) -> list:
        bl = self._bl if self._bl is not None else self._row_bounds()
        a, b = bl[d], bl[d + 1]
        if name == "ids":
            mid = self._chunk_row(name, d) if isinstance(self.ids, np.ndarray) else None
            if mid is None:
                mid = int_row(self.ids, a, b)
        elif name == "tokens":
            if isinstance(self.tokens, TokenStrings):
                mid = self._chunk_row(name, d)
                if mid is None:
                    mid = self.tokens.row(a, b)
            else:
                mid = self.tokens[a:b].tolist() if self.tokens is not None else [""] * (b - a)
        elif name == "offsets":
            if self.starts is not None:
                mid = self._chunk_row(name, d) if isinstance(self.starts, np.ndarray) else None
                if mid is None:
                    mid = pair_row(self.starts, self.ends, a, b)
            else:
                mid = [(0, 0)] * (b - a)
        elif name == "word_ids":
            mid = self.words[a:b].tolist() if self.words is not None else [None] * (b - a)
        elif name == "type_ids":
            mid = [self.type_id] * (b - a)
        elif name == "special_tokens_mask":
            mid = [0] * (b - a)
        else:  # attention_mask
            mid = [1] * (b - a)
        if self._nb:  # (mid is this call's own list: the layout's tokens put in place, no copy of it)
            mid[0:0] = self.before[name]
        if self._na:
            mid += self.after[name]
        return mid


class PairRows:
    """Lazy encodings of pairs: row ``k`` is row ``ia[k]`` of ``a`` (the first texts'
    ``EncodingRows``, no layout of their own) and row ``ib[k]`` of ``b`` (the second
    texts'), laid out as ``post_processors.pair_layout`` found the post-processor lays
    out a pair: ``before``, the first's tokens (type id ``ta``), ``mid``, the second's
    (``tb``), ``after``; ``ranges``: ``(sequence, start, second)``, a sequence's range
    over the first's ``n`` tokens from ``start``, or (``second``) over the second's ``m``
    from ``start + n``. Rows are added with ``add``. The arrays are never written to."""

    __slots__ = ("a", "b", "ia", "ib", "ta", "tb", "before", "mid", "after", "_ranges", "_n0", "_n1", "_n2")

    def __init__(self, a: EncodingRows, b: EncodingRows, layout):
        self.a, self.b = a, b
        self.ia: List[int] = []
        self.ib: List[int] = []
        self.ta, self.tb, self.before, self.mid, self.after, self._ranges = layout
        self._n0, self._n1, self._n2 = len(self.before["ids"]), len(self.mid["ids"]), len(self.after["ids"])

    def add(self, i: int, j: int) -> int:
        """A pair of row ``i`` of ``a`` and row ``j`` of ``b``: its row."""
        self.ia.append(i)
        self.ib.append(j)
        return len(self.ia) - 1

    def _nm(self, k: int) -> Tuple[int, int]:
        i, j = self.ia[k], self.ib[k]
        return int(self.a.bounds[i + 1] - self.a.bounds[i]), int(self.b.bounds[j + 1] - self.b.bounds[j])

    def length(self, k: int) -> int:
        n, m = self._nm(k)
        return n + m + self._n0 + self._n1 + self._n2

    def ranges(self, k: int) -> Dict[int, Tuple[int, int]]:
        n, m = self._nm(k)
        return {seq: (start + n, start + n + m) if second else (start, start + n)
                for seq, start, second in self._ranges}

    def field(self, name: str, k: int) -> list:
        if name == "type_ids":
            n, m = self._nm(k)
            first, second = [self.ta] * n, [self.tb] * m
        else:
            first, second = self.a.field(name, self.ia[k]), self.b.field(name, self.ib[k])
        return self.before[name] + first + self.mid[name] + second + self.after[name]

