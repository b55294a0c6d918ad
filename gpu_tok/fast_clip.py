"""``device="cpu"`` for CLIP-style tokenizer.json files: byte-level BPE with an
end-of-word suffix (``"</w>"``), a lowercasing normalizer and CLIP's split pattern
(docs/decisions/0033-clip-engine.md).

Served exactly (anything else is ``NotServed``, naming it):

* normalizer ``Sequence[NFC, Replace(Regex "\\s+", " "), Lowercase]``;
* pre_tokenizer ``Sequence[Split(Regex CLIP_PATTERN, Removed, invert=true), ByteLevel(add_prefix_space=false)]``;
* model ``BPE`` with ``end_of_word_suffix``, no ``continuing_subword_prefix``, no
  ``byte_fallback``, no ``ignore_merges``, every byte's character with and without the suffix
  in the vocabulary;
* added tokens without ``single_word`` / ``lstrip`` / ``rstrip``.

How (``encode_batch`` from the same steps, recording where each byte came from:
``encode_single_encodings``):

1. documents NFC would change are set aside (``ByteBPEEngine._nfc_changed``), their gaps
   NFC-normalized (``ByteBPEEngine.nfc_normalize``, as the byte-level engine's) and run
   again; where that cannot be (the raw tokens would match the new text differently), the
   reference path;
2. the raw added tokens are matched on the raw text (``ByteBPEEngine._segments``);
3. the gaps between them are lowercased (``kernels.clip_cpu.lower_gaps``, the measured
   ``char::to_lowercase`` of ``gpu_tok/data/unicode_norm.json``); ``Replace`` only turns
   white space into one space, and white space is what the split drops, so it changes no id;
4. the normalized added tokens are matched on the lowercased gaps;
5. a gap that still holds one of the pattern's literal alternatives (``<|startoftext|>``,
   ``<|endoftext|>``) sends its document to the reference path: the kernel's scanner has no
   literal alternatives (those pieces would also be cut again by ``ByteLevel``'s regex);
6. ``kernels.clip_cpu.clip_scan`` cuts the rest into the pattern's pieces, each followed by
   byte 0xFF, and the byte-level engine (``fast_cpu.ByteBPEEngine.encode_pieces``) encodes
   them with a vocabulary where the suffix is that byte: token ``"ab</w>"`` has the bytes
   ``b"ab\\xff"``, the initial symbol of 0xFF is an extra id merged first with the byte before
   it (rank 0, every other rank one higher), which gives BPE's initial word (the last
   character with the suffix) before any of the model's merges.

For the other alternatives of the pattern, ``ByteLevel``'s own regex (``use_regex``) leaves a
piece whole: a letter run, a single digit, a contraction, or a run of characters neither
space, letter nor digit (a GPT-2 contraction needs a letter after the apostrophe) is one
GPT-2 piece too; ``tests/test_clip_engine.py`` holds that against the reference.
"""

from __future__ import annotations

import threading
from typing import List, Optional, Sequence

import numpy as np

from . import config as C
from ._util import text_list
from .encoding import Encoding, TokenStrings
from .fast_cpu import (_KEEP_OUT_MAX, _UNITS_PER_THREAD, ByteBPEEngine, CpuTokenizerEngine, EngineSpec, KeptArray,
                       MAX_IDS, NotServed, _added_token_lists, _char_index, add_template, batch_of_singles, byte_blocks,
                       encodings_with_nfc, gathered, numba_threads, pack_probed, plan_threads, rows_after_nfc,
                       splice_rows, template_ids)

CLIP_PATTERN = (r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]"
                r"|[^\s\p{L}\p{N}]+")
_LITERALS = (b"<|startoftext|>", b"<|endoftext|>")  # the pattern's literal alternatives
_EOW = 0xFF


