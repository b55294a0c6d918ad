"""Normalized strings with alignment tracking, and pre-tokenized strings.

This is the bookkeeping every stage of the pipeline shares. A
``NormalizedString`` holds the current (normalized) text of one piece of the
input and, for every character of it, the span of *original* characters it
came from. Offsets reported to the user are computed from these spans.

Representation (the reference keeps one span per UTF-8 byte in byte units;
every byte of a character always carries the same span there, so one span per
character in character units is the same information):

- ``text``: the normalized text of this piece (a ``str``);
- ``starts`` / ``ends``: for each character of ``text``, the span
  ``[start, end)`` in characters of the *whole* original input;
- ``shift``: the position in the original input where this piece's original
  text starts. It is used for one rule only: a character inserted at the very
  start of a piece (no character before it to copy a span from) gets the empty
  span ``[shift, shift)``.

Edits are described the way the reference describes them: a stream of
``(char, change)`` pairs where ``change`` is ``0`` for a character that
replaces the next old character, ``+1`` for a newly inserted character (it
copies the span of the old character just before the edit point) and ``-n``
for a character that replaces the next old character and then removes ``n``
more old characters.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence, Tuple

Span = Tuple[int, int]

REMOVED, ISOLATED, MERGED_WITH_PREVIOUS, MERGED_WITH_NEXT, CONTIGUOUS = (
    "Removed",
    "Isolated",
    "MergedWithPrevious",
    "MergedWithNext",
    "Contiguous",
)
BEHAVIOURS = (REMOVED, ISOLATED, MERGED_WITH_PREVIOUS, MERGED_WITH_NEXT, CONTIGUOUS)


class NormalizedString:
    __slots__ = ("text", "starts", "ends", "shift")

    def __init__(self, text: str, starts: List[int], ends: List[int], shift: int):
        self.text = text
        self.starts = starts
        self.ends = ends
        self.shift = shift

    @classmethod
    def from_original(cls, text: str, shift: int = 0) -> "NormalizedString":
        n = len(text)
        return cls(text, list(range(shift, shift + n)), list(range(shift + 1, shift + n + 1)), shift)

    def __len__(self) -> int:
        return len(self.text)

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"NormalizedString({self.text!r}, shift={self.shift})"

    # ------------------------------------------------------------------ spans
    def slice(self, start: int, end: int) -> "NormalizedString":
        """The sub-piece made of normalized characters ``[start, end)``."""
        # an empty slice is shifted by the normalized position itself, as in the reference
        shift = self.starts[start] if start < end else self.shift + start
        return NormalizedString(self.text[start:end], self.starts[start:end], self.ends[start:end], shift)

    # ------------------------------------------------------------- transform
    def transform_range(self, a: int, b: int, dest: Iterable[Tuple[str, int]], initial_offset: int = 0) -> None:
        """Replace normalized characters ``[a, b)`` by ``dest`` (see module doc)."""
        old_s, old_e = self.starts, self.ends
        pos = a + initial_offset
        chars: List[str] = []
        ns: List[int] = []
        ne: List[int] = []
        shift = self.shift
        for c, change in dest:
            if change > 0:
                if pos < 1:
                    s = e = shift
                else:
                    s, e = old_s[pos - 1], old_e[pos - 1]
            else:
                s, e = old_s[pos], old_e[pos]
                pos += 1
                if change < 0:
                    pos -= change
            chars.append(c)
            ns.append(s)
            ne.append(e)
        self.text = self.text[:a] + "".join(chars) + self.text[b:]
        self.starts = old_s[:a] + ns + old_s[b:]
        self.ends = old_e[:a] + ne + old_e[b:]

    def transform(self, dest: Iterable[Tuple[str, int]], initial_offset: int = 0) -> None:
        self.transform_range(0, len(self.text), dest, initial_offset)

    def prepend(self, s: str) -> None:
        if not self.text or not s:
            return
        first = self.text[0]
        dest = [(c, 0 if i == 0 else 1) for i, c in enumerate(s)]
        dest.append((first, 1))
        self.transform_range(0, 1, dest)

    def filter(self, keep) -> None:
        """Keep only the characters for which ``keep(c)`` is true."""
        if all(keep(c) for c in self.text):
            return
        idx = [i for i, c in enumerate(self.text) if keep(c)]
        self.text = "".join(self.text[i] for i in idx)
        self.starts = [self.starts[i] for i in idx]
        self.ends = [self.ends[i] for i in idx]

    def strip_chars(self, left: int, right: int) -> None:
        """Remove ``left`` leading and ``right`` trailing characters."""
        n = len(self.text)
        end = n - right
        if left >= end:
            self.text, self.starts, self.ends = "", [], []
            return
        self.text = self.text[left:end]
        self.starts = self.starts[left:end]
        self.ends = self.ends[left:end]

    def replace_matches(self, matches: Sequence[Span], content: str) -> None:
        """Replace each normalized span in ``matches`` (sorted, disjoint) by ``content``.

        Every inserted character copies the span of the last replaced character
        (the reference's rule); a match at position 0 that is empty gets ``[shift, shift)``.
        """
        if not matches:
            return
        text, old_s, old_e = self.text, self.starts, self.ends
        out: List[str] = []
        ns: List[int] = []
        ne: List[int] = []
        last = 0
        k = len(content)
        for a, b in matches:
            out.append(text[last:a])
            ns.extend(old_s[last:a])
            ne.extend(old_e[last:a])
            if b < 1:
                s = e = self.shift
            else:
                s, e = old_s[b - 1], old_e[b - 1]
            out.append(content)
            ns.extend([s] * k)
            ne.extend([e] * k)
            last = b
        out.append(text[last:])
        ns.extend(old_s[last:])
        ne.extend(old_e[last:])
        self.text = "".join(out)
        self.starts = ns
        self.ends = ne

    # ----------------------------------------------------------------- split
    def split(self, matches: Sequence[Tuple[int, int, bool]], behaviour: str) -> List["NormalizedString"]:
        """Split on ``matches``: ``(start, end, is_match)`` covering the whole text in order."""
        if behaviour == ISOLATED:
            cuts = [(a, b, False) for a, b, _ in matches]
        elif behaviour == REMOVED:
            cuts = list(matches)
        elif behaviour == CONTIGUOUS:
            cuts = []
            prev = False
            for a, b, m in matches:
                if m == prev and cuts:
                    cuts[-1] = (cuts[-1][0], b, False)
                else:
                    cuts.append((a, b, False))
                prev = m
        elif behaviour == MERGED_WITH_PREVIOUS:
            cuts = []
            prev = False
            for a, b, m in matches:
                if m and not prev and cuts:
                    cuts[-1] = (cuts[-1][0], b, False)
                else:
                    cuts.append((a, b, False))
                prev = m
        elif behaviour == MERGED_WITH_NEXT:
            cuts = []
            prev = False
            for a, b, m in reversed(matches):
                if m and not prev and cuts:
                    cuts[-1] = (a, cuts[-1][1], False)
                else:
                    cuts.append((a, b, False))
                prev = m
            cuts.reverse()
        else:  # pragma: no cover - the loader validates behaviours
            raise ValueError(f"unknown split behaviour {behaviour!r}")
        return [self.slice(a, b) for a, b, remove in cuts if not remove]


def matches_from_spans(text_len: int, spans: Iterable[Span]) -> List[Tuple[int, int, bool]]:
    """Turn match spans into ``(start, end, is_match)`` covering ``[0, text_len)``."""
    if text_len == 0:
        return [(0, 0, False)]
    out: List[Tuple[int, int, bool]] = []
    prev = 0
    for a, b in spans:
        if prev != a:
            out.append((prev, a, False))
        out.append((a, b, True))
        prev = b
    if prev != text_len:
        out.append((prev, text_len, False))
    return out


def matches_from_predicate(text: str, pred) -> List[Tuple[int, int, bool]]:
    """Each character for which ``pred`` holds is a match of its own."""
    if not text:
        return [(0, 0, False)]
    out: List[Tuple[int, int, bool]] = []
    last = 0
    for i, c in enumerate(text):
        if pred(c):
            if last < i:
                out.append((last, i, False))
            out.append((i, i + 1, True))
            last = i + 1
    if len(text) > last:
        out.append((last, len(text), False))
    return out


def invert(matches: List[Tuple[int, int, bool]]) -> List[Tuple[int, int, bool]]:
    return [(a, b, not m) for a, b, m in matches]


class Token:
    __slots__ = ("id", "value", "start", "end")

    def __init__(self, id: int, value: str, start: int, end: int):
        self.id = id
        self.value = value
        self.start = start  # UTF-8 byte offsets inside the piece's normalized text
        self.end = end

    def __repr__(self) -> str:  # pragma: no cover
        return f"Token({self.id}, {self.value!r}, {self.start}, {self.end})"


class Split:
    __slots__ = ("normalized", "tokens")

    def __init__(self, normalized: NormalizedString, tokens: Optional[List[Token]] = None):
        self.normalized = normalized
        self.tokens = tokens


class PreTokenizedString:
    """The input cut into pieces; pieces with ``tokens`` set are final (added tokens)."""

    def __init__(self, original: str):
        self.original = original
        self.splits: List[Split] = [Split(NormalizedString.from_original(original))]

    def split(self, fn) -> None:
        """``fn(index, normalized)`` returns a list of ``NormalizedString`` or ``Split``."""
        new: List[Split] = []
        for i, sp in enumerate(self.splits):
            if sp.tokens is not None:
                new.append(sp)
                continue
            for piece in fn(i, sp.normalized):
                if not isinstance(piece, Split):
                    piece = Split(piece)
                if piece.normalized.text:
                    new.append(piece)
        self.splits = new

    def normalize(self, fn) -> None:
        for sp in self.splits:
            if sp.tokens is None:
                fn(sp.normalized)

    def tokenize(self, fn) -> None:
        for sp in self.splits:
            if sp.tokens is None:
                sp.tokens = fn(sp.normalized.text)
