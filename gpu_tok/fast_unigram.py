"""``device="cpu"`` ids for Unigram tokenizer.json files (decision 0028).

The compiled kernels (``kernels.unigram_cpu``, documents in parallel) run the reference's
pipeline on the packed UTF-8: the ``Precompiled`` normalizer (grapheme clusters cut with
the measured classes of ``cpu_ref.graphemes``, the double array walked byte by byte as
the reference walks it), the pre-tokenizer (``WhitespaceSplit`` then ``Metaspace``, or
``Metaspace`` alone) written as one byte string whose pieces start at each "▁", and the
model's best path over each piece (a byte trie of the vocabulary, the reference's ``f64``
additions in its order, unknown characters fused, byte fallback), through a word cache.

Served: a ``Unigram`` model behind ``Precompiled`` or no normalizer (or, with
``WhitespaceSplit``, ``Precompiled`` then ``Replace`` of spaces by one space, as XLM-R), and
``Sequence[WhitespaceSplit, Metaspace]`` with ``prepend_scheme`` always (T5) or
``Metaspace`` alone (any ``prepend_scheme``), each with ``split``. Texts the reference path
encodes whole: those holding an added token's content (the reference splits there
first), and those needing the unknown token when the model has none (the reference path
raises the reference's error).

``encode_batch`` (``Encoding`` objects): the same kernels record each token's original
characters (the ``Precompiled`` alignment rule of ``cpu_ref.precompiled``, then the
pre-tokenizer's), its piece and, for an unknown token, its text.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from . import config as C
from ._util import text_list
from .encoding import Encoding, TokenStrings
from .fast_wordpiece import PieceEngine


class CpuUnigramEngine(PieceEngine):
    """``encode_ids`` for the Unigram files described in the module doc."""

    def __init__(self, cfg: C.TokenizerConfig, ref):
        from .fast_cpu import NotServed

        if not isinstance(cfg.model, C.Unigram):
            raise NotServed("not a Unigram model")
        self.mode = self._mode(cfg.pre_tokenizer, NotServed)
        self.norm = self._normalizer(cfg.normalizer, self.mode, NotServed)
        self._init_common(cfg, ref)
        raw, norm_contents = self._raw_contents()
        self._norm_contents = norm_contents
        self._special = (raw, bool(norm_contents))

    @staticmethod
    def _mode(pre, NotServed) -> int:
        """``kernels.unigram_cpu``'s ``mode`` for the pre-tokenizer (see its doc)."""
        if isinstance(pre, C.PreTokenizerSequence) and len(pre.pretokenizers) == 2 \
                and isinstance(pre.pretokenizers[0], C.WhitespaceSplit) and isinstance(pre.pretokenizers[1], C.Metaspace):
            meta = pre.pretokenizers[1]
            if meta.replacement == "\u2581" and meta.split and meta.prepend_scheme == "always":
                return 0
            raise NotServed("WhitespaceSplit + Metaspace other than '▁', split, prepend_scheme always")
        if isinstance(pre, C.Metaspace):
            # "first" prepends when the piece starts the original text: the whole text here,
            # as texts with added tokens (which split it) run the reference path
            if pre.replacement == "\u2581" and pre.split:
                return 2 if pre.prepend_scheme == "never" else 1
            raise NotServed("Metaspace other than '▁' with split")
        raise NotServed(f"pre-tokenizer {type(pre).__name__ if pre is not None else None}")

    @staticmethod
    def _normalizer(norm, mode: int, NotServed):
        """The ``Precompiled`` normalizer the kernels apply (or None). XLM-R-style files
        follow it with ``Replace(" {2,}", " ")``: runs of spaces, which ``WhitespaceSplit``
        (mode 0) removes whole anyway, so that step changes no id there."""
        if isinstance(norm, C.NormalizerSequence) and len(norm.normalizers) == 2 and mode == 0:
            first, rep = norm.normalizers
            if (isinstance(first, C.Precompiled) and isinstance(rep, C.Replace) and rep.content == " "
                    and (rep.pattern.kind, rep.pattern.value) in (("Regex", " {2,}"), ("String", " "), ("String", "  "))):
                return first
        if norm is not None and not isinstance(norm, C.Precompiled):
            raise NotServed(f"normalizer {type(norm).__name__}")
        return norm

    def _normalized_contents(self, texts: List[str], status: np.ndarray) -> None:
        from .cpu_ref.normalizers import normalize_str

        norm = self.cfg.normalizer
        for k, text in enumerate(texts):
            if not status[k]:
                t = normalize_str(norm, text) if norm is not None else text
                if any(c in t for c in self._norm_contents):
                    status[k] = 1

    def _compiled(self):
        """``(da, crep, blob, use_pc, gprops, ws, trie, scores, unk, unk_score, byte_ids)``
        (``kernels.unigram_cpu``'s layout)."""
        if self._tables is not None:
            return self._tables
        from .cpu_ref.graphemes import props
        from .cpu_ref.unicode_props import tables
        from .kernels.unigram_cpu import build_vocab_trie, single_values

        norm = self.norm
        if norm is not None:
            cm = norm.charsmap
            da = np.ascontiguousarray(cm.array, np.int64)
            blob = np.frombuffer(cm.blob + b"\0", np.uint8).copy()
        else:
            da = np.zeros(256, np.int64)
            blob = np.zeros(1, np.uint8)
        crep = np.full(0x110000, -1, np.int32)
        if norm is not None:
            single_values(da, crep)
        gprops = np.frombuffer(bytes(props()), np.uint8).copy()
        ws = np.zeros(0x110000, np.uint8)
        for a, b in tables().class_ranges["white_space"]:
            ws[a:b + 1] = 1
        model = self.ref.model
        vocab = model.vocab  # text -> the last id of that text, as the reference's map
        trie = build_vocab_trie([(t.encode("utf-8"), i) for t, i in vocab.items() if t])
        scores = np.array(model.scores, np.float64) if model.scores else np.zeros(1, np.float64)
        unk = np.int64(-1 if model.unk_id is None else model.unk_id)
        byte_ids = np.full(256, -1, np.int32)
        if model.cfg.byte_fallback:
            for b in range(256):
                byte_ids[b] = vocab.get(f"<0x{b:02X}>", -1)
        self._tables = (da, crep, blob, norm is not None, gprops, ws, trie, scores, unk,
                        np.float64(model.min_score - 10.0), byte_ids)
        return self._tables

    def _word_cache(self, locked: bool, workers: int, nbytes: int):
        """``PieceEngine``'s word cache, and the long-piece cache (``fast_cpu.long_caches``:
        pieces of 16..1024 bytes), kept across calls the same way (a caller not holding
        ``_lock`` gets small fresh ones)."""
        from .fast_cpu import default_threads, fault_rows, long_caches

        wc = super()._word_cache(locked, workers, nbytes)
        if not locked:
            return (wc, *long_caches(workers, small=True))
        if self._lc is None or self._lc[0].shape[0] < workers:
            self._lc = None
            self._lc = long_caches(max(workers, default_threads()))
            self._lc_rows = 0
        self._lc_rows = fault_rows(self._lc, self._lc_rows, workers)
        return (wc, *self._lc)

    _lc = None  # the kept long-piece cache
    _lc_rows = 0  # its worker rows faulted in

    def _run(self, data, offsets, status, parallel: bool, threads: int, wc, record: bool = False):
        """The kernel: ``(starts, out, counts)``, document ``d``'s ids at
        ``out[starts[d]:starts[d] + counts[d]]`` (``kernels.unigram_cpu.uni_ids``). Each
        document gets a slot of its bytes + 4 ids; the few that need more (rules that
        expand) run again into slots of the size they reported. ``record``: a fourth item,
        ``uni_ids``'s ``rec`` arrays (in the slots of ``out``)."""
        from .fast_cpu import _UNITS_PER_THREAD, byte_blocks, numba_threads
        from .kernels import unigram_cpu as U

        da, crep, blob, use_pc, gprops, ws, trie, scores, unk, unk_score, byte_ids = self._compiled()
        n = offsets.shape[0] - 1
        tables = (da, crep, blob, use_pc, gprops, ws, self.mode, trie, scores, unk, unk_score, byte_ids, *wc)

        def rec_arrays(m):
            if not record:
                return None
            return (np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64),
                    np.empty(m, np.int64), np.empty(m, np.uint8))

        # blocks of documents of about equal bytes, _UNITS_PER_THREAD per thread (one when
        # serial): each makes its scratch once (uni_ids)
        blocks = byte_blocks(offsets, offsets[-1], n, _UNITS_PER_THREAD * threads if parallel else 1)
        nw = np.int64(threads if parallel else 1)  # uni_ids's workers
        with numba_threads(threads if parallel else 1):
            starts = np.zeros(n + 1, np.int64)
            starts[:n] = offsets[:-1] + 4 * np.arange(n, dtype=np.int64)
            m = int(offsets[-1]) + 4 * n + 1
            out = np.empty(m, np.int32)
            rec = rec_arrays(m)
            counts = np.zeros(n, np.int64)
            U.uni_ids(data, offsets, blocks, nw, *tables, status, starts, np.diff(offsets) + 4, out, counts, rec)
            big = np.flatnonzero(status == 3)
            if big.shape[0]:
                need = np.zeros(n, np.int64)
                need[big] = counts[big]
                starts[big] = out.shape[0] + (np.cumsum(need[big]) - need[big])
                more = int(need.sum())
                out = np.concatenate([out, np.empty(more, np.int32)])
                if record:
                    rec = tuple(np.concatenate([r, np.empty(more, r.dtype)]) for r in rec)
                sub = np.ones(n, np.uint8)
                sub[big] = 0
                U.uni_ids(data, offsets, blocks, nw, *tables, sub, starts, need, out, counts, rec)
                status[big] = sub[big]  # 0, or 2 (the unknown token needed and missing)
        if record:
            return starts, out, counts, rec
        return starts, out, counts

    def encode_single_encodings(self, texts: List[str], type_id: int, num_threads: Optional[int]) -> List[Encoding]:
        """Per text, the ``Encoding`` before post-processing (the reference's
        ``_encode_single``): ids, offsets, word ids and unknown tokens' strings from the
        kernels (``uni_ids`` with ``rec``); the texts ``_status`` sends there, and those
        needing a missing unknown token, from the reference path."""
        from .fast_cpu import assemble, gathered

        texts = text_list(texts)
        status, (noff, out, counts, (cs, ce, word, ua, ul, ubuf)) = self._packed_run(texts, num_threads, record=True)
        first, idx = gathered(noff[:-1], counts)
        ids_a = out[idx]
        ua = ua[idx]
        own = np.flatnonzero(ua >= 0)  # an unknown token: its string is the text it stands for
        toks = TokenStrings(self._tokens_of(), ids_a, own,
                            [ubuf[a:a + m].tobytes().decode("utf-8") for a, m in zip(ua[own].tolist(), ul[idx][own].tolist())])
        slow = np.flatnonzero(status).tolist()
        return assemble(self.ref, texts, type_id, first, ids_a, toks, cs[idx], ce[idx], word[idx], slow)

    def encode_batch(self, inputs, add_special_tokens: bool, num_threads: Optional[int]) -> List[Encoding]:
        from .fast_cpu import batch_of_singles

        return batch_of_singles(self, inputs, add_special_tokens, num_threads)