def _check_config(cfg: C.TokenizerConfig) -> str:
    """The suffix, or ``NotServed`` naming the first setting this engine does not serve."""
    m = cfg.model
    if not isinstance(m, C.BPE):
        raise NotServed(f"model {type(m).__name__}")
    if not m.end_of_word_suffix:
        raise NotServed("BPE without end_of_word_suffix")
    if m.byte_fallback or m.continuing_subword_prefix or m.ignore_merges:
        raise NotServed("BPE with byte_fallback / continuing_subword_prefix / ignore_merges")
    norm = cfg.normalizer
    ok = (isinstance(norm, C.NormalizerSequence) and len(norm.normalizers) == 3
          and isinstance(norm.normalizers[0], C.UnicodeNormalizer) and norm.normalizers[0].form == "NFC"
          and isinstance(norm.normalizers[1], C.Replace) and norm.normalizers[1].pattern.kind == "Regex"
          and norm.normalizers[1].pattern.value == r"\s+" and norm.normalizers[1].content == " "
          and isinstance(norm.normalizers[2], C.Lowercase))
    if not ok:
        raise NotServed("normalizer other than Sequence[NFC, Replace(Regex '\\s+', ' '), Lowercase]")
    pre = cfg.pre_tokenizer
    ok = (isinstance(pre, C.PreTokenizerSequence) and len(pre.pretokenizers) == 2
          and isinstance(pre.pretokenizers[0], C.Split) and isinstance(pre.pretokenizers[1], C.ByteLevel))
    if ok:
        split, bl = pre.pretokenizers
        ok = (split.pattern.kind == "Regex" and split.pattern.value == CLIP_PATTERN and split.behavior == "Removed"
              and split.invert and not bl.add_prefix_space)
    if not ok:
        raise NotServed("pre_tokenizer other than Sequence[Split(CLIP's pattern, Removed, invert), "
                        "ByteLevel(add_prefix_space=false)]")
    return m.end_of_word_suffix


def lower_tables(cls: np.ndarray):
    """``(low1, multi)`` of ``kernels.clip_cpu.lower_gaps`` from the measured lowercase
    mappings; ``NotServed`` where a mapping would break what the engine relies on (white
    space stays white space and nothing else becomes it; a mapping at most doubles the
    bytes; ASCII lowercases as A-Z -> a-z)."""
    from .cpu_ref.unicode_props import tables
    from .kernels.pretok_cpu import C_WS

    T = tables()
    low1 = np.arange(0x110000, dtype=np.int32)
    rows = []
    items = [(c, s) for c, s in T.lower_1to1.items()] + [(ord(k), v) for k, v in T.lower_multi.items()]
    for c, s in items:
        n_in = len(chr(c).encode("utf-8"))
        if len(s.encode("utf-8")) > 2 * n_in:
            raise NotServed(f"Lowercase of U+{c:04X} more than doubles its bytes")
        ws = [bool(cls[ord(x)] & C_WS) for x in s]
        if any(ws) or bool(cls[c] & C_WS):
            raise NotServed(f"Lowercase of U+{c:04X} touches white space")
        if len(s) == 1:
            low1[c] = ord(s)
        else:
            if len(s) > 3:
                raise NotServed(f"Lowercase of U+{c:04X} gives more than three characters")
            low1[c] = -1 - len(rows)
            rows.append([len(s)] + [ord(x) for x in s] + [0] * (3 - len(s)))
    ascii_low = np.arange(128, dtype=np.int32)
    ascii_low[0x41:0x5B] += 32
    if not (low1[:128] == ascii_low).all():
        raise NotServed("Lowercase of ASCII other than A-Z -> a-z")
    multi = np.array(rows, np.int32).reshape(-1, 4) if rows else np.zeros((1, 4), np.int32)
    return low1, multi


