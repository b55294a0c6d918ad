"""The compiled CPU engine's kernels (Numba ``njit``): byte-string tables, added-token
matching, and BPE over packed pieces with a word cache.

Array layouts
-------------
Text: ``data: uint8[N]`` the UTF-8 of all texts back to back (``PackedText``),
``doc_offsets: int64[n+1]``.

Byte-string table (the vocabulary by bytes, for ``ignore_merges`` / tiktoken's
whole-piece rule, and the trie of added tokens):
  ``arena: uint8[A]``, ``tok_off: int64[V+1]`` -- token ``i``'s bytes are
  ``arena[tok_off[i]:tok_off[i+1]]`` (empty for ids without bytes);
  ``bkeys: uint64[C]`` (``bytes_hash`` of the token, ``EMPTY`` when free),
  ``bvals: int32[C]`` (the id); open addressing, linear probing, load <= 0.5.
  A hit is confirmed by comparing the bytes, so hash collisions cannot give a
  wrong id.

Added-token trie: ``tkeys: uint64[C]`` keyed ``(node << 8) | byte`` -> ``tvals:
int64[C]`` the child node (same open addressing as ``hash_table.lookup``);
``term: int32[nodes]`` the added-token id a node completes (-1 none);
``first: uint8[256]`` whether a byte starts some content; per added-token id
(indexed ``id - id_base``): ``tflags: uint8`` bit 1 single_word, 2 lstrip, 4 rstrip.
``cls: uint8[0x110000]`` bit 16 Rust ``\\w``, bit 32 Rust ``\\s`` (``unicode_props``).

Pieces: ``starts, ends: int64[P]`` byte ranges into ``data``; ``special: int32[P]``
an added token's id, or -1 for a piece the model encodes.

Word caches (one set per worker, kept across calls): see the fused path's section below.

Output of ``encode_pieces``: ``out: int32[N]`` piece ``p``'s ids at
``out[starts[p]:starts[p] + counts[p]]`` (a byte-level piece never has more ids
than bytes), ``counts: int64[P]``; ``compact`` gathers them in piece order.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._intrinsics import ctz64 as _ctz64
from ._intrinsics import range_mask64 as _range_mask64
from ._intrinsics import load64 as _load64
from ._intrinsics import load64_2 as _load64_2
from ._intrinsics import prefetch1 as _prefetch1
from ._intrinsics import prefetch3 as _prefetch3
from ._intrinsics import cas3 as _cas3
from ._intrinsics import copy_items as _copy_items
from ._intrinsics import load_acquire3 as _load_acquire3
from ._intrinsics import store_release3 as _store_release3
from .bpe_cpu import merge_piece
from .hash_table import (_GOLD, EMPTY, PAIR_CACHE_BITS, filter_slot, lookup, lookup2, lookup_cached, mix64, njit_cached,
                         njit_noalloc)
from .hash_table import uidx as _U
from .workqueue import take

_CACHE_IDS = 8
_CACHE_MAX_LEN = 16
_U8 = np.uint64(8)


# ------------------------------------------------------------ byte strings
@njit_noalloc
def bytes_hash(buf, s, e):
    """A 64-bit hash of ``buf[s:e]`` (words of 8 bytes folded with splitmix64)."""
    h = mix64(np.uint64(e - s) + np.uint64(0x9E3779B97F4A7C15))
    i = s
    if e + 8 <= buf.shape[0]:  # whole words, the last one masked to the bytes left
        while i + 8 <= e:
            h = mix64(h ^ _load64(buf, i))
            i += 8
        if i < e:
            h = mix64(h ^ (_load64(buf, i) & _KEY_MASKS[_U(e - i)]))
        return h
    while i < e:  # near the buffer's end: byte by byte (the same words)
        w = np.uint64(0)
        k = 0
        while k < 8 and i < e:
            w |= np.uint64(buf[_U(i)]) << np.uint64(8 * k)
            i += 1
            k += 1
        h = mix64(h ^ w)
    return h


@njit_cached
def _fill_bytes_table(arena, tok_off, keep, bkeys, bvals):
    """Store every id ``t`` with bytes and ``keep[t]`` (open addressing, ids in order)."""
    mask = np.int64(bkeys.shape[0] - 1)
    for t in range(tok_off.shape[0] - 1):
        s = tok_off[t]
        e = tok_off[t + 1]
        if e == s or keep[t] == 0:
            continue
        h = bytes_hash(arena, s, e)
        i = np.int64(h & np.uint64(mask))
        while bkeys[i] != EMPTY:
            i = (i + 1) & mask
        bkeys[i] = h
        bvals[i] = t


def _bytes_table(arena, tok_off, keep):
    """``(bkeys, bvals)`` holding the ids with bytes that ``keep`` marks, at most half full."""
    n = int(((np.diff(tok_off) > 0) & (keep != 0)).sum())
    cap = 8
    while cap < 2 * n:
        cap *= 2
    bkeys = np.full(cap, EMPTY, np.uint64)
    bvals = np.full(cap, -1, np.int32)
    _fill_bytes_table(arena, tok_off, keep, bkeys, bvals)
    return bkeys, bvals


def build_bytes_table(token_bytes):
    """``(arena, tok_off, bkeys, bvals)`` for ``token_bytes[i]`` = bytes of id ``i`` (or None).

    When two ids have the same bytes the lower id is found first (both are stored).
    """
    lens = np.fromiter((0 if b is None else len(b) for b in token_bytes), np.int64, len(token_bytes))
    tok_off = np.zeros(len(token_bytes) + 1, np.int64)
    np.cumsum(lens, out=tok_off[1:])
    arena = np.frombuffer(b"".join(b for b in token_bytes if b), np.uint8).copy()
    return (arena, tok_off) + _bytes_table(arena, tok_off, np.ones(len(token_bytes), np.uint8))


@njit_cached
def _whole_first_needed(arena, tok_off, bkeys, bvals, init_ids, grid, mtab):
    """``uint8`` per id: 1 where a whole-first engine must find the id by its bytes, because
    the miss path's BPE of those bytes (``_merge_short``) does not give that one id (or the
    id has more than ``_SHORT`` bytes: BPE would use the heap); 0 for the ids BPE gives
    anyway, and for ids whose bytes belong to a lower id (``bytes_lookup`` finds that one)."""
    T = tok_off.shape[0] - 1
    need = np.zeros(T, np.uint8)
    pc = np.full(2 << PAIR_CACHE_BITS, EMPTY, np.uint64)
    ids = np.empty(_SHORT, np.int32)
    rank = np.empty(_SHORT + 1, np.uint64)
    out = np.empty(_SHORT, np.int32)
    for t in range(T):
        a = tok_off[t]
        b = tok_off[t + 1]
        if b == a or bytes_lookup(arena, a, b, arena, tok_off, bkeys, bvals) != t:
            continue
        if b - a > _SHORT:
            need[t] = 1
        elif _merge_short(arena, a, b - a, init_ids, grid, mtab, pc, ids, rank, out, 0) != 1 or out[0] != t:
            need[t] = 1
    return need


def whole_first_table(arena, tok_off, bkeys, bvals, init_ids, grid, mtab):
    """``(bkeys, bvals)`` of a bytes table (over the same ``arena``/``tok_off``) holding only
    the ids a whole-first engine's miss path must look up (``_whole_first_needed``): for
    any other piece its BPE gives what the full table would. The full table (one id per
    vocabulary entry) is several MB, and a piece not seen before waited on memory for it
    twice; this one holds the exceptions (llama3: 711 ids, o200k_base: 85) and stays in the
    processor's caches."""
    return _bytes_table(arena, tok_off, _whole_first_needed(arena, tok_off, bkeys, bvals, init_ids, grid, mtab))


@njit_noalloc
def bytes_lookup(buf, s, e, arena, tok_off, bkeys, bvals):
    """The id whose bytes are ``buf[s:e]``, or -1."""
    h = bytes_hash(buf, s, e)
    mask = np.int64(bkeys.shape[0] - 1)
    i = np.int64(h & np.uint64(mask))
    n = e - s
    while True:
        k = bkeys[_U(i)]
        if k == EMPTY:
            return -1
        if k == h:
            t = bvals[_U(i)]
            a = tok_off[_U(t)]
            if tok_off[_U(t + 1)] - a == n:
                same = True
                for j in range(n):
                    if arena[_U(a + j)] != buf[_U(s + j)]:
                        same = False
                        break
                if same:
                    return t
        i = (i + 1) & mask


@njit_cached
def _concat_merges(arena, tok_off, bkeys, bvals, ranks_of_id, out):
    """tiktoken's merges: for every token and every split point where both halves are
    tokens, ``(left, right, rank(token), token)``. Returns the number of rows in ``out``."""
    m = 0
    for t in range(tok_off.shape[0] - 1):
        s = tok_off[t]
        e = tok_off[t + 1]
        for c in range(s + 1, e):
            a = bytes_lookup(arena, s, c, arena, tok_off, bkeys, bvals)
            if a < 0:
                continue
            b = bytes_lookup(arena, c, e, arena, tok_off, bkeys, bvals)
            if b < 0:
                continue
            out[m, 0] = a
            out[m, 1] = b
            out[m, 2] = ranks_of_id[t]
            out[m, 3] = t
            m += 1
    return m


def concat_merges(arena, tok_off, bkeys, bvals, ranks_of_id):
    """``int64[M, 4]`` merge rows (left, right, rank, merged) of a rank table (tiktoken)."""
    total = int((np.diff(tok_off) - 1).clip(min=0).sum())
    out = np.empty((max(total, 1), 4), np.int64)
    m = _concat_merges(arena, tok_off, bkeys, bvals, ranks_of_id, out)
    return out[:m]


# ------------------------------------------------------------ added tokens
@njit_noalloc
def _next_char(data, i):
    """Byte length of the UTF-8 character at ``data[i]``."""
    b = data[_U(i)]
    if b < 0x80:
        return 1
    if b < 0xE0:
        return 2
    if b < 0xF0:
        return 3
    return 4


@njit_noalloc
def _decode_at(data, i):
    b = np.int64(data[_U(i)])
    if b < 0x80:
        return b
    if b < 0xE0:
        return ((b & 0x1F) << 6) | (np.int64(data[_U(i + 1)]) & 0x3F)
    if b < 0xF0:
        return ((b & 0x0F) << 12) | ((np.int64(data[_U(i + 1)]) & 0x3F) << 6) | (np.int64(data[_U(i + 2)]) & 0x3F)
    return (((b & 0x07) << 18) | ((np.int64(data[_U(i + 1)]) & 0x3F) << 12) | ((np.int64(data[_U(i + 2)]) & 0x3F) << 6)
            | (np.int64(data[_U(i + 3)]) & 0x3F))


@njit_noalloc
def _prev_start(data, i):
    """Start of the character that ends just before byte ``i``."""
    j = i - 1
    while (data[_U(j)] & 0xC0) == 0x80:
        j -= 1
    return j


_ONES8 = np.uint64(0x0101010101010101)
_HIGH8 = np.uint64(0x8080808080808080)


_FB_MAX = 8  # gemma3's raw added tokens start with five bytes ("<", "\n", "\t", "▁"'s first, "[")


@njit_cached
def _first_bytes(first):
    """The bytes that start some added token when there are at most ``_FB_MAX`` of them (the
    matcher then skips 64 or eight bytes at a time), else none (it tests every byte)."""
    k = 0
    for v in range(256):
        if first[v]:
            k += 1
    fb = np.empty(k if k <= _FB_MAX else 0, np.uint8)
    if k <= _FB_MAX:
        k = 0
        for v in range(256):
            if first[v]:
                fb[k] = v
                k += 1
    return fb


@njit_cached
def trie_trunk(tkeys, tvals, term):
    """The bytes every added-token content starts with: the path from the root while a node
    has one child and completes no token (at most 64 bytes). The matcher compares them
    before walking the trie, so a frequent first byte (the "▁" that starts SentencePiece's
    normalized contents) costs a few byte compares instead of hash probes."""
    out = np.empty(64, np.uint8)
    node = np.int64(0)
    k = 0
    while k < 64 and term.shape[0] > 0:
        cnt = 0
        cb = 0
        child = np.int64(-1)
        for v in range(256):
            r = lookup(tkeys, tvals, (np.uint64(node) << _U8) | np.uint64(v))
            if r != EMPTY:
                cnt += 1
                cb = v
                child = np.int64(r)
        if cnt != 1:
            break
        out[k] = cb
        k += 1
        node = child
        if term[node] >= 0:
            break
    return out[:k].copy()


@njit_noalloc
def _content_start(data, i, b, first, fb, trunk):
    """The first place ``p`` in ``[i, b)`` where an added token's content may start (a first
    byte of ``first``, then the whole ``trunk``, ``trie_trunk``'s), or ``b``: 64 or eight
    bytes at a time where ``fb`` (``_first_bytes``) or the trunk allow (SIMD compares)."""
    nfb = fb.shape[0]
    N = data.shape[0]
    tl = trunk.shape[0]
    t0 = np.int64(trunk[0]) if tl > 1 else np.int64(0)
    tz = np.int64(trunk[tl - 1]) if tl > 1 else np.int64(0)
    while i < b:
        if tl > 1 and i + tl + 63 <= N:
            # every content starts with the trunk: a place to try has its first and its last
            # byte (llama2's normalized contents all start "▁<": the "▁" of every word alone
            # no longer stops the scan)
            m = _range_mask64(data, i, t0, t0) & _range_mask64(data, i + tl - 1, tz, tz)
            if m == 0:
                i += 64
                continue
            i += np.int64(_ctz64(m))
            if i >= b:
                break
        elif nfb > 0 and i + 64 <= N:  # 64 bytes at a time (SIMD compares)
            m = np.uint64(0)
            for f in range(nfb):
                v = np.int64(fb[_U(f)])
                m |= _range_mask64(data, i, v, v)
            if m == 0:
                i += 64
                continue
            i += np.int64(_ctz64(m))
            if i >= b:
                break
        elif nfb > 0 and i + 8 <= N:
            # eight bytes at a time: bit 7 of each byte equal to one of the first bytes
            # (the lowest set bit is exact: borrows only reach bytes above a true match)
            x = _load64(data, i)
            m = np.uint64(0)
            for f in range(nfb):
                y = x ^ (np.uint64(fb[_U(f)]) * _ONES8)
                m |= (y - _ONES8) & ~y & _HIGH8
            if m == 0:
                i += 8
                continue
            i += np.int64(_ctz64(m) >> np.uint64(3))
            if i >= b:
                break
        if first[_U(data[_U(i)])] == 0:
            i += 1
            continue
        # every content starts with the trunk: compare it before walking the trie
        if tl > 1:
            if i + tl > b:
                i += 1
                continue
            same = True
            for k in range(1, tl):
                if data[_U(i + k)] != trunk[_U(k)]:
                    same = False
                    break
            if not same:
                i += 1
                continue
        return i
    return b


@njit_noalloc(inline="always")
def _longest_content(data, i, b, tkeys, tvals, term):
    """``(end, id)`` of the longest content of the trie starting at ``data[i]`` and ending
    by ``b``, or ``(-1, -1)``."""
    node = np.int64(0)
    j = i
    best_end = np.int64(-1)
    best_id = np.int64(-1)
    while j < b:
        v = lookup(tkeys, tvals, (np.uint64(node) << _U8) | np.uint64(data[_U(j)]))
        if v == EMPTY:
            break
        node = np.int64(v)
        j += 1
        if term[_U(node)] >= 0:
            best_end = j
            best_id = np.int64(term[_U(node)])
    return best_end, best_id


@njit_noalloc
def _match_segment(data, a, b, tkeys, tvals, term, first, fb, trunk, tflags, id_base, cls,
                   seg_s, seg_e, m_s, m_e, m_id, ns, nm):
    """The reference's ``_find_matches`` on ``data[a:b]``: leftmost-longest matches,
    ``single_word`` filter, ``lstrip``/``rstrip`` widening; appends gaps and matches."""
    start_offset = a
    i = a
    while i < b:
        i = _content_start(data, i, b, first, fb, trunk)
        if i >= b:
            break
        best_end, best_id = _longest_content(data, i, b, tkeys, tvals, term)
        if best_end < 0:
            i += 1
            continue
        start = i
        stop = best_end
        fl = tflags[_U(best_id - id_base)]
        i = best_end
        if fl & 1:
            ok = True
            if start > a and (cls[_U(_decode_at(data, _prev_start(data, start)))] & 16) != 0:
                ok = False
            if stop < b and (cls[_U(_decode_at(data, stop))] & 16) != 0:
                ok = False
            if not ok:
                continue
        if fl & 2:
            s = start
            while s > a:
                p = _prev_start(data, s)
                if (cls[_U(_decode_at(data, p))] & 32) == 0:
                    break
                s = p
            start = max(s, start_offset)
        if fl & 4:
            # the search goes on from the content's end, not the widened one: a content
            # that starts with whitespace can match in the whitespace taken here (then from
            # the widened end when it strips left, else overlapping this match), as in the
            # reference (find_iter over the contents, the widening after it)
            while stop < b and (cls[_U(_decode_at(data, stop))] & 32) != 0:
                stop += _next_char(data, stop)
        if start_offset < start:
            seg_s[_U(ns)] = start_offset
            seg_e[_U(ns)] = start
            ns += 1
        m_s[_U(nm)] = start
        m_e[_U(nm)] = stop
        m_id[_U(nm)] = best_id
        nm += 1
        start_offset = stop
    if start_offset < b:
        seg_s[_U(ns)] = start_offset
        seg_e[_U(ns)] = b
        ns += 1
    return ns, nm


@njit_cached
def match_added(data, in_s, in_e, tkeys, tvals, term, first, fb, trunk, tflags, id_base, cls, hint):
    """Split segments ``[in_s, in_e)`` at added-token matches.

    Returns ``(seg_s, seg_e, m_s, m_e, m_id)``: the non-empty gaps left (in order)
    and the matches (start, end, id), each in text order. ``hint: uint8[S]`` (or empty:
    search every segment): 0 where segment ``k`` holds no first byte of a content, which
    is then a gap whole (``pack_cpu.gather_views_probe`` tests that while packing).
    """
    S = in_s.shape[0]
    total = 0
    for k in range(S):
        total += in_e[_U(k)] - in_s[_U(k)]
    cap = S + total + 1
    seg_s = np.empty(cap, np.int64)
    seg_e = np.empty(cap, np.int64)
    m_s = np.empty(total + 1, np.int64)
    m_e = np.empty(total + 1, np.int64)
    m_id = np.empty(total + 1, np.int32)
    ns = _I0
    nm = _I0
    hinted = hint.shape[0] != 0
    for k in range(S):
        if hinted and hint[_U(k)] == 0:
            seg_s[_U(ns)] = in_s[_U(k)]
            seg_e[_U(ns)] = in_e[_U(k)]
            ns += 1
            continue
        ns, nm = _match_segment(data, in_s[_U(k)], in_e[_U(k)], tkeys, tvals, term, first, fb, trunk, tflags, id_base, cls,
                                seg_s, seg_e, m_s, m_e, m_id, ns, nm)
    return seg_s[:ns], seg_e[:ns], m_s[:nm], m_e[:nm], m_id[:nm]


