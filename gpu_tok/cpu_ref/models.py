"""Models: turn one pre-tokenized piece into tokens.

BPE semantics are the reference's: start from one symbol per character (unknown
characters become ``unk_token``, fused when ``fuse_unk``, or are dropped when
there is no ``unk_token``), then repeatedly merge the adjacent pair with the
lowest merge rank, leftmost first on ties. With ``ignore_merges`` a piece that
is itself in the vocabulary is emitted whole. The merge loop uses a heap over
a linked list of symbols, so a piece of n characters costs O(n log n).
"""

from __future__ import annotations

import heapq
from typing import Dict, List, Optional, Tuple

from .. import config as C
from ..errors import TokenizerFileError
from .normalized import Token


class _Vocab:
    """The vocabulary side every model shares, and the per-piece cache of its tokens."""

    def _init_vocab(self, vocab) -> None:
        self.vocab: Dict[str, int] = dict(vocab)
        self.vocab_r: Dict[int, str] = {i: t for t, i in self.vocab.items()}
        self._cache: Dict[str, List[Tuple[int, int, int]]] = {}

    def get_vocab_size(self) -> int:
        return len(self.vocab)

    def token_to_id(self, token: str) -> Optional[int]:
        return self.vocab.get(token)

    def id_to_token(self, i: int) -> Optional[str]:
        return self.vocab_r.get(i)

    def _cached_tokens(self, piece: str, compute) -> List[Token]:
        """``compute(piece)``'s (id, start, end) as tokens, kept for pieces under 256
        characters (at most 100,000 of them)."""
        toks = self._cache.get(piece)
        if toks is None:
            toks = compute(piece)
            if len(piece) < 256 and len(self._cache) < 100_000:
                self._cache[piece] = toks
        vocab_r = self.vocab_r
        return [Token(i, vocab_r[i], s, e) for i, s, e in toks]


