"""``device="cpu"`` ids for WordPiece and WordLevel tokenizer.json files (decision 0025).

The normalizers served here (``BertNormalizer``, ``Lowercase``) rewrite text one character
at a time, so a table of what every code point becomes (each computed by the reference
normalizer itself, white space made a space) normalizes a text in one pass. The compiled
kernels (``kernels.wordpiece_cpu``, documents in parallel) rewrite the packed UTF-8 with
it, cut the result at spaces (and around punctuation under ``BertPreTokenizer``) and run
the model on each piece: WordPiece's longest entry first by walking a byte trie of the
vocabulary, WordLevel by looking the whole piece up, through a word cache.

Texts where that is not the reference's pipeline run the reference path whole:

- a text holding an added token's content (raw, or normalized for ``normalized``
  tokens): the reference splits on it first;
- with ``strip_accents``, a text in which NFD's canonical reordering moves a non-starter
  the normalizer keeps (a combining class above 0 that is not one of the marks it
  drops), which no per-character rewrite does: the kernels check each text holding such
  a character (``kernels.wordpiece_cpu._order_ok``; the text goes there only when a kept
  non-starter follows one of a higher class in the same run of non-starters); U+10FFFF
  has the rewrite "reference path";
- a text with a piece that needs the unk token when the vocabulary has none (the
  reference path raises the reference's error).

``encode_batch`` (``Encoding`` objects) gets its tokens' offsets and pieces from the same
kernels run without the word cache (``wp_sources``, ``wp_encode_spans``).
"""

from __future__ import annotations

import re
import threading
from typing import List, Optional, Sequence

import numpy as np

from . import config as C
from ._util import text_list
from . import fast_cpu as F  # (its attributes read at call time: tests patch them)
from .cpu_ref.pipeline import check_text
from .encoding import Encoding, TokenStrings
from .kernels import engine_cpu as K
from .kernels import wordpiece_cpu as W

_CACHE_SLOTS = 1 << 20  # word cache entries per worker (32 bytes each: 32 MiB), in sets of two
_CACHE_SLOTS_FIRST = 1 << 17  # until the engine has encoded _CACHE_GROW_BYTES (4 MiB a worker)
_CACHE_GROW_BYTES = 16 << 20
_SENTINEL = "\U0010ffff"  # rewritten as "the reference path"


def _punctuation_ranges():
    from .cpu_ref.unicode_props import tables

    return tables().class_ranges["punctuation"]


class _Normalize(dict):
    """``str.translate`` table: code point -> its normalized form (computed on first use)."""

    def __init__(self, engine: "CpuWordPieceEngine"):
        super().__init__()
        self.engine = engine

    def __missing__(self, o: int) -> str:
        from .cpu_ref.normalizers import normalize_str

        norm = self.engine.norm
        v = self[o] = normalize_str(norm, chr(o)) if norm is not None else chr(o)
        return v


