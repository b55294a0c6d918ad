"""WordPiece / WordLevel ids over packed text: the compiled path of ``fast_wordpiece``
(decision 0025).

Array layouts
-------------
Text: ``data: uint8[N]`` the UTF-8 of all texts back to back, ``doc_offsets: int64[n+1]``.

Rewrite, what each code point becomes (built by ``fast_wordpiece`` from the reference
normalizer, one character at a time): ``kind: uint8[0x110000]``:
0 itself, 1 nothing, 2 a space, 3 the reference path (the whole document),
4 ``rep_bytes[rep_off[rep_idx[c]]:rep_off[rep_idx[c] + 1]]`` (the UTF-8 of its normalized
form, white space made spaces), 5 itself between two spaces, 6 as 4, a character whose
NFD holds a non-starter ``strip_accents`` keeps: its document is checked for a canonical
reordering that would move such a non-starter (``order: uint16[0x110000]``, ``desc``; see
``_order_ok``) and goes to the reference path only then.
``punct: uint8[0x110000]``: 1 for a character ``BertPreTokenizer`` isolates (all 0 under
``WhitespaceSplit``). After the rewrite the only white space is the byte 0x20.

Vocabulary: two byte tries (``engine_cpu.build_trie``: ``(node << 8) | byte`` -> child in
``fk``/``fv``, ``fterm[node]`` the id an entry ending there has, else -1), the first over
the entries for a word's first piece, the second (``nk``/``nv``/``nterm``) over the
entries for the pieces after it, without the continuing prefix. WordLevel uses the first
alone.

``status: uint8[n]`` per document: 0 encoded here, 1 the reference path (set by the
caller, or by ``kind`` 3), 2 a piece needs the unk token and the vocabulary has none
(the reference path raises the reference's error).

Output: ``norm: uint8[M]`` document ``d`` normalized at ``noff[d]:noff[d + 1]``;
``out: int32[M]`` its ids at ``out[noff[d]:noff[d] + counts[d]]`` (every token has at
least one byte of ``norm``). For ``encode_batch``: ``src: int64[M]`` the character of its
text each byte of ``norm`` came from (``wp_sources``), and per token (at its id's index)
``tb``/``te: int64[M]`` its bytes ``norm[tb:te]`` and ``word: int64[M]`` its piece
(``wp_encode_spans``: ``wp_encode``'s loop again, kept apart so that the cached path has
no recording branch; one kernel with a flag measured 0.89x on bert's ids).

Threads: every kernel takes ``blocks`` (``int64``, bounds into the document list: runs of
documents of about equal bytes) and ``nw`` workers, and hands the blocks to the workers as
they free up (``workqueue.take_range``); ``prange`` over the documents gave each thread a
fixed run of as many documents, however long they took (the multilingual bench file, two
threads: 1.75-1.84x faster on the queue, ``benchmarks/RESULTS.md``, 2026-12-05 11:09 and
11:10 UTC).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from numba import get_thread_id

from .engine_cpu import short_key
from .hash_table import EMPTY, lookup2, njit_cached, njit_noalloc
from .pretok_cpu import _dec
from .workqueue import take_range

_U8 = np.uint64(8)


@njit_noalloc(inline="always")
def _norm_len(data, a, b, kind, rep_idx, rep_off):
    """``(bytes, checked)``: bytes of ``data[a:b]`` rewritten, or -1 when a character sends
    it to the reference; whether a character of kind 6 is in it."""
    total = 0
    checked = False
    p = a
    while p < b:
        c, n = _dec(data, p)
        k = kind[c]
        if k == 0:
            total += n
        elif k == 2:
            total += 1
        elif k == 3:
            return -1, checked
        elif k == 4 or k == 6:
            r = rep_idx[c]
            total += rep_off[r + 1] - rep_off[r]
            checked = checked or k == 6
        elif k == 5:
            total += n + 2
        p += n
    return total, checked


@njit_noalloc
def _order_ok(data, a, b, order, desc):
    """Whether NFD's canonical reordering leaves the kept non-starters of ``data[a:b]``
    where the per-character rewrite puts them. It sorts each run of non-starters by
    combining class (stably); the marks ``strip_accents`` drops then vanish, so the result
    changes exactly when a kept non-starter follows one of a higher class in the same run.
    ``state``: the class of the last kept non-starter in the current run (0: none).
    ``order[c]``: 0 the character's NFD holds a starter and no kept non-starter after its
    last one (the run ends: state 0); 1 it changes nothing (``clean_text`` drops it before
    NFD, or its NFD is non-starters the normalizer drops); ``2 + j``: ``desc[j]``, its NFD
    in four bytes: the class of the first kept non-starter before its first starter (0:
    none), that of the last one there, that of the last kept non-starter after its last
    starter, and 1 when it holds a starter."""
    state = 0
    p = a
    while p < b:
        c, n = _dec(data, p)
        r = np.int64(order[c])
        if r == 0:
            state = 0
        elif r >= 2:
            dsc = np.int64(desc[r - 2])
            lead_first = dsc & 0xFF
            if lead_first != 0 and lead_first < state:
                return False
            if (dsc >> 24) & 1:
                state = (dsc >> 16) & 0xFF
            elif (dsc >> 8) & 0xFF:
                state = (dsc >> 8) & 0xFF
        p += n
    return True


@njit_cached(parallel=True, nogil=True)
def wp_norm_lengths(data, doc_offsets, blocks, nw, kind, rep_idx, rep_off, order, desc, status, nlen):
    """``nlen[d]``: bytes of document ``d`` rewritten (0 for one the reference encodes;
    ``status[d] = 1`` when a character sends it there, or a canonical reordering would
    move a kept non-starter of it: ``_order_ok``, run on the documents holding kind 6;
    an empty ``order``: every such document goes to the reference)."""
    flags = np.zeros(blocks.shape[0] - 1, np.int64)
    for tw in prange(nw):
        for turn in range(blocks.shape[0] - 1):
            d0, d1 = take_range(flags, turn, np.int64(tw), nw, blocks)
            for d in range(d0, d1):
                if status[d] != 0:
                    nlen[d] = 0
                    continue
                t, checked = _norm_len(data, doc_offsets[d], doc_offsets[d + 1], kind, rep_idx, rep_off)
                if t < 0 or (checked and (order.shape[0] == 0
                                          or not _order_ok(data, doc_offsets[d], doc_offsets[d + 1], order, desc))):
                    status[d] = 1
                    nlen[d] = 0
                else:
                    nlen[d] = t


@njit_cached(parallel=True, nogil=True)
def wp_normalize(data, doc_offsets, blocks, nw, kind, rep_idx, rep_off, rep_bytes, status, noff, norm):
    """Document ``d`` rewritten into ``norm[noff[d]:noff[d + 1]]``."""
    flags = np.zeros(blocks.shape[0] - 1, np.int64)
    for tw in prange(nw):
        for turn in range(blocks.shape[0] - 1):
            d0, d1 = take_range(flags, turn, np.int64(tw), nw, blocks)
            for d in range(d0, d1):
                if status[d] != 0:
                    continue
                o = noff[d]
                p = doc_offsets[d]
                b = doc_offsets[d + 1]
                while p < b:
                    c, n = _dec(data, p)
                    k = kind[c]
                    if k == 0:
                        for j in range(n):
                            norm[o + j] = data[p + j]
                        o += n
                    elif k == 2:
                        norm[o] = 32
                        o += 1
                    elif k == 4 or k == 6:
                        r = rep_idx[c]
                        for j in range(rep_off[r], rep_off[r + 1]):
                            norm[o] = rep_bytes[j]
                            o += 1
                    elif k == 5:
                        norm[o] = 32
                        for j in range(n):
                            norm[o + 1 + j] = data[p + j]
                        norm[o + 1 + n] = 32
                        o += n + 2
                    p += n


@njit_noalloc
def _piece(norm, s, e, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, out, o, tb, te, rec):
    """The ids of the piece ``norm[s:e]`` to ``out[o:]``; returns the new ``o``, or -1 when
    the piece needs the unk token and there is none (``unk`` < 0). ``rec``: each token's
    bytes ``norm[tb[k]:te[k]]`` recorded too (the unk token: the whole piece)."""
    if not wordpiece:  # WordLevel: the whole piece, else the unk token
        node = np.uint64(0)
        for p in range(s, e):
            node = lookup2(ftab, (node << _U8) | np.uint64(norm[p]))
            if node == EMPTY:
                break
        v = fterm[np.int64(node)] if node != EMPTY else -1
        if v < 0:
            if unk < 0:
                return -1
            v = unk
        out[o] = v
        if rec:
            tb[o] = s
            te[o] = e
        return o + 1
    chars = 0
    for p in range(s, e):
        if (norm[p] & 0xC0) != 0x80:
            chars += 1
    o0 = o
    if chars <= max_chars:
        q = s
        first = True
        while q < e:
            # the longest entry at q: walk the trie while the bytes are the start of one
            # (an entry ends on a character boundary, so a terminal node is one here too)
            best = -1
            bend = q
            node = np.uint64(0)
            for r in range(q, e):
                if first:
                    node = lookup2(ftab, (node << _U8) | np.uint64(norm[r]))
                else:
                    node = lookup2(ntab, (node << _U8) | np.uint64(norm[r]))
                if node == EMPTY:
                    break
                t = fterm[np.int64(node)] if first else nterm[np.int64(node)]
                if t >= 0:
                    best = t
                    bend = r + 1
            if best < 0:
                o = o0  # the whole piece is the unk token
                break
            out[o] = best
            if rec:
                tb[o] = q
                te[o] = bend
            o += 1
            q = bend
            first = False
        if q >= e and o > o0:
            return o
    if unk < 0:
        return -1
    out[o0] = unk
    if rec:
        tb[o0] = s
        te[o0] = e
    return o0 + 1


_KEY1 = np.uint64(0x0FFFFFFFFFFFFFFF)  # the key bits of an entry's second word (the count above)
_IDS = np.uint64((1 << 21) - 1)


@njit_noalloc(inline="always")
def cache_get(wc, w, slot, w0, w1, out, o):
    """The ids worker ``w``'s word cache holds for the key ``(w0, w1)`` (``short_key``)
    written to ``out[o:]``, and their count; -1 when it does not hold the key.

    Layout: pieces of at most 15 bytes with at most 6 ids, each below 2^21:
    ``wc[w, e] = [w0, w1 | n << 56 | ids << 60, ids 0-2, ids 3-5]``, 21 bits an id. Sets of
    two entries (one 64-byte line: the one ``slot``, from the key's hash, is in), the more
    recently used first: an entry found second is swapped to the front. Direct-mapped
    (one entry a slot), a piece written over by another of the same slot ran the model
    again the next time (t5-small: 66,840 distinct short pieces in 4 MB of prose, then
    half as many as the slots; decision 0019's fourth addendum)."""
    e = slot & ~np.int64(1)
    for f in range(2):
        if wc[w, e + f, 0] == w0 and (wc[w, e + f, 1] & _KEY1) == w1:
            k = np.int64(wc[w, e + f, 1] >> np.uint64(60))
            for j in range(k):
                word = wc[w, e + f, 2 + j // 3]
                out[o + j] = np.int32((word >> np.uint64(21 * (j % 3))) & _IDS)
            if f == 1:
                for q in range(4):
                    t = wc[w, e, q]
                    wc[w, e, q] = wc[w, e + 1, q]
                    wc[w, e + 1, q] = t
            return k
    return -1


@njit_noalloc(inline="always")
def cache_put(wc, w, slot, w0, w1, out, o, k):
    """Keep the ``k`` ids at ``out[o:]`` for the key ``(w0, w1)`` (when they fit) at the
    front of ``slot``'s set (``cache_get``), its front entry moved second."""
    if 0 < k <= 6:
        v0 = np.uint64(0)
        v1 = np.uint64(0)
        for j in range(k):
            t = out[o + j]
            if t < 0 or t > 0x1FFFFF:
                return
            if j < 3:
                v0 |= np.uint64(t) << np.uint64(21 * j)
            else:
                v1 |= np.uint64(t) << np.uint64(21 * (j - 3))
        e = slot & ~np.int64(1)
        for q in range(4):
            wc[w, e + 1, q] = wc[w, e, q]
        wc[w, e, 0] = w0
        wc[w, e, 1] = w1 | (np.uint64(k) << np.uint64(60))
        wc[w, e, 2] = v0
        wc[w, e, 3] = v1


@njit_noalloc(inline="always")
def _cached_piece(norm, s, e, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, wc, w, out, o):
    """``_piece`` through worker ``w``'s word cache (``cache_get``); returns the new ``o``.
    Inlined, with the miss a call of its own (``_piece_miss``): a call passes every array
    argument field by field, and per piece that was most of the kernel's time (the same in
    the SentencePiece engine's word loop, ``engine_cpu._sp_word_cached``)."""
    n = e - s
    if n <= 15:
        w0, w1, h = short_key(norm, s, n)
        k = cache_get(wc, w, np.int64(h & np.uint64(wc.shape[1] - 1)), w0, w1, out, o)
        if k >= 0:
            return o + k
    return _piece_miss(norm, s, e, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, wc, w, out, o)


@njit_noalloc
def _piece_miss(norm, s, e, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, wc, w, out, o):
    """``_piece`` of a piece the word cache does not hold, put there when it has at most 15
    bytes (and ids: the unk token needed with none, -1, is not kept)."""
    o2 = _piece(norm, s, e, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, out, o, out, out, False)
    n = e - s
    if n <= 15 and o2 > o:
        w0, w1, h = short_key(norm, s, n)
        cache_put(wc, w, np.int64(h & np.uint64(wc.shape[1] - 1)), w0, w1, out, o, o2 - o)
    return o2


@njit_cached(parallel=True, nogil=True)
def wp_encode(norm, noff, blocks, nw, punct, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, wc, status,
              out, counts):
    """Each document's pieces (cut at spaces; punctuation characters alone) through the
    model: ``counts[d]`` ids at ``out[noff[d]:]``."""
    flags = np.zeros(blocks.shape[0] - 1, np.int64)
    for tw in prange(nw):
        for turn in range(blocks.shape[0] - 1):
            d0, d1 = take_range(flags, turn, np.int64(tw), nw, blocks)
            for d in range(d0, d1):
                counts[d] = 0
                if status[d] != 0:
                    continue
                w = get_thread_id()
                a = noff[d]
                b = noff[d + 1]
                o = a
                p = a
                while p < b and o >= 0:
                    if norm[p] == 32:
                        p += 1
                        continue
                    s = p
                    while p < b and norm[p] != 32 and o >= 0:
                        c, n = _dec(norm, p)
                        if punct[c]:
                            if p > s:
                                o = _cached_piece(norm, s, p, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm,
                                                  wc, w, out, o)
                            if o >= 0:
                                o = _cached_piece(norm, p, p + n, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm,
                                                  wc, w, out, o)
                            s = p + n
                        p += n
                    if p > s and o >= 0:
                        o = _cached_piece(norm, s, p, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm,
                                          wc, w, out, o)
                if o < 0:
                    status[d] = 2
                else:
                    counts[d] = o - a


# ------------------------------------------------------------ with offsets (encode_batch)
@njit_cached(parallel=True, nogil=True)
def wp_sources(data, doc_offsets, blocks, nw, kind, rep_idx, rep_off, status, noff, src):
    """``src[i]``: the character (its index in its document's text) normalized byte ``i``
    came from (``wp_normalize``'s layout; every byte of a rewrite from that character)."""
    flags = np.zeros(blocks.shape[0] - 1, np.int64)
    for tw in prange(nw):
        for turn in range(blocks.shape[0] - 1):
            d0, d1 = take_range(flags, turn, np.int64(tw), nw, blocks)
            for d in range(d0, d1):
                if status[d] != 0:
                    continue
                o = noff[d]
                p = doc_offsets[d]
                b = doc_offsets[d + 1]
                ci = 0
                while p < b:
                    c, n = _dec(data, p)
                    k = kind[c]
                    m = n
                    if k == 1:
                        m = 0
                    elif k == 2:
                        m = 1
                    elif k == 4 or k == 6:
                        r = rep_idx[c]
                        m = rep_off[r + 1] - rep_off[r]
                    elif k == 5:
                        m = n + 2
                    for j in range(m):
                        src[o + j] = ci
                    o += m
                    p += n
                    ci += 1


@njit_noalloc(inline="always")
def _spans_piece(norm, s, e, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, out, o, tb, te, word, w):
    """``_piece`` recording its tokens' bytes, and ``w`` as their piece."""
    o2 = _piece(norm, s, e, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, out, o, tb, te, True)
    for k in range(o, max(o2, o)):
        word[k] = w
    return o2


@njit_cached(parallel=True, nogil=True)
def wp_encode_spans(norm, noff, blocks, nw, punct, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, status,
                    out, counts, first, tb, te, word):
    """``wp_encode`` without the word cache, each token's bytes ``norm[tb[k]:te[k]]`` and
    piece (``word[k]``, counted from 0 in its document) recorded too. A document makes at
    most a token per normalized byte; the documents of a block are written back to back
    from its first document's slot ``noff[d0]`` (``first[d]``: where document ``d``'s
    start; never past its own slots, ``noff[d]`` on), so the slots written are dense and
    the pages of those never written never touched (``_util.sparse_empty``)."""
    flags = np.zeros(blocks.shape[0] - 1, np.int64)
    for tw in prange(nw):
        for turn in range(blocks.shape[0] - 1):
            d0, d1 = take_range(flags, turn, np.int64(tw), nw, blocks)
            cur = noff[d0] if d1 > d0 else 0
            for d in range(d0, d1):
                counts[d] = 0
                first[d] = cur
                if status[d] != 0:
                    continue
                a = cur
                p = noff[d]
                b = noff[d + 1]
                o = a
                w = 0
                while p < b and o >= 0:
                    if norm[p] == 32:
                        p += 1
                        continue
                    s = p
                    while p < b and norm[p] != 32 and o >= 0:
                        c, n = _dec(norm, p)
                        if punct[c]:
                            if p > s:
                                o = _spans_piece(norm, s, p, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm,
                                                 out, o, tb, te, word, w)
                                w += 1
                            if o >= 0:
                                o = _spans_piece(norm, p, p + n, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm,
                                                 out, o, tb, te, word, w)
                                w += 1
                            s = p + n
                        p += n
                    if p > s and o >= 0:
                        o = _spans_piece(norm, s, p, wordpiece, max_chars, unk, ftab, fterm, ntab, nterm, out, o,
                                         tb, te, word, w)
                        w += 1
                if o < 0:
                    status[d] = 2
                else:
                    counts[d] = o - a
                    cur = o