class BPEModel(_Vocab):
    """``merges``: optional precomputed merge table used instead of ``cfg.merges``:
    any object whose ``get((left_id, right_id))`` returns ``(rank, merged_id)`` or
    ``None`` (tiktoken encodings pass a table derived from their ranks; see
    ``gpu_tok/tiktoken_encoding.py``). ``cfg.merges`` is then ignored.
    """

    def __init__(self, cfg: C.BPE, merges=None):
        self.cfg = cfg
        self._init_vocab(cfg.vocab)
        vocab = self.vocab
        plen = len(cfg.continuing_subword_prefix or "")
        if merges is None:
            try:
                # with a continuing_subword_prefix the right part loses its prefix when merged
                merges = {
                    (vocab[a], vocab[b]): (rank, vocab[a + b[plen:]]) for rank, (a, b) in enumerate(cfg.merges)
                }
            except KeyError:
                self._merge_error(plen)
                raise
        self.merges = merges
        self.unk_id: Optional[int] = None
        if cfg.unk_token is not None:
            self.unk_id = vocab.get(cfg.unk_token)
        # ids of the <0xXX> tokens for byte_fallback (None where the vocab lacks one)
        self._byte_ids = [vocab.get("<0x%02X>" % b) for b in range(256)] if cfg.byte_fallback else None

    def _merge_error(self, plen: int) -> None:
        """Name the first merge whose parts or result are missing from the vocab."""
        vocab = self.vocab
        for rank, (a, b) in enumerate(self.cfg.merges):
            for what, tok in (("token", a), ("token", b), ("result", a + b[plen:])):
                if tok not in vocab:
                    raise TokenizerFileError(
                        f"{self.cfg.path}.merges[{rank}]", f"merge {a!r} {b!r}: {what} {tok!r} is not in the vocab"
                    )

    # ------------------------------------------------------------------ core
    def _initial_symbols(self, word: str) -> List[Tuple[int, int]]:
        """(id, UTF-8 length) per symbol before merging.

        Lengths are in bytes, as in the reference: token offsets are byte
        offsets into the piece, counted over the symbols that were kept (a
        dropped unknown character takes no room, which shifts later offsets
        exactly as it does in the reference).
        """
        syms: List[Tuple[int, int]] = []
        vocab = self.vocab
        unk: Optional[Tuple[int, int]] = None
        prefix = self.cfg.continuing_subword_prefix
        suffix = self.cfg.end_of_word_suffix
        last = len(word) - 1
        byte_ids = self._byte_ids
        for k, ch in enumerate(word):
            s = ch
            if prefix and k > 0:
                s = prefix + s
            if suffix and k == last:
                s = s + suffix
            i = vocab.get(s)
            blen = 1 if ch < "\x80" else len(ch.encode("utf-8"))
            if i is not None:
                if unk is not None:
                    syms.append(unk)
                    unk = None
                syms.append((i, blen))
                continue
            if byte_ids is not None:
                bs = s.encode("utf-8")
                if all(byte_ids[b] is not None for b in bs):
                    # byte fallback: one <0xXX> token per byte, each one byte long
                    # (an unknown run before it is not flushed here, as in the reference)
                    syms.extend((byte_ids[b], 1) for b in bs)
                    continue
            if self.cfg.unk_token is None:
                continue  # unknown characters without an unk token are dropped
            if self.unk_id is None:
                raise ValueError(f"unk_token {self.cfg.unk_token!r} is not in the vocabulary")
            if unk is not None:
                if self.cfg.fuse_unk:
                    unk = (unk[0], unk[1] + blen)
                    continue
                syms.append(unk)
            unk = (self.unk_id, blen)
        if unk is not None:
            syms.append(unk)
        return syms

    def merge_word(self, word: str) -> List[Tuple[int, int, int]]:
        """Tokens of ``word`` as (id, start, end) in UTF-8 bytes of ``word``."""
        syms = self._initial_symbols(word)
        n = len(syms)
        ids = [s[0] for s in syms]
        lens = [s[1] for s in syms]
        if n > 1:
            merges = self.merges
            prev = list(range(-1, n - 1))
            nxt = list(range(1, n + 1))
            nxt[-1] = -1
            heap = []
            for i in range(n - 1):
                m = merges.get((ids[i], ids[i + 1]))
                if m is not None:
                    heap.append((m[0], i, m[1]))
            heapq.heapify(heap)
            pop, push = heapq.heappop, heapq.heappush
            while heap:
                rank, pos, new_id = pop(heap)
                if lens[pos] == 0:
                    continue
                j = nxt[pos]
                if j == -1:
                    continue
                m = merges.get((ids[pos], ids[j]))
                if m is None or m[1] != new_id:
                    continue
                ids[pos] = new_id
                lens[pos] += lens[j]
                lens[j] = 0
                k = nxt[j]
                nxt[pos] = k
                if k != -1:
                    prev[k] = pos
                p = prev[pos]
                if p >= 0:
                    m = merges.get((ids[p], new_id))
                    if m is not None:
                        push(heap, (m[0], p, m[1]))
                if k != -1:
                    m = merges.get((new_id, ids[k]))
                    if m is not None:
                        push(heap, (m[0], pos, m[1]))
        out: List[Tuple[int, int, int]] = []
        start = 0
        for i in range(n):
            ln = lens[i]
            if ln:
                out.append((ids[i], start, start + ln))
                start += ln
        return out

    def tokenize(self, piece: str) -> List[Token]:
        if not piece:
            return []
        if self.cfg.ignore_merges:
            i = self.vocab.get(piece)
            if i is not None:
                return [Token(i, piece, 0, len(piece.encode("utf-8")))]
        return self._cached_tokens(piece, self.merge_word)


def _missing_unk(family: str, unk: str) -> ValueError:
    return ValueError(f"{family}: unk_token {unk!r} is not in the vocabulary and a piece needs it "
                      f"(the reference fails too: 'Missing [UNK] token from the vocabulary')")