class PieceEngine:
    """What the compiled engines of ``fast_wordpiece`` and ``fast_unigram`` share: texts
    packed, those holding an added token's content sent to the reference path, the kernels
    (``_run``) with a word cache kept across calls, the template, the reference path's rows
    spliced in. A subclass sets ``cfg``, ``ref``, ``prefix``/``suffix`` and ``_special``
    (``_special_pattern``) and defines ``_run`` and ``_normalized_contents``."""

    _wc = None  # the kept word cache (``_word_cache``)
    _wc_rows = 0  # its worker rows faulted in
    _encoded = 0  # bytes of text encoded with it (``_word_cache``)

    def _init_common(self, cfg: C.TokenizerConfig, ref) -> None:
        from .fast_cpu import template_ids

        self.cfg = cfg
        self.ref = ref
        self.prefix, self.suffix = template_ids(cfg, ref)
        self._tables = None  # the kernels' arrays, built on first use
        self._lock = threading.Lock()  # held by the call using the kept word cache

    def _raw_contents(self):
        """The raw added tokens' contents as a trie (``engine_cpu.any_match`` searches the
        packed text for them), and the normalized ones' normalized forms."""
        from .kernels.engine_cpu import build_trie, searchable_trie

        added = self.ref.added
        raw = sorted({t.content.encode("utf-8") for t in added.map_r.values() if not t.normalized and t.content})
        norm = sorted({added.normalized_form.get(i, t.content) for i, t in added.map_r.items() if t.normalized} - {""},
                      key=len, reverse=True)
        return (searchable_trie(build_trie([(c, 0) for c in raw])) if raw else None), norm

    def _normalized_contents(self, texts: List[str], status: np.ndarray) -> None:
        """Set ``status[k]`` for each text whose normalized form holds a normalized added
        token's content."""
        raise NotImplementedError

    def _tokens_of(self) -> np.ndarray:
        """Token strings by id (the model's vocabulary; an object array)."""
        if getattr(self, "_vocab_r", None) is None:
            vocab = self.ref.model.vocab
            vr = np.empty(max(vocab.values()) + 1 if vocab else 1, dtype=object)
            for t, i in vocab.items():
                vr[i] = t
            self._vocab_r = vr
        return self._vocab_r

    def _word_cache(self, locked: bool, workers: int, nbytes: int) -> np.ndarray:
        """Per worker thread, pieces and their ids (``kernels.wordpiece_cpu``'s ``cache_get``),
        kept across calls for the caller holding ``_lock``; another caller at the same time
        gets a small one of its own (two calls writing one entry could tear it). The kept one
        holds ``_CACHE_SLOTS_FIRST`` entries until the engine has encoded
        ``_CACHE_GROW_BYTES`` of text (``nbytes``: this call's), then ``_CACHE_SLOTS``: a bulk
        job gets the large cache, a process holding many engines for small inputs (the test
        suite made hundreds) does not pay 32 MiB a worker for each."""
        if not locked:
            return F.aligned_zeros((workers, 1 << 12, 4), np.uint64)
        self._encoded += nbytes
        slots = _CACHE_SLOTS if self._encoded >= _CACHE_GROW_BYTES else _CACHE_SLOTS_FIRST
        if self._wc is None or self._wc.shape[0] < workers or self._wc.shape[1] < slots:
            self._wc = None  # the old one dropped first
            # sets of two 32-byte entries: each on one 64-byte line; a row per thread the
            # process may use, faulted in once a call uses its worker (fast_cpu.fault_rows)
            self._wc = F.aligned_zeros((max(workers, F.default_threads()), slots, 4), np.uint64)
            self._wc_rows = 0
        self._wc_rows = F.fault_rows((self._wc,), self._wc_rows, workers)
        return self._wc

    def _status(self, texts: List[str], data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """``uint8[n]``: 1 for each text the reference path encodes (it holds an added
        token's content), else 0."""
        raw_trie, any_norm = self._special
        if raw_trie is not None:
            status = K.any_match(data, offsets[:-1].copy(), offsets[1:].copy(), *raw_trie)
        else:
            status = np.zeros(len(texts), np.uint8)
        if any_norm:
            self._normalized_contents(texts, status)
        return status

    def _packed_run(self, texts: List[str], num_threads: Optional[int], **kw):
        """``(status, result)``: the texts packed, ``_status`` and ``_run`` (with ``kw``)
        with the kept word cache."""
        data, offsets = F.pack(texts, check_text, num_threads)
        status = self._status(texts, data, offsets)
        threads, parallel = F.plan_threads(num_threads, data.shape[0])
        locked = self._lock.acquire(blocking=False)
        try:
            wc = self._word_cache(locked, threads if parallel else 1, data.shape[0])
            return status, self._run(data, offsets, status, parallel, threads, wc, **kw)
        finally:
            if locked:
                self._lock.release()

    def quick_ids(self, text: str, add_special_tokens: bool) -> Optional[List[int]]:
        """The ids of one ``str`` (``encode_ids`` of it on one thread: 27-35 us up to 500
        characters for bert, where the reference path took 36-99; decision 0039), or None for
        a text whose UTF-8 cannot be made (a lone surrogate: the caller's path raises). No
        truncation or padding: the caller's."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        return self.encode_ids([text], add_special_tokens, 1)[0].tolist()

    def encode_ids(self, texts: Sequence[str], add_special_tokens: bool, num_threads: Optional[int]):
        """``(ids, row_splits)``: the texts packed and encoded by the kernels (documents in
        parallel); those the reference path encodes spliced in."""
        texts = text_list(texts)
        status, (noff, out, counts) = self._packed_run(texts, num_threads)
        templated = add_special_tokens and (self.prefix.shape[0] or self.suffix.shape[0])
        ids, rs = F.gather_rows(K, out, noff[:-1].copy(), counts, (self.prefix, self.suffix) if templated else None,
                                num_threads)
        todo = np.flatnonzero(status)
        if todo.shape[0]:
            rows = {}
            for k in todo.tolist():
                row = self.ref.encode(texts[k], None, False, False).ids
                rows[k] = self.prefix.tolist() + row + self.suffix.tolist() if templated else row
            ids, rs = F.splice_rows(ids, rs, rows)
        return ids, rs

    def encode_batch(self, inputs, add_special_tokens: bool, num_threads: Optional[int]) -> List[Encoding]:
        return self.ref.encode_batch(inputs, add_special_tokens, False)


class CpuWordPieceEngine(PieceEngine):
    """``encode_ids`` for a WordPiece / WordLevel model behind ``BertNormalizer`` or
    ``Lowercase`` (or none) and ``BertPreTokenizer`` or ``WhitespaceSplit``."""

    def __init__(self, cfg: C.TokenizerConfig, ref):
        from .fast_cpu import NotServed

        if not isinstance(cfg.model, (C.WordPiece, C.WordLevel)):
            raise NotServed("not a WordPiece or WordLevel model")
        norm = cfg.normalizer
        if norm is not None and not isinstance(norm, (C.BertNormalizer, C.Lowercase)):
            raise NotServed(f"normalizer {type(norm).__name__}")
        pre = cfg.pre_tokenizer
        if not isinstance(pre, (C.BertPreTokenizer, C.WhitespaceSplit)):
            raise NotServed(f"pre-tokenizer {type(pre).__name__ if pre is not None else None}")
        self._init_common(cfg, ref)
        self.norm = norm
        self.punct = isinstance(pre, C.BertPreTokenizer)
        self._unsafe = self._unsafe_chars()
        self._special = self._special_pattern()

    # ------------------------------------------------------------ set-up
    def rewrite(self, c: str) -> str:
        """What character ``c`` becomes: normalized, white space a space (``_SENTINEL``
        for ``_SENTINEL`` itself)."""
        from .cpu_ref.normalizers import normalize_str
        from .cpu_ref.unicode_props import is_whitespace

        if c == _SENTINEL:
            return _SENTINEL
        n = c if self.norm is None else normalize_str(self.norm, c)
        return "".join(" " if is_whitespace(x) else x for x in n)

    def _special_pattern(self):
        """The raw contents' trie; the normalized ones as a pattern searched in the text
        normalized a character at a time (``self.norm_table``)."""
        raw, norm = self._raw_contents()
        self.norm_table = _Normalize(self) if norm else None
        self._norm_rx = re.compile("|".join(map(re.escape, norm))) if norm else None
        return raw, bool(norm)

    def _normalized_contents(self, texts: List[str], status: np.ndarray) -> None:
        for k, text in enumerate(texts):
            if not status[k] and self._norm_rx.search(text.translate(self.norm_table)):
                status[k] = 1

    def _order_tables(self):
        """``(order, desc)``: ``kernels.wordpiece_cpu._order_ok``'s tables, from the NFD and
        combining classes the reference normalizer uses (``unicode_props.tables``); one
        item each when no character is checked."""
        if getattr(self, "_order", None) is not None:
            return self._order
        if not self._unsafe:
            self._order = (np.zeros(1, np.uint16), np.zeros(1, np.uint32))
            return self._order
        from .cpu_ref.unicode_props import BERT_MARK, BERT_REMOVED, tables

        T = tables()
        flags = T.bert_flags
        ccc = T.ccc
        order = np.zeros(0x110000, np.uint16)
        if self.norm.clean_text:  # dropped before NFD: not there to end a run
            order[np.frombuffer(bytes(flags), np.uint8)[:0x110000] & BERT_REMOVED != 0] = 1
        desc: List[int] = []

        def kept(x):
            return x in ccc and not flags[ord(x)] & BERT_MARK

        for c in sorted(set(ccc) | set(T.nfd) | set(self._unsafe)):
            o = ord(c)
            if self.norm.clean_text and flags[o] & BERT_REMOVED:
                continue  # marked above
            d = T.nfd.get(c, c)
            segs = [[]]  # the kept classes between the starters of its NFD
            for x in d:
                if x not in ccc:
                    segs.append([])
                elif kept(x):
                    segs[-1].append(ccc[x])
            if any(seg != sorted(seg) for seg in segs):
                raise AssertionError(f"NFD of U+{o:04X} not in canonical order")
            if c not in self._unsafe:
                if any(segs[1:]) or segs[0]:
                    raise AssertionError(f"U+{o:04X} holds a kept non-starter but is not checked")
                order[o] = 1 if len(segs) == 1 else 0
                continue
            lead, tail = segs[0], segs[-1]
            starter = len(segs) > 1
            desc.append((lead[0] if lead else 0) | ((lead[-1] if lead else 0) << 8)
                        | ((tail[-1] if starter and tail else 0) << 16) | (int(starter) << 24))
            order[o] = 1 + len(desc)
        if len(desc) + 2 > 0xFFFF:
            raise AssertionError("too many checked characters")
        self._order = (order, np.array(desc, np.uint32))
        return self._order

    def _unsafe_chars(self) -> frozenset:
        """With strip_accents: the characters whose NFD holds a non-starter the
        normalizer keeps (see the module doc)."""
        norm = self.norm
        if not isinstance(norm, C.BertNormalizer):
            return frozenset()
        if not (norm.strip_accents if norm.strip_accents is not None else norm.lowercase):
            return frozenset()
        from .cpu_ref.unicode_props import BERT_MARK, tables

        T = tables()
        keep = {c for c in T.ccc if not T.bert_flags[ord(c)] & BERT_MARK}
        return frozenset(keep | {c for c, d in T.nfd.items() if any(x in keep for x in d)})

    def _rewrite_candidates(self) -> set:
        """Every code point whose rewrite may not be itself (the others are: no table of
        the normalizer lists them, and they are not white space)."""
        from .cpu_ref.unicode_props import S_BASE, S_COUNT, tables

        T = tables()
        cands = set(range(128)) | {ord(_SENTINEL)} | {ord(c) for c in self._unsafe}
        for a, b in T.class_ranges["white_space"]:
            cands.update(range(a, b + 1))
        norm = self.norm
        if norm is not None:  # Lowercase, or BertNormalizer's lowercase
            cands.update(T.lower_1to1)
            cands.update(ord(c) for c in T.lower_multi)
        if isinstance(norm, C.BertNormalizer):
            flags = T.bert_flags
            cands.update(o for o in range(0x110000) if flags[o])
            cands.update(ord(c) for c in T.nfd)
            cands.update(range(S_BASE, S_BASE + S_COUNT))
        return cands

    def _compiled(self):
        """``(kind, rep_idx, rep_off, rep_bytes, punct, (ftab, fterm), (ntab, nterm))``
        (``kernels.wordpiece_cpu``'s layout): the rewrite of every code point, each from
        ``rewrite`` except two kinds decided by the measured flags without running it
        (what clean_text drops, and a CJK ideograph no other step changes); the
        punctuation flags; the vocabulary's two tries."""
        if self._tables is not None:
            return self._tables
        from .cpu_ref.unicode_props import BERT_CHINESE, BERT_MARK, BERT_REMOVED, tables
        from .kernels.engine_cpu import build_trie
        from .kernels.hash_table import interleave

        T = tables()
        norm = self.norm
        bert = isinstance(norm, C.BertNormalizer)
        flags = T.bert_flags
        kind = np.zeros(0x110000, np.uint8)
        rep_idx = np.full(0x110000, -1, np.int32)
        reps: List[bytes] = []
        for o in sorted(self._rewrite_candidates()):
            c = chr(o)
            if 0xD800 <= o <= 0xDFFF:
                continue
            f = flags[o]
            if bert and norm.clean_text and f & BERT_REMOVED:
                kind[o] = 1  # dropped first, whatever the later steps would do
                continue
            if (bert and norm.handle_chinese_chars and f & BERT_CHINESE and not f & BERT_MARK and c not in T.nfd
                    and o not in T.lower_1to1 and c not in T.lower_multi and c not in self._unsafe):
                kind[o] = 5  # " c ": no later step changes c
                continue
            r = self.rewrite(c)
            if c in self._unsafe:
                kind[o] = 6  # its text checked for a reordering (kernels.wordpiece_cpu._order_ok)
                rep_idx[o] = len(reps)
                reps.append(r.encode("utf-8"))
                continue
            if r == c:
                continue
            if r == "":
                kind[o] = 1
            elif r == " ":
                kind[o] = 2
            elif r == _SENTINEL:
                kind[o] = 3
            else:
                kind[o] = 4
                rep_idx[o] = len(reps)
                reps.append(r.encode("utf-8"))
        rep_off = np.zeros(len(reps) + 1, np.int64)
        np.cumsum([len(r) for r in reps], out=rep_off[1:])
        rep_bytes = np.frombuffer(b"".join(reps) + b"\0", np.uint8).copy()
        punct = np.zeros(0x110000, np.uint8)
        if self.punct:
            for a, b in _punctuation_ranges():
                punct[a:b + 1] = 1
        model = self.ref.model
        vocab = model.vocab
        if isinstance(model.cfg, C.WordPiece):
            prefix = model.cfg.continuing_subword_prefix
            nxt = [(t[len(prefix):], i) for t, i in vocab.items() if t.startswith(prefix) and len(t) > len(prefix)]
        else:
            nxt = []
        out = [kind, rep_idx, rep_off, rep_bytes, punct]
        for entries in (list(vocab.items()), nxt):
            # the lower id first: two entries with the same text cannot be (a vocabulary maps text to id)
            tk, tv, term, _first = build_trie([(t.encode("utf-8"), i) for t, i in entries if t])
            out.append((interleave(tk, tv), term if term.shape[0] else np.full(1, -1, np.int32)))
        self._tables = tuple(out)
        return self._tables

    # ------------------------------------------------------------ encoding
    def _model_args(self):
        model = self.ref.model
        wordpiece = isinstance(model.cfg, C.WordPiece)
        max_chars = np.int64(model.cfg.max_input_chars_per_word if wordpiece else 0)
        return wordpiece, max_chars, np.int64(model.vocab.get(model.cfg.unk_token, -1))

    @staticmethod
    def _blocks(offsets, parallel: bool, threads: int):
        """``(blocks, nw)`` for the kernels: documents of about equal bytes,
        ``fast_cpu._UNITS_PER_THREAD`` a thread, handed to ``nw`` workers as they free up
        (``workqueue``; one block, one worker when serial)."""
        n = offsets.shape[0] - 1
        if not parallel:
            return np.array([0, n], np.int64), np.int64(1)
        return F.byte_blocks(offsets, offsets[-1], n, F._UNITS_PER_THREAD * threads), np.int64(threads)

    def _normalize(self, data, offsets, status, blocks, nw, ids_only: bool = True):
        """``(noff, norm)``: each document rewritten (``kernels.wordpiece_cpu``'s layout).
        ``ids_only``: a text with a kept non-starter is checked for a reordering that moves
        one (``_order_ok``); else (offsets wanted) it goes to the reference path: there a
        kept non-starter's offsets follow the marks NFD moves around it even when the
        kept ones keep their order (measured: 269 of 3,000 random texts of
        ``test_texts_with_kept_non_starters_are_checked_for_a_reordering``)."""
        kind, rep_idx, rep_off, rep_bytes = self._compiled()[:4]
        n = offsets.shape[0] - 1
        nlen = np.zeros(n, np.int64)
        order, desc = self._order_tables()
        if not ids_only:
            order = order[:0]
        W.wp_norm_lengths(data, offsets, blocks, nw, kind, rep_idx, rep_off, order, desc, status, nlen)
        noff = F.running_offsets(nlen)
        norm = np.zeros(int(noff[-1]) + 8, np.uint8)  # 8 spare bytes past the end (the kernels read whole words)
        W.wp_normalize(data, offsets, blocks, nw, kind, rep_idx, rep_off, rep_bytes, status, noff, norm)
        return noff, norm

    def _run(self, data, offsets, status, parallel: bool, threads: int, wc):
        """The kernels: ``(noff, out, counts)`` (``kernels.wordpiece_cpu``'s layout)."""
        punct, (ftab, fterm), (ntab, nterm) = self._compiled()[4:]
        wordpiece, max_chars, unk = self._model_args()
        blocks, nw = self._blocks(offsets, parallel, threads)
        with F.numba_threads(threads if parallel else 1):
            noff, norm = self._normalize(data, offsets, status, blocks, nw)
            out = np.empty(max(int(noff[-1]), 1), np.int32)
            counts = np.zeros(offsets.shape[0] - 1, np.int64)
            W.wp_encode(norm, noff, blocks, nw, punct, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm,
                        wc, status, out, counts)
        return noff, out, counts

    def encode_single_encodings(self, texts: List[str], type_id: int, num_threads: Optional[int]) -> List[Encoding]:
        """Per text, the ``Encoding`` before post-processing (the reference's
        ``_encode_single``): tokens, offsets and word ids from the kernels
        (``wp_sources``, ``wp_encode_spans``); the texts ``_status`` sends there, from the
        reference path."""
        from ._util import sparse_empty
        from .fast_cpu import _REC32_MAX, assemble, gathered, numba_threads, pack, plan_threads

        texts = text_list(texts)
        data, offsets = pack(texts, check_text, num_threads)
        n = len(texts)
        status = self._status(texts, data, offsets)
        kind, rep_idx, rep_off, _rep_bytes, punct, (ftab, fterm), (ntab, nterm) = self._compiled()
        wordpiece, max_chars, unk = self._model_args()
        threads, parallel = plan_threads(num_threads, data.shape[0])
        blocks, nw = self._blocks(offsets, parallel, threads)
        with numba_threads(threads if parallel else 1):
            noff, norm = self._normalize(data, offsets, status, blocks, nw, ids_only=False)
            m = max(int(noff[-1]), 1)
            src = np.zeros(m, np.int64)
            W.wp_sources(data, offsets, blocks, nw, kind, rep_idx, rep_off, status, noff, src)
            # a slot a normalized byte, about one in four written, the written ones dense (each
            # block's documents back to back): arrays whose pages cost only when written
            # (sparse_empty), the records int32 where the normalized text's positions fit
            out = sparse_empty(m, np.int32)
            rdt = np.int32 if m <= _REC32_MAX else np.int64
            tb = sparse_empty(m, rdt)
            te = sparse_empty(m, rdt)
            word = sparse_empty(m, rdt)
            counts = np.zeros(n, np.int64)
            at = np.empty(n, np.int64)
            W.wp_encode_spans(norm, noff, blocks, nw, punct, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm,
                              status, out, counts, at, tb, te, word)
        # every document's tokens, gathered: positions at[d] .. at[d] + counts[d]
        first, idx = gathered(at, counts)
        ids_a = out[idx]
        toks = TokenStrings(self._tokens_of(), ids_a)
        starts = src[tb[idx]]
        ends = src[te[idx] - 1] + 1
        slow = np.flatnonzero(status).tolist()
        return assemble(self.ref, texts, type_id, first, ids_a, toks, starts, ends, word[idx], slow)

    def encode_batch(self, inputs, add_special_tokens: bool, num_threads: Optional[int]) -> List[Encoding]:
        from .fast_cpu import batch_of_singles

        return batch_of_singles(self, inputs, add_special_tokens, num_threads)
