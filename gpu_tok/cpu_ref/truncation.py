"""Truncation and padding, as the pinned reference applies them
(docs/decisions/0029-truncation-padding.md).

- ``tokenize_with_limit``: with truncation set, the model stops once the pieces tokenized
  so far (in the truncation's direction) hold ``max_length`` tokens; the pieces after
  that are dropped before the encoding is made. The reference (0.23) does this for the
  first sequence unless the strategy is ``only_second``, and always for the pair.
  What truncation later cuts off (``overflowing``) is therefore only what those pieces
  held beyond the window, not the rest of the text.
- ``truncate_encodings``: the strategies, with the room the post-processor needs taken
  from ``max_length`` first (``effective_max_length``).
- ``pad_encodings``: a batch's padding (one encoding is a batch of one).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..config import PaddingParams, TruncationParams
from ..encoding import Encoding
from ..errors import TruncationError

_USIZE = 1 << 64


def tokenize_with_limit(pts, fn, max_tokens: int, direction: str) -> None:
    """Tokenize the pieces of ``pts`` in ``direction`` until ``max_tokens`` are reached
    (counted after each piece the model tokenizes; added tokens count but never stop it),
    then drop the pieces not reached."""
    total = 0
    splits = pts.splits
    order = range(len(splits)) if direction == "right" else range(len(splits) - 1, -1, -1)
    reached = None
    for i in order:
        sp = splits[i]
        reached = i
        if sp.tokens is not None:
            total += len(sp.tokens)
            continue
        sp.tokens = fn(sp.normalized.text)
        total += len(sp.tokens)
        if total >= max_tokens:
            break
    if reached is None:
        return
    if direction == "right":
        del splits[reached + 1:]
    else:
        del splits[:reached]


def effective_max_length(trunc: TruncationParams, n_added: int) -> int:
    """``max_length`` less the post-processor's tokens, in the reference's unsigned
    arithmetic: below zero it wraps around, so such a truncation never cuts."""
    return (trunc.max_length - n_added) % _USIZE


def budget(trunc: TruncationParams, n_added: int, add_special_tokens: bool) -> int:
    """The ``max_length`` truncation cuts to: less the post-processor's ``n_added`` tokens
    when they are added (``effective_max_length``), else the setting itself."""
    if add_special_tokens and n_added > 0:
        return effective_max_length(trunc, n_added)
    return trunc.max_length


def stride_error(max_len: int) -> TruncationError:
    """The reference's panic when a window's stride does not fit (``Encoding::truncate``)."""
    return TruncationError(f"`stride` must be strictly less than `max_len={max_len}` (note that `max_len` may be "
                           "shorter than the max length of the original model, as it subtracts the number of "
                           "special characters")


def check_stride(trunc: TruncationParams, n_added_single: int) -> None:
    """``enable_truncation``'s check, in the reference's words."""
    eff = effective_max_length(trunc, n_added_single)
    if eff < trunc.stride:
        raise ValueError(
            f"tokenizer stride set to {trunc.stride}, which is greater than or equal to its effective max length "
            f"of {eff} (= {trunc.max_length} original max length - {n_added_single} added special tokens), ")


def truncate_encodings(enc: Encoding, pair: Optional[Encoding], max_length: int, trunc: TruncationParams
                       ) -> Tuple[Encoding, Optional[Encoding]]:
    """The reference's ``truncate_encodings`` with ``max_length`` already made effective."""
    stride, direction = trunc.stride, trunc.direction
    if max_length == 0:
        enc.truncate(0, stride, direction)
        if pair is not None:
            pair.truncate(0, stride, direction)
        return enc, pair
    total = len(enc.ids) + (len(pair.ids) if pair is not None else 0)
    if total <= max_length:
        return enc, pair
    to_remove = total - max_length
    if trunc.strategy == "longest_first":
        if pair is None:
            enc.truncate(total - to_remove, stride, direction)
            return enc, pair
        n1, n2 = len(enc.ids), len(pair.ids)
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        if swap:
            n1, n2 = n2, n1
        enc.truncate(n1, stride, direction)
        pair.truncate(n2, stride, direction)
        return enc, pair
    if trunc.strategy == "only_first":
        target = enc
    elif pair is not None:
        target = pair
    else:
        raise TruncationError("Truncation error: Second sequence not provided")
    n = len(target.ids)
    if n <= to_remove:
        raise TruncationError("Truncation error: Sequence to truncate too short to respect the provided max_length")
    target.truncate(n - to_remove, stride, direction)
    return enc, pair


def pad_length(lengths: List[int], pad: PaddingParams) -> int:
    """The length every encoding of a batch is padded to."""
    n = pad.length if pad.length is not None else max(lengths)
    m = pad.pad_to_multiple_of
    if m and n % m:
        n += m - n % m
    return n


def pad_encodings(encodings: List[Encoding], pad: PaddingParams) -> None:
    if not encodings:
        return
    n = pad_length([len(e) for e in encodings], pad)
    for e in encodings:
        e.pad(n, direction=pad.direction, pad_id=pad.pad_id, pad_type_id=pad.pad_type_id, pad_token=pad.pad_token)
