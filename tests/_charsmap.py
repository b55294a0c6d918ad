"""Build ``precompiled_charsmap`` bytes for tests and measurement scripts.

SentencePiece compiles its normalization rules into a Darts double array (layout in
``gpu_tok/cpu_ref/precompiled.py``). This builder writes one from a ``{key: replacement}``
mapping so that the reference's ``Precompiled`` normalizer can be run on rules of our
choosing: every character a key of its own shows where the reference cuts grapheme
clusters, and random rule sets exercise the normalizer against ours.

Placement is first fit over 256-unit blocks: a node's children (byte labels, plus label 0
for "a key ends here", whose unit holds the value) go to ``base ^ label`` for the
smallest free ``base`` whose XOR distance from the node fits the offset field.
"""

from __future__ import annotations

import base64
import struct
from typing import Dict, List


def build_charsmap(mapping: Dict[str, str]) -> bytes:
    blob = bytearray()
    values: Dict[str, int] = {}
    for k in sorted(mapping):
        if not k or "\0" in k:
            raise ValueError(f"a key must be non-empty and hold no NUL: {k!r}")
        values[k] = len(blob)
        blob += mapping[k].encode("utf-8") + b"\0"
    # byte trie: node = [children dict, value or None]
    root: List = [{}, None]
    for k, v in values.items():
        node = root
        for b in k.encode("utf-8"):
            node = node[0].setdefault(b, [{}, None])
        node[1] = v
    units: List[int] = [0] * 256
    used = bytearray(256)
    used[0] = 1  # the root's own unit
    lo = [1]  # no free unit below this
    bases = set()  # a base serves one node only (as in darts-clone), or keys would repeat

    def grow(to: int) -> None:
        while len(units) < to:
            units.extend([0] * 256)
            used.extend(bytes(256))

    def encode_offset(off: int) -> int:
        if off < (1 << 21):
            return off << 10
        assert off % 256 == 0 and off < (1 << 29)
        return ((off >> 8) << 10) | (1 << 9)

    leaf_ptr = [256]  # first position a value-only node's base may take

    def find_base(pos: int, need: List[int]) -> int:
        if need == [0]:
            base = leaf_ptr[0]
            while True:
                grow(base + 256)
                if not used[base] and base not in bases and (pos ^ base) < (1 << 21):
                    leaf_ptr[0] = base + 1
                    return base
                base += 1
        while lo[0] < len(used) and used[lo[0]]:
            lo[0] += 1
        base = max(256, lo[0] & ~0xFF)
        while True:
            off = pos ^ base
            if off < (1 << 21) or (off % 256 == 0 and off < (1 << 29)):
                grow(base + 256)
                if base not in bases and all(not used[base ^ c] for c in need):
                    return base
            base += 1

    def place(pos: int, node: List) -> None:
        labels = sorted(node[0])
        need = ([0] if node[1] is not None else []) + labels
        base = find_base(pos, need)
        bases.add(base)
        units[pos] |= encode_offset(pos ^ base)
        for c in need:
            used[base ^ c] = 1
        if node[1] is not None:
            units[base] = node[1] | (1 << 31)
            units[pos] |= 1 << 8
        for c in labels:
            units[base ^ c] |= c
        for c in labels:
            place(base ^ c, node[0][c])

    place(0, root)
    trie = b"".join(struct.pack("<I", u) for u in units)
    return struct.pack("<I", len(trie)) + trie + bytes(blob)


def charsmap_b64(mapping: Dict[str, str]) -> str:
    return base64.b64encode(build_charsmap(mapping)).decode("ascii")