@njit_cached(parallel=True)
def match_added_parallel(data, in_s, in_e, tkeys, tvals, term, first, fb, trunk, tflags, id_base, cls, hint, nblocks):
    """``match_added`` (``hint`` as there) with the segments shared out in ``nblocks`` runs of about equal bytes.
    Run ``r`` (segments ``k0..k1``) writes its gaps from ``k0 + B[k0]`` and its matches from
    ``B[k0]`` (``B``: the bytes before a segment), where no other run writes (a segment
    leaves at most one gap per match plus one, and a match takes a byte at least); the
    runs are then put together in order."""
    S = in_s.shape[0]
    cb = np.empty(S + 1, np.int64)
    cb[0] = 0
    for k in range(S):
        cb[_U(k + 1)] = cb[_U(k)] + in_e[_U(k)] - in_s[_U(k)]
    total = cb[_U(S)]
    R = max(1, min(nblocks, S))
    rb = np.empty(R + 1, np.int64)  # run bounds (segment indices)
    rb[0] = 0
    k = 0
    for r in range(1, R):
        goal = total * r // R
        while k < S and cb[_U(k)] < goal:
            k += 1
        rb[_U(r)] = max(k, rb[_U(r - 1)])
    rb[_U(R)] = S
    seg_s = np.empty(S + total + 1, np.int64)
    seg_e = np.empty(S + total + 1, np.int64)
    m_s = np.empty(total + 1, np.int64)
    m_e = np.empty(total + 1, np.int64)
    m_id = np.empty(total + 1, np.int32)
    ns_r = np.empty(R, np.int64)
    nm_r = np.empty(R, np.int64)
    hinted = hint.shape[0] != 0
    for r in prange(R):
        k0 = rb[_U(r)]
        ns = k0 + cb[_U(k0)]
        nm = cb[_U(k0)]
        for j in range(k0, rb[_U(r + 1)]):
            if hinted and hint[_U(j)] == 0:
                seg_s[_U(ns)] = in_s[_U(j)]
                seg_e[_U(ns)] = in_e[_U(j)]
                ns += 1
                continue
            ns, nm = _match_segment(data, in_s[_U(j)], in_e[_U(j)], tkeys, tvals, term, first, fb, trunk, tflags,
                                    id_base, cls, seg_s, seg_e, m_s, m_e, m_id, ns, nm)
        ns_r[_U(r)] = ns - (k0 + cb[_U(k0)])
        nm_r[_U(r)] = nm - cb[_U(k0)]
    ns = 0
    nm = 0
    for r in range(R):
        k0 = rb[_U(r)]
        a = k0 + cb[_U(k0)]
        for j in range(ns_r[_U(r)]):
            seg_s[_U(ns + j)] = seg_s[_U(a + j)]
            seg_e[_U(ns + j)] = seg_e[_U(a + j)]
        ns += ns_r[_U(r)]
        a = cb[_U(k0)]
        for j in range(nm_r[_U(r)]):
            m_s[_U(nm + j)] = m_s[_U(a + j)]
            m_e[_U(nm + j)] = m_e[_U(a + j)]
            m_id[_U(nm + j)] = m_id[_U(a + j)]
        nm += nm_r[_U(r)]
    return seg_s[:ns], seg_e[:ns], m_s[:nm], m_e[:nm], m_id[:nm]


@njit_noalloc
def _any_in_segment(data, i, b, tkeys, tvals, term, first, fb, trunk):
    """Whether some content occurs in ``data[i:b]`` (``_content_start`` finds where to try)."""
    while i < b:
        i = _content_start(data, i, b, first, fb, trunk)
        if i >= b:
            break
        if _longest_content(data, i, b, tkeys, tvals, term)[0] >= 0:
            return True
        i += 1
    return False


@njit_cached
def any_match(data, in_s, in_e, tkeys, tvals, term, first, fb, trunk):
    """Per segment, whether any content occurs in it (no flags; tiktoken's special check)."""
    S = in_s.shape[0]
    out = np.zeros(S, np.uint8)
    for k in range(S):
        if _any_in_segment(data, in_s[_U(k)], in_e[_U(k)], tkeys, tvals, term, first, fb, trunk):
            out[_U(k)] = 1
    return out


def trie_nodes(contents):
    """``(children, term)``: the byte trie of ``contents`` (list of ``(bytes, id)``) as a
    list of ``{byte: child}`` per node (node 0 the root) and the id ending at each node
    (-1: none). The first entry wins on identical contents (as the reference's trie)."""
    children = [{}]
    term = [-1]
    for content, tid in contents:
        node = 0
        for byte in content:
            nxt = children[node].get(byte)
            if nxt is None:
                nxt = len(children)
                children[node][byte] = nxt
                children.append({})
                term.append(-1)
            node = nxt
        if term[node] < 0:
            term[node] = tid
    return children, term


def build_trie(contents):
    """``(tkeys, tvals, term, first)`` for ``contents``: list of ``(bytes, id)``.

    The first entry wins on identical contents (as the reference's trie).
    """
    children, term = trie_nodes(contents)
    edges = [((node << 8) | byte, child) for node, ch in enumerate(children) for byte, child in ch.items()]
    cap = 8
    while cap < 2 * len(edges):
        cap *= 2
    tkeys = np.full(cap, EMPTY, np.uint64)
    tvals = np.full(cap, EMPTY, np.uint64)
    if edges:
        from .hash_table import _insert_all

        ek = np.array([e[0] for e in edges], np.uint64)
        ev = np.array([e[1] for e in edges], np.uint64)
        _insert_all(tkeys, tvals, ek, ev)
    first = np.zeros(256, np.uint8)
    for byte in children[0]:
        first[byte] = 1
    return tkeys, tvals, np.array(term, np.int32), first


def searchable_trie(trie):
    """``build_trie``'s ``(tkeys, tvals, term, first)`` with what the matchers' scan for a
    first place to try needs, made once here rather than on every call (``trie_trunk``
    probes the trie 256 times per trunk byte: 28 us of a one-word call of gpt2's, whose
    trunk is "<|endoftext|>"): ``(tkeys, tvals, term, first, fb, trunk)`` (``_first_bytes``,
    ``trie_trunk``), the arguments ``match_added`` and ``any_match`` take after the text."""
    tkeys, tvals, term, first = trie
    return tkeys, tvals, term, first, _first_bytes(first), trie_trunk(tkeys, tvals, term)


# ------------------------------------------------------------------ pieces
@njit_noalloc(inline="always")
def _nfc_changes(c, k, q, last_ccc, starter, between, max_between, ckeys, cvals):
    """Whether character ``c`` (class ``k``, quick-check bits ``q``: ``fast_cpu.nfc_tables``)
    makes NFC change the text, after the state given (``last_ccc``: the class of the last
    character of the previous character's decomposition; ``starter``: the last class-0
    character, -1 for none; ``between``/``max_between``: the characters since it and their
    highest class).

    The Unicode quick check (no character that NFC changes on its own, combining classes
    in canonical order, where a composed character counts with the class of the last
    character of its decomposition), with each "maybe" character decided: it changes the
    text only if it composes with the last starter before it and is not blocked from it
    (a character between them with class 0 or a class >= its own).
    """
    if (k != 0 and last_ccc > k) or (q & 1) != 0:
        return True
    if (q & 2) != 0 and starter >= 0:
        blocked = between > 0 if k == 0 else max_between >= k
        if not blocked:
            if 0x1161 <= c < 0x1176:  # Hangul V after L
                return 0x1100 <= starter < 0x1113
            if 0x11A8 <= c < 0x11C3:  # Hangul T after LV
                return 0xAC00 <= starter < 0xD7A4 and (starter - 0xAC00) % 28 == 0
            return lookup(ckeys, cvals, (np.uint64(starter) << np.uint64(32)) | np.uint64(c)) != EMPTY
    return False


@njit_noalloc(inline="always")
def _nfc_after(c, k, tccc, starter, between, max_between):
    """The ``_nfc_changes`` state after character ``c`` (class ``k``): ``(starter, between,
    max_between, last_ccc)``."""
    if k == 0:
        return c, 0, 0, np.int64(tccc[_U(c)])
    return starter, between + 1, max(max_between, k), np.int64(tccc[_U(c)])


@njit_noalloc(inline="always")
def _lead_mask(data, i, lr):
    """Bits of the bytes of ``data[i:i + 64]`` in the ranges ``lr`` (``fast_cpu.nfc_tables``:
    the lead bytes of the characters that are not all inert; the other bytes are ASCII,
    continuation bytes and the lead bytes of two-byte characters NFC never looks at)."""
    if _range_mask64(data, i, lr[0], 0xFF) == 0:  # nothing from the lowest such lead up (``lr`` is
        return np.uint64(0)  # in ascending order): one compare for ASCII and Latin text
    m = _range_mask64(data, i, lr[0], lr[1]) | _range_mask64(data, i, lr[2], lr[3])
    m |= _range_mask64(data, i, lr[4], lr[5]) | _range_mask64(data, i, lr[6], lr[7])
    return m | _range_mask64(data, i, lr[8], lr[9]) | _range_mask64(data, i, lr[10], lr[11])


@njit_noalloc(inline="always")
def _inert_end(data, i, e, lr, bad_lead):
    """The first byte after ``i`` (an inert character's first byte, before ``e``, a
    character boundary) that is a lead byte of ``lr`` (``bad_lead``: the same as a table),
    else ``e``: the characters before it are inert. A few bytes one at a time (a space
    between words), then 64 at a time (SIMD compares) where the buffer allows, then a byte
    at a time (a continuation byte is never in ``lr``)."""
    j = i + 1
    while j < e and j < i + 4 and bad_lead[_U(data[_U(j)])] == 0:
        j += 1
    if j < i + 4 or j >= e or bad_lead[_U(data[_U(j)])] != 0:
        return j
    i = j
    while i + 64 <= e:
        m = _lead_mask(data, i, lr)
        if m != 0:
            return i + np.int64(_ctz64(m))
        i += 64
    while i < e and bad_lead[_U(data[_U(i)])] == 0:
        i += 1
    return i


@njit_noalloc(inline="always")
def _last_start(data, j):
    """Where the character that ends at ``j`` starts (valid UTF-8 before ``j``)."""
    return j - 1 if data[_U(j - 1)] < 0x80 else _prev_start(data, j)


@njit_noalloc
def _nfc_unchanged(data, i, e, qc, ccc, tccc, ckeys, cvals, lr, bad_lead):
    """1 when no character of ``data[i:e]`` ``_nfc_changes``. Characters that are inert
    (class 0, kept, composing with nothing before them: every ASCII character, and all
    those of the two-byte lead bytes outside ``lr``) are skipped 64 bytes at a time: after
    them the state is that of their last character (``lazy``: worked out only when a
    character that needs it comes). The others one at a time. 8 MB of the multilingual
    file: 7.0 -> 4.7 ms one thread, 3.75 -> 2.5 two (from every non-ASCII character
    through the tables, ASCII runs skipped)."""
    last_ccc = np.int64(0)
    starter = np.int64(-1)
    between = 0
    max_between = 0
    prev = np.int64(-1)  # the last character, when ``lazy`` (-1: none yet)
    lazy = True
    while i < e:
        if bad_lead[_U(data[_U(i)])] == 0:  # inert characters
            j = _inert_end(data, i, e, lr, bad_lead)
            prev = _decode_at(data, _last_start(data, j))
            lazy = True
            i = j
            continue
        c, n = _dec(data, i)
        i += n
        k = np.int64(ccc[_U(c)])
        q = qc[_U(c)]
        if k == 0 and (q & 3) == 0:
            prev = c
            lazy = True
            continue
        if lazy:
            starter = prev
            between = 0
            max_between = 0
            last_ccc = np.int64(tccc[_U(prev)]) if prev >= 0 else np.int64(0)
            lazy = False
        if _nfc_changes(c, k, q, last_ccc, starter, between, max_between, ckeys, cvals):
            return 0
        starter, between, max_between, last_ccc = _nfc_after(c, k, tccc, starter, between, max_between)
    return 1


@njit_cached(parallel=True)
def nfc_unchanged_docs(data, doc_offsets, qc, ccc, tccc, ckeys, cvals, lr, bad_lead, hint):
    """Per document, 1 when NFC leaves it unchanged (tables: ``fast_cpu.nfc_tables``):
    no character ``_nfc_changes``. Without any composition or reordering the text is its
    own NFC. ``hint: uint8[n]`` (or empty: every document looked at): 0 where a document
    holds no byte from ``lr[0]`` up (no character that is not inert: it is unchanged)."""
    n = doc_offsets.shape[0] - 1
    ok = np.ones(n, np.uint8)
    # the documents in a scattered order (a prime stride): the workers get equal shares of
    # documents, and neighbours are often alike (a run of documents in other scripts is
    # far slower than one of ASCII ones: 8 MB of the multilingual file, 2 threads, 6.9 ->
    # 3.8 ms)
    stride = 7919 if n % 7919 != 0 else (7907 if n % 7907 != 0 else 1)
    hinted = hint.shape[0] != 0
    for k in prange(n):
        d = (k * stride) % n
        if hinted and hint[_U(d)] == 0:
            continue
        ok[_U(d)] = _nfc_unchanged(data, doc_offsets[_U(d)], doc_offsets[_U(d + 1)], qc, ccc, tccc, ckeys, cvals, lr,
                                   bad_lead)
    return ok


@njit_cached
def _nfc_seg_spans(data, i, e, qc, ccc, tccc, ckeys, cvals, lr, bad_lead, sp_s, sp_e, ns):
    """``nfc_spans`` of one segment ``data[i:e]``: its spans appended at ``sp_s[ns:]``,
    ``sp_e[ns:]`` (at most one a byte); returns the new ``ns``."""
    last_ccc = 0
    starter = np.int64(-1)
    between = 0
    max_between = 0
    bound = i  # where the last boundary character (or the segment) starts
    dirty = False
    while i < e:
        p = i
        if bad_lead[_U(data[_U(i)])] == 0:  # a run of inert characters: boundaries, each after the other
            if dirty:
                sp_s[_U(ns)] = bound
                sp_e[_U(ns)] = p
                ns += 1
                dirty = False
            i = _inert_end(data, i, e, lr, bad_lead)
            bound = _last_start(data, i)
            starter = _decode_at(data, bound)
            between = 0
            max_between = 0
            last_ccc = np.int64(tccc[_U(starter)])
            continue
        c, n = _dec(data, i)
        i += n
        k = np.int64(ccc[_U(c)])
        q = qc[_U(c)]
        if q == 0 and k == 0:  # a boundary: the span open ends here
            if dirty:
                sp_s[_U(ns)] = bound
                sp_e[_U(ns)] = p
                ns += 1
                dirty = False
            bound = p
        elif not dirty and _nfc_changes(c, k, q, last_ccc, starter, between, max_between, ckeys, cvals):
            dirty = True
        starter, between, max_between, last_ccc = _nfc_after(c, k, tccc, starter, between, max_between)
    if dirty:
        sp_s[_U(ns)] = bound
        sp_e[_U(ns)] = e
        ns += 1
    return ns


@njit_cached
def nfc_spans(data, seg_s, seg_e, qc, ccc, tccc, ckeys, cvals, lr, bad_lead):
    """The byte spans ``(sp_s, sp_e)`` of the segments ``[seg_s, seg_e)`` that NFC may
    change, each normalized on its own: a span runs from the last boundary before a
    character that ``_nfc_changes`` (or its segment's start) to the next boundary (or its
    segment's end). A boundary is a character of class 0 that NFC keeps, that composes
    with nothing before it, and whose decomposition (if any: a Hangul syllable's starts
    with a leading jamo) starts with such a character (``qc == 0``; every ASCII
    character): NFC never reorders or composes across it, so
    ``NFC(x + y) == NFC(x) + NFC(y)`` when ``y`` starts with one, and the text outside the
    spans is its own NFC."""
    cap = 0
    for d in range(seg_s.shape[0]):
        cap += seg_e[_U(d)] - seg_s[_U(d)]
    sp_s = np.empty(cap + 1, np.int64)
    sp_e = np.empty(cap + 1, np.int64)
    ns = _I0
    for d in range(seg_s.shape[0]):
        ns = _nfc_seg_spans(data, seg_s[_U(d)], seg_e[_U(d)], qc, ccc, tccc, ckeys, cvals, lr, bad_lead, sp_s, sp_e, ns)
    return sp_s[:ns], sp_e[:ns]


@njit_cached(parallel=True)
def nfc_spans_parallel(data, seg_s, seg_e, qc, ccc, tccc, ckeys, cvals, lr, bad_lead):
    """``nfc_spans`` with the segments shared between the threads (the caller sets a chunk
    size of 1: the documents NFC changes differ in size by orders of magnitude). Segment
    ``d`` writes its spans from ``B[d]`` (``B``: the bytes before it; a span takes a byte at
    least), then they are put together in order."""
    S = seg_s.shape[0]
    cb = np.empty(S + 1, np.int64)
    cb[0] = 0
    for d in range(S):
        cb[_U(d + 1)] = cb[_U(d)] + seg_e[_U(d)] - seg_s[_U(d)]
    sp_s = np.empty(cb[_U(S)] + 1, np.int64)
    sp_e = np.empty(cb[_U(S)] + 1, np.int64)
    cnt = np.empty(S, np.int64)
    for d in prange(S):
        a = cb[_U(d)]
        cnt[_U(d)] = _nfc_seg_spans(data, seg_s[_U(d)], seg_e[_U(d)], qc, ccc, tccc, ckeys, cvals, lr, bad_lead,
                                    sp_s, sp_e, a) - a
    ns = 0
    for d in range(S):
        a = cb[_U(d)]
        for j in range(cnt[_U(d)]):
            sp_s[_U(ns + j)] = sp_s[_U(a + j)]
            sp_e[_U(ns + j)] = sp_e[_U(a + j)]
        ns += cnt[_U(d)]
    return sp_s[:ns], sp_e[:ns]


@njit_cached
def span_keys(data, sp_s, sp_e):
    """``bytes_hash`` of each span ``data[sp_s[k]:sp_e[k]]``."""
    h = np.empty(sp_s.shape[0], np.uint64)
    for k in range(sp_s.shape[0]):
        h[_U(k)] = bytes_hash(data, sp_s[_U(k)], sp_e[_U(k)])
    return h


@njit_cached
def spans_equal(data, sp_s, sp_e, rep):
    """Whether every span has the same bytes as span ``rep[k]`` (spans grouped by hash: a
    collision would group different spans)."""
    for k in range(sp_s.shape[0]):
        r = rep[_U(k)]
        n = sp_e[_U(k)] - sp_s[_U(k)]
        if sp_e[_U(r)] - sp_s[_U(r)] != n:
            return False
        for j in range(n):
            if data[_U(sp_s[_U(k)] + j)] != data[_U(sp_s[_U(r)] + j)]:
                return False
    return True


@njit_noalloc(inline="always")
def _copy_bytes(out, o, src, a, n):
    """``out[o:o + n] = src[a:a + n]`` (a plain loop: a slice makes a view, a cost per span)."""
    for j in range(n):
        out[_U(o + j)] = src[_U(a + j)]


@njit_cached(parallel=True)
def splice_spans(data, sp_s, sp_e, which, repl, roff, grow, out, nblocks):
    """``out``: ``data`` with each span ``k`` (in order, disjoint) replaced by the bytes
    ``repl[roff[u]:roff[u + 1]]`` of ``u = which[k]``; ``grow[k]``: the bytes the spans
    before ``k`` added (a byte ``p`` outside the spans, after ``k`` of them, goes to
    ``p + grow[k]``). ``nblocks`` blocks of ``data`` in parallel: each copies its bytes
    outside the spans and the replacements of the spans that start in it (8 MB of
    English prose, six documents normalized, two threads: 0.8 -> 0.3 ms)."""
    N = data.shape[0]
    S = sp_s.shape[0]
    B = (N + nblocks - 1) // nblocks
    for blk in prange(nblocks):
        lo = blk * B
        hi = min(N, lo + B)
        k = np.searchsorted(sp_e, lo, side="right")  # the first span that ends after lo
        p = lo
        while p < hi:
            if k < S and sp_s[_U(k)] < hi:
                if p < sp_s[_U(k)]:
                    _copy_bytes(out, p + grow[_U(k)], data, p, sp_s[_U(k)] - p)
                if sp_s[_U(k)] >= lo:  # the span starts in this block: its replacement
                    u = which[_U(k)]
                    _copy_bytes(out, sp_s[_U(k)] + grow[_U(k)], repl, roff[_U(u)], roff[_U(u + 1)] - roff[_U(u)])
                p = sp_e[_U(k)]
                k += 1
            else:
                _copy_bytes(out, p + grow[_U(k)], data, p, hi - p)
                p = hi