def _items(p_s, p_e, ls, blocks, counts, seg_doc, skip, runs: bool):
    """``CpuClipEngine._pieces``' ``(starts, ends, special, doc)`` when every item is a piece
    of ``clip_scan`` (no added tokens, nothing recorded): ``clip_cpu.item_counts`` and
    ``item_fill``, which give what its NumPy steps give (the gathers, the documents left out,
    the -2 items) in two passes over the blocks."""
    from .kernels import clip_cpu

    kept, seps, first_s, last_e = clip_cpu.item_counts(p_s, p_e, ls, blocks, counts, seg_doc, skip)
    before = np.zeros(kept.shape[0], np.int64)
    if runs:
        has = np.flatnonzero(kept)
        before[has[1:]] = first_s[has[1:]] != last_e[has[:-1]]
    else:
        seps = np.zeros_like(seps)
    off = np.zeros(kept.shape[0] + 1, np.int64)
    np.cumsum(kept + seps + before, out=off[1:])
    total = int(off[-1])
    starts, ends = np.empty(total, np.int64), np.empty(total, np.int64)
    special, doc = np.empty(total, np.int32), np.empty(total, np.int64)
    clip_cpu.item_fill(p_s, p_e, ls, blocks, counts, seg_doc, skip, off, before, runs, starts, ends, special, doc)
    return starts, ends, special, doc


