"""Ids back to bytes by table (``fast_decode``): each id's bytes copied from an arena.

Layout: ``arena: uint8[B]`` every id's bytes back to back, id ``i``'s at
``arena[offs[i]:offs[i + 1]]`` (``offs: int64[n + 1]``); ``bad: uint8[n]``, 1 for an id
whose bytes the caller's own path must give (tiktoken: no token, or an ambiguous special
id); ``ids: uint32[m]``, every one below ``n``. ``join_ids`` returns ``(out, ok)``: the
bytes of ``ids`` joined (``uint8``), or ``ok`` False (and nothing) when an id is bad.
"""
from __future__ import annotations

import numpy as np

from .hash_table import njit_cached


@njit_cached(nogil=True)
def join_ids(arena, offs, bad, ids):
    total = 0
    for k in range(ids.shape[0]):
        i = ids[k]
        if bad[i]:
            return np.empty(0, np.uint8), False
        total += offs[i + 1] - offs[i]
    out = np.empty(total, np.uint8)
    o = 0
    for k in range(ids.shape[0]):
        i = ids[k]
        a = offs[i]
        n = offs[i + 1] - a
        for j in range(n):
            out[o + j] = arena[a + j]
        o += n
    return out, True
