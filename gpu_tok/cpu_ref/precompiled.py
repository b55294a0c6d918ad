"""The ``Precompiled`` normalizer: SentencePiece's compiled character map.

A ``precompiled_charsmap`` (base64 in ``tokenizer.json``) is the bytes SentencePiece
writes for its normalization rules:

- a little-endian ``u32``: the size in bytes of the trie that follows;
- the trie, a Darts double array of little-endian ``u32`` units;
- the rest: the replacement strings, UTF-8, each ended by a NUL byte. A key's value is
  the byte offset of its replacement in this blob.

One unit of the double array packs (as the reference reads it): bit 8 "has a leaf",
bits 0-7 the label (compared with bit 31 included, so a leaf unit never matches a
byte), the value in bits 0-30 (of a leaf unit) and an offset in bits 10-31 (shifted left
8 more when bit 9 is set). A lookup starts at position ``0 ^ offset(unit[0])``; each
byte ``c`` moves to ``pos ^ c``, which must carry label ``c``, then on to
``pos ^ offset``; where that unit has a leaf, the unit at the new position holds the
value of the key read so far. A NUL byte ends the lookup.

Normalization (measured, decision 0027): the text is cut into extended grapheme
clusters (``graphemes.py``). A cluster of fewer than 6 UTF-8 bytes is replaced whole
by the value of the *shortest* key that is a prefix of its bytes, if there is one: the
rest of the cluster is dropped (``"Ａ\\u0301"`` becomes ``"A"`` under T5's map).
Otherwise each of its characters is replaced by its own key's value, or kept.

Alignments are the reference's: each replacement's characters replace the old ones one
for one; extra new characters are insertions (the last ones); fewer new characters
remove the difference after the *last character written so far*, which may belong to an
earlier cluster (and at the very start removes nothing: the next character then takes
the dropped one's span).
"""

from __future__ import annotations

import base64
import binascii
import struct
from typing import Dict, List, Optional

import numpy as np

from ..errors import TokenizerFileError
from .graphemes import grapheme_bounds
from .normalized import NormalizedString


def _offset(u: int) -> int:
    return (u >> 10) << ((u & (1 << 9)) >> 6)


class Charsmap:
    """A parsed ``precompiled_charsmap``; ``path`` names it in errors."""

    def __init__(self, data: bytes, path: str = "normalizer.precompiled_charsmap"):
        self.path = path
        if len(data) < 4:
            raise TokenizerFileError(path, f"expected at least 4 bytes (the trie size), found {len(data)}")
        (size,) = struct.unpack_from("<I", data, 0)
        n = size // 4
        if 4 + 4 * n > len(data):
            raise TokenizerFileError(path, f"trie of {size} bytes does not fit in {len(data) - 4} bytes")
        self.array = np.frombuffer(data, dtype="<u4", count=n, offset=4).astype(np.int64)
        self.units: List[int] = self.array.tolist()
        blob = data[4 + 4 * n:]
        try:
            blob.decode("utf-8")
        except UnicodeDecodeError as e:  # the reference refuses it too (NormalizedInvalidUtf8)
            raise TokenizerFileError(path, f"the replacement strings are not valid UTF-8 ({e.reason})") from None
        self.blob = blob
        if not self.units:
            raise TokenizerFileError(path, "the trie is empty")
        self._values: Dict[int, str] = {}
        self._check_all()
        self._char_cache: Dict[str, Optional[str]] = {}

    # --------------------------------------------------------------- checks
    def _check_all(self) -> None:
        """Visit every node a lookup can reach (breadth first over distinct positions:
        darts-clone shares the units of equal sub-tries, so this is a graph, not a tree)
        and refuse a trie whose lookups could read outside the array (the reference
        would panic there) or whose values do not start a replacement string."""
        a = self.array
        n = len(a)
        labels = np.arange(1, 256, dtype=np.int64)
        frontier = np.array([_offset(self.units[0])], dtype=np.int64)
        seen = set()
        while len(frontier):
            if int(frontier.max()) | 0xFF >= n:
                raise TokenizerFileError(self.path, "malformed double array: a node's children lie past its end")
            seen.update(frontier.tolist())
            cand = frontier[:, None] ^ labels[None, :]
            units = a[cand]
            rows, cols = np.nonzero((units & ((1 << 31) | 0xFF)) == labels[None, :])
            child = units[rows, cols]
            bases = cand[rows, cols] ^ ((child >> 10) << ((child & (1 << 9)) >> 6))
            leaf = bases[((child >> 8) & 1).astype(bool)]
            if len(leaf):
                if int(leaf.max()) >= n:
                    raise TokenizerFileError(self.path, "malformed double array: a leaf lies past its end")
                for v in set((a[leaf] & ((1 << 31) - 1)).tolist()):
                    if v not in self._values:
                        self._values[v] = self._check_value(v)
            frontier = np.array(sorted(set(bases.tolist()) - seen), dtype=np.int64)

    def _check_value(self, v: int) -> str:
        blob = self.blob
        if v > len(blob) or (v < len(blob) and 0x80 <= blob[v] < 0xC0):
            raise TokenizerFileError(self.path, f"a rule points at byte {v} of the replacement strings, "
                                                "not the start of one")
        end = blob.find(b"\0", v)
        return blob[v:(len(blob) if end < 0 else end)].decode("utf-8")

    # -------------------------------------------------------------- lookups
    def transform(self, chunk: str) -> Optional[str]:
        """The replacement of the shortest key that is a prefix of ``chunk``'s bytes."""
        u = self.units
        pos = _offset(u[0])
        for c in chunk.encode("utf-8", "surrogatepass"):
            if c == 0:
                return None
            pos ^= c
            unit = u[pos]
            if unit & ((1 << 31) | 0xFF) != c:
                return None
            pos ^= _offset(unit)
            if (unit >> 8) & 1:
                return self._values[u[pos] & ((1 << 31) - 1)]
        return None

    def transform_char(self, c: str) -> Optional[str]:
        r = self._char_cache.get(c, 0)
        if r == 0:
            r = self._char_cache[c] = self.transform(c)
        return r


def decode_charsmap(s: str, path: str) -> bytes:
    """Standard base64; the reference also takes it without its ``=`` padding."""
    if len(s) % 4:
        s += "=" * (-len(s) % 4)
    try:
        return base64.b64decode(s.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as e:
        raise TokenizerFileError(path, f"not valid base64 ({e})") from None


def _replace(out: List[List], old: str, new: str) -> None:
    """The reference's alignment rule for one replacement (see the module doc)."""
    for c in new:
        out.append([c, 0])
    diff = len(new) - len(old)
    if diff > 0:
        for e in out[len(out) - diff:]:
            e[1] = 1
    elif diff < 0 and out:
        out[-1][1] += diff


def precompiled_normalize(cm: Charsmap, ns: NormalizedString) -> None:
    text = ns.text
    if not text:
        return
    out: List[List] = []
    modified = False
    tc = cm.transform_char
    for a, b in grapheme_bounds(text):
        g = text[a:b]
        if b - a > 1 and len(g.encode("utf-8", "surrogatepass")) < 6:
            norm = cm.transform(g)
            if norm is not None:
                modified = True
                _replace(out, g, norm)
                continue
        for c in g:  # (a one-character cluster: the same as its whole)
            norm = tc(c)
            if norm is None:
                out.append([c, 0])
            else:
                modified = True
                _replace(out, c, norm)
    if modified:
        ns.transform([(c, ch) for c, ch in out])