class CpuClipEngine:
    """``device="cpu"`` for CLIP-style files (module docstring): ids, and ``encode_batch``."""

    def __init__(self, cfg: C.TokenizerConfig, ref):
        from .cpu_ref.byte_level import BYTE_TO_CHAR, CHAR_TO_BYTE
        from .kernels import engine_cpu as K
        from .kernels.hash_table import build_merge_table
        from .kernels.pretok_cpu import class_table

        suffix = _check_config(cfg)
        self.cfg = cfg
        self.ref = ref
        self.K = K
        model = ref.model
        vocab = model.vocab
        size = max(vocab.values()) + 1
        eow_id = size  # the 0xFF symbol: never a token of the output (always merged first)
        if size + 1 > MAX_IDS:
            raise NotServed(f"ids of {MAX_IDS} and beyond (the word caches keep 21-bit ids)")
        init, last = [], []
        for b in range(256):
            ch = BYTE_TO_CHAR[b]
            if ch not in vocab or ch + suffix not in vocab:
                raise NotServed(f"the vocabulary lacks byte {b}'s character with or without the suffix")
            init.append(vocab[ch])
            last.append(vocab[ch + suffix])
        init[_EOW] = eow_id  # 0xFF is never a byte of UTF-8 text
        token_bytes: List[Optional[bytes]] = [None] * (size + 1)
        for tok, i in vocab.items():
            ends_word = tok.endswith(suffix) and len(tok) > len(suffix)
            try:
                bs = bytes(CHAR_TO_BYTE[c] for c in (tok[:-len(suffix)] if ends_word else tok))
            except KeyError:
                continue  # not byte-level: BPE never produces it from bytes
            token_bytes[i] = bs + b"\xff" if ends_word else bs
        # (the 0xFF symbol has no bytes of its own: never output, and b"\xff" is byte 0xFF's token's)
        merges = {pair: (rank + 1, new) for pair, (rank, new) in model.merges.items()}
        for b in range(256):
            if b != _EOW:  # (byte 0xFF never occurs: its symbol is the suffix's)
                merges[(init[b], eow_id)] = (0, last[b])
        raw, norm = _added_token_lists(ref)
        if any(f for _c, _i, f in raw + norm):
            raise NotServed("added tokens with single_word / lstrip / rstrip")
        self.cls = class_table("onig")
        if any(self.cls[ord(ch)] & 1 for c, _i, _f in norm for ch in c.decode("utf-8")):
            raise NotServed("a normalized added token holding white space")
        self.low1, self.multi = lower_tables(self.cls)
        spec = EngineSpec(family="gpt2", dialect="onig",  # (never scanned: clip_scan cuts the pieces)
                          init_ids=np.array(init, np.int32), token_bytes=token_bytes,
                          merges=build_merge_table(merges), whole_first=False, raw_tokens=raw, norm_tokens=[],
                          nfc=True)
        self.engine = ByteBPEEngine(spec)
        self.norm_engine = self.engine.with_added(norm) if norm else None  # its first trie: the normalized ones
        self.literal_engine = self.engine.with_added([(c, 0, 0) for c in _LITERALS])
        self.prefix, self.suffix = template_ids(cfg, ref)
        self._vocab_r = None
        # the ids path's scratch (``_pieces``: ``low``, ``buf``, ``p_s``, ``p_e``, about 40
        # bytes per byte of text), kept between calls under one lock: made fresh, its pages
        # were faulted in on every call, by two threads at once at two threads (on this
        # VM, 2 MB of code: 71-92 ms a call at two threads against 34 at one)
        self._lock = threading.Lock()
        self._kept = tuple(KeptArray(dt, _KEEP_OUT_MAX, self._lock)
                           for dt in (np.uint8, np.uint8, np.int64, np.int64))

    # ------------------------------------------------------------------ ids
    def _pieces(self, data: np.ndarray, offsets: np.ndarray, skip: np.ndarray, hint, threads: int,
                parallel: bool, record: bool = False, kept: bool = False, runs: bool = True):
        """``(buf, starts, ends, special, doc)``: every item of the active documents in text
        order (``special``: an added token's id, -1 a piece of ``buf``, -2 nothing: it parts
        two pieces that are not back to back in ``buf``), ``doc`` its document; ``skip``
        (set in place) gains the documents step 5 sends to the reference path. ``hint``:
        ``pack_probed``'s, or None. Raw gap ``k`` is lowercased to ``low[2 * seg_s[k]:]``, so a
        lowercased position ``L`` lies in the raw gap holding byte ``L // 2``. Memory: about
        40 bytes per byte of text (``low``, ``buf``, and two ``int64`` slots per byte of ``low``).
        ``record``: also ``(src, src_e, sp_s, sp_e, orig, low)``, per item where a piece
        starts in ``low``, where a normalized added token is in ``low`` (``src:src_e``; -1
        for a raw one), where an added token is in ``data`` (``sp_s:sp_e``), and for each
        byte of ``low`` the ``data`` position of its character. ``kept``: ``low``, ``buf`` and
        the piece scratch from ``self._kept`` (the caller holds ``self._lock`` until it is
        done with ``buf``). ``runs=False``: no -2 items (for a caller that copies each piece
        out, ``gpu_engine.ClipHost``; ``encode_pieces`` needs them)."""
        from .kernels import clip_cpu

        K = self.K
        N = data.shape[0]
        seg_s, seg_e, r_s, r_e, r_id = self.engine._segments(data, offsets, skip, parallel, hint)
        take = (lambda k, n: self._kept[k].take(n)) if kept else (lambda k, n: np.empty(n, self._kept[k].dtype))
        low = take(0, 2 * N + 1)
        ls = np.empty(seg_s.shape[0], np.int64)
        le = np.empty(seg_s.shape[0], np.int64)
        orig = np.empty(low.shape[0] if record else 0, np.int64)
        nw = np.int64(threads if parallel else 1)
        gaps = byte_blocks(seg_s, N, seg_s.shape[0], _UNITS_PER_THREAD * threads if parallel else 1)
        with numba_threads(threads if parallel else 1):
            clip_cpu.lower_gaps(data, seg_s, seg_e, gaps, nw, self.low1, self.multi, low, ls, le, orig)
        if self.norm_engine is not None:
            ls, le, n_s, n_e, n_id = K.match_added(low, ls, le, *self.norm_engine._tries[0], self.engine.cls,
                                                    np.zeros(0, np.uint8))
        else:
            n_s, n_e, n_id = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int32)
        seg_doc = np.searchsorted(offsets, ls // 2, side="right") - 1  # (low position L: raw L // 2)
        lit = K.any_match(low, ls, le, *self.literal_engine._tries[0][:6])
        if lit.any():
            skip[seg_doc[lit != 0]] = 1
        S = ls.shape[0]
        blocks = byte_blocks(ls, low.shape[0], S, _UNITS_PER_THREAD * threads if parallel else 1)
        n_sp = r_s.shape[0] + n_s.shape[0]
        buf = take(1, 2 * low.shape[0] + n_sp)  # the added tokens' slots at the end
        p_s = take(2, low.shape[0])
        p_e = take(3, low.shape[0])
        p_l = np.empty(low.shape[0] if record else 0, np.int64)
        counts = np.zeros(S, np.int64)
        bcounts = np.zeros(blocks.shape[0] - 1, np.int64)
        with numba_threads(threads if parallel else 1):
            clip_cpu.clip_scan(low, ls, le, blocks, nw, self.cls, buf, p_s, p_e, p_l, counts, bcounts)
            if not n_sp and not record:  # the pieces alone: items in two parallel passes, not NumPy's gathers
                return (buf,) + _items(p_s, p_e, ls, blocks, counts, seg_doc, skip, runs)
        _f, idx = gathered(ls[blocks[:-1]], bcounts)
        starts, ends = p_s[idx], p_e[idx]
        if record:
            src = p_l[idx]
            src_e = sp_s = sp_e = np.zeros(starts.shape[0], np.int64)
        doc = np.repeat(seg_doc, counts)
        special = np.full(starts.shape[0], -1, np.int32)
        if n_sp:  # the added tokens into text order, by keys: position L of the lowercased
            # text (raw position p: low 2 * p, where its gap's lowercase starts) as 2 * L, a
            # piece as 2 * (its segment's start) + its index there (fewer than the segment's bytes)
            first = np.cumsum(counts) - counts
            keys = 2 * np.repeat(ls, counts) + np.arange(starts.shape[0]) - np.repeat(first, counts)
            keys = np.concatenate((keys, 2 * n_s, 4 * r_s))
            slots = 2 * low.shape[0] + np.arange(n_sp, dtype=np.int64)  # where encode_pieces writes their ids
            starts = np.concatenate((starts, slots))
            ends = np.concatenate((ends, slots + 1))
            special = np.concatenate((special, n_id, r_id))
            doc = np.concatenate((doc, np.searchsorted(offsets, np.concatenate((n_s // 2, r_s)), side="right") - 1))
            order = np.argsort(keys, kind="stable")
            starts, ends, special, doc = starts[order], ends[order], special[order], doc[order]
            if record:
                n_raw_s = orig[n_s] if n_s.shape[0] else n_s
                n_raw_e = orig[n_e - 1] + 1 if n_s.shape[0] else n_s  # (the last character's first byte + 1)
                src = np.concatenate((src, n_s, np.full(r_s.shape[0], -1, np.int64)))[order]
                src_e = np.concatenate((src_e, n_e, np.full(r_s.shape[0], -1, np.int64)))[order]
                sp_s = np.concatenate((sp_s, n_raw_s, r_s))[order]
                sp_e = np.concatenate((sp_e, n_raw_e, r_e))[order]
        keep = skip[doc] == 0
        if not keep.all():
            starts, ends, special, doc = starts[keep], ends[keep], special[keep], doc[keep]
            if record:
                src, src_e, sp_s, sp_e = src[keep], src_e[keep], sp_s[keep], sp_e[keep]
        # encode_pieces takes a run of pieces as back to back (each ends where the next
        # starts): a -2 item (nothing) wherever two pieces in a row are not (between two
        # blocks of clip_scan, or where a skipped document's pieces were taken out)
        at = (np.flatnonzero((special[1:] == -1) & (special[:-1] == -1) & (starts[1:] != ends[:-1])) + 1 if runs
              else np.zeros(0, np.int64))
        if at.shape[0]:
            starts, ends, doc = np.insert(starts, at, starts[at]), np.insert(ends, at, starts[at]), np.insert(doc, at, doc[at])
            special = np.insert(special, at, -2)
            if record:
                src, src_e = np.insert(src, at, -1), np.insert(src_e, at, -1)
                sp_s, sp_e = np.insert(sp_s, at, 0), np.insert(sp_e, at, 0)
        if record:
            return buf, starts, ends, special, doc, (src, src_e, sp_s, sp_e, orig, low)
        return buf, starts, ends, special, doc

    def _run(self, data: np.ndarray, offsets: np.ndarray, check_nfc: bool, num_threads: Optional[int],
             hint: Optional[np.ndarray] = None):
        """``(ids, row_splits, skip)`` of packed documents, without the post-processor; the
        documents in ``skip`` (NFC would change them, when ``check_nfc``, or step 5) have
        empty rows. ``hint``: ``pack_probed``'s (None: every document is searched)."""
        n = offsets.shape[0] - 1
        threads, parallel = plan_threads(num_threads, data.shape[0])
        skip = (self.engine._nfc_changed(data, offsets, None, hint).astype(np.uint8) if check_nfc
                else np.zeros(n, np.uint8))
        locked = self._lock.acquire(blocking=False)  # else (another call holds it) fresh scratch
        try:
            buf, starts, ends, special, doc = self._pieces(data, offsets, skip, hint, threads, parallel, kept=locked)
            ids, pts = self.engine.encode_pieces(buf, starts, ends, special, parallel, threads)
            del buf
        finally:
            if locked:
                self._lock.release()
        item_rs = np.searchsorted(doc, np.arange(n + 1))  # (items in text order: ``doc`` sorted)
        return ids, pts[item_rs], skip

    def encode_ids(self, texts: Sequence[str], add_special_tokens: bool, num_threads: Optional[int]):
        from .cpu_ref.pipeline import check_text

        texts = text_list(texts)
        data, offsets, hint = pack_probed(texts, check_text, num_threads, self.engine.probe, self.engine.probe_pairs)
        ids, rs, skip = self._run(data, offsets, True, num_threads, hint)
        if skip.any():
            ids, rs = splice_rows(ids, rs, self.skipped_rows(texts, skip, num_threads, data, offsets))
        if add_special_tokens and (self.prefix.shape[0] or self.suffix.shape[0]):
            ids, rs = add_template(self.K, ids, rs, self.prefix, self.suffix, num_threads)
        return ids, rs

    def skipped_rows(self, texts, skip: np.ndarray, num_threads: Optional[int], data: np.ndarray,
                     offsets: np.ndarray) -> dict:
        """``{index: ids}`` of the documents in ``skip`` (also the GPU engine's host side's):
        their gaps NFC-normalized (``ByteBPEEngine.nfc_normalize``) and run again, all
        together, else one by one; a document that fails both (the raw tokens would match the
        normalized text differently, or step 5) by the reference path."""
        def run(d, o):
            ids, rs, again = self._run(d, o, False, num_threads)
            return ids, rs, again == 0

        return rows_after_nfc(self.engine, self.ref, texts, np.flatnonzero(skip).tolist(), data, offsets, run)

    # ------------------------------------------------------------ encodings
    _tokens_of = CpuTokenizerEngine._tokens_of  # the model's token strings by id (kept in _vocab_r)

    def encode_single_encodings(self, texts: List[str], type_id: int, num_threads: Optional[int]) -> List[Encoding]:
        """Per text, the ``Encoding`` before post-processing (the reference's
        ``_encode_single``): a token's offsets are the characters of the text its bytes came
        from (``orig`` of ``_pieces``: the lowercased byte's source character; a byte of a
        character the byte-level tokens split reports the whole character, decision 0004),
        its word the item's index in the document (pieces and added tokens); documents NFC
        would change normalized first and their offsets mapped back
        (``fast_cpu.encodings_with_nfc``); those of step 5 from the reference path."""
        from .cpu_ref.pipeline import check_text

        texts = text_list(texts)
        data, offsets, hint = pack_probed(texts, check_text, num_threads, self.engine.probe, self.engine.probe_pairs)

        def arrays_of(d, o, normalized=False):
            return self._encoding_arrays(d, o, num_threads, None if normalized else hint, normalized)

        return encodings_with_nfc(self.engine, self.ref, texts, type_id, data, offsets, arrays_of)

    def _encoding_arrays(self, data: np.ndarray, offsets: np.ndarray, num_threads: Optional[int], hint,
                         normalized: bool):
        """``(row_splits, ids, tokens, char_starts, char_ends, words, skipped, added)`` of packed
        documents, as ``fast_cpu.CpuTokenizerEngine._encoding_arrays`` (``normalized``: NFC
        already, not checked)."""
        n = offsets.shape[0] - 1
        threads, parallel = plan_threads(num_threads, data.shape[0])
        skip = (np.zeros(n, np.uint8) if normalized
                else self.engine._nfc_changed(data, offsets, None, hint).astype(np.uint8))
        buf, starts, ends, special, doc, (src, src_e, sp_s, sp_e, orig, low) = self._pieces(
            data, offsets, skip, hint, threads, parallel, record=True)
        ids, pts = self.engine.encode_pieces(buf, starts, ends, special, parallel, threads)
        P = starts.shape[0]
        counts = np.diff(pts)
        item = np.repeat(np.arange(P, dtype=np.int64), counts)
        is_sp = special[item] >= 0 if P else np.zeros(0, bool)
        lens = self.engine.tok_len[np.where(is_sp, 0, ids)]  # a model token's bytes (0xFF included)
        excl = np.cumsum(lens) - lens
        q0 = excl - excl[pts[item]] if P else np.zeros(0, np.int64)  # where it starts in its piece
        plen = (ends - starts - 1)[item]  # the piece's bytes in low (without its 0xFF)
        lo = src[item]
        a_low = lo + q0
        b_low = lo + np.minimum(q0 + lens, plen)  # (the 0xFF byte belongs to the last token)
        a_raw = np.where(is_sp, sp_s[item], orig[np.where(is_sp, 0, a_low)] if orig.shape[0] else a_low)
        e_raw = np.where(is_sp, sp_e[item], (orig[np.where(is_sp, 0, b_low - 1)] + 1) if orig.shape[0] else b_low)
        cidx = _char_index(data)
        base = cidx[offsets[:-1]][doc[item]] if P else np.zeros(0, np.int64)
        c_start = cidx[a_raw + 1] - 1 - base  # the character of byte b: cidx[b + 1] - 1
        c_end = cidx[e_raw] - base  # (e_raw - 1: a byte of the last character)
        first_item = np.searchsorted(doc, np.arange(n + 1))  # (items in text order: ``doc`` sorted)
        before = np.cumsum(special != -2) - (special != -2)  # items before, the -2 ones not counted
        word = before[item] - before[first_item[doc[item]]] if P else np.zeros(0, np.int64)
        rs = pts[first_item]
        at = np.flatnonzero(is_sp)
        texts = []
        for k in at.tolist():  # an added token: the text it matched (a normalized one: in
            it = item[k]  # the normalized text)
            text = data[sp_s[it]:sp_e[it]] if src[it] < 0 else low[src[it]:src_e[it]]
            texts.append(text.tobytes().decode("utf-8"))
        toks = TokenStrings(self._tokens_of(), ids, at, texts)
        return rs, ids, toks, c_start, c_end, word, np.flatnonzero(skip).tolist(), is_sp

    def encode_batch(self, inputs, add_special_tokens: bool, num_threads: Optional[int]) -> List[Encoding]:
        return batch_of_singles(self, inputs, add_special_tokens, num_threads)