@njit_cached
def copy_ranges(src, s_start, dst, d_start, lens):
    """``dst[d_start[k]:d_start[k] + lens[k]] = src[s_start[k]:s_start[k] + lens[k]]`` for
    each ``k`` (byte ranges: the documents NFC changes gathered, and written back)."""
    for k in range(lens.shape[0]):
        _copy_bytes(dst, d_start[_U(k)], src, s_start[_U(k)], lens[_U(k)])


@njit_cached(nogil=True)
def add_template(ids, row_splits, prefix, suffix):
    """Insert ``prefix`` before and ``suffix`` after every row."""
    out, rs = _template_rows(row_splits, prefix, suffix)
    for d in range(rs.shape[0] - 1):
        _template_row(ids, row_splits, prefix, suffix, out, rs, d)
    return out, rs


@njit_cached(parallel=True, nogil=True)
def add_template_parallel(ids, row_splits, prefix, suffix):
    """``add_template`` with the rows shared between Numba's threads: the copy of every
    id was 1.4 of 22.7 ms of an 8 MB prose batch, llama3 (BOS), two threads; 3.3M ids in
    1,600 rows alone, two threads: 1.20 -> 0.76 ms."""
    out, rs = _template_rows(row_splits, prefix, suffix)
    for d in prange(rs.shape[0] - 1):
        _template_row(ids, row_splits, prefix, suffix, out, rs, d)
    return out, rs


@njit_cached
def _template_rows(row_splits, prefix, suffix):
    """The output of ``add_template`` (unfilled) and its row splits."""
    n = row_splits.shape[0] - 1
    k = prefix.shape[0] + suffix.shape[0]
    rs = np.empty(n + 1, np.int64)
    for d in range(n + 1):
        rs[_U(d)] = row_splits[_U(d)] + d * k
    return np.empty(rs[_U(n)], np.int32), rs


@njit_noalloc(inline="always")
def _put_ids(ids, out, o):
    """``out[o:o + len(ids)] = ids``; returns the new ``o``."""
    for k in range(ids.shape[0]):
        out[_U(o + k)] = ids[_U(k)]
    return o + ids.shape[0]


@njit_noalloc(inline="always")
def _template_ends(out, rs, d, prefix, suffix):
    """The prefix at the start of row ``d`` of ``out`` (``rs``: its row splits) and the
    suffix at its end."""
    _put_ids(prefix, out, rs[_U(d)])
    _put_ids(suffix, out, rs[_U(d + 1)] - suffix.shape[0])


@njit_noalloc(inline="always")
def _template_row(ids, row_splits, prefix, suffix, out, rs, d):
    """Row ``d`` of ``add_template``: prefix, the row's ids, suffix."""
    _template_ends(out, rs, d, prefix, suffix)
    o = rs[_U(d)] + prefix.shape[0]
    for k in range(row_splits[_U(d)], row_splits[_U(d + 1)]):
        out[_U(o)] = ids[_U(k)]
        o += 1


# ------------------------------------------------------- fused scan + BPE (ids only)
# The ids-only path does not materialise pieces: each worker scans its unit of text
# with the family's scanner (``pretok_cpu``) and encodes every piece as soon as it is
# cut, while its bytes are hot. Units come from ``pretok_cpu._plan``: groups of whole
# segments, or cuts of one long segment at sync points (``unit_sync``: positions every family
# must cut at), so a 10 MB single line is shared between the workers.
#
# Word caches (per worker ``w``, kept across calls, fixed size so memory is bounded):
# * short pieces (1..15 bytes, at most 6 ids): ``cache: uint64[W, C, 4]``, 32-byte entries
#   ``[w0, w1 | n << 56 | n_ids << 60, ids 0-2, ids 3-5]`` (``w0``/``w1``: the piece's bytes,
#   little-endian; three 21-bit ids per word, the first in the low bits: 4 ids in two
#   32-bit halves sent the 5-6-id pieces, 8% of the multilingual file's, to a wide probe
#   that waits on memory, 126 -> 106 ms per 8 MB, gpt2, one thread). ``w1``'s top byte is never
#   0 in a used entry, so a zeroed slot is empty. Four-way sets (slots 4k..4k+3: two 64-byte
#   lines when the array is 64-byte aligned): a new entry goes to 4k, the others move one
#   way down and the oldest leaves; a hit in another way is swapped to 4k (so the branch
#   on "found first" is predicted). The set is prefetched as soon as the piece is cut.
# * short pieces with 7..14 ids: ``wide: uint64[W, C2, 8]``, 64-byte entries ``[w0, w1 | n << 56
#   | n_ids << 60, six words of ids]`` (three to a word as above), four-way sets as above
#   (hash bits 32 and up). A short piece with more ids leaves a mark there (``n_ids`` = 15:
#   its ids are in the long cache), so a short piece missing both caches costs no probe of
#   the long cache.
# * long pieces (16.._LONG_MAX bytes) and short ones with more ids: an index ``lidx:
#   uint64[W, L + 1, 4]``, entries ``[hash, byte position, id position, n | n_ids << 32]``
#   in four-way sets (newest first, oldest out; row ``L`` holds the worker's two write
#   counters), over two rings: ``lbytes: uint8[W, B]`` the pieces' bytes (compared byte
#   for byte on a hit) and ``lids: int32[W, I]`` their ids, each written at its counter
#   (an entry that would straddle the end starts the ring again). Positions are absolute
#   (they only grow): an entry whose bytes or ids the rings have since overwritten is
#   known by its position, ``counter > position + ring size``, and counts as absent. Sizes
#   vary, so the rings hold a piece of 16 bytes and one of 1,000 alike (the fixed 64-byte
#   slots of before held at most 32 ids and left longer pieces to the heap every time:
#   gpt-4o, 8 MB of the multilingual file, one thread, 118 -> 84 ms).
# Pieces longer than _LONG_MAX bytes are encoded every time.

from numba import get_thread_id  # noqa: E402


from .pretok_cpu import (_F_GPT2, _F_O200K, _F_QWEN, _cl100k_window, _dec, _gpt2_window, _o200k_window,  # noqa: E402
                         _piece_cl100k_inline, _piece_gpt2_inline, _piece_o200k_inline, _plan, unit_stop, unit_sync)

_M32 = np.uint64(0xFFFFFFFF)
# A 0 passed to a compiled callee (a worker index, a first item, a counter's start):
# typed int64 like get_thread_id() and the other callers' values. A literal 0 is typed
# Literal[int](0), and Numba compiles the callee (and every callee down its chain) once
# more for that type, even for a counter that typing later widens to int64; so does a
# prange index (uint64 after the parfor pass, int64 before: np.int64(u)). The serial and
# parallel paths were two compilations of the engine, about 65 s each on this host.
_I0 = np.int64(0)


_HM1 = np.uint64(0x9E3779B97F4A7C15)
_HM2 = np.uint64(0xC2B2AE3D27D4EB4F)


# _KEY_MASKS[n], _KEY_MASKS[16 + n]: the masks of a piece of n <= 15 bytes' first and
# second words (its bytes 0..7 and 8..14)
_KEY_MASKS = np.array([(1 << (8 * min(n, 8))) - 1 for n in range(16)]
                      + [(1 << (8 * max(n - 8, 0))) - 1 for n in range(16)], np.uint64)


@njit_noalloc(inline="always")
def short_key(data, a, n):
    """``(w0, w1 | n << 56, hash)`` of the piece ``data[a:a + n]`` (``1 <= n <= 15``)."""
    if a + 16 <= data.shape[0]:  # the two words masked to the piece's bytes: no branch on n
        w0 = _load64(data, a) & _KEY_MASKS[_U(n)]
        w1 = _load64(data, a + 8) & _KEY_MASKS[_U(n + 16)]
    else:  # the last bytes of the buffer: no 8-byte load past its end
        w0 = np.uint64(0)
        w1 = np.uint64(0)
        for k in range(min(n, 8)):
            w0 |= np.uint64(data[a + k]) << np.uint64(8 * k)
        for k in range(8, n):
            w1 |= np.uint64(data[a + k]) << np.uint64(8 * (k - 8))
    w1 |= np.uint64(n) << np.uint64(56)
    return w0, w1, key_hash(w0, w1)


@njit_noalloc(inline="always")
def key_hash(w0, w1):
    """The hash of a short piece's key words (``short_key``)."""
    h = w0 * _HM1 + w1
    h = (h ^ (h >> np.uint64(32))) * _HM2
    return h ^ (h >> np.uint64(29))


@njit_noalloc(inline="always")
def _prefetch_pair(mtab, pc, key):
    """Prefetch the pair cache's slot, its pair filter's word and the merge table's slot for
    ``key`` (``lookup_cached``)."""
    _prefetch1(pc, np.int64((key * _GOLD) >> np.uint64(64 - PAIR_CACHE_BITS)) << 1)
    _prefetch1(pc, filter_slot(pc, key))
    _prefetch1(mtab, 2 * np.int64(mix64(key) & np.uint64((mtab.shape[0] >> 1) - 1)))


@njit_noalloc
def _merge_ids(ids, n, mtab, pc, rank):
    """BPE of the ``n`` symbols in ``ids`` by rescanning (for short pieces): the lowest-rank
    pair, leftmost first, merged until none is left; the same result as ``merge_piece``.
    Returns the number of tokens left in ``ids``."""
    for k in range(n - 1):
        rank[_U(k)] = lookup_cached(mtab, pc, (np.uint64(ids[_U(k)]) << np.uint64(32)) | np.uint64(ids[_U(k + 1)]))
    return _merge_ranked(ids, n, mtab, pc, rank)


@njit_noalloc
def _merge_ranked(ids, n, mtab, pc, rank):
    """``_merge_ids`` once ``rank[k]`` holds the merge of ``ids[k], ids[k + 1]`` for every ``k``."""
    m = n
    while m > 1:
        best = 0
        bv = rank[0]
        for k in range(1, m - 1):
            if rank[_U(k)] < bv:
                bv = rank[_U(k)]
                best = k
        if bv == EMPTY:
            break
        ids[_U(best)] = np.int32(bv & _M32)
        # the two pairs to look up next are known now: start loading their table slots
        # while the arrays shift (the lookups sit on the merge loop's dependency chain)
        if best > 0:
            _prefetch_pair(mtab, pc, (np.uint64(ids[_U(best - 1)]) << np.uint64(32)) | np.uint64(ids[_U(best)]))
        if best + 2 < m:
            _prefetch_pair(mtab, pc, (np.uint64(ids[_U(best)]) << np.uint64(32)) | np.uint64(ids[_U(best + 2)]))
        for k in range(best + 1, m - 1):
            ids[_U(k)] = ids[_U(k + 1)]
            rank[_U(k)] = rank[_U(k + 1)]
        m -= 1
        if best > 0:
            rank[_U(best - 1)] = lookup_cached(mtab, pc, (np.uint64(ids[_U(best - 1)]) << np.uint64(32)) | np.uint64(ids[_U(best)]))
        if best < m - 1:
            rank[_U(best)] = lookup_cached(mtab, pc, (np.uint64(ids[_U(best)]) << np.uint64(32)) | np.uint64(ids[_U(best + 1)]))
    return m


@njit_cached
def byte_pair_grid(init_ids, mtab):
    """``grid: uint64[65536]``: ``grid[(x << 8) | y]`` is the merge table's value for the pair
    of the byte tokens of bytes ``x`` and ``y`` (``EMPTY`` when they do not merge). The first
    round of a byte-level BPE, every pair of which is such a pair, then reads one 512 KiB
    array instead of probing the hash table."""
    grid = np.empty(65536, np.uint64)
    for x in range(256):
        for y in range(256):
            grid[(x << 8) | y] = lookup2(mtab, (np.uint64(init_ids[x]) << np.uint64(32)) | np.uint64(init_ids[y]))
    return grid


@njit_noalloc
def _merge_short(data, s, n, init_ids, grid, mtab, pc, ids, rank, out, o):
    """Byte-level BPE of a short piece (n <= _SHORT bytes) with ``_merge_ranked``, the first
    round of ranks from ``grid``."""
    for k in range(n):
        ids[_U(k)] = init_ids[_U(data[_U(s + k)])]
    for k in range(n - 1):
        rank[_U(k)] = grid[_U((np.int64(data[_U(s + k)]) << 8) | np.int64(data[_U(s + k + 1)]))]
    m = _merge_ranked(ids, n, mtab, pc, rank)
    for k in range(m):
        out[_U(o + k)] = ids[_U(k)]
    return m


_SHORT = 64
_SHORT_KEY = 15  # longest piece the short cache holds
_ID_BITS = 21  # ids are kept three to a word in the word caches (vocabularies below 2^21)
_ID_MASK = np.uint64((1 << _ID_BITS) - 1)
_SHORT_IDS = 6  # ids a short-cache entry holds (two words)
_WIDE_IDS = 14  # ids a wide-cache entry holds (six words; the count field stops at 15)
_WAYS = 4  # entries per set in the short and wide caches
_IN_LONG = 15  # a wide entry's id count meaning "the ids are in the long cache"
# _RUN_IDS: a short-cache entry with a count above _SHORT_IDS (7..15) holds a run: its
# first id, then its second id count - 1 times (GPT-2's vocabulary has no token for two
# spaces: an indentation of 8 is "\n" or " " then 7 x " ", 80k of the 2.2M pieces of the
# code bench file; they were wide-cache hits, each a probe that waited on memory). Only
# the byte-level engine writes such entries (not the SentencePiece one's _entry_ids).
_KEY1 = np.uint64(0x0FFFFFFFFFFFFFFF)  # w1's key bits (bytes 8..14 and n; n_ids above)
_LONG_MAX = 1024  # pieces of 16.._LONG_MAX bytes use the long cache
_LONG_IDS = 1024  # and their ids (and short pieces with more than _WIDE_IDS ids) when at most this many
# pieces cut (each keyed, its word-cache set prefetched) before the batch is encoded: the
# lead the prefetches get. Paired in-process against 128 (warm, 8 MB): 32 was 0.80-0.82x;
# 256: one thread 0.99-1.04, two threads 0.98-1.06 (median ~1.03 over 10 rows), streaming
# fresh engines +7.5% (gpt2, one thread) and +9.6% (llama3, two); 512 no better than 256.
# On the Zen 5 host (2026-12-08) a tenth of a warm run went to the calls of each batch
# (_span_run copying _cut_batch's ~120 argument words onto the stack) and 1024 ran 5-12%
# faster warm; but on text not seen, where most pieces miss, 1024 lost 2-8% (the prefetched
# sets leave the first level while the misses' BPE runs). So _span_run cuts _BATCH pieces,
# or _BATCH_MISSES after a batch that ran the BPE of _PREPASS_MIN short pieces (the
# pre-pass's cue: the misses' regime keeps the shorter lead). The piece path
# (encode_piece_range) takes _BATCH always: the rule showed no gain there. RESULTS 2026-12-08.
_BATCH = 1024
_BATCH_MISSES = 256
# Each worker's wide cache ends with _MARK_ROWS rows of bits (2^20): the bit of a piece's
# hash is set when the byte-level miss path puts it in the wide cache, so a piece whose
# bit is clear is known not to be there without probing its set (a probe that waited on
# memory for most pieces of 7..15 bytes not seen before). Bits are never cleared: a stale
# one only costs the probe.
_MARK_ROWS = 2048
# _miss_prepass: a batch whose previous batch ran the BPE of at least _PREPASS_MIN short
# pieces (not found in the word caches) first runs the BPE of its own such pieces of at
# most _SHORT_KEY bytes in groups of up to _GROUP, in lockstep (_merge_group)
_PREPASS_MIN = 4
_GROUP = 16


@njit_noalloc(inline="always")
def _key_piece(data, q, a, b, sc, cache, lidx, w):
    """Cache slot and key words of piece ``q`` (``[a, b)``) into the batch arrays, and
    its cache line prefetched (``_hash_batch`` for one piece); a long piece's
    ``bytes_hash`` in the first key word, its long-cache set prefetched."""
    n = b - a
    slot = -1
    if n <= _SHORT_KEY:
        w0, w1, h = short_key(data, a, n)
        slot = _short_slot(cache, h)  # a set: two cache lines
        _prefetch3(cache, w, slot, 0)  # the set's other line comes with it (128-byte aligned pair)
        sc[2][_U(q)] = w0
        sc[3][_U(q)] = w1
    elif n <= _LONG_MAX:
        lh = bytes_hash(data, a, b)
        _prefetch3(lidx, w, _long_set(lidx, lh), 0)
        sc[2][_U(q)] = lh
    sc[1][_U(q)] = slot


@njit_noalloc
def _cut_batch(data, i, stop, end, fam, end_whole, tab, fold, sc, cache, lidx, w, lim):
    """Cut up to ``lim`` (at most ``_BATCH``) pieces from ``i`` (before ``stop``): their starts in ``ps[:nb]``,
    the end of the last in ``ps[nb]`` (``ps = sc[0]``), each piece keyed and its cache line
    prefetched as soon as it is cut (``_key_piece``); returns ``nb``."""
    code = len(fam)  # the family's code, a constant here (pretok_cpu.family_marker)
    ps = sc[0]
    nb = 0
    n = data.shape[0]
    while i < stop and nb < lim:
        if i + 64 <= n:  # the pieces a 64-byte window settles, from its mask of piece starts
            if code == _F_GPT2:  # the family's scanner only (pretok_cpu, the note above _gpt2_window)
                m = _gpt2_window(data, i, end, stop)
            elif code == _F_O200K:
                m = _o200k_window(data, i, end, stop)
            else:
                m = _cl100k_window(data, i, end, stop, 1 if code == _F_QWEN else 3)
            m >>= np.uint64(1)
            if m != 0:
                base = i + 1
                while m != 0 and nb < lim:
                    ps[_U(nb)] = i
                    j = base + np.int64(_ctz64(m))
                    _key_piece(data, nb, i, j, sc, cache, lidx, w)
                    i = j
                    nb += 1
                    m &= m - np.uint64(1)
                continue
        ps[_U(nb)] = i
        if code == _F_GPT2:
            j = _piece_gpt2_inline(data, i, end, tab, fold)
        elif code == _F_O200K:
            j = _piece_o200k_inline(data, i, end, tab, fold)
        else:
            j = _piece_cl100k_inline(data, i, end, tab, fold, 1 if code == _F_QWEN else 3, end_whole)
        _key_piece(data, nb, i, j, sc, cache, lidx, w)
        i = j
        nb += 1
    ps[_U(nb)] = i
    return nb


@njit_cached
def _heap_scratch(m):
    """Arrays for ``merge_piece`` on up to ``m`` symbols: (sym, sym_len, ids, lens, prv, nxt,
    hkey, hnew, hpair, out_ids, out_lens)."""
    return (np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.int32), np.empty(m, np.int32),
            np.empty(m, np.int64), np.empty(m, np.int64), np.empty(2 * m + 2, np.uint64),
            np.empty(2 * m + 2, np.int32), np.empty(2 * m + 2, np.uint64), np.empty(m, np.int32),
            np.empty(m, np.int32))


@njit_noalloc
def _merge_heap(hs, n, mtab, pc, out, o):
    """``merge_piece`` on the ``n`` symbols in ``hs[0]``/``hs[1]``; the ids to ``out[o:]``."""
    c = merge_piece(hs[0], hs[1], 0, n, mtab, pc, hs[2], hs[3], hs[4], hs[5], hs[6], hs[7], hs[8], hs[9], hs[10], 0)
    for k in range(c):
        out[_U(o + k)] = hs[9][_U(k)]
    return c


