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


class BPEModel:
    def __init__(self, cfg: C.BPE):
        self.cfg = cfg
        self.vocab: Dict[str, int] = dict(cfg.vocab)
        self.vocab_r: Dict[int, str] = {i: t for t, i in self.vocab.items()}
        merges: Dict[Tuple[int, int], Tuple[int, int]] = {}
        vocab = self.vocab
        for rank, (a, b) in enumerate(cfg.merges):
            try:
                ia = vocab[a]
                ib = vocab[b]
            except KeyError as e:
                raise TokenizerFileError(
                    f"{cfg.path}.merges[{rank}]", f"merge {a!r} {b!r}: token {e.args[0]!r} is not in the vocab"
                ) from None
            merged = a + b
            im = vocab.get(merged)
            if im is None:
                raise TokenizerFileError(
                    f"{cfg.path}.merges[{rank}]", f"merge {a!r} {b!r}: result {merged!r} is not in the vocab"
                )
            merges[(ia, ib)] = (rank, im)
        self.merges = merges
        self.unk_id: Optional[int] = None
        if cfg.unk_token is not None:
            self.unk_id = vocab.get(cfg.unk_token)
        self._cache: Dict[str, List[Tuple[int, int, int]]] = {}

    def get_vocab_size(self) -> int:
        return len(self.vocab)

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
        for ch in word:
            i = vocab.get(ch)
            blen = 1 if ch < "\x80" else len(ch.encode("utf-8"))
            if i is not None:
                if unk is not None:
                    syms.append(unk)
                    unk = None
                syms.append((i, blen))
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
        toks = self._cache.get(piece)
        if toks is None:
            toks = self.merge_word(piece)
            if len(piece) < 256 and len(self._cache) < 100_000:
                self._cache[piece] = toks
        vocab_r = self.vocab_r
        return [Token(i, vocab_r[i], s, e) for i, s, e in toks]

    def token_to_id(self, token: str) -> Optional[int]:
        return self.vocab.get(token)

    def id_to_token(self, i: int) -> Optional[str]:
        return self.vocab_r.get(i)