class WordPieceModel(_Vocab):
    """HF's WordPiece: per piece, greedy longest match first from its start; every match
    after the first is looked up as ``continuing_subword_prefix`` + text. A piece of more
    than ``max_input_chars_per_word`` characters, or one with a position no vocabulary entry
    matches, is one ``unk_token`` over the whole piece. The reference shortens each
    candidate by one character from the piece's end; only candidates no longer than the
    vocabulary's longest entry can match, so the search starts there (the same result, in
    time linear in the piece's length)."""

    def __init__(self, cfg: C.WordPiece):
        self.cfg = cfg
        self._init_vocab(cfg.vocab)
        prefix = cfg.continuing_subword_prefix
        self._max_first = max((len(t) for t in self.vocab), default=0)
        self._max_next = max((len(t) - len(prefix) for t in self.vocab if t.startswith(prefix)), default=0)

    def _unk(self, nbytes: int) -> List[Tuple[int, int, int]]:
        i = self.vocab.get(self.cfg.unk_token)
        if i is None:
            raise _missing_unk("WordPiece", self.cfg.unk_token)
        return [(i, 0, nbytes)]

    def word(self, piece: str) -> List[Tuple[int, int, int]]:
        """Tokens of ``piece`` as (id, start, end) in UTF-8 bytes of ``piece``."""
        n = len(piece)
        if piece.isascii():
            pos = None
            nbytes = n
        else:
            pos = [0]
            for ch in piece:
                pos.append(pos[-1] + len(ch.encode("utf-8")))
            nbytes = pos[-1]
        if n > self.cfg.max_input_chars_per_word:
            return self._unk(nbytes)
        vocab, prefix = self.vocab, self.cfg.continuing_subword_prefix
        out: List[Tuple[int, int, int]] = []
        start = 0
        while start < n:
            end = min(n, start + (self._max_next if start else self._max_first))
            while end > start:
                sub = piece[start:end]
                i = vocab.get(prefix + sub if start else sub)
                if i is not None:
                    break
                end -= 1
            else:
                return self._unk(nbytes)
            out.append((i, start, end) if pos is None else (i, pos[start], pos[end]))
            start = end
        return out

    def tokenize(self, piece: str) -> List[Token]:
        if not piece:
            return []
        return self._cached_tokens(piece, self.word)


class WordLevelModel(_Vocab):
    """HF's WordLevel: a piece in the vocabulary is its token, any other is ``unk_token``."""

    def __init__(self, cfg: C.WordLevel):
        self.cfg = cfg
        self._init_vocab(cfg.vocab)

    def tokenize(self, piece: str) -> List[Token]:
        if not piece:
            return []
        nbytes = len(piece) if piece.isascii() else len(piece.encode("utf-8"))
        i = self.vocab.get(piece)
        if i is not None:
            return [Token(i, piece, 0, nbytes)]
        i = self.vocab.get(self.cfg.unk_token)
        if i is None:
            raise _missing_unk("WordLevel", self.cfg.unk_token)
        return [Token(i, self.cfg.unk_token, 0, nbytes)]


_UNK_PENALTY = 10.0