@njit_cached
def _bpe_long(data, a, b, init_ids, mtab, pc, out, o):
    """Byte-level BPE of a long piece with the heap (``merge_piece``, n log n)."""
    n = b - a
    hs = _heap_scratch(n)
    for k in range(n):
        hs[0][_U(k)] = init_ids[_U(data[_U(a + k)])]
        hs[1][_U(k)] = 1
    return _merge_heap(hs, n, mtab, pc, out, o)


@njit_cached
def _scratch():
    """Per-batch arrays: piece bounds, cache slots, key words; short-BPE ids and ranks; the
    group BPE's ids, ranks and state (``_miss_prepass``: per piece its length, pending
    merge and batch index; then how many short pieces' BPE the batch ran, the next
    batch's cue for ``_prepass_if_new``)."""
    return (np.empty(_BATCH + 1, np.int64), np.empty(_BATCH, np.int64), np.empty(_BATCH, np.uint64),
            np.empty(_BATCH, np.uint64), np.empty(_SHORT, np.int32), np.empty(_SHORT + 1, np.uint64),
            np.empty(_GROUP * _SHORT_KEY, np.int32), np.empty(_GROUP * (_SHORT_KEY + 1), np.uint64),
            np.zeros(3 * _GROUP + 1, np.int64), np.empty(_BATCH, np.int64))


@njit_noalloc
def _hash_batch(data, nb, sc, cache, lidx, w):
    """Cache slots and key words of the ``nb`` pieces ``[ps[q], ps[q+1])``
    (``ps = sc[0]``); their cache lines are prefetched, so the probes that follow are
    independent loads the processor overlaps."""
    ps = sc[0]
    for q in range(nb):
        _key_piece(data, q, ps[_U(q)], ps[_U(q + 1)], sc, cache, lidx, w)


@njit_noalloc
def _encode_run(data, q, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first, cache, wide, lidx, lbytes,
                lids, pc, w, out, o, cnt, c0):
    """Encode pieces ``q, q+1, ...`` of the batch into ``out[o:]`` until the end or a long
    piece that needs the heap (``_bpe_long`` allocates, so the caller runs it); returns
    ``(o, q)``: ``q == nb`` when done, else piece ``q`` needs the heap (``_heap_piece``),
    after which the caller goes on from ``q + 1``. The batch's pieces are keyed already
    (``_cut_batch`` or ``_hash_batch``). With a non-empty ``cnt``, ``cnt[c0 + q]`` = ids of
    piece ``q``. Compiled without reference counting, so the per-batch calls cost nothing."""
    ps, pslot, pw0, pw1, sids, srank = sc[0], sc[1], sc[2], sc[3], sc[4], sc[5]
    record = cnt.shape[0] > 0
    bpe = 0
    while q < nb:
        a = ps[_U(q)]
        b = ps[_U(q + 1)]
        o2 = _encode_hit(b - a, pslot[_U(q)], pw0[_U(q)], pw1[_U(q)], cache, w, out, o)
        if o2 < 0:  # a hit in the long or the wide cache here, not through _encode_miss, whose
            # arguments (arrays passed field by field) cost more than the probe
            if pslot[_U(q)] < 0:
                if b - a <= _LONG_MAX:
                    lh = pw0[_U(q)]
                    c = _long_find(data, a, b - a, lh, _long_set(lidx, lh), lidx, lbytes, lids, w, out, o)
                    if c >= 0:
                        o2 = o + c
            elif b - a > _SHORT_IDS:  # as in _encode_miss (a piece marked in the long cache goes there)
                o2 = _wide_hit(wide, w, pw0[_U(q)], pw1[_U(q)], out, o)
        if o2 < 0:
            o2 = _encode_miss(data, a, b, b - a, pslot[_U(q)], pw0[_U(q)], pw1[_U(q)], init_ids, grid, mtab, arena, tok_off,
                              bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, w, sids, srank, out, o)
            if o2 < 0:
                if o2 == -1:
                    sc[8][_U(3 * _GROUP)] += bpe
                    return o, q
                o2 = -2 - o2  # a short piece's BPE ran
                bpe += 1
        if record:
            cnt[_U(c0 + q)] = o2 - o
        o = o2
        q += 1
    sc[8][_U(3 * _GROUP)] += bpe  # _prepass_if_new's cue for the next batch
    return o, q


@njit_noalloc
def _merge_group(G, gids, grank, gi, mtab, pc):
    """``_merge_ranked`` on ``G`` pieces at once: piece ``g``'s ids in
    ``gids[g * _SHORT_KEY:]``, ranks in ``grank[g * (_SHORT_KEY + 1):]``, its length in
    ``gi[g]`` (its token count when done), ``gi[_GROUP + g] = -1``. Each round makes one
    merge in every piece not done and prefetches its two new pairs' table slots; they are
    looked up the next round, after the other pieces' merges, so up to ``2 G`` lookups
    wait on memory together (one piece's merges are a chain: each waits on the last).
    Each piece sees the same steps as in ``_merge_ranked``: the same tokens."""
    live = G
    while live > 0:
        live = 0
        for g in range(G):
            p = gi[_U(_GROUP + g)]
            if p == -2:
                continue
            m = gi[_U(g)]
            b0 = g * _SHORT_KEY
            r0 = g * (_SHORT_KEY + 1)
            if p >= 0:  # the last round's merge at p: the ranks of its two new pairs
                if p > 0:
                    grank[_U(r0 + p - 1)] = lookup_cached(
                        mtab, pc, (np.uint64(gids[_U(b0 + p - 1)]) << np.uint64(32)) | np.uint64(gids[_U(b0 + p)]))
                if p < m - 1:
                    grank[_U(r0 + p)] = lookup_cached(
                        mtab, pc, (np.uint64(gids[_U(b0 + p)]) << np.uint64(32)) | np.uint64(gids[_U(b0 + p + 1)]))
            if m < 2:
                gi[_U(_GROUP + g)] = -2
                continue
            best = 0
            bv = grank[_U(r0)]
            for k in range(1, m - 1):
                if grank[_U(r0 + k)] < bv:
                    bv = grank[_U(r0 + k)]
                    best = k
            if bv == EMPTY:
                gi[_U(_GROUP + g)] = -2
                continue
            gids[_U(b0 + best)] = np.int32(bv & _M32)
            if best > 0:
                _prefetch_pair(mtab, pc, (np.uint64(gids[_U(b0 + best - 1)]) << np.uint64(32)) | np.uint64(gids[_U(b0 + best)]))
            if best + 2 < m:
                _prefetch_pair(mtab, pc, (np.uint64(gids[_U(b0 + best)]) << np.uint64(32)) | np.uint64(gids[_U(b0 + best + 2)]))
            for k in range(best + 1, m - 1):
                gids[_U(b0 + k)] = gids[_U(b0 + k + 1)]
                grank[_U(r0 + k)] = grank[_U(r0 + k + 1)]
            gi[_U(g)] = m - 1
            gi[_U(_GROUP + g)] = best
            live += 1


@njit_noalloc(inline="always")
def _put_group_piece(data, q, c, gids, b0, sc, cache, wide, lidx, lbytes, lids, w):
    """Put batch piece ``q`` (at most ``_SHORT_KEY`` bytes) and its ``c`` ids
    ``gids[b0:b0 + c]`` in the worker's word caches, as ``_encode_miss`` would (unless
    they hold it already: an earlier copy in the group)."""
    ps, pslot, pw0, pw1 = sc[0], sc[1], sc[2], sc[3]
    slot = pslot[_U(q)]
    w0 = pw0[_U(q)]
    w1 = pw1[_U(q)]
    if _find_to_front(cache, w, slot, w0, w1):
        return
    if c <= _SHORT_IDS:
        _set_put(cache, w, slot, w0, w1, c, gids, b0, c)
    elif _is_run(gids, b0, c):
        _set_put(cache, w, slot, w0, w1, c, gids, b0, 3)
    else:
        ph = key_hash(w0, w1)
        wslot = _wide_slot(wide, ph)
        if _wide_marked(wide, w, ph) and _find_to_front(wide, w, wslot, w0, w1):
            return
        if c <= _WIDE_IDS:
            _set_put(wide, w, wslot, w0, w1, c, gids, b0, c)
        else:
            _set_put(wide, w, wslot, w0, w1, _IN_LONG, gids, b0, 0)
            a = ps[_U(q)]
            _long_insert(data, a, ps[_U(q + 1)] - a, c, ph, _long_set(lidx, ph), lidx, lbytes, lids, w, gids, b0)
        _wide_mark(wide, w, ph)


@njit_noalloc
def _flush_group(data, G, sc, mtab, cache, wide, lidx, lbytes, lids, pc, w):
    """BPE of the ``G`` pieces gathered by ``_miss_prepass`` (``_merge_group``), each put
    in the word caches as ``_encode_miss`` would put it (unless an earlier copy in the
    group put it there already), and in the shared table when it is on."""
    pw0, pw1, gids, grank, gi = sc[2], sc[3], sc[6], sc[7], sc[8]
    _merge_group(G, gids, grank, gi, mtab, pc)
    shared = _shared_putting(wide, w)
    for g in range(G):
        q = gi[_U(2 * _GROUP + g)]
        b0 = g * _SHORT_KEY
        if shared:
            _shared_put(wide, w, pw0[_U(q)], pw1[_U(q)], key_hash(pw0[_U(q)], pw1[_U(q)]), gi[_U(g)], gids, b0)
        _put_group_piece(data, q, gi[_U(g)], gids, b0, sc, cache, wide, lidx, lbytes, lids, w)


@njit_noalloc
def _miss_prepass(data, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first, cache, wide, lidx,
                  lbytes, lids, pc, w):
    """Before ``_encode_run`` of a batch with pieces not seen before: the BPE of its pieces
    of at most ``_SHORT_KEY`` bytes that miss the short cache, are not marked in the wide
    cache and are not in the whole-first table, in groups (``_flush_group``), the results
    put in the caches, so that ``_encode_run`` finds them there. One piece's BPE waits on a
    table lookup for each merge; a group's overlap. Returns how many it ran the BPE of."""
    ps, pslot, pw0, pw1, gids, grank, gi, cand = sc[0], sc[1], sc[2], sc[3], sc[6], sc[7], sc[8], sc[9]
    G = _I0
    done = 0
    nc = 0
    for q in range(nb):  # the pieces to encode here, their shared-table entries prefetched
        slot = pslot[_U(q)]
        if slot < 0:
            continue
        if _find_to_front(cache, w, slot, pw0[_U(q)], pw1[_U(q)]):
            continue
        a = ps[_U(q)]
        n = ps[_U(q + 1)] - a
        if n > _SHORT_IDS and _wide_marked(wide, w, key_hash(pw0[_U(q)], pw1[_U(q)])):
            continue  # perhaps in the wide cache: _encode_miss
        if whole_first and bytes_lookup(data, a, a + n, arena, tok_off, bkeys, bvals) >= 0:
            continue
        look = _shared_looking(wide, w)
        if look:
            r, x = _shared_at(wide, _shared_first(wide, key_hash(pw0[_U(q)], pw1[_U(q)])))
            _prefetch3(wide, r, x, 0)
        cand[_U(nc)] = q | (np.int64(look) << 32)
        nc += 1
    for j in range(nc):
        q = cand[_U(j)] & 0xFFFFFFFF
        a = ps[_U(q)]
        n = ps[_U(q + 1)] - a
        b0 = G * _SHORT_KEY
        if cand[_U(j)] >> 32:  # another worker's BPE of it, through group slot G's ids
            c = _shared_get(wide, w, pw0[_U(q)], pw1[_U(q)], key_hash(pw0[_U(q)], pw1[_U(q)]), gids, b0)
            if c >= 0:
                _put_group_piece(data, q, c, gids, b0, sc, cache, wide, lidx, lbytes, lids, w)
                done += 1
                continue
        r0 = G * (_SHORT_KEY + 1)
        for k in range(n):
            gids[_U(b0 + k)] = init_ids[_U(data[_U(a + k)])]
        for k in range(n - 1):
            grank[_U(r0 + k)] = grid[_U((np.int64(data[_U(a + k)]) << 8) | np.int64(data[_U(a + k + 1)]))]
        gi[_U(G)] = n
        gi[_U(_GROUP + G)] = -1
        gi[_U(2 * _GROUP + G)] = q
        G += 1
        if G == _GROUP:
            _flush_group(data, G, sc, mtab, cache, wide, lidx, lbytes, lids, pc, w)
            done += G
            G = _I0
    if G > 0:
        _flush_group(data, G, sc, mtab, cache, wide, lidx, lbytes, lids, pc, w)
    return done + G


@njit_noalloc
def _prepass_if_new(data, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first, cache, wide, lidx,
                    lbytes, lids, pc, w):
    """For a batch just keyed: ``_miss_prepass`` when the batch before ran the BPE of at
    least ``_PREPASS_MIN`` short pieces (``sc[8][3 * _GROUP]``, counted by ``_encode_run``);
    the count starts again with the pre-pass's own."""
    gi = sc[8]
    prev = gi[_U(3 * _GROUP)]
    gi[_U(3 * _GROUP)] = 0
    if prev >= _PREPASS_MIN:
        gi[_U(3 * _GROUP)] = _miss_prepass(data, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first,
                                           cache, wide, lidx, lbytes, lids, pc, w)


@njit_cached
def _heap_piece(data, sc, q, init_ids, mtab, pc, lidx, lbytes, lids, w, out, o, cnt, c0):
    """Piece ``q`` of the batch with the heap (``_bpe_long``), the result put in the long
    cache (up to ``_LONG_MAX`` bytes: its ``bytes_hash`` is in ``sc[2][q]``, from
    ``_key_piece``); returns the new ``o``."""
    a = sc[0][_U(q)]
    b = sc[0][_U(q + 1)]
    c = _bpe_long(data, a, b, init_ids, mtab, pc, out, o)
    if b - a <= _LONG_MAX and c <= _LONG_IDS:
        lh = sc[2][_U(q)]
        _long_insert(data, a, b - a, c, lh, _long_set(lidx, lh), lidx, lbytes, lids, w, out, o)
    if cnt.shape[0] > 0:
        cnt[_U(c0 + q)] = c
    return o + c


@njit_noalloc(inline="always")
def _short_slot(cache, h):
    """The first entry of a piece's set in the short cache (hash bits 0 and up)."""
    return np.int64(h & np.uint64(cache.shape[1] - 1)) & ~np.int64(_WAYS - 1)


@njit_noalloc(inline="always")
def _wide_slot(wide, h):
    """The first entry of a short piece's set in the wide cache (hash bits 32 and up; its
    slots are a power of two, the ``_MARK_ROWS`` after them its mark bits)."""
    return np.int64((h >> np.uint64(32)) & np.uint64(wide.shape[1] - _MARK_ROWS - 1)) & ~np.int64(_WAYS - 1)


@njit_noalloc(inline="always")
def _mark_at(wide, h):
    """``(row, word, bit)`` of a piece's mark bit (hash bits 20..39) in the wide cache."""
    b = np.int64((h >> np.uint64(20)) & np.uint64(_MARK_ROWS * 512 - 1))
    return wide.shape[1] - _MARK_ROWS + (b >> 9), (b >> 6) & 7, np.uint64(1) << np.uint64(b & 63)


@njit_noalloc(inline="always")
def _wide_marked(wide, w, h):
    r, k, bit = _mark_at(wide, h)
    return (wide[_U(w), _U(r), _U(k)] & bit) != np.uint64(0)


@njit_noalloc(inline="always")
def _wide_mark(wide, w, h):
    r, k, bit = _mark_at(wide, h)
    wide[_U(w), _U(r), _U(k)] |= bit


# The shared word table: the last _SHARED_ROWS rows of the wide cache (``fast_cpu.word_caches``
# makes them after the workers' rows), written and read by every worker of a parallel call.
# The word caches are per worker (their sets are reordered on every hit), so a piece new to
# the text was encoded once by every worker that met it: 8 MB of code after 8 MB of warm-up,
# cl100k, 1.28x the BPE runs of one cache on two workers, 2.6x on sixteen (counted on the
# bench file, units handed out in turn). Short pieces (2.._SHORT_KEY bytes, so at most 15
# ids) a worker's caches miss are looked up here before their BPE, and put here after it.
# An entry (one 64-byte line): the key words, the ids three to a word (words 2..6), the
# state (word 7): 0 free, 1 being written, 2 ready. A writer claims a free entry with a
# compare-and-swap of its state, writes it, and publishes it with a release store; a reader
# loads the state with acquire and reads only ready entries, which are never written again
# (until ``fast_cpu.shared_prepare`` clears the table between calls), so no reader sees a
# torn entry. Linear probing over at most _SHARED_PROBES entries; a piece whose run is full
# is not put here (it stays in its worker's caches).
# A worker uses the table while at least a third of its lookups find their piece (counted
# over its last _SHARED_WINDOW or so): a lookup that misses and the put after it cost about
# what a hit saves at a third (8 MB of multilingual text, gpt2, sixteen workers, the table
# always used: 28% of the lookups hit, and the calls were slower); while below, it still looks up one
# candidate in _SHARED_SAMPLE (and puts none), so that it sees the rate rise again.
# The first shared row's mark rows (64 bytes each): word 0 of the first turns the table on for
# a call; row 1 + w is worker ``w``'s (a line of its own: one counter for all was a line every
# writer waited for): word 0 the entries it wrote, 1 its lookups, 2 their hits, 3 the
# candidates it passed while off (words 1..3 counted per call).
_SHARED_ROWS = 4  # 2^20 entries: 64 MiB
_SHARED_PROBES = 8
_SHARED_BUSY = np.uint64(1)
_SHARED_READY = np.uint64(2)
_SHARED_WINDOW = 4096
_SHARED_SAMPLE = 16


@njit_noalloc(inline="always")
def _shared_base(wide):
    """The first shared row (= the number of workers' rows)."""
    return wide.shape[0] - _SHARED_ROWS


@njit_noalloc(inline="always")
def _shared_on(wide):
    return wide[_U(_shared_base(wide)), _U(wide.shape[1] - _MARK_ROWS), 0] != np.uint64(0)


@njit_noalloc(inline="always")
def _shared_putting(wide, w):
    """Whether worker ``w`` puts the pieces it encodes in the shared table: it is on, and
    a third of the worker's recent lookups hit (or it has made few yet)."""
    if not _shared_on(wide):
        return False
    b = _U(_shared_base(wide))
    m = _U(wide.shape[1] - _MARK_ROWS + 1 + w)
    gets = wide[b, m, 1]
    return gets < np.uint64(256) or np.uint64(3) * wide[b, m, 2] >= gets


@njit_noalloc(inline="always")
def _shared_looking(wide, w):
    """Whether worker ``w`` looks its next candidate up in the shared table:
    ``_shared_putting``, else one candidate in ``_SHARED_SAMPLE`` while the table is on."""
    if _shared_putting(wide, w):
        return True
    if not _shared_on(wide):
        return False
    b = _U(_shared_base(wide))
    m = _U(wide.shape[1] - _MARK_ROWS + 1 + w)
    wide[b, m, 3] += np.uint64(1)
    return wide[b, m, 3] % np.uint64(_SHARED_SAMPLE) == np.uint64(0)


@njit_noalloc(inline="always")
def _shared_first(wide, h):
    """A piece's first entry in the shared table (hash bits 11 and up), as one index over
    its rows."""
    return np.int64((h >> np.uint64(11)) & np.uint64(_SHARED_ROWS * (wide.shape[1] - _MARK_ROWS) - 1))


@njit_noalloc(inline="always")
def _shared_at(wide, e):
    """``(row, entry)`` of shared entry ``e``."""
    per = wide.shape[1] - _MARK_ROWS
    return _shared_base(wide) + e // per, e % per


