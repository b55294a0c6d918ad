"""Added tokens: ids, and the two matching passes of the pipeline.

Ids are assigned as the reference assigns them when it loads a file (the ids
written in the file are not used): entries are taken in file order; an entry
whose content is already in the vocabulary (model or added) gets that id,
any other gets the next free id after the model vocabulary.

Matching (``extract_and_normalize``):
1. entries with ``normalized: false`` are matched on the raw text;
2. the normalizer runs on each gap left by pass 1;
3. entries with ``normalized: true`` are matched on the normalized gaps, their
   content first normalized by the same normalizer.
Each pass is leftmost-longest over the whole set of contents. ``single_word``
drops a match touching a word character on either side; ``lstrip``/``rstrip``
widen the match over adjacent whitespace (never back over an earlier match).
The token's string is the matched text, widened part included.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from .. import config as C
from .normalized import NormalizedString, PreTokenizedString, Split, Token
from .normalizers import normalize_str
from .unicode_props import RUST_SPACE, RUST_WORD

# Rust regex classes the reference uses around added tokens (\w for single_word,
# \s for lstrip/rstrip), measured from the reference (``unicode_props``).
_WORD_CHAR = RUST_WORD
_WS_CHAR = RUST_SPACE


class DuplicatePattern(ValueError):
    """Two added tokens match the same text (normalized ones after normalization): the
    reference's matcher cannot be built, and it raises ``DuplicatePatternError``."""


class _Trie:
    """Leftmost-longest multi-pattern matcher over a dict trie."""

    def __init__(self, patterns: List[Tuple[str, int]]):
        self.root: dict = {}
        for pat, value in patterns:
            node = self.root
            for ch in pat:
                node = node.setdefault(ch, {})
            if None in node:  # the reference's trie builder refuses a pattern twice
                raise DuplicatePattern(f"DuplicatePatternError: {list(pat.encode('utf-8'))}")
            node[None] = value
        self.first = frozenset(self.root)

    def find_iter(self, text: str):
        """Non-overlapping leftmost-longest matches: (start, end, value)."""
        i = 0
        n = len(text)
        root = self.root
        first = self.first
        while i < n:
            if text[i] not in first:
                i += 1
                continue
            node = root
            j = i
            best = None
            while j < n:
                node = node.get(text[j])
                if node is None:
                    break
                j += 1
                if None in node:
                    best = (j, node[None])
            if best is None:
                i += 1
                continue
            yield i, best[0], best[1]
            i = best[0]


class AddedVocabulary:
    def __init__(self, entries, model, normalizer_cfg):
        self.normalizer_cfg = normalizer_cfg
        self.model = model
        self.map: Dict[str, int] = {}
        self.map_r: Dict[int, C.AddedToken] = {}
        self.special: Set[str] = set()
        self.normalized_form: Dict[int, str] = {}
        self.raw_trie = self.norm_trie = None
        # loading a file adds its tokens in one call, as the reference's deserializer does
        try:
            self.add_tokens([tok for _file_id, tok in entries])
        except DuplicatePattern as e:
            from ..errors import TokenizerFileError

            raise TokenizerFileError("added_tokens", f"{e} (two added tokens would match the same text; the "
                                     "reference refuses such a file)") from None

    def add_tokens(self, tokens) -> int:
        """The reference's ``AddedVocabulary::add_tokens``: new contents get ids from past
        the model's vocabulary (or past the largest added id), contents the model (or this
        vocabulary) knows keep that id; an identical entry is ignored. Returns how many
        were added."""
        vsize = self.model.get_vocab_size()
        top = max(self.map_r, default=None)
        next_id = vsize if top is None else (top + 1 if top >= vsize or vsize == 0 else vsize)
        added = 0
        for tok in tokens:
            if not tok.content:
                continue
            old = self.map.get(tok.content)
            if old is not None and self.map_r.get(old) == tok:
                continue
            added += 1
            new_id = self.map.get(tok.content)
            if new_id is None:
                new_id = self.model.token_to_id(tok.content)
            if new_id is None:
                new_id = next_id
                next_id += 1
            if tok.normalized and self.normalizer_cfg is not None:
                normed = normalize_str(self.normalizer_cfg, tok.content)
                if normed != tok.content:
                    self.normalized_form[new_id] = normed
            self.map[tok.content] = new_id
            if tok.special:
                self.special.add(tok.content)
            self.map_r[new_id] = tok
        raw, norm = [], []
        for i, tok in self.map_r.items():
            if tok.normalized:
                norm.append((self.normalized_form.get(i, tok.content), i))
            else:
                raw.append((tok.content, i))
        # as the reference: on a duplicate the entries above stay and the matcher that
        # failed (and, for the raw one, the normalized one after it) keeps its old patterns
        self.raw_trie = _Trie(raw) if raw else None
        self.norm_trie = _Trie(norm) if norm else None
        return added

    # --------------------------------------------------------------- lookups
    def token_to_id(self, token: str) -> Optional[int]:
        return self.map.get(token)

    def id_to_token(self, i: int) -> Optional[str]:
        """The string of an added token for decoding (its normalized form when normalized)."""
        tok = self.map_r.get(i)
        if tok is None:
            return None
        return self.normalized_form.get(i, tok.content)

    def is_special(self, token: str) -> bool:
        return token in self.special

    # -------------------------------------------------------------- matching
    def _find_matches(self, text: str, trie: Optional[_Trie]):
        if not text:
            return [(None, 0, 0)]
        if trie is None:
            return [(None, 0, len(text))]
        out = []
        start_offset = 0
        for start, stop, i in trie.find_iter(text):
            tok = self.map_r[i]
            if tok.single_word:
                start_space = start == 0 or not _WORD_CHAR.match(text[start - 1])
                stop_space = stop == len(text) or not _WORD_CHAR.match(text[stop])
                if not (start_space and stop_space):
                    continue
            if tok.lstrip:
                s = start
                while s > 0 and _WS_CHAR.match(text[s - 1]):
                    s -= 1
                start = max(s, start_offset)
            if tok.rstrip:
                while stop < len(text) and _WS_CHAR.match(text[stop]):
                    stop += 1
            if start_offset < start:
                out.append((None, start_offset, start))
            out.append((i, start, stop))
            start_offset = stop
        if start_offset != len(text):
            out.append((None, start_offset, len(text)))
        return out

    def _split_with_indices(self, ns: NormalizedString, trie):
        pieces = []
        for i, a, b in self._find_matches(ns.text, trie):
            sl = ns.slice(a, b)
            if i is None:
                pieces.append(Split(sl))
            else:
                pieces.append(Split(sl, [Token(i, sl.text, 0, len(sl.text.encode("utf-8")))]))
        return pieces

    def extract_and_normalize(self, text: str, normalize_fn) -> PreTokenizedString:
        pts = PreTokenizedString(text)
        pts.split(lambda _i, ns: self._split_with_indices(ns, self.raw_trie))

        def second(_i, ns):
            if normalize_fn is not None:
                normalize_fn(ns)
            return self._split_with_indices(ns, self.norm_trie)

        pts.split(second)
        return pts
