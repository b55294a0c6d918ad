"""Truncation, the post-processor's tokens and padding applied to flat ids
(``Tokenizer.encode_batch_ids`` with ``enable_truncation`` / ``enable_padding``).

The engines encode whole documents without special tokens; this module cuts each row as
the reference's truncation cuts a single sequence, wraps it in the post-processor's
prefix and suffix and pads the batch, in a few vectorized NumPy steps.

Why slicing whole rows gives the reference's ids (docs/decisions/0029): for a single
sequence the reference tokenizes pieces until ``max_length`` tokens are reached, then
keeps ``max_length`` less the post-processor's tokens, from the start (``right``) or the
end (``left``); both are the first (last) tokens of the whole document's ids. The one
case where the early stop itself shows in the ids (``max_length`` below the
post-processor's tokens, where the reference's unsigned subtraction wraps and nothing
more is cut) is left to the reference path: ``wraps`` says so.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .config import PaddingParams, TruncationParams
from .cpu_ref.truncation import budget as kept_length, pad_length, stride_error
from .errors import TruncationError


def wraps(trunc: Optional[TruncationParams], n_added: int, add_special_tokens: bool) -> bool:
    """Whether the effective ``max_length`` wrapped around (then the ids path does not serve)."""
    return trunc is not None and kept_length(trunc, n_added, add_special_tokens) > trunc.max_length


def apply(ids: np.ndarray, rs: np.ndarray, prefix: np.ndarray, suffix: np.ndarray,
          trunc: Optional[TruncationParams], pad: Optional[PaddingParams], n_added: int,
          add_special_tokens: bool):
    """``(ids, row_splits)`` of rows without special tokens, truncated, wrapped (when
    ``add_special_tokens``) and padded as the reference's ``encode_batch`` gives them."""
    lens = np.diff(rs)
    n = lens.shape[0]
    keep = lens
    if trunc is not None:
        k = kept_length(trunc, n_added, add_special_tokens)
        over = lens > k
        if k > 0 and over.any():
            if trunc.strategy == "only_second":
                raise TruncationError("Truncation error: Second sequence not provided")
            if trunc.stride >= k:
                raise stride_error(k)
        keep = np.minimum(lens, k)
    skip = lens - keep if trunc is not None and trunc.direction == "left" else np.zeros(n, np.int64)
    if not add_special_tokens:
        prefix = suffix = np.zeros(0, np.int32)
    P, S = prefix.shape[0], suffix.shape[0]
    body = keep + P + S
    final = body
    lead = np.zeros(n, np.int64)
    if pad is not None and n:
        L = pad_length([int(body.max())], pad)
        final = np.maximum(body, L)
        if pad.direction == "left":
            lead = final - body
    out_rs = np.zeros(n + 1, np.int64)
    np.cumsum(final, out=out_rs[1:])
    total = int(out_rs[-1])
    out = np.full(total, pad.pad_id if pad is not None else 0, np.int32)
    start = out_rs[:-1] + lead
    if P:
        out[(start[:, None] + np.arange(P)).ravel()] = np.tile(prefix, n)
    if S:
        out[((start + P + keep)[:, None] + np.arange(S)).ravel()] = np.tile(suffix, n)
    m = int(keep.sum())
    if m:
        row = np.repeat(np.arange(n), keep)
        first = np.zeros(n, np.int64)
        np.cumsum(keep[:-1], out=first[1:])
        pos = np.arange(m) - first[row]
        out[start[row] + P + pos] = ids[rs[:-1][row] + skip[row] + pos]
    return out, out_rs