class UnigramModel(_Vocab):
    """HF's Unigram (SentencePiece's best path): over the piece's UTF-8 bytes, from each
    character start in order, every vocabulary entry that is a prefix there (shortest
    first) offers ``score + best score up to here`` to the position it ends at, taken
    only when strictly greater than what that position has (the first offer wins ties).
    A character start with no one-character entry also offers ``unk_id`` over that
    character, scored ``min(scores) - 10``. The best path is read back from the end;
    consecutive ``unk_id`` tokens are fused into one string. Each string is then looked up
    (a fused string that happens to be a vocabulary entry is that entry); a missing one
    is its ``<0xXX>`` bytes with ``byte_fallback`` (all of them must exist, each spans
    the whole string), else ``unk_id``. Duplicate entries: the last one's id and score.
    Additions are the same ``f64`` operations in the same order as the reference's."""

    def __init__(self, cfg: C.Unigram):
        self.cfg = cfg
        vocab = {}
        for i, (tok, _score) in enumerate(cfg.vocab):
            vocab[tok] = i
        self._init_vocab(vocab)
        self.vocab_r = {i: tok for i, (tok, _s) in enumerate(cfg.vocab)}
        self.scores = [sc for _t, sc in cfg.vocab]
        self.min_score = min(self.scores, default=float("inf"))
        self.unk_id = cfg.unk_id
        # byte trie of the entries: node = dict byte -> node, key -1 -> id
        root: Dict = {}
        for tok, i in vocab.items():
            node = root
            for b in tok.encode("utf-8"):
                node = node.setdefault(b, {})
            node[-1] = i
        self._trie = root

    def get_vocab_size(self) -> int:
        return len(self.cfg.vocab)

    def _strings(self, piece: str) -> List[Tuple[str, int, int]]:
        """The best path as (string, start, end), byte offsets; fused unknowns included."""
        data = piece.encode("utf-8")
        size = len(data)
        unk_id = self.unk_id
        unk_score = self.min_score - _UNK_PENALTY
        scores, root = self.scores, self._trie
        best = [0.0] * (size + 1)
        start_of: List[Optional[int]] = [None] * (size + 1)
        id_of = [0] * (size + 1)
        pos = 0
        while pos < size:
            here = best[pos]
            b0 = data[pos]
            mblen = 1 if b0 < 0x80 else 2 if b0 < 0xE0 else 3 if b0 < 0xF0 else 4
            single = False
            node = root
            end = pos
            while end < size:
                node = node.get(data[end])
                if node is None:
                    break
                end += 1
                i = node.get(-1)
                if i is not None:
                    cand = scores[i] + here
                    if start_of[end] is None or cand > best[end]:
                        best[end] = cand
                        start_of[end] = pos
                        id_of[end] = i
                    if end - pos == mblen:
                        single = True
            if not single:
                end = pos + mblen
                cand = unk_score + here
                if start_of[end] is None or cand > best[end]:
                    if unk_id is None:
                        raise ValueError("Unigram: a piece needs the unknown token but the model has no unk_id "
                                         "(the reference fails too: 'Encountered an unknown token but `unk_id` is missing')")
                    best[end] = cand
                    start_of[end] = pos
                    id_of[end] = unk_id
            pos += mblen
        out: List[Tuple[str, int, int]] = []
        end = size
        fused_end = None
        while end > 0:
            start = start_of[end]
            if unk_id is not None and id_of[end] == unk_id:
                if fused_end is None:
                    fused_end = end
            else:
                if fused_end is not None:
                    out.append((data[end:fused_end].decode("utf-8"), end, fused_end))
                    fused_end = None
                out.append((data[start:end].decode("utf-8"), start, end))
            end = start
        if fused_end is not None:
            out.append((data[0:fused_end].decode("utf-8"), 0, fused_end))
        out.reverse()
        return out

    def tokenize(self, piece: str) -> List[Token]:
        if not piece:
            return []
        toks = self._cache.get(piece)
        if toks is None:
            toks = self._tokens(piece)
            if len(piece) < 256 and len(self._cache) < 100_000:
                self._cache[piece] = toks
        return [Token(i, v, s, e) for i, v, s, e in toks]

    def _tokens(self, piece: str) -> List[Tuple[int, str, int, int]]:
        vocab = self.vocab
        out: List[Tuple[int, str, int, int]] = []
        for string, s, e in self._strings(piece):
            i = vocab.get(string)
            if i is None:
                if self.cfg.byte_fallback:
                    names = [f"<0x{b:02X}>" for b in string.encode("utf-8")]
                    ids = [vocab.get(nm) for nm in names]
                    if None not in ids:
                        out += [(j, nm, s, e) for j, nm in zip(ids, names)]
                        continue
                if self.unk_id is None:
                    raise ValueError("Unigram: a piece needs the unknown token but the model has no unk_id "
                                     "(the reference fails too: 'Encountered an unknown token but `unk_id` is missing')")
                i = self.unk_id
            out.append((i, string, s, e))
        return out


def model_for(cfg):
    """The reference model for a model config."""
    if isinstance(cfg, C.Unigram):
        return UnigramModel(cfg)
    if isinstance(cfg, C.WordPiece):
        return WordPieceModel(cfg)
    if isinstance(cfg, C.WordLevel):
        return WordLevelModel(cfg)
    return BPEModel(cfg)