@njit_noalloc(inline="always")
def _shared_probe(wide, h, j):
    """``(row, entry, state)`` of probe ``j`` of a piece's run (its state loaded with acquire)."""
    r, x = _shared_at(wide, (_shared_first(wide, h) + j) & (_SHARED_ROWS * (wide.shape[1] - _MARK_ROWS) - 1))
    return r, x, _load_acquire3(wide, r, x, 7)


@njit_noalloc
def _shared_get(wide, w, pw0, pw1, h, out, o):
    """The ids of a short piece (key ``pw0, pw1``, hash ``h``) from the shared table to
    ``out[o:]``; returns how many, or -1 when no ready entry holds it. Counted in worker
    ``w``'s lookups and hits (halved every ``_SHARED_WINDOW`` lookups)."""
    b = _U(_shared_base(wide))
    m = _U(wide.shape[1] - _MARK_ROWS + 1 + w)
    if wide[b, m, 1] >= np.uint64(_SHARED_WINDOW):
        wide[b, m, 1] >>= np.uint64(1)
        wide[b, m, 2] >>= np.uint64(1)
    wide[b, m, 1] += np.uint64(1)
    for j in range(_SHARED_PROBES):
        r, x, st = _shared_probe(wide, h, j)
        if st == np.uint64(0):
            return -1
        if st == _SHARED_READY and _is_key(wide, r, x, pw0, pw1):
            wide[b, m, 2] += np.uint64(1)
            return _entry_ids(wide, r, x, out, o)
    return -1


