"""Extended grapheme clusters, as the reference cuts them (for ``Precompiled``).

The reference cuts text with the Rust ``unicode-segmentation`` crate
(``graphemes(true)``: extended clusters), Unicode's UAX #29 rules GB3-GB13 with GB9c.
The character classes the rules read come from ``gpu_tok/data/graphemes.json``, written
by ``scripts/gen_grapheme_tables.py``, which checks them against the pinned reference
on every code point where the reference's output shows them (decision 0027), so the
result does not depend on the ``regex`` or Python version that runs this.

``grapheme_bounds(text)`` returns the clusters as ``(start, end)`` character indices.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Tuple

_TABLE = Path(__file__).resolve().parents[1] / "data" / "graphemes.json"

# Grapheme_Cluster_Break values, in the order of the table's "gcb" keys
GCB_NAMES = ("Other", "CR", "LF", "Control", "Extend", "ZWJ", "Regional_Indicator", "Prepend",
             "SpacingMark", "L", "V", "T", "LV", "LVT")
(OTHER, CR, LF, CONTROL, EXTEND, ZWJ, RI, PREPEND, SPACING, L, V, T, LV, LVT) = range(len(GCB_NAMES))
INCB_NAMES = ("None", "Linker", "Consonant", "Extend")
_EXTPICT = 0x80  # flag bit next to the class in the per-code-point byte
_INCB_SHIFT = 4  # InCB in bits 4-5

_PROPS: Optional[bytearray] = None


def props() -> bytearray:
    """One byte per code point: GCB class (bits 0-3), InCB (bits 4-5), ExtPict (bit 7)."""
    global _PROPS
    if _PROPS is None:
        data = json.loads(_TABLE.read_text(encoding="utf-8"))
        p = bytearray(0x110000)
        for k, name in enumerate(GCB_NAMES[1:], 1):
            for a, b in data["gcb"][name]:
                p[a:b + 1] = bytes([k]) * (b + 1 - a)
        for k, name in enumerate(INCB_NAMES[1:], 1):
            for a, b in data["incb"][name]:
                for c in range(a, b + 1):
                    p[c] |= k << _INCB_SHIFT
        for a, b in data["extended_pictographic"]:
            for c in range(a, b + 1):
                p[c] |= _EXTPICT
        _PROPS = p
    return _PROPS


_CTRL = (CR, LF, CONTROL)


def grapheme_bounds(text: str) -> List[Tuple[int, int]]:
    n = len(text)
    if n == 0:
        return []
    if text.isascii():  # ASCII: every character is a cluster but CR LF
        if "\r\n" not in text:
            return [(i, i + 1) for i in range(n)]
    P = props()
    out: List[Tuple[int, int]] = []
    start = 0
    pv = P[ord(text[0])]
    prev = pv & 0x0F
    ri_run = 1 if prev == RI else 0  # regional indicators ending at prev
    emoji = 1 if pv & _EXTPICT else 0  # 1: ExtPict Extend*, 2: ... ZWJ
    incb = 1 if (pv >> _INCB_SHIFT) & 3 == 2 else 0  # 1: Consonant [Extend|Linker]*, 2: a Linker seen
    for i in range(1, n):
        v = P[ord(text[i])]
        cur = v & 0x0F
        ib = (v >> _INCB_SHIFT) & 3
        if prev == CR and cur == LF:
            brk = False
        elif prev in _CTRL or cur in _CTRL:
            brk = True
        elif prev == L and cur in (L, V, LV, LVT):
            brk = False
        elif prev in (LV, V) and cur in (V, T):
            brk = False
        elif prev in (LVT, T) and cur == T:
            brk = False
        elif cur in (EXTEND, ZWJ, SPACING) or prev == PREPEND:
            brk = False
        elif incb == 2 and ib == 2:
            brk = False
        elif emoji == 2 and v & _EXTPICT:
            brk = False
        elif prev == RI and cur == RI and ri_run % 2 == 1:
            brk = False
        else:
            brk = True
        if brk:
            out.append((start, i))
            start = i
        # states after this character
        ri_run = ri_run + 1 if cur == RI else 0
        if v & _EXTPICT:
            emoji = 1
        elif emoji == 1 and cur == EXTEND:
            emoji = 1
        elif emoji == 1 and cur == ZWJ:
            emoji = 2
        else:
            emoji = 0
        if ib == 2:
            incb = 1
        elif incb and ib == 1:
            incb = 2
        elif incb and ib == 3:
            pass
        else:
            incb = 0
        prev = cur
    out.append((start, n))
    return out
