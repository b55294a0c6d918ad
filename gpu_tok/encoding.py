"""``Encoding``: one encoded sequence, with Hugging Face's field names."""

from __future__ import annotations

from typing import List, Optional, Tuple


class Encoding:
    """The result of encoding one text (or pair), field for field as HF ``tokenizers.Encoding``.

    - ``ids``: token ids;
    - ``type_ids``: segment ids set by the post-processor;
    - ``tokens``: token strings;
    - ``offsets``: ``(start, end)`` in *characters* of the input text; ``(0, 0)`` for
      tokens the post-processor added;
    - ``attention_mask``: 1 for every token (no padding is applied);
    - ``special_tokens_mask``: 1 for tokens the post-processor added, else 0
      (added tokens found in the text count as 0, as in the reference);
    - ``word_ids``: index of the pre-tokenized piece a token came from, ``None``
      for tokens the post-processor added;
    - ``sequence_ids``: 0 or 1 (which input of a pair), ``None`` for added tokens;
    - ``overflowing``: always empty (no truncation is applied).
    """

    __slots__ = ("ids", "type_ids", "tokens", "offsets", "attention_mask", "special_tokens_mask",
                 "word_ids", "sequence_ids", "overflowing")

    def __init__(self, ids=None, type_ids=None, tokens=None, offsets=None, special_tokens_mask=None,
                 word_ids=None, sequence_ids=None):
        self.ids: List[int] = ids if ids is not None else []
        n = len(self.ids)
        self.type_ids: List[int] = type_ids if type_ids is not None else [0] * n
        self.tokens: List[str] = tokens if tokens is not None else []
        self.offsets: List[Tuple[int, int]] = offsets if offsets is not None else []
        self.special_tokens_mask: List[int] = special_tokens_mask if special_tokens_mask is not None else [0] * n
        self.attention_mask: List[int] = [1] * n
        self.word_ids: List[Optional[int]] = word_ids if word_ids is not None else [None] * n
        self.sequence_ids: List[Optional[int]] = sequence_ids if sequence_ids is not None else [None] * n
        self.overflowing: List["Encoding"] = []

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def words(self) -> List[Optional[int]]:
        return self.word_ids

    @property
    def n_sequences(self) -> int:
        return len({s for s in self.sequence_ids if s is not None}) or 1

    def set_sequence_id(self, seq: int) -> None:
        self.sequence_ids = [seq] * len(self.ids)

    def extend(self, other: "Encoding") -> None:
        self.ids += other.ids
        self.type_ids += other.type_ids
        self.tokens += other.tokens
        self.offsets += other.offsets
        self.special_tokens_mask += other.special_tokens_mask
        self.attention_mask += other.attention_mask
        self.word_ids += other.word_ids
        self.sequence_ids += other.sequence_ids

    def copy(self) -> "Encoding":
        e = Encoding(list(self.ids), list(self.type_ids), list(self.tokens), list(self.offsets),
                     list(self.special_tokens_mask), list(self.word_ids), list(self.sequence_ids))
        e.attention_mask = list(self.attention_mask)
        return e

    @staticmethod
    def merge(encodings: List["Encoding"]) -> "Encoding":
        out = Encoding()
        for e in encodings:
            out.extend(e)
        return out

    def __repr__(self) -> str:
        return (f"Encoding(num_tokens={len(self.ids)}, attributes=[ids, type_ids, tokens, offsets, "
                f"attention_mask, special_tokens_mask, word_ids, overflowing])")