@njit_noalloc
def _shared_put(wide, w, pw0, pw1, h, c, ids, o):
    """Put a short piece and its ``c`` ids ``ids[o:o + c]`` in the shared table (the first
    free entry of its run; nothing when the run is full or holds it already); ``w``: the
    worker (its count of entries written)."""
    for j in range(_SHARED_PROBES):
        r, x, st = _shared_probe(wide, h, j)
        if st == np.uint64(0):
            st = _cas3(wide, r, x, 7, np.uint64(0), _SHARED_BUSY)
            if st == np.uint64(0):  # claimed: written, then published
                wide[_U(r), _U(x), 0] = pw0
                wide[_U(r), _U(x), 1] = pw1 | (np.uint64(c) << np.uint64(60))
                for k in range(2, 7):
                    wide[_U(r), _U(x), _U(k)] = np.uint64(0)
                for k in range(c):
                    wide[_U(r), _U(x), _U(2 + k // 3)] |= np.uint64(ids[_U(o + k)]) << np.uint64(_ID_BITS * (k % 3))
                _store_release3(wide, r, x, 7, _SHARED_READY)
                wide[_U(_shared_base(wide)), _U(wide.shape[1] - _MARK_ROWS + 1 + w), 0] += np.uint64(1)
                return
        if st == _SHARED_READY and _is_key(wide, r, x, pw0, pw1):
            return


@njit_noalloc(inline="always")
def _is_key(tab, w, e, pw0, pw1):
    return tab[_U(w), _U(e), 0] == pw0 and (tab[_U(w), _U(e), 1] & _KEY1) == pw1


@njit_noalloc(inline="always")
def _find_to_front(tab, w, slot, pw0, pw1):
    """Whether the set at ``slot`` (short or wide cache) holds the key ``pw0, pw1``; if so it
    is now the set's first entry (``slot``): a found key in another way is swapped with the
    first. Most lookups then find their key first, and the branch on it is predicted (with
    keys left where they were inserted, the way of a hit was a guess: measured 53 -> 44 ms
    per 8 MB of English prose)."""
    if _is_key(tab, w, slot, pw0, pw1):
        return True
    for way in range(1, _WAYS):
        e = slot + way
        if _is_key(tab, w, e, pw0, pw1):
            for k in range(tab.shape[2]):
                t = tab[_U(w), _U(slot), _U(k)]
                tab[_U(w), _U(slot), _U(k)] = tab[_U(w), _U(e), _U(k)]
                tab[_U(w), _U(e), _U(k)] = t
            return True
    return False


@njit_noalloc(inline="always")
def _entry_count(tab, w, e):
    return np.int64(tab[_U(w), _U(e), 1] >> np.uint64(60))


@njit_noalloc(inline="always")
def _entry_ids(tab, w, e, out, o):
    """Copy entry ``e``'s ids to ``out[o:]``; returns how many."""
    c = _entry_count(tab, w, e)
    for k in range(c):
        out[_U(o + k)] = np.int32((tab[_U(w), _U(e), _U(2 + k // 3)] >> np.uint64(_ID_BITS * (k % 3))) & _ID_MASK)
    return c


@njit_noalloc(inline="always")
def _set_put(tab, w, slot, pw0, pw1, c, out, o, n_ids):
    """Put a key first in its set (the others one way down, the oldest out) with the count
    ``c`` and the ``n_ids`` ids ``out[o:o + n_ids]`` (none for a mark)."""
    width = tab.shape[2]
    for way in range(_WAYS - 1, 0, -1):
        for k in range(width):
            tab[_U(w), _U(slot + way), _U(k)] = tab[_U(w), _U(slot + way - 1), _U(k)]
    tab[_U(w), _U(slot), 0] = pw0
    tab[_U(w), _U(slot), 1] = pw1 | (np.uint64(c) << np.uint64(60))
    for k in range(2, width):
        tab[_U(w), _U(slot), _U(k)] = np.uint64(0)
    for k in range(n_ids):
        tab[_U(w), _U(slot), _U(2 + k // 3)] |= np.uint64(out[_U(o + k)]) << np.uint64(_ID_BITS * (k % 3))


# The short cache seeded with the vocabulary (``short_seed``, ``seed_short_cache``): a piece
# new to a worker that is the bytes of a token (13-29% of the new pieces of 4 MB of code or
# prose after 4 MB of the same file: decision 0019, addendum of 2026-12-05) is a hit from
# the start instead of a BPE run. Each token's entry is the miss path's own result for a piece
# of its bytes (the whole_first lookup, else ``_merge_short``), so a seeded entry is what
# the worker would have put there; entries are placed in empty ways of a fresh cache and
# age out like any other.
@njit_cached(parallel=True)
def short_seed(arena, tok_off, init_ids, grid, mtab, bkeys, bvals, whole_first, char_id, byte_id, karena, ktok_off,
               nblocks):
    """``(hs, words)``: for each token of 1.._SHORT_KEY bytes whose piece has at most
    ``_SHORT_IDS`` ids, its short key's hash and its short-cache entry (``words[t]``, four
    words as ``_set_put`` writes them); ``words[t, 1] == 0`` for the others. Blocks of
    tokens in parallel, each with its own pair cache. With a non-empty ``char_id``, for the
    SentencePiece engine, whose short cache is keyed on words (``_sp_piece``): each
    token of 2.._SHORT_KEY bytes (its normalized text, "▁" and all) with the ids
    ``_sp_word`` gives a word of those bytes (what ``_sp_word_miss`` puts there; its cut
    into parts gives the same ids); ``init_ids``, ``grid``, ``bkeys``, ``bvals`` unused.
    With a non-empty ``ktok_off``, each token's key is made from its spelling in
    ``karena``/``ktok_off`` (2.._SHORT_KEY bytes) instead: the SentencePiece words of raw
    text (``_sp_piece`` on a raw gap) spell "▁" as a space."""
    T = tok_off.shape[0] - 1
    sp = char_id.shape[0] > 0
    spelt = ktok_off.shape[0] > 0
    hs = np.zeros(T, np.uint64)
    words = np.zeros((T, 4), np.uint64)
    for blk in prange(nblocks):
        lo = np.int64(blk) * T // nblocks
        hi = (np.int64(blk) + 1) * T // nblocks
        pc = np.full(2 << PAIR_CACHE_BITS, EMPTY, np.uint64)
        heap = _heap_scratch(_SHORT)
        rank = np.empty(_SHORT + 1, np.uint64)
        out = np.empty(_SHORT, np.int32)
        for t in range(lo, hi):
            a = tok_off[t]
            n = tok_off[t + 1] - a
            if spelt:
                ka = ktok_off[t]
                kn = ktok_off[t + 1] - ka
                if kn < 2 or kn > _SHORT_KEY or n > _SHORT:
                    continue
            elif n < 1 + sp or n > _SHORT_KEY:
                continue
            c = -1
            if sp:
                c = _sp_word(arena, a, a + n, char_id, byte_id, mtab, pc, heap, rank, out, 0)
            elif whole_first:
                x = bytes_lookup(arena, a, a + n, arena, tok_off, bkeys, bvals)
                if x >= 0:
                    out[0] = x
                    c = 1
            if c < 0:
                c = _merge_short(arena, a, n, init_ids, grid, mtab, pc, heap[0], rank, out, 0)
            if c <= _SHORT_IDS:
                if spelt:
                    w0, w1, h = short_key(karena, ka, kn)
                else:
                    w0, w1, h = short_key(arena, a, n)
                hs[t] = h
                words[t, 0] = w0
                words[t, 1] = w1 | (np.uint64(c) << np.uint64(60))
                for k in range(c):
                    words[t, 2 + k // 3] |= np.uint64(out[k]) << np.uint64(_ID_BITS * (k % 3))
    return hs, words


@njit_cached(parallel=True)
def seed_short_cache(cache, hs, words):
    """Put ``short_seed``'s entries in every worker's short cache (``cache: uint64[W, C, 4]``,
    fresh: zeroed), each in the first empty way of its set; one whose set is full, or whose
    key is there already (two tokens of the same bytes: the first kept), is left out.
    Returns how many each worker holds (the same for all)."""
    W = cache.shape[0]
    put = np.zeros(W, np.int64)
    for w in prange(W):
        for t in range(hs.shape[0]):
            if words[t, 1] == 0:
                continue
            slot = _short_slot(cache, hs[t])
            w1 = words[t, 1] & _KEY1
            for way in range(_WAYS):
                e = slot + way
                if cache[w, e, 1] == 0:
                    for k in range(4):
                        cache[w, e, k] = words[t, k]
                    put[w] += 1
                    break
                if _is_key(cache, w, e, words[t, 0], w1):
                    break
    return put[0] if W > 0 else 0


@njit_noalloc(inline="always")
def _encode_hit(n, slot, pw0, pw1, cache, w, out, o):
    """The common case, kept small so the loop over a batch stays tight: a hit in the short
    cache (pieces of one byte too: a branch on the length, taken for a fifth to a third of
    the pieces, cost more than their probe, which stays in the first level caches; 8 MB of
    English prose, gpt2, one thread, 42 -> 38 ms). Returns the new ``o``, or -1
    (``_encode_miss``).

    The first word's three ids are written whatever the count: ids never outnumber bytes,
    so ``out[o:o + n]`` is this piece's room; a write past ``o + n - 1`` goes there instead,
    and the writes run from the last id to the first, so each position ends with its own."""
    if slot >= 0 and _find_to_front(cache, w, slot, pw0, pw1):
        c = np.int64(cache[_U(w), _U(slot), 1] >> np.uint64(60))
        last = o + n - 1
        x = cache[_U(w), _U(slot), 2]
        out[_U(min(o + 2, last))] = np.int32(x >> np.uint64(2 * _ID_BITS))
        out[_U(min(o + 1, last))] = np.int32((x >> np.uint64(_ID_BITS)) & _ID_MASK)
        out[_U(o)] = np.int32(x & _ID_MASK)
        if c > 3:  # then n >= 4
            if c > _SHORT_IDS:  # a run: the second id c - 1 times (_RUN_IDS)
                return _write_run(out, o, c, np.int32((x >> np.uint64(_ID_BITS)) & _ID_MASK))
            x = cache[_U(w), _U(slot), 3]
            out[_U(min(o + 5, last))] = np.int32(x >> np.uint64(2 * _ID_BITS))
            out[_U(min(o + 4, last))] = np.int32((x >> np.uint64(_ID_BITS)) & _ID_MASK)
            out[_U(o + 3)] = np.int32(x & _ID_MASK)
        return o + c
    return -1


@njit_noalloc
def _wide_hit(wide, w, pw0, pw1, out, o):
    """A short piece's ids from the wide cache to ``out[o:]`` (``_encode_miss``'s probe,
    its long-cache marks left to it); returns the new ``o``, or -1. Not inlined: inlined in
    ``_encode_run`` it made the loop slower for the pieces that never come here."""
    ph = key_hash(pw0, pw1)
    if _wide_marked(wide, w, ph):
        ws = _wide_slot(wide, ph)
        if _find_to_front(wide, w, ws, pw0, pw1) and _entry_count(wide, w, ws) != _IN_LONG:
            return o + _entry_ids(wide, w, ws, out, o)
    return -1


@njit_noalloc
def _write_run(out, o, c, r):
    """``out[o + 3:o + c] = r`` (a run entry's ids after the first three); returns ``o + c``.
    Not inlined: the hit loop stays as small as without runs."""
    for k in range(3, c):
        out[_U(o + k)] = r
    return o + c


@njit_noalloc(inline="always")
def _is_run(out, o, c):
    """Whether the ``c`` ids ``out[o:o + c]`` (a short piece's: ``c <= 15``) are one id then
    one other id repeated (``_RUN_IDS``)."""
    r = out[_U(o + 1)]
    for k in range(2, c):
        if out[_U(o + k)] != r:
            return False
    return True


@njit_noalloc
def _encode_miss(data, a, b, n, slot, pw0, pw1, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first,
                 cache, wide, lidx, lbytes, lids, pc, w, sids, srank, out, o):
    """A piece that ``_encode_run`` found in none of the word caches (short, wide, long),
    or a short piece the wide cache marks as being in the long cache: the long cache for
    that one, else the vocabulary (``whole_first``), else BPE, and the result cached;
    returns the new ``o``, or -1 for a piece longer than ``_SHORT`` that needs the heap,
    or ``-2 - o`` for the new ``o`` of a piece of at most ``_SHORT_KEY`` bytes whose BPE
    ran (counted for ``_prepass_if_new``)."""
    wslot = -1
    in_long = False
    ph = key_hash(pw0, pw1)  # the short key's hash (not kept from _key_piece: a store and a load per piece)
    if slot >= 0 and n > _SHORT_IDS:  # the wide cache: short pieces with 7.._WIDE_IDS ids (or a
        # mark: in the long cache); a piece of at most _SHORT_IDS bytes has no more ids than
        # that (one byte, one symbol at least), so it is never there: no probe (most misses
        # of English text, where that probe waited on memory each time); nor is a piece
        # whose mark bit is clear. _wide_hit served any other entry found there, so one
        # found now is a mark.
        wslot = _wide_slot(wide, ph)
        in_long = _wide_marked(wide, w, ph) and _find_to_front(wide, w, wslot, pw0, pw1)
    # the long cache: pieces of 16.._LONG_MAX bytes, and short ones with more ids than a wide
    # entry holds (probed only when the wide cache marks them so)
    lslot = -1
    lh = np.uint64(0)
    if n <= _LONG_MAX:
        lh = ph if slot >= 0 else pw0  # a long piece's bytes_hash (_key_piece)
        lslot = _long_set(lidx, lh)
    if lslot >= 0 and in_long:  # a long piece's probe ran in _encode_run
        c = _long_find(data, a, n, lh, lslot, lidx, lbytes, lids, w, out, o)
        if c >= 0:
            return o + c
    c = -1
    found = False
    if whole_first:
        t = bytes_lookup(data, a, b, arena, tok_off, bkeys, bvals)
        if t >= 0:
            out[_U(o)] = t
            c = 1
            found = True
    if c < 0 and slot >= 0 and not in_long and _shared_looking(wide, w):  # another worker's BPE of it
        c = _shared_get(wide, w, pw0, pw1, ph, out, o)  # (a hit counts as a BPE run: the batch had new pieces)
    if c < 0:
        if n > _SHORT:
            return -1  # the heap, by the caller (``_heap_piece``, which caches the result)
        c = _merge_short(data, a, n, init_ids, grid, mtab, pc, sids, srank, out, o)
        if slot >= 0 and _shared_putting(wide, w):
            _shared_put(wide, w, pw0, pw1, ph, c, out, o)
    if slot >= 0 and c <= _SHORT_IDS:
        _set_put(cache, w, slot, pw0, pw1, c, out, o, c)
    elif slot >= 0 and _is_run(out, o, c):
        _set_put(cache, w, slot, pw0, pw1, c, out, o, 3)  # a run: [first, second, second] and c
    elif slot >= 0 and c <= _WIDE_IDS:
        _set_put(wide, w, wslot, pw0, pw1, c, out, o, c)
        _wide_mark(wide, w, ph)
    elif slot >= 0 and not in_long:
        # more ids than a wide entry holds: a mark there, the ids in the long cache
        _set_put(wide, w, wslot, pw0, pw1, _IN_LONG, out, o, 0)
        _wide_mark(wide, w, ph)
        _long_insert(data, a, n, c, lh, lslot, lidx, lbytes, lids, w, out, o)
    elif lslot >= 0 and c <= _LONG_IDS:
        _long_insert(data, a, n, c, lh, lslot, lidx, lbytes, lids, w, out, o)
    if slot >= 0 and not found:
        return -2 - (o + c)
    return o + c


@njit_noalloc(inline="always")
def _long_set(lidx, lh):
    """The first entry of a long piece's four-way set in ``lidx`` (its last row: the counters)."""
    return np.int64(lh & np.uint64(lidx.shape[1] - 2)) & ~np.int64(_WAYS - 1)


@njit_noalloc(inline="always")
def _words_equal(data, a, lbytes, w, bo, n):
    """Whether ``data[a:a + n]`` equals ``lbytes[w, bo:bo + n]``, compared eight bytes at a
    time (the last word masked to the bytes left; the caller keeps eight bytes past both
    ends readable). The byte loop it replaces took about 12% of the SentencePiece engine's
    samples in ``_sp_doc`` on code (llama2, one thread: an indentation and its word are one
    long-cache word; RESULTS 2026-12-06 17:30)."""
    k = 0
    while k + 8 <= n:
        if _load64(data, a + k) != _load64_2(lbytes, w, bo + k):
            return False
        k += 8
    if k < n:
        return ((_load64(data, a + k) ^ _load64_2(lbytes, w, bo + k)) & _KEY_MASKS[_U(n - k)]) == np.uint64(0)
    return True


@njit_noalloc(inline="always")
def _long_find(data, a, n, lh, lslot, lidx, lbytes, lids, w, out, o):
    """The ids of piece ``data[a:a + n]`` (hash ``lh``) from the long cache to ``out[o:]``;
    returns how many, or -1 when it is not there (or the rings overwrote it)."""
    L = lidx.shape[1] - 1
    nb = lbytes.shape[1]
    ni = lids.shape[1]
    btot = np.int64(lidx[_U(w), _U(L), 0])
    itot = np.int64(lidx[_U(w), _U(L), 1])
    for e in range(lslot, lslot + _WAYS):
        if lidx[_U(w), _U(e), 0] == lh and np.int64(lidx[_U(w), _U(e), 3] & _M32) == n:
            bp = np.int64(lidx[_U(w), _U(e), 1])
            ip = np.int64(lidx[_U(w), _U(e), 2])
            if btot > bp + nb or itot > ip + ni:
                continue  # the rings went round past it
            bo = bp & (nb - 1)
            if a + n + 8 <= data.shape[0] and bo + n + 8 <= nb:  # eight bytes at a time
                same = _words_equal(data, a, lbytes, w, bo, n)
            else:
                same = True
                for k in range(n):
                    if lbytes[_U(w), _U(bo + k)] != data[_U(a + k)]:
                        same = False
                        break
            if same:
                c = np.int64(lidx[_U(w), _U(e), 3] >> np.uint64(32))
                io = ip & (ni - 1)
                for k in range(c):
                    out[_U(o + k)] = lids[_U(w), _U(io + k)]
                return c
    return -1


@njit_noalloc(inline="always")
def _long_insert(data, a, n, c, lh, lslot, lidx, lbytes, lids, w, out, o):
    """Put a piece and its ``c`` ids ``out[o:o + c]`` first in its four-way set (the others
    one way down, the oldest out), its bytes and ids at the rings' counters."""
    L = lidx.shape[1] - 1
    nb = lbytes.shape[1]
    ni = lids.shape[1]
    if n > nb or c > ni:
        return
    bp = np.int64(lidx[_U(w), _U(L), 0])
    bo = bp & (nb - 1)
    if bo + n > nb:  # no entry straddles the end: start the ring again
        bp += nb - bo
        bo = 0
    ip = np.int64(lidx[_U(w), _U(L), 1])
    io = ip & (ni - 1)
    if io + c > ni:
        ip += ni - io
        io = 0
    for k in range(n):
        lbytes[_U(w), _U(bo + k)] = data[_U(a + k)]
    for k in range(c):
        lids[_U(w), _U(io + k)] = out[_U(o + k)]
    lidx[_U(w), _U(L), 0] = np.uint64(bp + n)
    lidx[_U(w), _U(L), 1] = np.uint64(ip + c)
    for e in range(lslot + _WAYS - 1, lslot, -1):
        for j in range(4):
            lidx[_U(w), _U(e), _U(j)] = lidx[_U(w), _U(e - 1), _U(j)]
    lidx[_U(w), _U(lslot), 0] = lh
    lidx[_U(w), _U(lslot), 1] = np.uint64(bp)
    lidx[_U(w), _U(lslot), 2] = np.uint64(ip)
    lidx[_U(w), _U(lslot), 3] = np.uint64(n) | (np.uint64(c) << np.uint64(32))


@njit_noalloc
def _span_run(data, i, stop, end, fam, end_whole, tab, fold, init_ids, grid, mtab, arena, tok_off, bkeys, bvals,
              whole_first, cache, wide, lidx, lbytes, lids, pc, w, out, o, sc, nocnt, st):
    """Scan ``[i, stop)`` (a segment ending at ``end``) and encode its pieces into
    ``out[o:]``; returns the new ``o``. Stops at a piece that needs the heap (which
    allocates): ``st[0]`` is then its index in the batch left in ``sc``, ``st[1]`` the
    batch's size; the caller runs ``_heap_piece``, sets ``st[0] += 1`` and calls again
    (``i`` then unused: the scan goes on after the batch). ``st[0] == -1`` when done.
    Compiled without reference counting so that the loops over segments
    (``_segs_in_place``, ``_segs_compact``) can be too: the cost was in the counted
    caller's loop, not in this call (made uncounted alone it changed nothing)."""
    q = st[0]
    nb = st[1]
    if q >= 0:
        i = sc[0][_U(nb)]
    while True:
        if q < 0:
            if i >= stop:
                st[0] = -1
                return o
            lim = _BATCH_MISSES if sc[8][_U(3 * _GROUP)] >= _PREPASS_MIN else _BATCH  # (_prepass_if_new's cue)
            nb = _cut_batch(data, i, stop, end, fam, end_whole, tab, fold, sc, cache, lidx, w, lim)
            i = sc[0][_U(nb)]
            q = _I0
            _prepass_if_new(data, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first, cache,
                            wide, lidx, lbytes, lids, pc, w)
        o, q = _encode_run(data, q, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first,
                           cache, wide, lidx, lbytes, lids, pc, w, out, o, nocnt, _I0)
        if q >= nb:
            q = -1
            continue
        st[0] = q
        st[1] = nb
        return o


@njit_cached(inline="always")
def _encode_span(data, i, stop, end, fam, end_whole, tab, fold, init_ids, grid, mtab, arena, tok_off,
                 bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, w, out, o, sc, nocnt, st):
    """``_span_run`` to the end of the span, with the heap pieces in between; returns the
    new ``o``. ``sc``: ``_scratch()``, ``nocnt``: an empty array, ``st``: ``int64[2]``,
    ``pc``: this worker's pair cache, made once by the caller for all its segments (a cut
    unit's one span; whole segments go through ``_segs_in_place``)."""
    st[0] = -1
    while True:
        o = _span_run(data, i, stop, end, fam, end_whole, tab, fold, init_ids, grid, mtab, arena, tok_off, bkeys,
                      bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, w, out, o, sc, nocnt, st)
        if st[0] < 0:
            return o
        o = _heap_piece(data, sc, st[0], init_ids, mtab, pc, lidx, lbytes, lids, w, out, o, nocnt, _I0)
        st[0] += 1


@njit_noalloc
def _segs_in_place(data, seg_s, seg_e, hi, fam, end_whole, tab, fold, init_ids, grid, mtab, arena, tok_off, bkeys,
                   bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, w, out, sc, nocnt, st, seg_count):
    """Segments ``st[2]..hi - 1``, each encoded at ``out[its first byte:]``, ``seg_count[s]``
    its ids. Returns when all are done (``st[0] == -1``) or when a piece needs the heap
    (``_span_run``'s ``st[0]``, ``st[1]``; ``st[3]``: where its ids go): the caller runs
    ``_heap_piece`` there, sets ``st[3]`` to its result and ``st[0] += 1``, and calls again.
    The loop over segments is compiled without reference counting (``_span_run``): a
    counted caller paid an increment and a decrement per array argument per segment (0.35
    us a segment; 2.8 ms per 8,000 documents)."""
    s = st[2]
    while s < hi:
        a = seg_s[_U(s)]
        o = st[3] if st[0] >= 0 else a
        o = _span_run(data, a, seg_e[_U(s)], seg_e[_U(s)], fam, end_whole, tab, fold, init_ids, grid, mtab, arena,
                      tok_off, bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, w, out, o, sc, nocnt, st)
        if st[0] >= 0:
            st[2] = s
            st[3] = o
            return
        seg_count[_U(s)] = o - a
        s += 1
    st[2] = s


@njit_noalloc
def _open_docs(doc_off, a, prefix, suffix, out, o, rs, st):
    """Before a record at byte ``a`` (the serial path with a template): each document not
    yet opened (``st[5]`` are) that starts at or before ``a`` is opened: the last one's
    suffix, then its row split ``rs[d] = o`` and the prefix. A record at a document's first
    byte belongs to the last of the documents starting there (the others are empty), as
    in the parallel path's ``row_of``. Returns the new ``o``."""
    d = st[5]
    R = doc_off.shape[0] - 1
    while d < R and doc_off[_U(d)] <= a:
        if d > 0:
            o = _put_ids(suffix, out, o)
        rs[_U(d)] = o
        o = _put_ids(prefix, out, o)
        d += 1
    st[5] = d
    return o


@njit_noalloc
def _segs_compact(data, seg_s, seg_e, m_s, m_id, fam, end_whole, tab, fold, init_ids, grid, mtab, arena, tok_off,
                  bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, w, out, sc, nocnt, st, rec_s, pos,
                  doc_off, prefix, suffix, rs):
    """``encode_fused_serial``'s loop: segments and matches in text order from segment
    ``st[2]``, match ``st[4]``, output position ``st[3]``; stops for the heap as
    ``_segs_in_place`` does (the segment in progress is ``st[2]``). With a template
    (``prefix``/``suffix`` not both empty), the documents that start at or before a record
    are opened first (``_open_docs``; ``st[5]``: how many are)."""
    S = seg_s.shape[0]
    M = m_s.shape[0]
    tmpl = prefix.shape[0] + suffix.shape[0] > 0
    i = st[2]
    j = st[4]
    o = st[3]
    resume = st[0] >= 0
    while i < S or j < M:
        if resume or j >= M or (i < S and seg_s[_U(i)] <= m_s[_U(j)]):
            a = seg_s[_U(i)]
            if not resume:
                if tmpl:
                    o = _open_docs(doc_off, a, prefix, suffix, out, o, rs, st)
                rec_s[_U(i + j)] = a
                pos[_U(i + j)] = o
            resume = False
            o = _span_run(data, a, seg_e[_U(i)], seg_e[_U(i)], fam, end_whole, tab, fold, init_ids, grid, mtab, arena,
                          tok_off, bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, w, out, o, sc, nocnt,
                          st)
            if st[0] >= 0:
                st[2] = i
                st[3] = o
                st[4] = j
                return
            i += 1
        else:
            if tmpl:
                o = _open_docs(doc_off, m_s[_U(j)], prefix, suffix, out, o, rs, st)
            rec_s[_U(i + j)] = m_s[_U(j)]
            pos[_U(i + j)] = o
            out[_U(o)] = m_id[_U(j)]
            o += 1
            j += 1
    pos[_U(S + M)] = o
    if tmpl:  # the documents after the last record, then the last one's suffix
        R = doc_off.shape[0] - 1
        o = _open_docs(doc_off, doc_off[_U(R)] + 1, prefix, suffix, out, o, rs, st)
        if R > 0:
            o = _put_ids(suffix, out, o)
        rs[_U(R)] = o
    st[2] = i
    st[3] = o
    st[4] = j


@njit_cached(nogil=True)
def encode_piece_range(data, starts, ends, special, lo, hi, init_ids, grid, mtab, arena, tok_off, bkeys, bvals,
                       whole_first, cache, wide, lidx, lbytes, lids, pcache, w, out, opos, counts):
    """The piece path (for offsets): pieces ``lo..hi`` given; ``special``: an added token's
    id, -1 for a piece to encode, -2 for one to skip. Piece ``p``'s ids go to
    ``out[opos[p]:opos[p] + counts[p]]``. One thread's call from Python (``lo``, ``hi``,
    ``w`` as ``int64``) and ``encode_pieces_parallel``'s share one compiled copy: a serial
    wrapper of its own took another 1.8 s of a cold start (LLVM compiles a callee again in
    every caller's module)."""
    sc = _scratch()
    ps = sc[0]
    pc = pcache[_U(w)]
    p = lo
    while p < hi:
        if special[_U(p)] != -1:
            opos[_U(p)] = starts[_U(p)]
            if special[_U(p)] >= 0:
                out[_U(starts[_U(p)])] = special[_U(p)]
                counts[_U(p)] = 1
            else:
                counts[_U(p)] = 0
            p += 1
            continue
        q = _I0
        while p + q < hi and q < _BATCH and special[_U(p + q)] == -1:
            ps[_U(q)] = starts[_U(p + q)]
            q += 1
        ps[_U(q)] = ends[_U(p + q - 1)]
        o = starts[_U(p)]
        nb = q
        q = _I0
        o2 = o
        _hash_batch(data, nb, sc, cache, lidx, w)
        _prepass_if_new(data, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first, cache, wide, lidx,
                        lbytes, lids, pc, w)
        while True:
            o2, q = _encode_run(data, q, nb, sc, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first,
                                cache, wide, lidx, lbytes, lids, pc, w, out, o2, counts, p)
            if q >= nb:
                break
            o2 = _heap_piece(data, sc, q, init_ids, mtab, pc, lidx, lbytes, lids, w, out, o2, counts, p)
            q += 1
        q = nb
        for k in range(q):
            opos[_U(p + k)] = o
            o += counts[_U(p + k)]
        p += q


@njit_cached(parallel=True, nogil=True)
def encode_pieces_parallel(data, starts, ends, special, blocks, nw, init_ids, grid, mtab, arena, tok_off, bkeys, bvals,
                           whole_first, cache, wide, lidx, lbytes, lids, pcache, out, opos, counts):
    """``blocks`` (piece-index bounds) handed to the ``nw`` workers as they free up
    (``workqueue``)."""
    n = blocks.shape[0] - 1
    flags = np.zeros(n, np.int64)
    for t in prange(nw):
        for c in range(n):
            b = take(flags, c, np.int64(t), nw, n)
            if b >= 0:
                encode_piece_range(data, starts, ends, special, blocks[_U(b)], blocks[_U(b + 1)], init_ids, grid, mtab,
                                   arena, tok_off, bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pcache,
                                   get_thread_id(), out, opos, counts)


@njit_cached
def _run_unit(data, seg_s, seg_e, ua, ub, uc, sync, u, fam, end_whole, tab, fold, init_ids, grid, mtab, arena,
              tok_off, bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pcache, w, out, seg_count, unit_count):
    sc = _scratch()
    nocnt = np.zeros(0, np.int64)
    st = np.zeros(5, np.int64)
    pc = pcache[w]
    if uc[_U(u)] < 0:
        st[0] = -1
        st[2] = ua[_U(u)]
        while True:
            _segs_in_place(data, seg_s, seg_e, ub[_U(u)], fam, end_whole, tab, fold, init_ids, grid, mtab, arena, tok_off,
                           bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, w, out, sc, nocnt, st, seg_count)
            if st[0] < 0:
                break
            st[3] = _heap_piece(data, sc, st[0], init_ids, mtab, pc, lidx, lbytes, lids, w, out, st[3], nocnt, _I0)
            st[0] += 1
    elif sync[_U(u)] >= 0:
        a = sync[_U(u)]
        unit_count[_U(u)] = _encode_span(data, a, unit_stop(seg_e, ua, uc, sync, u), seg_e[_U(ua[_U(u)])], fam, end_whole, tab,
                                         fold, init_ids, grid, mtab, arena, tok_off, bkeys, bvals, whole_first, cache, wide, lidx,
                                         lbytes, lids, pc, w, out, a, sc, nocnt, st) - a


@njit_cached(parallel=True, nogil=True)
def encode_fused_parallel(data, seg_s, seg_e, chunk, nw, fam, end_whole, tab, fold, init_ids, grid, mtab, arena,
                          tok_off, bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pcache, out):
    """Returns ``(rec_start, rec_count)``: per segment (count 0 for a cut segment) and per
    cut unit, where its ids begin in ``out`` (its first byte) and how many there are. The
    units go to the ``nw`` workers as they free up (``workqueue``)."""
    ua, ub, uc = _plan(seg_s, seg_e, chunk)
    U = ua.shape[0]
    S = seg_s.shape[0]
    sync = np.empty(U, np.int64)
    for u in prange(U):
        sync[_U(u)] = unit_sync(data, seg_s, seg_e, ua, ub, uc, chunk, tab, np.int64(u))
    seg_count = np.zeros(S, np.int64)
    unit_count = np.zeros(U, np.int64)
    flags = np.zeros(U, np.int64)
    for t in prange(nw):
        for c in range(U):
            u = take(flags, c, np.int64(t), nw, U)
            if u >= 0:
                _run_unit(data, seg_s, seg_e, ua, ub, uc, sync, u, fam, end_whole, tab, fold, init_ids, grid, mtab, arena,
                          tok_off, bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pcache, get_thread_id(), out,
                          seg_count, unit_count)
    return _records(seg_s, sync, seg_count, unit_count)


@njit_cached(nogil=True)
def encode_fused_serial(data, seg_s, seg_e, m_s, m_id, doc_off, prefix, suffix, fam, end_whole, tab, fold, init_ids,
                        grid, mtab, arena, tok_off, bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pcache, out):
    """One thread: the segments and the added-token matches (``m_s``, ids ``m_id``; both
    in text order) in text order, their ids written one after another from ``out[0]``, so
    no gather follows (a copy of every id: 1.6 of 26 ms on 8 MB of code, qwen3). Room:
    no record has more ids than bytes, so the ids written never pass the bytes read.
    With a template (``prefix``/``suffix``, int32, not both empty) its ids are written
    around every document of ``doc_off`` as the records are (``_open_docs``), so no copy
    follows either (``add_template``: 1.0-1.2 of 23-28 ms on 8 MB of prose or code,
    llama3's BOS); ``out`` then needs ``len(prefix) + len(suffix)`` more per document.
    Returns ``(rec_start, pos, rs)``: each record's first byte (a segment before a match at
    the same byte) and where its ids begin in ``out``; ``pos[-1]`` = all ids; ``rs``: with
    a template, the rows' splits (their prefixes' positions, then all the ids), else
    unset."""
    S = seg_s.shape[0]
    M = m_s.shape[0]
    rec_s = np.empty(S + M, np.int64)
    pos = np.empty(S + M + 1, np.int64)
    rs = np.empty(doc_off.shape[0], np.int64)
    sc = _scratch()
    nocnt = np.zeros(0, np.int64)
    st = np.zeros(6, np.int64)
    st[0] = -1
    pc = pcache[0]
    while True:
        _segs_compact(data, seg_s, seg_e, m_s, m_id, fam, end_whole, tab, fold, init_ids, grid, mtab, arena, tok_off,
                      bkeys, bvals, whole_first, cache, wide, lidx, lbytes, lids, pc, _I0, out, sc, nocnt, st, rec_s, pos,
                      doc_off, prefix, suffix, rs)
        if st[0] < 0:
            break
        st[3] = _heap_piece(data, sc, st[0], init_ids, mtab, pc, lidx, lbytes, lids, _I0, out, st[3], nocnt, _I0)
        st[0] += 1
    return rec_s, pos, rs


@njit_cached
def _records(seg_s, sync, seg_count, unit_count):
    S = seg_s.shape[0]
    n = S
    for u in range(sync.shape[0]):
        if sync[_U(u)] >= 0:
            n += 1
    rs = np.empty(n, np.int64)
    rc = np.empty(n, np.int64)
    for s in range(S):
        rs[_U(s)] = seg_s[_U(s)]
        rc[_U(s)] = seg_count[_U(s)]
    k = S
    for u in range(sync.shape[0]):
        if sync[_U(u)] >= 0:
            rs[_U(k)] = sync[_U(u)]
            rc[_U(k)] = unit_count[_U(u)]
            k += 1
    return rs, rc


@njit_cached(parallel=True, nogil=True)
def gather_parallel(out, rec_start, rec_count, pos, ids):
    for r in prange(rec_start.shape[0]):
        _copy_items(ids, pos[_U(r)], out, rec_start[_U(r)], rec_count[_U(r)])  # one memcpy


@njit_cached(parallel=True, nogil=True)
def gather_pieces_parallel(out, opos, counts, nb):
    """``(ids, pts)`` after ``encode_pieces_parallel``: piece ``p``'s ``counts[p]`` ids, at
    ``out[opos[p]:]``, moved to ``ids[pts[p]:pts[p + 1]]`` (pieces back to back), the
    cumulative counts ``pts`` made as they go: per block (``nb`` of about equal pieces)
    its total, then the blocks in parallel from their bases. (Not the encoding's blocks of
    about equal bytes: a caller's pieces need not be in byte order, CLIP's are not.)"""
    P = counts.shape[0]
    blocks = np.empty(nb + 1, np.int64)
    for b in range(nb + 1):
        blocks[_U(b)] = b * P // nb
    base = np.zeros(nb + 1, np.int64)
    for b in prange(nb):
        t = np.int64(0)
        for p in range(blocks[_U(b)], blocks[_U(b + 1)]):
            t += counts[_U(p)]
        base[_U(b + 1)] = t
    for b in range(nb):
        base[_U(b + 1)] += base[_U(b)]
    ids = np.empty(base[_U(nb)], np.int32)
    pts = np.empty(P + 1, np.int64)
    pts[_U(P)] = base[_U(nb)]
    for b in prange(nb):
        o = base[_U(b)]
        for p in range(blocks[_U(b)], blocks[_U(b + 1)]):
            pts[_U(p)] = o
            c = counts[_U(p)]
            _copy_items(ids, o, out, opos[_U(p)], c)
            o += c
    return ids, pts


@njit_cached(parallel=True, nogil=True)
def gather_template_parallel(out, rec_start, rec_count, pos, row_of, rs, prefix, suffix, ids):
    """``gather_parallel`` and ``add_template_parallel`` in one pass: record ``r`` (in row
    ``row_of[r]``) goes to ``ids[pos[r] + row_of[r] * (P + S) + P:]`` and row ``d``'s
    prefix and suffix around ``ids[rs[d]:rs[d + 1]]`` (``rs``: the templated row splits),
    so the ids are copied once, not twice (8 MB of prose, llama3 with its BOS)."""
    P = prefix.shape[0]
    k = P + suffix.shape[0]
    for r in prange(rec_start.shape[0]):
        _copy_items(ids, pos[_U(r)] + row_of[_U(r)] * k + P, out, rec_start[_U(r)], rec_count[_U(r)])
    for d in prange(rs.shape[0] - 1):
        _template_ends(ids, rs, d, prefix, suffix)


@njit_cached(nogil=True)
def gather_rows_serial(out, starts, counts, prefix, suffix):
    """``(ids, row_splits)``: row ``d``'s ``counts[d]`` ids copied from ``out[starts[d]:]``,
    ``prefix`` and ``suffix`` around it; one copy on one thread (the serial paths of
    ``fast_cpu.gather_rows``), not a gather and then ``add_template``'s copy (8 MB of
    prose, one thread: llama2 50.0 -> 48.5 ms, gemma3 3%, bert 1% faster; RESULTS
    2026-12-07 12:45-13:20)."""
    n = starts.shape[0]
    P = prefix.shape[0]
    k = P + suffix.shape[0]
    rs = np.empty(n + 1, np.int64)
    rs[0] = 0
    for d in range(n):
        rs[_U(d + 1)] = rs[_U(d)] + counts[_U(d)] + k
    ids = np.empty(rs[_U(n)], np.int32)
    for d in range(n):
        _template_ends(ids, rs, d, prefix, suffix)
        _copy_items(ids, rs[_U(d)] + P, out, starts[_U(d)], counts[_U(d)])
    return ids, rs


@njit_cached(nogil=True)
def gather_serial(out, rec_start, rec_count, pos, ids):
    for r in range(rec_start.shape[0]):
        _copy_items(ids, pos[_U(r)], out, rec_start[_U(r)], rec_count[_U(r)])


# -------------------------------------------- SentencePiece-style BPE (ids only)
# One document at a time: the raw added-token pass on the text; each gap normalized the
# SentencePiece way (``prepend``: "▁" before a non-empty gap; every " " becomes "▁"),
# the normalized added-token pass on it, and each remaining piece encoded whole (these
# files have no pre-tokenizer split): initial symbols per character (its id, else one
# ``<0xXX>`` per byte), then ``merge_piece``; a piece is cut into words where no merge can
# cross (``_sp_piece``), each word through the byte-level engine's short, wide and long
# word caches (per worker, kept across calls). Output per document at ``out[dst[d]:]``
# (``dst`` leaves 3 ids per input byte + 3, more than a document can produce; the kernel
# moves each document's start to the end of the one before it in its block, ``_sp_docs``).

_SP_CHAR = np.array([0xE2, 0x96, 0x81], np.uint8)  # "▁" U+2581
_ALL64 = np.uint64(0xFFFFFFFFFFFFFFFF)


@njit_noalloc
def _sp_word(buf, a, b, char_id, byte_id, mtab, pc, hs, rank, out, o):
    """BPE of ``buf[a:b]``: initial symbols per character (its id, else one ``<0xXX>`` per
    byte), then rescanning (short) or the heap (long). ``hs``: ``_heap_scratch``."""
    sym = hs[0]
    sym_len = hs[1]
    n = 0
    i = a
    while i < b:
        ln = _next_char(buf, i)
        t = char_id[_U(_decode_at(buf, i))]
        if t >= 0:
            sym[_U(n)] = t
            sym_len[_U(n)] = ln
            n += 1
        else:
            for k in range(ln):
                sym[_U(n)] = byte_id[_U(buf[_U(i + k)])]
                sym_len[_U(n)] = 1
                n += 1
        i += ln
    if n <= _SHORT:
        c = _merge_ids(sym, n, mtab, pc, rank)
        for k in range(c):
            out[_U(o + k)] = sym[_U(k)]
        return c
    return _merge_heap(hs, n, mtab, pc, out, o)


_SP_BATCH = 64  # words of a piece cut and keyed (their cache sets prefetched) before they are encoded


@njit_noalloc(inline="always")
def _sp_key(buf, a, b, cache, lidx, w, q, kw0, kw1, kh):
    """Key word ``q`` of a batch (``buf[a:b]``) into ``kw0``/``kw1``/``kh`` and prefetch its
    set: a short word's (2.._SHORT_KEY bytes) ``short_key`` and short-cache set, a long
    one's (.._LONG_MAX) ``bytes_hash`` and long-cache set."""
    n = b - a
    if n < 2 or n > _LONG_MAX:
        return
    if n <= _SHORT_KEY:
        pw0, pw1, h = short_key(buf, a, n)
        _prefetch3(cache, w, _short_slot(cache, h), 0)
        kw0[_U(q)] = pw0
        kw1[_U(q)] = pw1
        kh[_U(q)] = h
    else:
        lh = bytes_hash(buf, a, b)
        _prefetch3(lidx, w, _long_set(lidx, lh), 0)
        kh[_U(q)] = lh


@njit_noalloc(inline="always")
def _sp_find(buf, a, n, nn, cache, wide, lidx, lbytes, lids, w, pw0, pw1, h, out, o):
    """The ids of word ``buf[a:a + n]`` (keyed by ``_sp_key``; ``nn`` bytes once
    normalized: ``n``, or more for a word of raw text, ``_sp_raw_len``) from the word
    caches to ``out[o:]``; returns how many, or -1 when they do not hold it. A short-cache
    hit is the byte-level engine's ``_encode_hit`` (three ids written whatever the count, no
    loop; ``out`` has room for ``nn`` ids from ``o``: ids never outnumber the normalized
    bytes); the wide cache is probed only for words of more than ``_SHORT_IDS`` normalized
    bytes (a shorter word has at most that many ids: it is in the short cache if anywhere),
    so a miss of a short word does not wait on memory for it. Both together: llama2, gemma3
    and mistral 4-14% faster (RESULTS 2026-12-06 17:20)."""
    if 2 <= n <= _SHORT_KEY:
        o2 = _encode_hit(nn, _short_slot(cache, h), pw0, pw1, cache, w, out, o)
        if o2 >= 0:
            return o2 - o
        wslot = _wide_slot(wide, h)
        if nn > _SHORT_IDS and _find_to_front(wide, w, wslot, pw0, pw1):
            return _entry_ids(wide, w, wslot, out, o)
    elif _SHORT_KEY < n <= _LONG_MAX:
        return _long_find(buf, a, n, h, _long_set(lidx, h), lidx, lbytes, lids, w, out, o)
    return -1


@njit_noalloc(inline="always")
def _sp_put(buf, a, n, c, cache, wide, lidx, lbytes, lids, w, pw0, pw1, h, out, o):
    """Put word ``buf[a:a + n]`` and its ``c`` ids ``out[o:o + c]`` in the word cache its
    length and ids go to (none for 1 byte or more than ``_LONG_MAX``)."""
    if 2 <= n <= _SHORT_KEY:
        if c <= _SHORT_IDS:
            _set_put(cache, w, _short_slot(cache, h), pw0, pw1, c, out, o, c)
        elif c <= _WIDE_IDS:
            _set_put(wide, w, _wide_slot(wide, h), pw0, pw1, c, out, o, c)
    elif _SHORT_KEY < n <= _LONG_MAX and c <= _LONG_IDS:
        _long_insert(buf, a, n, c, h, _long_set(lidx, h), lidx, lbytes, lids, w, out, o)


_PAIR_ROW = 130  # ``held``'s pair table: the 128 ASCII bytes, "▁" (128), a lone character (129)
_LONE = _PAIR_ROW * _PAIR_ROW  # then one bit per code point: no token of two or more characters holds it


@njit_noalloc(inline="always")
def _pair_class(buf, i, b, held):
    """``(class, length)`` of the character at ``buf[i]`` (before ``b``): its row in
    ``held``'s pair table (an ASCII byte, 128 for "▁" and for a space, which is raw text's
    "▁": ``_sp_piece``, 129 for a character no token of two or more characters holds) or
    -1 for any other character."""
    x = buf[_U(i)]
    if x < 0x80:
        if x == 0x20:
            return np.int64(128), np.int64(1)
        return np.int64(x), np.int64(1)
    if x == 0xE2 and i + 2 < b and buf[_U(i + 1)] == 0x96 and buf[_U(i + 2)] == 0x81:
        return np.int64(128), np.int64(3)
    c = np.int64(_decode_at(buf, i))
    if (held[_U(_LONE + (c >> 3))] >> (c & 7)) & 1:
        return np.int64(129), _next_char(buf, i)
    return np.int64(-1), _next_char(buf, i)


@njit_noalloc(inline="always")
def _sp_word_of(buf, a, b, nbuf, char_id, byte_id, mtab, pc, hs, rank, out, o):
    """``_sp_word`` of ``buf[a:b]``, its bytes normalized into ``nbuf`` first when they hold
    a space (raw text: ``_sp_piece``; a word of normalized text holds none, and is merged
    where it is)."""
    for k in range(a, b):
        if buf[_U(k)] == 0x20:
            m = _sp_spaces(buf, a, b, nbuf, 0)
            return _sp_word(nbuf, 0, m, char_id, byte_id, mtab, pc, hs, rank, out, o)
    return _sp_word(buf, a, b, char_id, byte_id, mtab, pc, hs, rank, out, o)


@njit_noalloc
def _sp_word_parts(buf, a, b, char_id, byte_id, mtab, pc, hs, rank, cache, wide, lidx, lbytes, lids, w, held, bsc,
                   nbuf, out, o):
    """``_sp_word`` of a word the caches missed, cut first into parts at every place
    between two characters (ASCII, "▁" or lone: ``_pair_class``) that no vocabulary token
    holds next to each other (``held[x * 130 + y] == 0``): no token spans such a place, so
    no merge crosses it and the BPE of the parts is the BPE of the word. Each part goes
    through the word caches
    (a part of a new word is mostly not new: "▁▁▁▁▁▁▁▁return", "▁self.x_max", "(x,"); only
    the parts they miss are merged. The parts are cut and keyed (their sets prefetched) up
    to ``_SP_BATCH`` at a time, in ``bsc``'s second half (``_sp_piece``'s batch is in the
    first). Returns the number of ids. A word of raw text (``_sp_piece``: a space is a
    "▁") has its parts keyed on their raw bytes and normalized into ``nbuf`` when merged
    (the word's own key is raw: so are its parts', and a part is found where the same text
    was a whole word)."""
    ws, kw0, kw1, kh = bsc
    B = _SP_BATCH + 1
    o0 = o
    s = a
    px = np.int64(-1)
    i = a
    while s < b:
        nq = 0
        while nq < _SP_BATCH and s < b:
            e = b
            while i < b:
                x, ln = _pair_class(buf, i, b, held)
                if i > s and px >= 0 and x >= 0 and held[_U(px * _PAIR_ROW + x)] == 0:
                    e = i
                    px = x
                    i += ln
                    break
                px = x
                i += ln
            if nq == 0 and s == a and e == b:  # no place to cut
                return _sp_word_of(buf, a, b, nbuf, char_id, byte_id, mtab, pc, hs, rank, out, o)
            ws[_U(B + nq)] = s
            _sp_key(buf, s, e, cache, lidx, w, B + nq, kw0, kw1, kh)
            nq += 1
            s = e
        ws[_U(B + nq)] = s
        for q in range(B, B + nq):
            p0 = ws[_U(q)]
            n = ws[_U(q + 1)] - p0
            if n == 1 and buf[_U(p0)] != 0x20:  # an ASCII character (a space is a "▁")
                t = char_id[_U(buf[_U(p0)])]
                out[_U(o)] = t if t >= 0 else byte_id[_U(buf[_U(p0)])]
                o += 1
                continue
            pw0 = kw0[_U(q)]
            pw1 = kw1[_U(q)]
            h = kh[_U(q)]
            c = _sp_find(buf, p0, n, _sp_raw_len(n, pw0, pw1), cache, wide, lidx, lbytes, lids, w, pw0, pw1, h, out, o)
            if c < 0:
                c = _sp_word_of(buf, p0, p0 + n, nbuf, char_id, byte_id, mtab, pc, hs, rank, out, o)
                _sp_put(buf, p0, n, c, cache, wide, lidx, lbytes, lids, w, pw0, pw1, h, out, o)
            o += c
    return o - o0


@njit_noalloc(inline="always")
def _sp_nocut_before(buf, i, held):
    """Whether a vocabulary token holds the character right before the "▁" at ``buf[i]``
    (``i`` past the piece's start; on raw text, ``_sp_piece``'s, the "▁" may be a space)
    right before a "▁": an ASCII byte or "▁" itself, which a space before it is on raw text
    (``held[x * 130 + 128]``); no token holds any other character there."""
    y = buf[_U(i - 1)]
    if y == 0x20:
        return held[_U(128 * _PAIR_ROW + 128)] != 0
    if y < 0x80:
        return held[_U(np.int64(y) * _PAIR_ROW + 128)] != 0
    return y == 0x81 and buf[_U(i - 2)] == 0x96 and buf[_U(i - 3)] == 0xE2 and held[_U(128 * _PAIR_ROW + 128)] != 0


@njit_noalloc(inline="always")
def _sp_marks(buf, i, runs_held, raw):
    """Bit ``k`` set where a "▁" may start at ``buf[i + k]`` (its first and last byte there:
    the caller checks the middle one), for 64 places (the caller keeps ``i + 66 <=
    buf.shape[0]``), less, when ``runs_held`` (a token holds "▁" right before "▁":
    ``_sp_nocut_before`` is true after a "▁"), the "▁"s right after another "▁" of these
    places: no cut is there, and a run of spaces in code (indentation) was a "▁" tested one
    at a time. The middle bytes are compared only for a window with two places 3 apart
    (prose and most text have none: a third compare in every window cost gemma3's
    multilingual text about 2%, RESULTS 2026-12-06 15:10). With ``raw`` (a constant: the
    CPU engine's walk, ``_sp_piece``, which may be on raw text) the spaces are places too
    (each a "▁" once normalized), less those right after a space when ``runs_held``."""
    m = _range_mask64(buf, i, 0xE2, 0xE2) & _range_mask64(buf, i + 2, 0x81, 0x81)
    if runs_held and (m & (m << np.uint64(3))) != np.uint64(0):
        m &= _range_mask64(buf, i + 1, 0x96, 0x96)
        m &= ~(m << np.uint64(3))
    if raw:
        sp = _range_mask64(buf, i, 0x20, 0x20)
        if runs_held:
            sp &= ~(sp << np.uint64(1))
        m |= sp
    return m


@njit_noalloc(inline="always")
def _sp_runs_held(held):
    """Whether a token holds "▁" right before "▁" (``held`` not empty): ``_sp_marks``' flag."""
    return held[_U(128 * _PAIR_ROW + 128)] != 0


@njit_noalloc(inline="always")
def _sp_next_place(buf, i, wbase, wend, wm, runs_held):
    """``(j, wbase, wend, wm)``: ``j`` the first place from ``i`` where a "▁" (or a space:
    raw text) may start that may be a cut (``_sp_marks``), else ``wend``, the end of the window of 64 places
    ``[wbase, wend)`` whose bits ``wm`` are kept between calls (a new window is read when
    ``i`` is past it; ``wend = -1`` at first). The caller keeps ``i + 66 <= buf.shape[0]``
    and checks the middle byte."""
    if i >= wend:
        wbase = i
        wend = i + 64
        wm = _sp_marks(buf, i, runs_held, True)
    m = wm & (_ALL64 << np.uint64(i - wbase))
    if m == 0:
        return wend, wbase, wend, wm
    return wbase + np.int64(_ctz64(m)), wbase, wend, wm




# The raw text's walk (decision 0041). For the normalizer forms (every " " made "▁", with a
# "▁" in front of each gap for form 1) the ids path no longer writes the normalized gap:
# it walks the raw gap, a space standing for the "▁" it would become, and keys each word on
# its raw bytes. The word caches may hold a word under either spelling: a key's ids are
# always those of its bytes normalized, and normalized text holds no space, so a key of
# normalized bytes is its own raw spelling. Only a word the caches miss is normalized (into
# ``nbuf``) and merged; the first word of a form-1 gap, which starts with the "▁" put in
# front, is spelt raw in ``pbuf`` (a space, then its bytes). The copy with three bytes
# written per byte (``_sp_spaces``) was 16% of llama2's time on English prose (one thread,
# perf). The same walk (``_sp_piece``) takes the pieces of normalized text, which hold no
# space: there a space standing for "▁" changes nothing.
_SP_ONES = np.uint64(0x0101010101010101)
_SP_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)


@njit_noalloc(inline="always")
def _spaces_in(x):
    """How many bytes of the word ``x`` are spaces (exact: no carry between bytes)."""
    t = x ^ (np.uint64(0x20) * _SP_ONES)
    z = ~(((t & _SP_LOW7) + _SP_LOW7) | t | _SP_LOW7)  # 0x80 in each byte of t that is 0
    return np.int64(((z >> np.uint64(7)) * _SP_ONES) >> np.uint64(56))


@njit_noalloc(inline="always")
def _sp_raw_len(n, pw0, pw1):
    """Normalized bytes of a raw word of ``n`` bytes (keyed: ``pw0``/``pw1``, ``short_key``'s
    words when ``2 <= n <= _SHORT_KEY``): two more per space; ``n`` for a longer one (the
    long cache writes exactly its count, with no room taken past it)."""
    if 2 <= n <= _SHORT_KEY:
        return n + 2 * (_spaces_in(pw0) + _spaces_in(pw1 & _KEY1))
    return n


@njit_noalloc(inline="always")
def _raw_cut(data, i, w0, b, held, runs, wbase, wend, wm, lead):
    """``(cut, i, wbase, wend, wm)``: the next cut from ``i`` in the raw gap ending at ``b``
    of the word that starts at ``w0``: a place (a space, or a "▁" in the text) past ``w0``
    whose previous character is not held before a "▁" (``_sp_nocut_before``); with
    ``lead`` (a form-1 gap's first word, the "▁" put in front of ``w0``) a place at ``w0``
    too, unless "▁" is held before "▁". ``cut == b`` when there is none; ``i`` is past the
    cut's place. The window state as ``_sp_next_place``'s."""
    nd = data.shape[0]
    while i < b:
        if i + 66 <= nd:
            i, wbase, wend, wm = _sp_next_place(data, i, wbase, wend, wm, runs)
            if i == wend:  # none in the window
                continue
            if i >= b:
                break
        elif data[_U(i)] != 0x20 and data[_U(i)] != 0xE2:
            i += 1
            continue
        if data[_U(i)] == 0x20:
            ln = 1
        elif i + 2 < b and data[_U(i + 1)] == 0x96 and data[_U(i + 2)] == 0x81:
            ln = 3
        else:
            i += 1
            continue
        if i > w0:
            if not _sp_nocut_before(data, i, held):
                return i, i + ln, wbase, wend, wm
        elif lead and held[_U(128 * _PAIR_ROW + 128)] == 0:
            return i, i + ln, wbase, wend, wm
        i += ln
    return b, i, wbase, wend, wm


@njit_noalloc
def _sp_word_miss(buf, a, b, char_id, byte_id, mtab, pc, hs, rank, cache, wide, lidx, lbytes, lids, w, held, bsc,
                  pw0, pw1, h, nbuf, out, o):
    """A word the caches do not hold (raw or normalized text): merged through its parts
    (``_sp_word_parts``, with a non-empty ``held``; each normalized into ``nbuf`` when
    merged if it holds a space), put in the cache its length and ids go to under its key.
    Called, not inlined (a call passes every array field by field, hundreds of moves, but
    only a miss pays it)."""
    if held.shape[0] != 0 and b - a >= 2:
        c = _sp_word_parts(buf, a, b, char_id, byte_id, mtab, pc, hs, rank, cache, wide, lidx, lbytes, lids, w, held,
                           bsc, nbuf, out, o)
    else:
        c = _sp_word_of(buf, a, b, nbuf, char_id, byte_id, mtab, pc, hs, rank, out, o)
    _sp_put(buf, a, b - a, c, cache, wide, lidx, lbytes, lids, w, pw0, pw1, h, out, o)
    return c


@njit_noalloc(inline="always")
def _sp_piece(buf, a, b, lead, char_id, byte_id, mtab, pc, arena, tok_off, bkeys, bvals, whole_first, held, hs, rank,
              cache, wide, lidx, lbytes, lids, bsc, w, nbuf, pbuf, out, o):
    """One piece ``buf[a:b]`` of normalized text, or a gap of raw text that stands for one
    (a space there is the "▁" it becomes: decision 0041); returns the number of ids. Whole
    in the vocabulary (``ignore_merges``: normalized text only), else BPE. With a non-empty
    ``held`` (``fast_cpu._held_pairs``: ``held[x * 130 + y]`` whether some vocabulary token
    holds character ``x`` right before ``y``, for the ASCII bytes and "▁" as 128; no token
    holds any other character right before a "▁") the piece is cut into words before every
    "▁" (or space) whose previous character no token holds there (``_raw_cut``): no token
    can span such a place, so no merge crosses it and BPE of the words is BPE of the whole.
    Each word is keyed on its bytes as they are (raw or normalized: ``_sp_raw_len`` gives
    its normalized length) in batches of up to ``_SP_BATCH``, their cache sets prefetched
    (``bsc``: the batch's word starts ``int64[2 * _SP_BATCH + 2]`` and keys
    ``uint64[2 * _SP_BATCH + 1]`` x 3, the first ``_SP_BATCH + 1`` items this batch's, the
    rest ``_sp_word_parts``'s), so that the probes do not each wait on memory; a word the
    caches miss goes to ``_sp_word_miss``. With ``lead`` (a form-1 gap of raw text) the
    first word, the "▁" put in front and its raw bytes, is spelt raw in ``pbuf`` (a space,
    then its bytes: the key of the same word elsewhere). Inlined into ``_sp_doc``, from one
    call site: a call per gap passed every array field by field, and gemma3's "\n" and
    "\t" added tokens make a gap every ~40 bytes of code."""
    if whole_first:
        t = bytes_lookup(buf, a, b, arena, tok_off, bkeys, bvals)
        if t >= 0:
            out[_U(o)] = t
            return 1
    if held.shape[0] == 0:  # normalized text (the raw walk needs word cuts)
        return _sp_word(buf, a, b, char_id, byte_id, mtab, pc, hs, rank, out, o)
    ws, kw0, kw1, kh = bsc
    o0 = o
    runs = _sp_runs_held(held)
    wbase = np.int64(0)  # the window of places looked at: [wbase, wend), their bits wm
    wend = np.int64(-1)
    wm = np.uint64(0)
    w0 = a
    i = a
    first = -1  # the batch slot whose word is in pbuf[0:ln0] (-1: not cut yet, -2: done)
    ln0 = np.int64(0)
    while w0 < b:
        nb = 0
        while nb < _SP_BATCH and w0 < b:
            lead_word = lead and first == -1  # the form-1 gap's first word, spelt raw in pbuf
            cut, i, wbase, wend, wm = _raw_cut(buf, i, w0, b, held, runs, wbase, wend, wm, lead_word)
            ws[_U(nb)] = w0
            if lead_word:
                pbuf[0] = 0x20
                _copy_bytes(pbuf, 1, buf, a, cut - a)
                ln0 = 1 + cut - a
                first = nb
                kbuf, ka, kb = pbuf, np.int64(0), ln0
            else:
                kbuf, ka, kb = buf, w0, cut
            _sp_key(kbuf, ka, kb, cache, lidx, w, nb, kw0, kw1, kh)  # one call site: each is inlined
            nb += 1
            w0 = cut
        ws[_U(nb)] = w0
        for q in range(nb):
            if q == first:
                wb = pbuf
                p0 = np.int64(0)
                p1 = ln0
            else:
                wb = buf
                p0 = ws[_U(q)]
                p1 = ws[_U(q + 1)]
            pw0 = kw0[_U(q)]
            pw1 = kw1[_U(q)]
            h = kh[_U(q)]
            c = _sp_find(wb, p0, p1 - p0, _sp_raw_len(p1 - p0, pw0, pw1), cache, wide, lidx, lbytes, lids, w, pw0, pw1,
                         h, out, o)
            if c < 0:
                c = _sp_word_miss(wb, p0, p1, char_id, byte_id, mtab, pc, hs, rank, cache, wide, lidx, lbytes, lids, w,
                                  held, bsc, pw0, pw1, h, nbuf, out, o)
            o += c
        if first == 0:
            first = -2
    return o - o0


@njit_noalloc
def _split_added(buf, a, b, trie, cls, gs, ge, ms, me, mi):
    """``_match_segment`` of ``buf[a:b]`` with the trie tuple ``(tkeys, tvals, term, first,
    first_bytes, trunk, flags, base)`` (``searchable_trie``'s, then the flags), or the whole
    range as one gap when the trie is empty; ``(gaps, matches)``."""
    if trie[2].shape[0] > 0:
        return _match_segment(buf, a, b, trie[0], trie[1], trie[2], trie[3], trie[4], trie[5], trie[6], trie[7], cls,
                              gs, ge, ms, me, mi, 0, 0)
    gs[0] = a
    ge[0] = b
    return (1 if b > a else 0), 0


@njit_cached
def _sp_record(src, pos, out, o, c, rec, wd):
    """Tokens ``out[o:o + c]`` made from a buffer whose byte ``i`` came from text byte
    ``src[i]``, starting at buffer byte ``pos``: each token's first and last text bytes to
    ``rec``'s ``tb``/``te`` (``nlen[id]``: the buffer bytes of a token), ``wd`` its piece."""
    nlen, tb, te, word = rec
    for t in range(o, o + c):
        k = nlen[_U(out[_U(t)])]
        tb[_U(t)] = src[_U(pos)]
        te[_U(t)] = src[_U(pos + k - 1)]
        word[_U(t)] = wd
        pos += k


@njit_noalloc(inline="always")
def _sp_spaces(data, x, y, nbuf, n):
    """``data[x:y]`` into ``nbuf[n:]`` with every space made "▁"; returns the new ``n``.
    No branch per byte (a space every few bytes of prose was mispredicted): three bytes
    are written for each byte, the next byte written over the last two unless a space
    made them "▁". ``nbuf`` needs room for ``3 (y - x)`` bytes from ``n``."""
    for k in range(x, y):
        c = data[_U(k)]
        sp = np.int64(c == 32)
        nbuf[_U(n)] = np.uint8(0xE2) if sp else c
        nbuf[_U(n + 1)] = 0x96
        nbuf[_U(n + 2)] = 0x81
        n += 1 + 2 * sp
    return n


@njit_noalloc(inline="always")
def _sp_gap_bytes(data, x, y, prepend, nbuf, n):
    """A raw gap ``data[x:y]`` into ``nbuf[n:]`` as the normalized added-token pass sees it
    (``prepend`` 0/1: every space made "▁", ``_sp_spaces``; 2/3, ``Metaspace``: as it is, the
    spaces replaced per piece later); returns the new ``n`` (the GPU host path's walk too,
    ``sp_host._sp_docs``)."""
    if prepend < 2:
        return _sp_spaces(data, x, y, nbuf, n)
    for k in range(x, y):
        nbuf[_U(n)] = data[_U(k)]
        n += 1
    return n


def sp_form_marker(form: int) -> tuple:
    """The SentencePiece engine's normalizer form (``_sp_doc``'s ``prepend``) as its kernels
    take it: a tuple of ``form + 1`` zeros, so each form is an argument type of its own and
    Numba compiles a copy per form, in which ``len(prepend)`` is a constant (as
    ``pretok_cpu.family_marker``; decision 0036)."""
    return (0,) * (form + 1)


@njit_noalloc
def _sp_doc(data, a, b, rt, nt, cls, prepend, raw_walk, char_id, byte_id, mtab, pc, arena, tok_off, bkeys, bvals,
            whole_first, held, cache, wide, lidx, lbytes, lids, w, nbuf, pbuf, dsc, hs, rank, bsc, out, o, rec,
            nsrc, psrc):
    """Encode ``data[a:b]`` into ``out[o:]``; returns the new ``o``. ``rt``/``nt``: the raw and
    normalized tries (``_split_added``'s tuples; empty ``term`` = none).
    Scratch from the caller (``sp_block``, sized for its longest document: made once
    per block, not per document, which cost about 1.5 us a document): ``dsc``, the
    added-token passes' gaps and matches (five arrays of ``b - a + 2`` items, five of
    ``3 (b - a) + 8``), ``hs`` (``_heap_scratch``), ``rank``, ``bsc`` (``_sp_piece``'s).

    ``prepend``: the form as a marker, a tuple of ``form + 1`` zeros (``sp_form_marker``: a
    compiled copy per form); ``form`` 0/1: the normalizer form (``Replace(' ', '▁')``, with
    ``Prepend('▁')`` when 1); 2/3: no normalizer and a ``Metaspace`` pre-tokenizer (``split:
    false``) with ``prepend_scheme`` "first"/"always": each piece gets its spaces replaced and
    "▁" in front unless it starts with one, "first" only for the piece at the start of the
    text.

    ``raw_walk``: ``()``, or for the normalizer forms' ids (``rec`` None), with a non-empty
    ``held`` and no ``whole_first``, the trie tuple of ``tails`` (flat: a parallel kernel
    cannot take a tuple in a tuple): the gaps are walked raw (``_sp_piece`` on them, decision
    0041) unless one holds some tail (the normalized added tokens' contents without their
    leading "▁"s: none of them can match without one of these; an empty trie when there
    are no normalized added tokens).

    ``rec = (nlen, tb, te, word)`` (not None: a specialization of its own, the checks below
    pruned when compiled for None): each token's first and last text bytes and its
    piece recorded too (``encode_batch``): ``nsrc``/``psrc`` map the normalized buffers' bytes
    to the text's (a "▁" put in front: the piece's first byte). A raw added token's piece is
    recorded as ``-1 - piece``; a normalized added token gets ``te = -1`` (its token is the
    normalized text: the caller takes the reference path)."""
    form = len(prepend) - 1
    wd = 0
    gs, ge, ms, me, mi, s2, e2, ms2, me2, mi2 = dsc
    ng, nm = _split_added(data, a, b, rt, cls, gs, ge, ms, me, mi)
    gi = 0
    mk = 0
    while gi < ng or mk < nm:
        if mk < nm and (gi >= ng or ms[_U(mk)] < gs[_U(gi)]):
            out[_U(o)] = mi[_U(mk)]
            if rec is not None:  # a raw added token: its piece as -1 - piece (its text is the token)
                rec[1][_U(o)] = ms[_U(mk)]
                rec[2][_U(o)] = me[_U(mk)] - 1
                rec[3][_U(o)] = -1 - wd
                wd += 1
            o += 1
            mk += 1
            continue
        x = gs[_U(gi)]
        y = ge[_U(gi)]
        gi += 1
        raw_gap = False
        if len(raw_walk) > 0:  # a constant: the other copies have no raw walk
            if raw_walk[2].shape[0] == 0 or not _any_in_segment(data, x, y, raw_walk[0], raw_walk[1], raw_walk[2],
                                                                  raw_walk[3], raw_walk[4], raw_walk[5]):
                if y <= x:
                    continue
                raw_gap = True
        if raw_gap:  # walked as it is: one piece (no normalized added token can be in it)
            n2 = 1
            nm2 = 0
            s2[0] = x
            e2[0] = y
        else:  # normalize the gap into nbuf
            n = 0
            if form == 1 and y > x:
                for k in range(3):
                    nbuf[_U(n + k)] = _SP_CHAR[_U(k)]
                    if rec is not None:
                        nsrc[_U(n + k)] = x
                n += 3
            if rec is not None:  # each byte's source (a loop of its own: the ids path has no branch per byte)
                m = n
                for k in range(x, y):
                    r = 3 if data[_U(k)] == 32 and form < 2 else 1
                    for j in range(r):
                        nsrc[_U(m + j)] = k
                    m += r
            n = _sp_gap_bytes(data, x, y, form, nbuf, n)
            n2, nm2 = _split_added(nbuf, 0, n, nt, cls, s2, e2, ms2, me2, mi2)
        g2 = 0
        k2 = 0
        while g2 < n2 or k2 < nm2:
            if k2 < nm2 and (g2 >= n2 or ms2[_U(k2)] < s2[_U(g2)]):
                out[_U(o)] = mi2[_U(k2)]
                if rec is not None:
                    rec[1][_U(o)] = nsrc[_U(ms2[_U(k2)])]
                    rec[2][_U(o)] = -1
                    rec[3][_U(o)] = wd
                    wd += 1
                o += 1
                k2 += 1
                continue
            # form < 2, written on len(prepend), which Numba makes a constant: it prunes the
            # other branch; _sp_piece has one call site below, so it is inlined once (decision 0036)
            if len(prepend) < 3:
                wb = data if raw_gap else nbuf
                pa = s2[_U(g2)]
                pb = e2[_U(g2)]
                rsrc = nsrc
                rpos = pa
            else:  # Metaspace on this piece
                p0 = s2[_U(g2)]
                p1 = e2[_U(g2)]
                q = 0
                starts_sp = nbuf[_U(p0)] == 32 or (p1 - p0 >= 3 and nbuf[_U(p0)] == 0xE2 and nbuf[_U(p0 + 1)] == 0x96
                                               and nbuf[_U(p0 + 2)] == 0x81)
                if not starts_sp and (form == 3 or x + p0 == a):
                    for k in range(3):
                        pbuf[_U(k)] = _SP_CHAR[_U(k)]
                        if rec is not None:
                            psrc[_U(k)] = nsrc[_U(p0)]
                    q = 3
                if rec is not None:
                    m = q
                    for k in range(p0, p1):
                        r = 3 if nbuf[_U(k)] == 32 else 1
                        for j in range(r):
                            psrc[_U(m + j)] = nsrc[_U(k)]
                        m += r
                q = _sp_spaces(nbuf, p0, p1, pbuf, q)
                wb = pbuf
                pa = np.int64(0)
                pb = q
                rsrc = psrc
                rpos = np.int64(0)
            c = _sp_piece(wb, pa, pb, raw_gap and form == 1, char_id, byte_id, mtab, pc, arena, tok_off, bkeys, bvals,
                          whole_first, held, hs, rank, cache, wide, lidx, lbytes, lids, bsc, w, nbuf, pbuf, out, o)
            if rec is not None:
                _sp_record(rsrc, rpos, out, o, c, rec, wd)
                wd += 1
            o += c
            g2 += 1
    return o


@njit_cached(nogil=True)
def sp_block(data, doc_offsets, dst, d0, d1, rt, nt, cls, prepend, raw_walk, char_id, byte_id, mtab, arena, tok_off,
             bkeys, bvals, whole_first, held, cache, wide, lidx, lbytes, lids, pcache, w, out, counts, rec):
    """Documents ``d0..d1`` on worker ``w`` (its rows of the word caches and ``pcache``):
    the scratch for ``_sp_docs``, sized for the longest. One thread's call from Python
    (``d0``, ``d1``, ``w`` as ``int64``) and ``sp_encode_parallel``'s share one compiled
    copy (a serial wrapper of its own took 1.5 s of a cold start per ``rec`` form)."""
    big = 1
    for d in range(d0, d1):
        ln = doc_offsets[_U(d + 1)] - doc_offsets[_U(d)]
        if ln > big:
            big = ln
    nbuf = np.empty(3 * big + 8, np.uint8)
    pbuf = np.empty(3 * big + 8, np.uint8)
    m = 3 * big + 8 if rec is not None else 0
    nsrc = np.empty(m, np.int64)
    psrc = np.empty(m, np.int64)
    pc = pcache[w]
    cap = big + 2
    ncap = 3 * big + 8
    dsc = (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64),
           np.empty(cap, np.int32), np.empty(ncap, np.int64), np.empty(ncap, np.int64), np.empty(ncap, np.int64),
           np.empty(ncap, np.int64), np.empty(ncap, np.int32))
    hs = _heap_scratch(ncap)
    rank = np.empty(_SHORT + 1, np.uint64)
    bsc = (np.empty(2 * _SP_BATCH + 2, np.int64), np.empty(2 * _SP_BATCH + 1, np.uint64),
           np.empty(2 * _SP_BATCH + 1, np.uint64), np.empty(2 * _SP_BATCH + 1, np.uint64))
    _sp_docs(data, doc_offsets, dst, d0, d1, rt, nt, cls, prepend, raw_walk, char_id, byte_id, mtab, pc, arena, tok_off, bkeys,
             bvals, whole_first, held, cache, wide, lidx, lbytes, lids, w, nbuf, pbuf, dsc, hs, rank, bsc, out, counts,
             rec, nsrc, psrc)


@njit_noalloc
def _sp_docs(data, doc_offsets, dst, d0, d1, rt, nt, cls, prepend, raw_walk, char_id, byte_id, mtab, pc, arena, tok_off, bkeys,
             bvals, whole_first, held, cache, wide, lidx, lbytes, lids, w, nbuf, pbuf, dsc, hs, rank, bsc, out, counts,
             rec, nsrc, psrc):
    """``sp_block``'s loop over its documents, compiled without reference counting: in
    the counted caller each ``_sp_doc`` call took and dropped a reference to every array
    it passed (a fifth of the kernel's time on documents of 100 characters).

    ``dst[d]``: on entry the first of document ``d``'s reserved slots (``dst[d + 1]`` its
    end: the most tokens it could make); the block's documents are written back to back
    from its first document's, each's first slot put in ``dst[d]`` (never past its
    reservation: each starts at or before its own and makes at most that many tokens), so
    the slots written are dense, not one in several (the pages of slots never written
    are never touched: ``_util.sparse_empty``)."""
    o = dst[_U(d0)]
    for d in range(d0, d1):
        dst[_U(d)] = o
        o2 = _sp_doc(data, doc_offsets[_U(d)], doc_offsets[_U(d + 1)], rt, nt, cls, prepend, raw_walk, char_id, byte_id,
                     mtab, pc, arena, tok_off, bkeys, bvals, whole_first, held, cache, wide, lidx, lbytes,
                     lids, w, nbuf, pbuf, dsc, hs, rank, bsc, out, o, rec, nsrc, psrc)
        counts[_U(d)] = o2 - o
        o = o2


@njit_cached(parallel=True, nogil=True)
def sp_encode_parallel(data, doc_offsets, dst, blocks, nw, rt, nt, cls, prepend, raw_walk, char_id, byte_id, mtab, arena,
                       tok_off, bkeys, bvals, whole_first, held, cache, wide, lidx, lbytes, lids, pcache, out, counts,
                       rec):
    """``blocks`` of documents (bounds into the document list) handed to the ``nw``
    workers as they free up (``workqueue``); each worker uses its own row of the word
    caches and of ``pcache``, the pair caches with the merge table's pair filter
    (``hash_table.lookup_cached``; kept with the word caches) by ``get_thread_id()``.
    ``rec``: ``_sp_doc``'s."""
    nb = blocks.shape[0] - 1
    flags = np.zeros(nb, np.int64)
    for t in prange(nw):
        for c in range(nb):
            k = take(flags, c, np.int64(t), nw, nb)
            if k >= 0:
                sp_block(data, doc_offsets, dst, blocks[_U(k)], blocks[_U(k + 1)], rt, nt, cls, prepend, raw_walk, char_id,
                         byte_id, mtab, arena, tok_off, bkeys, bvals, whole_first, held, cache, wide, lidx, lbytes, lids,
                         pcache, get_thread_id(), out, counts, rec)


