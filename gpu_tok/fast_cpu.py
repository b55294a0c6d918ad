"""The compiled CPU engine (``device="cpu"``): packed arrays and Numba kernels.

One engine serves byte-level BPE ``tokenizer.json`` files and tiktoken encodings:

1. **pack**: every text's UTF-8, joined into ``data: uint8[N]``, ``doc_offsets: int64[n+1]``;
2. **NFC check** (a file with an ``NFC`` normalizer): the Unicode quick check, with
   the "maybe" characters resolved against the composition pairs, finds the
   documents the reference's NFC leaves unchanged; any other document is encoded by
   the reference path (exact, slower);
3. **added tokens**: the raw pass, then the normalized pass on the gaps, as the
   reference (``kernels.engine_cpu.match_added``: byte trie, leftmost-longest,
   ``single_word``/``lstrip``/``rstrip``);
4. **pre-tokenization**: the compiled scanner of the split pattern's family
   (``kernels.pretok_cpu``) marks where pieces start;
5. **BPE** over the pieces with a per-worker word cache (``kernels.engine_cpu``);
6. **compaction** into ``ids``/``row_splits``; the post-processor's template ids
   around each row when ``add_special_tokens``.

What the engine serves is decided once per tokenizer (``plan_for_config``); for
anything else ``device="cpu"`` runs the reference path, which gives the same result.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from . import config as C
from ._util import _ITEMS_OK, _VAR_HEADER, PackedTexts, sparse_empty, text_list
from .cpu_ref import post_processors
from .cpu_ref.pipeline import check_text
from .encoding import Encoding, EncodingRows, PairRows, TokenStrings
from .kernels import pack_cpu as PK
from .kernels.engine_cpu import _MARK_ROWS, _SHARED_ROWS
from .kernels.forksafe import serial_now
from .kernels.hash_table import interleave, kernel_bytes, new_pair_cache, pair_filter

_PARALLEL_MIN_BYTES = 1 << 18  # below this one thread does all (the thread pool costs ~30 ms per call here)
_CACHE_SLOTS = 1 << 20  # short-piece cache slots per worker (32 bytes each: 32 MiB)
_WIDE_SLOTS = 1 << 18  # short pieces with 7..14 ids (64 bytes each: 16 MiB)
_NFC_SPANS_KEPT = 1 << 16  # normalized spans an engine keeps (nfc_normalize)
_LONG_SLOTS = 1 << 18  # long-piece cache entries per worker, four-way sets (32 bytes each: 8 MiB)
_LONG_BYTES = 1 << 22  # their bytes: a ring of 4 MiB per worker
_LONG_ID_SLOTS = 1 << 21  # their ids: a ring of 8 MiB per worker
_NFC_LOADED = [False]  # the NFC path's kernels loaded (ByteBPEEngine._load_nfc_kernels)
_NFC_PARALLEL_MIN = 1 << 16  # bytes of changed documents from which nfc_spans runs in parallel
_NO_HINT = np.zeros(0, np.uint8)  # match_added's hint when every segment is searched
_NO_IDS = np.zeros(0, np.int32)  # no ids: a template's empty side; short_seed's byte-level char_id / byte_id
_NO_PAIRS = np.zeros((0, 3), np.int64)  # pack_probed's pairs: none
_NO_OFFS = np.zeros(0, np.int64)  # encode_fused_serial's added-token matches: none
_NO_TEXT = np.zeros(0, np.uint8)  # an empty text's bytes (CpuSentencePieceEngine.quick_ids)
_TEXT_PROBE_TOKENS = 16  # CpuTiktokenEngine.ordinary_ids searches a text for at most this many tokens
_PROBE_ADDED = 1  # pack_probed's bit: a first byte of an added token's content
_PROBE_NFC = 2  # pack_probed's bit: a byte NFC may change a character from
_KEEP_OUT_MAX = 1 << 29  # bytes of parallel id scratch an engine keeps between calls (KeptArray, _scratch_out)
_REC32_MAX = (1 << 31) - 1  # packed text up to this many bytes: SentencePiece records (text positions) as int32
_SPARE_SETS = 4  # word-cache sets an engine keeps for calls made while another holds its kept set
_KEEP_TEXT_MAX = 1 << 27  # bytes of packed text an engine keeps a buffer for between calls (KeptArray)
_UNITS_PER_THREAD = 32  # work-queue blocks per thread (byte-level fused, SentencePiece, Unigram, WordPiece,
# CLIP scan, the GPU path's host steps, the byte-level offsets in spans_cpu); was 8: a worker's
# last block is never taken over (workqueue.take), so a worker whose run went slower ended a
# block or two after the other, which idled meanwhile (decision 0019, fifth addendum)


def plan_threads(num_threads: Optional[int], n_bytes: int) -> Tuple[int, bool]:
    """``(threads, parallel)``: at most the cores; one thread below ``_PARALLEL_MIN_BYTES``."""
    threads = default_threads() if num_threads is None else max(1, int(num_threads))
    threads = min(threads, default_threads())
    return threads, threads > 1 and n_bytes >= _PARALLEL_MIN_BYTES


_THREAD_FNS: list = []  # Numba's (get, set) of the calling thread's thread count, once found


def _thread_fns():
    """``(get, set)`` of the calling thread's Numba thread count: the threading layer's own
    functions once its threads are launched (0.2 us each, where ``numba.get_num_threads`` and
    ``set_num_threads`` check and launch first: 3.5 us a ``numba_threads`` block, about 7 of
    a one-word ``encode_batch``'s 120 us); the public ones where this Numba has no such
    attributes. The caller passes a valid count (``plan_threads``')."""
    if not _THREAD_FNS:
        import numba
        from numba.np.ufunc import parallel as P

        numba.get_num_threads()  # launches the threads, as the public functions do
        get, put = getattr(P, "_get_num_threads", None), getattr(P, "_set_num_threads", None)
        _THREAD_FNS[:] = [get, put] if callable(get) and callable(put) else [numba.get_num_threads,
                                                                              numba.set_num_threads]
    return _THREAD_FNS


class numba_threads:
    """Run a block with Numba's thread count set to ``n`` (nothing when ``n`` is None), then restore."""

    def __init__(self, n: Optional[int]):
        self.n = n

    def __enter__(self):
        if self.n is not None:
            get, put = _THREAD_FNS or _thread_fns()
            self.prev = get()
            if self.prev != self.n:
                put(self.n)

    def __exit__(self, *exc):
        if self.n is not None and self.prev != self.n:
            _THREAD_FNS[1](self.prev)


class KeptArray:
    """An array an engine keeps between calls, up to ``limit`` bytes: a fresh one past
    glibc's reuse of freed blocks (32 MiB) is zero-filled page by page as it is first
    touched, on every call, and threads that fault at once contend. A bigger request
    replaces it (the old one dropped first: never two held at once) with 25% room to grow
    into, so batches of about the same size do not each make a new one; past ``limit`` a
    fresh array is made. Kept: the packed text (``pack_probed``'s ``kept``; 48 MB, two
    threads, 3.3 / 4.0 ms (best / median) kept against 6.6 / 62 ms fresh; one thread 5.5 /
    6.5 against 9.4 / 11.5) and the parallel id scratch (``ByteBPEEngine._scratch_out``),
    decision 0019. One call at a time uses it: ``hold`` (None when another thread holds it;
    that call makes a fresh array), or ``lock``, a lock the engine already takes for it;
    what ``take`` returns must not outlive the hold. ``alloc(n, dtype)``: how the kept array
    is made (default ``np.empty``, its pages then faulted in; the GPU engine passes its
    backend's pinned allocation)."""

    def __init__(self, dtype, limit: int, lock: Optional[threading.Lock] = None, alloc=None):
        self.dtype = np.dtype(dtype)
        self.limit = int(limit)
        self._buf: Optional[np.ndarray] = None
        self._lock = threading.Lock() if lock is None else lock
        self._alloc = alloc

    def hold(self) -> "_KeptHold":
        return _KeptHold(self)

    def take(self, n: int) -> np.ndarray:
        """``dtype[n]`` (the kept array's first ``n`` items, or a fresh array past the limit)."""
        size = self.dtype.itemsize
        if n * size > self.limit:
            return np.empty(n, self.dtype)
        if self._buf is None or self._buf.shape[0] < n:
            grow = min(n + n // 4, self.limit // size)
            self._buf = None  # the old one dropped first: never two held at once
            if self._alloc is not None:
                self._buf = self._alloc(max(grow, 1), self.dtype)
            else:
                self._buf = np.empty(max(grow, 1), self.dtype)
                # its pages faulted in here by one thread: nearly every page of it is written anyway,
                # and threads faulting at once were slow on the VM measured (decision 0023)
                self._buf.view(np.uint8)[::4096] = 0
        return self._buf[:n]

    def holds(self, a: np.ndarray) -> bool:
        """Whether ``a`` lies in the kept array (what ``take`` returned, or part of it)."""
        b = self._buf
        if b is None or a.dtype != self.dtype:
            return False
        lo, p = b.ctypes.data, a.ctypes.data
        return lo <= p and p + a.nbytes <= lo + b.nbytes


class _KeptHold:
    def __init__(self, kept: KeptArray):
        self.kept = kept
        self.locked = False

    def __enter__(self) -> Optional[KeptArray]:
        self.locked = self.kept._lock.acquire(blocking=False)
        return self.kept if self.locked else None

    def __exit__(self, *exc):
        if self.locked:
            self.kept._lock.release()


_HUGE_PAGE = 1 << 21  # a transparent huge page (x86-64, and the usual arm64 setting)


def aligned_zeros(shape, dtype, align: int = 64) -> np.ndarray:
    """``np.zeros(shape, dtype)`` whose data starts on an ``align``-byte boundary (the word
    cache's two-entry sets must each sit in one 64-byte cache line). From ``_HUGE_PAGE``
    bytes: an anonymous mapping of its own, on a huge-page boundary, that the system is
    asked to back with transparent huge pages (``madvise(MADV_HUGEPAGE)``: Linux's default
    THP setting, "madvise", gives them to no other memory). The word caches are probed at
    random places, each probe a miss in the address-translation cache on 4 KiB pages (a
    short cache is 32 MiB a worker); with 2 MiB pages their translations stay cached. Where
    the system has no such pages or refuses, the same zeroed memory on ordinary pages."""
    import mmap

    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    if n >= _HUGE_PAGE and hasattr(mmap, "MADV_HUGEPAGE"):
        # private (the default anonymous mapping is shared memory, whose huge pages are
        # another setting, off by default); zeroed; unmapped when the last view of it goes
        m = mmap.mmap(-1, n + _HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        try:
            m.madvise(mmap.MADV_HUGEPAGE)
        except OSError:
            pass
        raw = np.frombuffer(m, np.uint8)
        k = (-raw.ctypes.data) % _HUGE_PAGE
    else:
        raw = np.zeros(n + align, np.uint8)
        k = (-raw.ctypes.data) % align
    return raw[k:k + n].view(dtype).reshape(shape)


def byte_blocks(starts, total: int, n: int, parts: int) -> np.ndarray:
    """``int64`` bounds cutting ``n`` items (item ``k`` starts at byte ``starts[k]``) into
    at most ``parts`` blocks of about equal bytes out of ``total``: 0, ``n``, and the first
    item at or after each of ``parts - 1`` evenly spaced bytes, without repeats."""
    # integer bytes: float ones would make searchsorted convert all of ``starts`` to float
    # first (2.7 ms for 900k pieces, where the search itself takes microseconds)
    if n <= 1:  # (a call of one text: 2 us here against 20 through the general path)
        return np.arange(n + 1, dtype=np.int64)
    cuts = np.searchsorted(starts, np.arange(parts + 1, dtype=np.int64) * int(total) // max(int(parts), 1))
    # the cuts rise with the bytes (``starts`` is sorted): 0, the cuts at most ``n``, then
    # ``n`` are in order, and repeats are neighbours
    c = np.empty(parts + 3, np.int64)
    c[0] = 0
    np.minimum(cuts, n, out=c[1:-1])
    c[-1] = n
    keep = np.empty(parts + 3, np.bool_)
    keep[0] = True
    np.not_equal(c[1:], c[:-1], out=keep[1:])
    return c[keep]


def running_offsets(sizes: np.ndarray) -> np.ndarray:
    """``int64[n + 1]``: 0, then the running sums of ``sizes`` (where each item starts, and the
    end); one item without ``np.cumsum`` (about a microsecond of a one-text call's work)."""
    n = sizes.shape[0]
    out = np.zeros(n + 1, np.int64)
    if n == 1:
        out[1] = sizes[0]
    elif n:
        np.cumsum(sizes, out=out[1:])
    return out


def on_huge_pages(a: np.ndarray) -> np.ndarray:
    """``a``, or from ``_HUGE_PAGE`` bytes a copy of it in ``aligned_zeros``' memory (transparent
    huge pages where the system gives them): for the tables the miss path probes at random
    (the merge table: 16 MiB for llama3, and the vocabulary's bytes table)."""
    if a.nbytes < _HUGE_PAGE:
        return a
    b = aligned_zeros(a.shape, a.dtype)
    b[...] = a
    return b


def faulted_in(*arrays):
    """The arrays, each page of them written once here (with the byte it holds: pages the
    system maps on the first write). A kept word cache is filled at random places, a page
    fault each the first time; on this VM that made the first 4 MB a fresh engine encodes
    after its warm-up 2-3x slower than the next (llama3, english_prose, two threads:
    67-69 ms against 20-25 with the caches faulted in when made). One thread, once per
    worker row (``fault_rows``: about 70 MiB a worker), when a call first uses it; a call's
    private caches (another call holds the kept ones) are not. Each array C-contiguous
    (a view of it is written, not a copy)."""
    for a in arrays:
        flat = a.reshape(-1).view(np.uint8)
        flat[::4096] = flat[::4096].copy()
    return arrays


def fault_rows(arrays, done: int, workers: int) -> int:
    """Rows ``done..workers - 1`` (the first axis: one per worker thread) of each of the
    kept ``arrays`` faulted in (``faulted_in``); returns the rows done now. An engine makes
    its kept caches for every thread the process may use (``default_threads()``, so a call
    on more threads later finds them), but the pages of a worker's rows are touched only
    once a call runs on that worker. Before, the first call faulted in the rows of all of
    them: ten short texts on one thread with ``NUMBA_NUM_THREADS=16`` left 1.4 GB resident
    (gpt2; 12.5 s on this VM, whose first touch of memory is slow), now 0.34 GB (0.7 s)."""
    if workers > done:
        faulted_in(*(a[done:workers] for a in arrays))
    return max(done, workers)


def word_caches(workers: int):
    """Empty short and wide word caches for ``workers`` threads (``kernels.engine_cpu``): the
    sets of four entries are 128-byte aligned; the wide cache's slots are followed by its
    mark bits (``engine_cpu._MARK_ROWS`` rows), and ``engine_cpu._SHARED_ROWS`` rows follow
    the workers' ones: the byte-level engine's shared word table (``shared_prepare``)."""
    return (aligned_zeros((workers, _CACHE_SLOTS, 4), np.uint64, 128),
            aligned_zeros((workers + _SHARED_ROWS, _WIDE_SLOTS + _MARK_ROWS, 8), np.uint64, 128))


def own_rows(cache):
    """The word caches (``_alloc_word_cache``'s arrays) less the shared word table's rows:
    what ``faulted_in`` touches when an engine keeps caches for fewer workers than use the
    table (``shared_words``; its pages are then mapped only if a call turns it on)."""
    return tuple(a[:-_SHARED_ROWS] if k == 1 else a for k, a in enumerate(cache))


_SHARED_MIN_THREADS = 8  # GPU_TOK_SHARED_WORDS unset: the shared word table from this many threads


def shared_words(workers: int) -> bool:
    """Whether a call on ``workers`` threads uses the byte-level engine's shared word table
    (``engine_cpu._shared_get``; decision 0019, addendum of 2026-12-04): from
    ``_SHARED_MIN_THREADS`` threads (on two it cost about as much as it saved); the
    environment variable ``GPU_TOK_SHARED_WORDS`` set to 1 turns it on for every call on
    two threads or more, 0 off."""
    if workers < 2:
        return False
    env = os.environ.get("GPU_TOK_SHARED_WORDS", "").strip()
    if env in ("0", "1"):
        return env == "1"
    return workers >= _SHARED_MIN_THREADS


def shared_prepare(wide: np.ndarray, on: bool) -> None:
    """Before a call that uses the word caches ``wide`` (``word_caches``' second array; the
    caller holds them alone): turn the shared word table (its last rows) on or off for the
    call; when on, the workers' counts of the call start again, and the table is cleared
    once its entries are half written (their runs of probes fill up: most new pieces could
    then not be put there). Off, one write (every call passes here: 10 us with the counts)."""
    slots = wide.shape[1] - _MARK_ROWS
    if not on:
        wide[wide.shape[0] - _SHARED_ROWS, slots, 0] = 0
        return
    rows = wide[-_SHARED_ROWS:]
    marks = rows[0, slots:]  # [0, 0]: on; [1 + w]: worker w's counts (engine_cpu)
    if int(marks[1:, 0].sum()) >= _SHARED_ROWS * slots // 2:
        rows[:, :slots] = 0
        marks[1:, 0] = 0
    marks[1:, 1:4] = 0
    marks[0, 0] = 1


def long_caches(workers: int, small: bool = False):
    """Empty long-piece caches for ``workers`` threads (``kernels.engine_cpu``): the index
    (four-way sets, the last row the write counters), the bytes ring and the ids ring;
    ``small``: 1/256 of the size (a call that cannot use the kept ones), one set at least
    (the sizes are powers of two: the index and the rings are addressed by masks)."""
    k = 8 if small else 0
    return (aligned_zeros((workers, max(_LONG_SLOTS >> k, 4) + 1, 4), np.uint64),
            aligned_zeros((workers, max(_LONG_BYTES >> k, 64)), np.uint8),
            aligned_zeros((workers, max(_LONG_ID_SLOTS >> k, 32)), np.int32))


MAX_IDS = 1 << 21  # ids the engines serve (kernels.engine_cpu._ID_BITS: three to a 64-bit word)


class NotServed(Exception):
    """The compiled engine does not serve this tokenizer (the message says why)."""


def default_threads() -> int:
    """The threads a call may use: Numba's pool, or one in a process forked after the
    parent started Numba's OpenMP layer (``kernels.forksafe``: no parallel region there)."""
    import numba

    return 1 if serial_now() else int(numba.config.NUMBA_NUM_THREADS)


@dataclass
class EngineSpec:
    family: str  # pre-tokenizer family of kernels.pretok_cpu
    dialect: str  # "onig" (tokenizer.json) or "tiktoken"
    init_ids: np.ndarray  # int32[256]: the id of each single byte
    token_bytes: list  # bytes of each model id (None where the id has none)
    merges: tuple  # (keys, values) of kernels.hash_table
    whole_first: bool  # ignore_merges / tiktoken: a piece found in the vocab is one token
    raw_tokens: list  # [(content bytes, id, flags)] matched on the raw text
    norm_tokens: list  # [(content bytes, id, flags)] matched on the normalized gaps
    nfc: bool = False
    bytes_table: Optional[tuple] = None  # a prebuilt kernels.engine_cpu.build_bytes_table(token_bytes)


_NO_SPELLING = (np.zeros(0, np.uint8), np.zeros(0, np.int64))  # short_seed's karena / ktok_off: keys of the tokens' bytes
_NO_GRID = np.zeros(0, np.uint64)  # and its grid for the SentencePiece engine


class ByteBPEEngine:
    """The compiled path for one byte-level BPE vocabulary (thread-safe)."""

    _shares_words = True  # its kernels use the shared word table (``shared_words``)
    _seeds_words = True  # its kept short cache starts with the vocabulary (``_seed_short``)

    def __init__(self, spec: EngineSpec):
        from .kernels import engine_cpu as K
        from .kernels import pretok_cpu, spans_cpu

        self.spec = spec
        self._K = K
        self._pretok = pretok_cpu
        self._spans = spans_cpu
        self._scan_args = None  # the scanner's (family marker, end_whole, class table, fold table)
        self.init_ids = np.ascontiguousarray(spec.init_ids, np.int32)
        self.mtab = on_huge_pages(interleave(*spec.merges))
        self.grid = K.byte_pair_grid(self.init_ids, self.mtab)
        self.pfilt = pair_filter(self.mtab)  # after each worker's pair cache (``_alloc_word_cache``)
        bt = spec.bytes_table if spec.bytes_table is not None else K.build_bytes_table(spec.token_bytes)
        bt = tuple(on_huge_pages(x) for x in bt)
        self.arena, self.tok_off, self.bkeys, self.bvals = bt
        # the table the miss path looks pieces up in (whole_first): only the exceptions
        self.wkeys, self.wvals = (tuple(on_huge_pages(x) for x in K.whole_first_table(*bt, self.init_ids, self.grid,
                                                                                      self.mtab))
                                  if spec.whole_first else (self.bkeys, self.bvals))
        # the fused kernels' model arguments (after the scanner's)
        self._model_args = (self.init_ids, self.grid, self.mtab, self.arena, self.tok_off, self.wkeys, self.wvals,
                            spec.whole_first)
        self.tok_len = np.diff(self.tok_off).astype(np.int64)
        from .cpu_ref.unicode_props import _np_flags

        self.cls = _np_flags()
        self.nfc = nfc_tables() if spec.nfc else None
        self._set_added(spec.raw_tokens, spec.norm_tokens)
        self._nfc_done = {}  # span bytes -> its NFC bytes (nfc_normalize), kept across calls, bounded
        self._lock = threading.Lock()
        self._wcache = None
        self._wrows, self._wshared = 0, False  # the kept caches' worker rows and shared table faulted in
        self._spare_lock = threading.Lock()
        self._spares, self._spares_out = [], {}  # spare cache sets: free ones, and those in use by id
        self._seed = [None]  # short_seed's entries, made once (with_added's copies share them)
        self._out = KeptArray(np.int32, _KEEP_OUT_MAX, self._lock)  # the parallel id scratch (_scratch_out)

    def with_added(self, raw_tokens) -> "ByteBPEEngine":
        """The same engine (tables and caches shared) matching other raw added tokens."""
        import copy

        e = copy.copy(self)
        e._set_added(raw_tokens, [])
        return e

    def _set_added(self, raw_tokens, norm_tokens):
        K = self._K
        self._contents = [c.decode("utf-8", "replace") for c, _i, _f in (*raw_tokens, *norm_tokens)]
        self._tries = []
        for toks in (raw_tokens, norm_tokens):
            self._tries.append(_trie_tuple(K, toks) if toks else None)
        self.probe = self._make_probe()
        self._probe_bits = frozenset() if self.probe is None else frozenset(self.probe[:, 2].tolist())
        self.probe_pairs = _NO_PAIRS
        first = raw_tokens or norm_tokens
        if self._probed(_PROBE_ADDED) and first and min(len(c) for c, _i, _f in first) >= 2:
            pairs = sorted({(c[0], c[1]) for c, _i, _f in first})
            if len(pairs) <= 4:
                self.probe_pairs = np.array([(a, b, _PROBE_ADDED) for a, b in pairs], np.int64)

    def _make_probe(self) -> Optional[np.ndarray]:
        """What packing tests each text for (``pack_probed``; rows ``(lo, hi, bit)`` of
        ``pack_cpu.gather_views_probe``), or None: bit 1 (``_PROBE_ADDED``), the first
        bytes of the first matcher's contents when there are at most three (a text without
        one is not searched for them, ``_segments``); bit 2 (``_PROBE_NFC``), with NFC, the
        bytes from the lowest lead byte of a character NFC may change up (a text without
        one is its own NFC, ``_nfc_changed``). ``self.probe_pairs`` (``_set_added``): with
        bit 1, when the contents have two bytes or more and begin in at most four byte
        pairs, those pairs (bit 1 then only where one occurs: "<|" is rare where "<" is
        not, in code)."""
        rows = []
        active = [t for t in self._tries if t is not None]
        fb = np.flatnonzero(active[0][3]) if active else np.zeros(0, np.int64)
        if 1 <= fb.shape[0] <= 3:
            rows += [(b, b, _PROBE_ADDED) for b in fb.tolist()]
        if self.nfc is not None:  # set before _set_added (__init__), copied by with_added
            rows.append((int(self.nfc[5][0]), 0xFF, _PROBE_NFC))
        return np.array(rows, np.int64).reshape(-1, 3) if rows else None

    def _scanner(self):
        """``pretok_cpu._prepare`` of this engine's pre-tokenizer (made once: 3 us a call)."""
        if self._scan_args is None:
            self._scan_args = self._pretok._prepare(self.spec.family, self.spec.dialect)
        return self._scan_args

    def _probed(self, bit: int) -> bool:
        """Whether ``self.probe`` has rows for ``bit`` (their bits kept by ``_set_added``)."""
        return bit in self._probe_bits

    # -------------------------------------------------------------------- core
    def pieces(self, data: np.ndarray, doc_offsets: np.ndarray, skip: Optional[np.ndarray], parallel: bool,
               hint: Optional[np.ndarray] = None):
        """``(starts, ends, special)`` of every piece of the active documents (``hint``: as
        ``_segments`` takes it)."""
        seg_s, seg_e, m_s, m_e, m_id = self._segments(data, doc_offsets, skip, parallel, hint)
        N = data.shape[0]
        mask = np.zeros(N, np.uint8)
        if seg_s.shape[0] and not parallel:  # the serial scan itself: the segments are ours, in order
            self._pretok._scan_serial(data, seg_s, seg_e, *self._scanner(), mask)
        elif seg_s.shape[0]:
            self._pretok.scan_mask(data, seg_s, seg_e, self.spec.family, self.spec.dialect, mask, parallel=parallel)
        if m_s.shape[0]:
            mask[m_s] = 2
        if skip is not None:
            sk = (skip != 0) & (doc_offsets[1:] > doc_offsets[:-1])
            mask[doc_offsets[:-1][sk]] = 3
        # documents are contiguous and each non-empty one starts with a marked byte, so a
        # piece ends where the next one starts (a match where it ends: it can overlap the
        # next one's start); m_s is in text order, as the marks
        spans_cpu = self._spans
        if not parallel:
            return spans_cpu.mask_pieces_serial(mask, m_id, m_e)
        import numba

        return spans_cpu.mask_pieces(mask, m_id, m_e, spans_cpu.mask_bounds(N, 4 * numba.get_num_threads()))

    def encode_pieces(self, data, starts, ends, special, parallel: bool, threads: int):
        """``(ids, piece_token_starts)`` for given pieces (the path that keeps offsets). The
        parallel path's scratch is the kept one of ``run_ids`` (``_scratch_out``) while the
        lock is held, and the ids are gathered from it before the lock is let go."""
        K = self._K
        P = starts.shape[0]
        counts = np.zeros(P, np.int64)
        opos = np.zeros(P, np.int64)
        locked = self._lock.acquire(blocking=False)
        cache = None
        try:
            out = self._scratch_out(data.shape[0]) if locked and parallel else np.empty(max(data.shape[0], 1), np.int32)
            cache = self._word_cache(locked, threads if parallel else 1)
            args = (*self._model_args, *cache, out, opos, counts)
            if parallel and P > 1:
                blocks = byte_blocks(starts, data.shape[0], P, 8 * threads)
                K.encode_pieces_parallel(data, starts, ends, special, blocks, np.int64(threads), *args)
                ids, pts = K.gather_pieces_parallel(out, opos, counts, np.int64(4 * threads))
            else:
                K.encode_piece_range(data, starts, ends, special, 0, P, *args[:-3], 0, *args[-3:])  # worker 0
                pts = np.zeros(P + 1, np.int64)
                np.cumsum(counts, out=pts[1:])
                ids = np.empty(int(pts[-1]), np.int32)
                K.gather_serial(out, opos, counts, pts, ids)
        finally:
            self._word_cache_done(cache)
            if locked:
                self._lock.release()
        return ids, pts

    def _nfc_changed(self, data, doc_offsets, skip, hint: Optional[np.ndarray] = None):
        """Boolean per document: NFC (this file has it) would change it, and it is not
        skipped already (``hint``: ``pack_probed``'s; a document without its bit
        ``_PROBE_NFC`` is not looked at)."""
        if not _NFC_LOADED[0]:
            self._load_nfc_kernels()
        h = _NO_HINT if hint is None or not self._probed(_PROBE_NFC) else hint & _PROBE_NFC
        bad = self._K.nfc_unchanged_docs(data, doc_offsets, *self.nfc, h) == 0
        if skip is not None:
            bad &= skip == 0
        return bad

    def _load_nfc_kernels(self):
        """Run the path of a document NFC changes once, on a tiny one (``e`` and a combining
        acute: NFC makes it ``\u00e9``), serial and in parallel, so that its kernels are
        loaded from Numba's cache now, in the first call with NFC of the process, not in
        whichever later call first meets such a document (qwen3: 24 ms for the first
        English prose document NFC changes, 25 kB; an 8 MB batch of that file encodes in
        25-45 ms). Once per process (the kernels are the module's)."""
        _NFC_LOADED[0] = True
        K = self._K
        text = np.frombuffer("e\u0301".encode("utf-8"), np.uint8)
        offs = np.array([0, text.shape[0]], np.int64)
        self._nfc_prepass(text.copy(), offs, None, False)  # the batch copied
        self._nfc_prepass(text.copy(), offs, None, True)  # written back in place
        K.nfc_spans_parallel(text.copy(), offs[:-1].copy(), offs[1:].copy(), *self.nfc)

    def _nfc_skip(self, data, doc_offsets, skip, hint: Optional[np.ndarray] = None):
        """``skip`` plus the documents the reference's NFC would change (files with NFC;
        ``hint``: ``pack_probed``'s, as ``_nfc_changed`` takes it)."""
        if self.nfc is None:
            return skip
        bad = self._nfc_changed(data, doc_offsets, skip, hint).astype(np.uint8)
        return bad if skip is None else (skip | bad)

    def _nfc_prepass(self, data, doc_offsets, skip, in_place: bool = False, hint: Optional[np.ndarray] = None):
        """``(data, doc_offsets, doc_ends, skip)`` for ``run_ids`` on text whose gaps must be
        NFC: the documents NFC changes normalized (``nfc_normalize``), so the whole batch is
        encoded in one pass; where that cannot be done (the raw added tokens would match
        differently) they are added to ``skip`` instead, for the caller. ``doc_ends``: None
        (each document ends where the next starts), or where each ends when the changed
        documents were normalized in place (``in_place``: ``data`` is the caller's own
        buffer; only when none grows): their tails are then left out, and the batch is
        not copied (qwen3, 8 MB of English prose, 6 documents changed: the copy was 0.7 of
        the pre-pass's 0.85 ms). Normalizing first, not encoding the changed documents on
        their own and splicing their rows into the result after (a second pass, a copy of
        every id): 8 MB of the multilingual file, qwen3, 68 documents changed, one thread
        61.7 -> 59.9 ms. ``hint``: as ``_nfc_changed``."""
        if self.nfc is None:
            return data, doc_offsets, None, skip
        bad = self._nfc_changed(data, doc_offsets, skip, hint)
        if not bad.any():
            return data, doc_offsets, None, skip
        docs = np.flatnonzero(bad)
        # the changed documents normalized on their own (a compact copy of them), then
        # written back in place, or the batch copied with them replaced
        starts, ends = doc_offsets[:-1][docs], doc_offsets[1:][docs]
        sub = np.zeros(docs.shape[0] + 1, np.int64)
        np.cumsum(ends - starts, out=sub[1:])
        part = np.empty(int(sub[-1]), np.uint8)
        self._K.copy_ranges(data, starts, part, sub[:-1].copy(), ends - starts)
        norm = self.nfc_normalize(part, sub)
        if norm is None:
            bad = bad.astype(np.uint8)
            return data, doc_offsets, None, bad if skip is None else (skip | bad)
        new, noff = norm
        lens = np.diff(noff)
        if in_place and (lens <= ends - starts).all():
            self._K.copy_ranges(new, noff[:-1].copy(), data, starts, lens)
            doc_ends = doc_offsets[1:].copy()
            doc_ends[docs] = starts + lens
            return data, doc_offsets, doc_ends, skip
        import numba

        grow = np.zeros(docs.shape[0] + 1, np.int64)
        np.cumsum(lens - (ends - starts), out=grow[1:])
        data2 = np.empty(data.shape[0] + int(grow[-1]), np.uint8)
        self._K.splice_spans(data, starts, ends, np.arange(docs.shape[0]), new, noff, grow, data2,
                             4 * numba.get_num_threads())
        return data2, doc_offsets + grow[np.searchsorted(ends, doc_offsets, side="right")], None, skip

    def nfc_normalize(self, data: np.ndarray, doc_offsets: np.ndarray, spans: bool = False):
        """The documents with every gap between raw added-token matches NFC-normalized as
        the reference does (it splits the raw text at those tokens first, then normalizes
        each gap on its own): ``(data, doc_offsets)``, to encode with
        ``run_ids(..., normalized=True)``, or None where the raw tokens would not match the
        new text where they matched the old (a token the normalized text forms or loses at
        its edges), which the caller then leaves to the reference.

        Only the spans ``kernels.engine_cpu.nfc_spans`` finds are normalized (with the
        reference's own ``cpu_ref`` normalizer, from boundary to boundary); the rest is
        copied. ``spans``: also ``NfcSpans`` (where they were and are, for ``nfc_char_map``).
        """
        from .cpu_ref.normalizers import normalize_str

        K = self._K
        starts, ends = doc_offsets[:-1], doc_offsets[1:]
        trie = self._tries[0]
        if trie is not None:
            seg_s, seg_e, m_s, m_e, m_id = K.match_added(data, starts, ends, *trie, self.cls, _NO_HINT)
        else:
            keep = ends > starts
            seg_s, seg_e = starts[keep], ends[keep]
        import numba

        # the changed documents' spans in parallel when the caller runs parallel (8 MB of the
        # multilingual file, qwen3: 68 documents, 640 kB)
        if numba.get_num_threads() > 1 and seg_s.shape[0] > 1 and (seg_e - seg_s).sum() >= _NFC_PARALLEL_MIN:
            sp_s, sp_e = K.nfc_spans_parallel(data, seg_s, seg_e, *self.nfc)
        else:
            sp_s, sp_e = K.nfc_spans(data, seg_s, seg_e, *self.nfc)
        # the distinct spans (they recur: the same few accented letters), grouped by hash
        # and checked byte for byte; each normalized once, then the text rebuilt in one pass
        _u, first, which = np.unique(K.span_keys(data, sp_s, sp_e), return_index=True, return_inverse=True)
        which = which.reshape(-1)
        if not K.spans_equal(data, sp_s, sp_e, first[which]):  # a 64-bit hash collision: no grouping
            first = np.arange(sp_s.shape[0])
            which = first
        olds = [data[a:b].tobytes() for a, b in zip(sp_s[first].tolist(), sp_e[first].tolist())]
        # the engine keeps what it normalized across calls (bounded: emptied when full;
        # another thread may empty it meanwhile, so this call reads its own dict)
        kept = self._nfc_done
        norm_of = {old: kept.get(old) for old in olds}
        new = [old for old, v in norm_of.items() if v is None]
        if new:
            nfc = C.UnicodeNormalizer("NFC")
            for old in new:
                norm_of[old] = normalize_str(nfc, old.decode("utf-8")).encode("utf-8")
            if len(kept) + len(new) > _NFC_SPANS_KEPT:
                kept.clear()
            kept.update((old, norm_of[old]) for old in new)
        news = [norm_of[old] for old in olds]
        roff = np.zeros(len(news) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, news), np.int64, len(news)), out=roff[1:])
        repl = np.frombuffer(bytearray().join(news), np.uint8) if roff[-1] else np.zeros(1, np.uint8)
        grow = np.zeros(sp_s.shape[0] + 1, np.int64)
        np.cumsum((roff[1:] - roff[:-1])[which] - (sp_e - sp_s), out=grow[1:])
        data2 = np.empty(data.shape[0] + int(grow[-1]), np.uint8)
        K.splice_spans(data, sp_s, sp_e, which, repl, roff, grow, data2, 4 * numba.get_num_threads())

        def moved(p):  # where byte position p (never inside a span) is in the new text
            return p + grow[np.searchsorted(sp_e, p, side="right")]

        offsets2 = moved(doc_offsets)
        if trie is not None:
            got = K.match_added(data2, offsets2[:-1], offsets2[1:], *trie, self.cls, _NO_HINT)
            want = (moved(seg_s), moved(seg_e), moved(m_s), moved(m_e), m_id)
            if any(g.shape != w.shape or not np.array_equal(g, w) for g, w in zip(got, want)):
                return None
        if spans:
            new_s = sp_s + grow[:-1]
            return data2, offsets2, NfcSpans(sp_s, sp_e, new_s, new_s + (roff[1:] - roff[:-1])[which], which,
                                             olds, news)
        return data2, offsets2

    def _segments(self, data, doc_offsets, skip, parallel: bool = False, hint: Optional[np.ndarray] = None,
                  doc_ends: Optional[np.ndarray] = None):
        """Added-token matching: ``(seg_s, seg_e, m_s, m_e, m_id)`` (gaps left for the
        pre-tokenizer, and the matches in text order; a match can overlap the whitespace
        the one before it took, ``match_added``; ``parallel``: the documents shared between
        Numba's threads, ``match_added_parallel``). ``hint``: per document, 0 where it
        holds none of the first bytes of ``self.probe`` (``pack_probed``, bit
        ``_PROBE_ADDED``), or none of the byte pairs of ``self.probe_pairs``: the first
        matcher leaves it whole without searching it. ``doc_ends``: where each document
        ends, when not where the next starts (``_nfc_prepass``)."""
        K = self._K
        seg_s = doc_offsets[:-1]
        seg_e = doc_offsets[1:] if doc_ends is None else doc_ends
        keep = seg_e > seg_s
        if skip is not None:
            keep &= skip == 0
        seg_s = np.ascontiguousarray(seg_s[keep])
        seg_e = np.ascontiguousarray(seg_e[keep])
        hint = (_NO_HINT if hint is None or not self._probed(_PROBE_ADDED)
                else np.ascontiguousarray(hint[keep] & _PROBE_ADDED))
        ms, me, mi = [], [], []
        for trie in self._tries:
            if trie is None or seg_s.shape[0] == 0:
                continue
            if hint.shape[0] and not hint.any():  # no document holds a content's first bytes
                hint = _NO_HINT
                continue
            if parallel:
                import numba

                seg_s, seg_e, m_s, m_e, m_id = K.match_added_parallel(data, seg_s, seg_e, *trie, self.cls, hint,
                                                                       4 * numba.get_num_threads())
            else:
                seg_s, seg_e, m_s, m_e, m_id = K.match_added(data, seg_s, seg_e, *trie, self.cls, hint)
            hint = _NO_HINT  # the probe was for the first matcher's contents
            ms.append(m_s)
            me.append(m_e)
            mi.append(m_id)
        m_s = np.concatenate(ms) if ms else np.zeros(0, np.int64)
        m_e = np.concatenate(me) if me else np.zeros(0, np.int64)
        m_id = np.concatenate(mi) if mi else np.zeros(0, np.int32)
        if len(ms) > 1:
            order = np.argsort(m_s, kind="stable")
            m_s, m_e, m_id = m_s[order], m_e[order], m_id[order]
        return seg_s, seg_e, m_s, m_e, m_id

    def _alloc_word_cache(self, workers: int):
        """Per worker: the short and wide word caches, the long-piece cache and the pair cache
        with the merge table's pair filter after it (``hash_table.lookup_cached``): about
        68 MiB per worker thread."""
        return (*word_caches(workers), *long_caches(workers), np.stack([new_pair_cache(self.pfilt)] * workers))

    def _scratch_out(self, n: int) -> np.ndarray:
        """``int32[n]`` (at least one) scratch for ``run_ids``'s parallel path, the offsets
        path and the SentencePiece engine's ``encode_ids``; the caller holds ``_lock``.
        Kept between calls (``KeptArray``, up to ``_KEEP_OUT_MAX`` bytes): a fresh one
        faults its pages in on every call once it is past the allocator's reuse (32 MiB:
        8.4 MB of text), and in parallel those faults are slow (one 10 MB line, llama3, two
        threads, the fused kernel alone: 46 ms with a fresh scratch, 11.5 ms with a kept
        one)."""
        return self._out.take(max(n, 1))

    def _word_cache(self, locked: bool, workers: int):
        """The word caches for a call on ``workers`` threads, the shared word table turned on
        or off for it (``shared_words``): the kept set when the caller holds ``_lock``, else
        a spare set (``_spare_cache``); the caller gives it back (``_word_cache_done``)."""
        if not locked:  # another thread is using the kept set
            cache = self._spare_cache(workers)
        else:
            if self._wcache is None or self._wcache[0].shape[0] < workers:
                self._wcache = None  # the old ones dropped first
                self._wcache = self._alloc_word_cache(max(workers, default_threads()))
                self._wrows, self._wshared = 0, False
            cache = self._wcache
            self._wrows, self._wshared = self._ready_rows(cache, self._wrows, self._wshared, workers)
        shared_prepare(cache[1], self._shares_words and shared_words(workers))
        return cache

    def _ready_rows(self, cache, done: int, shared: bool, workers: int) -> Tuple[int, bool]:
        """A kept set's rows of this call's new workers faulted in and seeded, and its shared
        word table's rows once a call uses the table; returns the new ``(done, shared)``."""
        if done < workers:
            done2 = fault_rows(own_rows(cache), done, workers)
            if self._seeds_words:
                self._seed_short(cache[0][done:workers])
            done = done2
        if not shared and self._shares_words and shared_words(workers):
            faulted_in(cache[1][-_SHARED_ROWS:])
            shared = True
        return done, shared

    def _spare_cache(self, workers: int):
        """A word-cache set for a call that finds the kept one held by another thread (Python
        threads calling one engine at once: its kernels run without the GIL). Each such call
        takes a spare set and gives it back after (``_word_cache_done``), so the next finds
        its words there: a fresh full-size set per call, as before, started cold and was
        paged in anew each time (gpt2, batches of 13 KB, two Python threads: 16-109 MB/s in
        all against 100-168 with one). Up to ``_SPARE_SETS`` are kept; a call that finds
        none free makes one, kept after it if there is room."""
        with self._spare_lock:
            entry = self._spares.pop() if self._spares else None
        if entry is None or entry[0][0].shape[0] < workers:
            entry = [self._alloc_word_cache(max(workers, default_threads())), 0, False]
        entry[1], entry[2] = self._ready_rows(entry[0], entry[1], entry[2], workers)
        with self._spare_lock:
            self._spares_out[id(entry[0])] = entry
        return entry[0]

    def _word_cache_done(self, cache) -> None:
        """After a call: a spare set it took (``_spare_cache``) given back."""
        if cache is None:
            return
        with self._spare_lock:
            entry = self._spares_out.pop(id(cache), None)
            if entry is not None and len(self._spares) < _SPARE_SETS:
                self._spares.append(entry)

    def _seed_short(self, cache: np.ndarray) -> int:
        """Seed a kept short word cache, fresh, with the vocabulary's tokens of up to 15
        bytes (``engine_cpu.short_seed``: each the miss path's own result for a piece of
        its bytes), so that a piece new to a worker that is a token's bytes is a hit, not a
        BPE run (13-29% of the new pieces of 4 MB of code or prose after 4 MB of the same
        file: decision 0019, addendum of 2026-12-05). The entries are made once per engine,
        in parallel; returns how many each worker's cache holds."""
        from .kernels.engine_cpu import seed_short_cache, short_seed

        if self._seed[0] is None:
            import numba

            parts = []
            for tables in self._seed_tables():
                hs, words = short_seed(*tables, 4 * numba.get_num_threads())
                keep = words[:, 1] != 0
                parts.append((hs[keep], words[keep]))
            self._seed[0] = (np.ascontiguousarray(np.concatenate([p[0] for p in parts])),
                             np.ascontiguousarray(np.concatenate([p[1] for p in parts])))
        return int(seed_short_cache(cache, *self._seed[0]))

    def _seed_tables(self):
        """``short_seed``'s arguments but the block count (a list of such: the entries of
        all are put): the byte-level miss path's tables, no spelling of its own."""
        return [(self.arena, self.tok_off, self.init_ids, self.grid, self.mtab, self.wkeys, self.wvals,
                 self.spec.whole_first, _NO_IDS, _NO_IDS, _NO_SPELLING[0], _NO_SPELLING[1])]

    def run_ids(self, data: np.ndarray, doc_offsets: np.ndarray, skip: Optional[np.ndarray] = None,
                num_threads: Optional[int] = None, normalized: bool = False,
                template: Optional[Tuple[np.ndarray, np.ndarray]] = None, hint: Optional[np.ndarray] = None,
                own_data: bool = False):
        """Encode packed text (ids only, fused scan + BPE). Returns ``(ids, row_splits, skip)``;
        rows of skipped documents are empty (the caller fills them). ``normalized``: the
        gaps between raw added tokens are already NFC (``nfc_normalize``), none is skipped
        for it. ``template``: ``(prefix, suffix)`` ids put around every row (a skipped
        document's row holds them alone); the parallel path puts them there as it gathers
        the ids, the serial one as it writes them. ``hint``: ``pack_probed``'s flags
        for ``self.probe`` (``_segments``). ``own_data``: ``data`` is the caller's to
        change (documents NFC changes are then normalized in place, ``_nfc_prepass``)."""
        K = self._K
        data = kernel_bytes(data)
        threads, parallel = plan_threads(num_threads, data.shape[0])
        with numba_threads(threads if parallel else 1):
            doc_ends = None
            if not normalized:
                d0 = data
                data, doc_offsets, doc_ends, skip = self._nfc_prepass(data, doc_offsets, skip, own_data, hint)
                if data is not d0 or doc_ends is not None:  # the hint was taken on the text before NFC
                    hint = None
            seg_s, seg_e, m_s, _m_e, m_id = self._segments(data, doc_offsets, skip, parallel, hint, doc_ends)
            fam, end_whole, tab, fold = self._scanner()
            locked = self._lock.acquire(blocking=False)
            cache = None
            try:
                # the parallel path's scratch (ids at their text's byte offsets, then
                # gathered) is kept; the serial path's ids are the result, made for it (with
                # room for the template's ids around every row)
                if parallel:
                    out = self._scratch_out(data.shape[0]) if locked else np.empty(max(data.shape[0], 1), np.int32)
                else:
                    k = 0 if template is None else template[0].shape[0] + template[1].shape[0]
                    out = np.empty(max(data.shape[0] + k * (doc_offsets.shape[0] - 1), 1), np.int32)
                if m_s.shape[0] and parallel:
                    out[m_s] = m_id
                cache = self._word_cache(locked, threads if parallel else 1)
                args = (fam, end_whole, tab, fold, *self._model_args, *cache, out)
                if parallel:
                    total = int((seg_e - seg_s).sum())
                    chunk = max(self._pretok._MIN_CHUNK, total // (_UNITS_PER_THREAD * threads))
                    rec_s, rec_c = K.encode_fused_parallel(data, seg_s, seg_e, chunk, np.int64(threads), *args)
                    if m_s.shape[0]:
                        rec_s = np.concatenate((rec_s, m_s))
                        rec_c = np.concatenate((rec_c, np.ones(m_s.shape[0], np.int64)))
                    if rec_s.shape[0] > seg_s.shape[0]:  # cut units and added tokens come after the segments
                        order = np.argsort(rec_s, kind="stable")
                        rec_s, rec_c = rec_s[order], rec_c[order]
                    pos = np.zeros(rec_s.shape[0] + 1, np.int64)
                    np.cumsum(rec_c, out=pos[1:])
                    if template is None:
                        ids = np.empty(int(pos[-1]), np.int32)
                        K.gather_parallel(out, rec_s, rec_c, pos, ids)
                    else:
                        prefix, suffix = template
                        rows = doc_offsets.shape[0] - 1
                        k = prefix.shape[0] + suffix.shape[0]
                        row_of = np.searchsorted(doc_offsets, rec_s, side="right") - 1  # the last of equal (empty) offsets
                        rs = self._row_splits(doc_offsets, rec_s, pos) + k * np.arange(rows + 1)
                        ids = np.empty(int(rs[-1]), np.int32)
                        K.gather_template_parallel(out, rec_s, rec_c, pos, row_of, rs, prefix, suffix, ids)
                        return ids, rs, skip
                else:
                    prefix, suffix = _NO_IDS, _NO_IDS
                    if template is not None:
                        prefix, suffix = template
                    rec_s, pos, rs = K.encode_fused_serial(data, seg_s, seg_e, m_s, m_id, doc_offsets, prefix, suffix,
                                                           *args)
            finally:
                self._word_cache_done(cache)
                if locked:
                    self._lock.release()
            if not parallel:  # the ids are in place: the room past them given back (realloc, no copy)
                total = int(pos[-1]) if template is None else int(rs[-1])
                out.resize(max(total, 1), refcheck=False)
                ids = out[:total]
                if template is not None:  # put around the rows by the kernel
                    return ids, rs, skip
        return ids, self._row_splits(doc_offsets, rec_s, pos), skip

    def text_ids(self, data: np.ndarray) -> np.ndarray:
        """The ids of one text's UTF-8 ``data`` (writable ``uint8``, not empty) on one thread:
        ``run_ids`` of one document without its batch set-up (the thread plan, NFC pre-pass,
        added-token search, row splits; 7 us for a word against 21 through ``run_ids``,
        RESULTS 2026-12-07 05:10-05:35). The caller has made sure that the text is its own NFC
        (where the engine normalizes) and that none of the added tokens occurs in it
        (``Absent``): ``CpuTiktokenEngine.ordinary_ids``, ``CpuTokenizerEngine.quick_ids``."""
        out = np.empty(data.shape[0], np.int32)
        bounds = np.array((0, data.shape[0]), np.int64)
        locked = self._lock.acquire(blocking=False)
        cache = None
        try:
            cache = self._word_cache(locked, 1)
            _rec_s, pos, _rs = self._K.encode_fused_serial(data, bounds[:1], bounds[1:], _NO_OFFS, _NO_IDS, bounds,
                                                           _NO_IDS, _NO_IDS, *self._scanner(), *self._model_args,
                                                           *cache, out)
        finally:
            self._word_cache_done(cache)
            if locked:
                self._lock.release()
        return out[:int(pos[-1])]

    @property
    def serves_text_ids(self) -> bool:
        """Whether ``text_ids`` gives this engine's ids of every text: no added tokens, no NFC."""
        return self.nfc is None and all(t is None for t in self._tries)

    def added_contents(self) -> List[str]:
        """The texts its added tokens match: the raw tokens' contents, the normalized ones'
        normalized contents (as ``_set_added`` got them)."""
        return list(self._contents)

    @staticmethod
    def _row_splits(doc_offsets: np.ndarray, rec_s: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """Each document's first id (``pos`` of its first record; records sorted by
        ``rec_s``, their first bytes), then all the ids."""
        row_splits = np.empty(doc_offsets.shape[0], np.int64)
        row_splits[:-1] = pos[np.searchsorted(rec_s, doc_offsets[:-1], side="left")]
        row_splits[-1] = pos[-1]
        return row_splits

    def run(self, data: np.ndarray, doc_offsets: np.ndarray, skip: Optional[np.ndarray] = None,
            num_threads: Optional[int] = None, want_pieces: bool = False, normalized: bool = False,
            hint: Optional[np.ndarray] = None):
        """Encode packed text. Returns ``(ids, row_splits)`` (plus the piece arrays when asked).
        ``normalized``: the text is NFC already (``nfc_normalize``'s): no NFC check. ``hint``:
        ``pack_probed``'s flags for ``self.probe`` (the NFC check and the added-token search
        pass over the documents without their bits)."""
        data = kernel_bytes(data)
        threads, parallel = plan_threads(num_threads, data.shape[0])
        with numba_threads(threads if parallel else 1):
            if not normalized:
                skip = self._nfc_skip(data, doc_offsets, skip, hint)
            starts, ends, special = self.pieces(data, doc_offsets, skip, parallel, hint)
            ids, pts = self.encode_pieces(data, starts, ends, special, parallel, threads)
        row_splits = np.empty(doc_offsets.shape[0], np.int64)
        row_splits[:-1] = pts[np.searchsorted(starts, doc_offsets[:-1], side="left")]
        row_splits[-1] = pts[-1]
        if want_pieces:
            return ids, row_splits, skip, (starts, ends, special, pts)
        return ids, row_splits, skip


# ---------------------------------------------------------------------- packing
def pack(texts: Sequence[str], check, num_threads: Optional[int] = None,
         kept: Optional[KeptArray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """``(data, doc_offsets)``: the UTF-8 of all texts and where each starts.

    The bytes come from CPython's own UTF-8 of each string (``kernels.pack_cpu``: cached
    on the string, as HF ``tokenizers`` and ``tiktoken`` leave it), copied in parallel
    with ``num_threads`` (default: all cores). ``check(text)`` is called on every text
    when one cannot be encoded (wrong type, lone surrogate): it raises the reference's
    error for it, or returns the text the reference encodes instead (tiktoken repairs
    lone surrogates). ``kept``: the bytes go into its buffer (the caller holds it).
    """
    data, offsets, _hint = pack_probed(texts, check, num_threads, None, kept=kept)
    return data, offsets


def pack_probed(texts: Sequence[str], check, num_threads: Optional[int],
                probe: Optional[np.ndarray], pairs: np.ndarray = _NO_PAIRS, kept: Optional[KeptArray] = None
                ) -> Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """``pack``, and ``hint``: with ``probe`` (``int64[R, 3]`` rows ``(lo, hi, bit)``,
    ``ByteBPEEngine.probe``), ``uint8[n]``: per text, the bits of the ranges it holds a
    byte of, tested as it is copied (``run_ids(..., hint=)`` skips the added-token search
    and the NFC check where a text has not the bit); a bit with rows in ``pairs``
    (``ByteBPEEngine.probe_pairs``) only where one of its byte pairs occurs too. None
    without ``probe`` or when the texts went through ``str.encode``. ``kept``: as in ``pack``."""
    if isinstance(texts, PackedTexts):  # the bytes are there already
        ptr, size = texts.ptr, texts.size
    else:
        texts = texts if type(texts) in (list, tuple) else list(texts)  # hold every object while its bytes are read
        objs = object_ids(texts)
        ptr = np.empty(len(texts), np.int64)
        size = np.empty(len(texts), np.int64)
        if PK.utf8_views(objs, ptr, size, PK.AS_UTF8, PK.ERR_CLEAR) >= 0:
            return (*_pack_encoded(texts, check), None)
    n = ptr.shape[0]
    offsets = running_offsets(size)
    data = kept.take(int(offsets[-1])) if kept is not None else np.empty(int(offsets[-1]), np.uint8)
    threads, parallel = plan_threads(num_threads, data.shape[0])
    hint = None
    if probe is None:
        if parallel:
            with numba_threads(threads):
                PK.gather_views(ptr, offsets, data)
        else:
            PK.gather_views_serial(ptr, offsets, data)
    else:
        hint = np.empty(n, np.uint8)
        if parallel:
            with numba_threads(threads):
                PK.gather_views_probe(ptr, offsets, data, probe, pairs, hint)
        else:
            PK.gather_views_probe_serial(ptr, offsets, data, probe, pairs, hint)
    return data, offsets, hint


def object_ids(seq) -> np.ndarray:
    """``int64[len(seq)]``: ``id()`` of each item of a list or tuple, read from its item array
    (CPython keeps a list's item pointers in one array after its variable-size header, a
    tuple's inline at the same offset): 3 us for 8,000 items where
    ``np.fromiter(map(id, seq))`` took 314 us, a per-call cost the threads do not share
    (``_ITEMS_OK`` checks the layout once; without it, or for another sequence type,
    ``map(id, seq)``)."""
    n = len(seq)
    if _ITEMS_OK and n and type(seq) in (list, tuple):
        base = id(seq) + _VAR_HEADER
        if type(seq) is list:
            base = ctypes.c_void_p.from_address(base).value
        return np.frombuffer((ctypes.c_int64 * n).from_address(base), np.int64).copy()
    return np.fromiter(map(id, seq), np.int64, n)


def _pack_encoded(texts: Sequence[str], check) -> Tuple[np.ndarray, np.ndarray]:
    """``pack`` through ``str.encode``, with ``check`` on each text (some text cannot be UTF-8)."""
    try:
        bs = [t.encode("utf-8") for t in texts]
    except (UnicodeEncodeError, AttributeError, TypeError):
        bs = [check(t).encode("utf-8") for t in texts]
    offsets = np.zeros(len(bs) + 1, np.int64)
    if bs:
        np.cumsum(np.fromiter(map(len, bs), np.int64, len(bs)), out=offsets[1:])
    # a bytearray, not bytes: the array is writable (kernel_bytes), with no copy beyond the join
    data = np.frombuffer(bytearray().join(bs), np.uint8) if offsets[-1] else np.zeros(1, np.uint8)[:0]
    return data, offsets


def templated(ids: List[int], prefix: List[int], suffix: List[int]) -> List[int]:
    """One text's ids (a list) with the post-processor's ids around them (``quick_ids``)."""
    return prefix + ids + suffix if prefix or suffix else ids


def add_template(K, ids: np.ndarray, row_splits: np.ndarray, prefix: np.ndarray, suffix: np.ndarray,
                 num_threads: Optional[int]) -> Tuple[np.ndarray, np.ndarray]:
    """The post-processor's ids around every row (``engine_cpu.add_template``), in parallel
    with ``num_threads`` for a large batch."""
    threads, parallel = plan_threads(num_threads, 4 * ids.shape[0])
    if not parallel:
        return K.add_template(ids, row_splits, prefix, suffix)
    with numba_threads(threads):
        return K.add_template_parallel(ids, row_splits, prefix, suffix)


def gather_rows(K, out: np.ndarray, starts: np.ndarray, counts: np.ndarray,
                template: Optional[Tuple[np.ndarray, np.ndarray]], num_threads: Optional[int]) -> Tuple[np.ndarray, np.ndarray]:
    """``(ids, row_splits)``: row ``d``'s ``counts[d]`` ids copied from ``out[starts[d]:]``
    with ``template``'s ``(prefix, suffix)`` ids (None: none) around every row, in one copy
    (``engine_cpu.gather_rows_serial``; ``gather_template_parallel`` for many ids on more
    than one thread)."""
    prefix, suffix = template if template is not None else (_NO_IDS, _NO_IDS)
    n = counts.shape[0]
    if num_threads == 1 or n == 1:
        return K.gather_rows_serial(out, starts, counts, prefix, suffix)
    rs = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=rs[1:])
    threads, parallel = plan_threads(num_threads, 4 * int(rs[-1]))
    if not parallel:
        return K.gather_rows_serial(out, starts, counts, prefix, suffix)
    rs_t = rs + (prefix.shape[0] + suffix.shape[0]) * np.arange(n + 1)
    ids = np.empty(int(rs_t[-1]), np.int32)
    with numba_threads(threads):
        K.gather_template_parallel(out, starts, counts, rs, np.arange(n), rs_t, prefix, suffix, ids)
    return ids, rs_t


def splice_rows(ids: np.ndarray, row_splits: np.ndarray, rows: dict) -> Tuple[np.ndarray, np.ndarray]:
    """Replace the rows named in ``rows`` ({index: list of ids})."""
    lens = np.diff(row_splits)
    for i, r in rows.items():
        lens[i] = len(r)
    rs = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=rs[1:])
    out = np.empty(int(rs[-1]), np.int32)
    prev_src = 0
    prev_dst = 0
    for i in sorted(rows):
        # copy the untouched rows before row i in one slice
        a, b = int(row_splits[i]), int(rs[i])
        out[prev_dst:b] = ids[prev_src:a]
        out[b:rs[i + 1]] = rows[i]
        prev_src = int(row_splits[i + 1])
        prev_dst = int(rs[i + 1])
    out[prev_dst:] = ids[prev_src:]
    return out, rs


# --------------------------------------------------------------------- NFC check
_NFC_TABLES = None


def nfc_tables():
    """``(qc, ccc, tccc, ckeys, cvals, lr, bad_lead)`` for ``kernels.engine_cpu.nfc_unchanged_docs``.

    ``qc: uint8[0x110000]``: bit 1 when the reference's NFC changes the character on
    its own (it cannot occur in NFC text), bit 2 when it may compose with an earlier
    starter (the second character of a composition pair, Hangul V and T jamo), bit 4
    when it is neither but its decomposition starts with such a character or a mark;
    ``ccc: uint8[0x110000]`` the combining classes, ``tccc`` the class of the last
    character of each character's canonical decomposition; the composition pairs as a
    ``hash_table`` keyed ``(first << 32) | second``; ``lr, bad_lead``: ``inert_leads``.
    All from the measured tables (``unicode_props``), never from Python's ``unicodedata``.
    """
    global _NFC_TABLES
    if _NFC_TABLES is None:
        from .cpu_ref import unicode_props as U
        from .cpu_ref.normalizers import normalize_str
        from .kernels.hash_table import build_merge_table

        T = U.tables()
        nfc = C.UnicodeNormalizer("NFC")
        qc = np.zeros(0x110000, np.uint8)
        for ch in T.nfd:
            if normalize_str(nfc, ch) != ch:
                qc[ord(ch)] |= 1
        rows = []
        for pair, comp in T.compose.items():
            qc[ord(pair[1])] |= 2
            rows.append((ord(pair[0]), ord(pair[1]), 0, ord(comp)))
        qc[U.V_BASE:U.V_BASE + U.V_COUNT] |= 2
        qc[U.T_BASE + 1:U.T_BASE + U.T_COUNT] |= 2
        ccc = np.zeros(0x110000, np.uint8)
        for ch, k in T.ccc.items():
            ccc[ord(ch)] = k
        # not a boundary before it (kernels.engine_cpu.nfc_spans) though NFC keeps it and it
        # composes with nothing before it: its decomposition starts with a character that
        # is not a starter or composes with one before it
        nfd = C.UnicodeNormalizer("NFD")
        for ch in T.nfd:
            d0 = normalize_str(nfd, ch)[0]
            if ccc[ord(d0)] != 0 or qc[ord(d0)] & 2:
                qc[ord(ch)] |= 4
        # the class of the last character of the canonical decomposition (a composed
        # character followed by a mark of lower class is reordered, so changed)
        tccc = ccc.copy()
        for ch in T.nfd:
            tccc[ord(ch)] = T.ccc.get(normalize_str(nfd, ch)[-1], 0)
        ckeys, cvals = build_merge_table(np.array(rows, np.int64).reshape(-1, 4))
        _NFC_TABLES = (qc, ccc, tccc, ckeys, cvals, *inert_leads(qc, ccc))
    return _NFC_TABLES


def inert_leads(qc: np.ndarray, ccc: np.ndarray, max_ranges: int = 6) -> Tuple[np.ndarray, np.ndarray]:
    """``(lr, bad_lead)``: the byte ranges (``lr``, ``max_ranges`` pairs ``lo, hi``) and the
    256-entry table (``bad_lead``) of the UTF-8 lead bytes whose characters are not all
    inert to NFC (class 0, ``qc == 0``: a boundary of ``nfc_spans``, nothing for
    ``nfc_unchanged_docs`` to look at), which the kernels skip 64 bytes at a time: every
    lead of three and four bytes, the two-byte ones from the tables (Latin, Cyrillic...
    are inert; the blocks of combining marks, Hebrew, Arabic are not). Ranges are merged
    until ``max_ranges`` are left (a merged range covers more bytes: those take the
    character-at-a-time path, the same result)."""
    inert = np.zeros(256, bool)
    inert[:0xC2] = True  # ASCII and continuation bytes (never a lead); 0xC0, 0xC1 are never in UTF-8
    for b in range(0xC2, 0xE0):
        cp = (b & 0x1F) << 6
        inert[b] = not (qc[cp:cp + 64].any() or ccc[cp:cp + 64].any())
    if qc[:0x80].any() or ccc[:0x80].any():
        raise AssertionError("an ASCII character that NFC does not leave alone")
    ranges = []
    for b in range(256):
        if not inert[b]:
            if ranges and ranges[-1][1] == b - 1:
                ranges[-1][1] = b
            else:
                ranges.append([b, b])
    while len(ranges) > max_ranges:  # merge the two ranges with the smallest gap between them
        k = min(range(len(ranges) - 1), key=lambda j: ranges[j + 1][0] - ranges[j][1])
        ranges[k:k + 2] = [[ranges[k][0], ranges[k + 1][1]]]
    ranges += [ranges[-1]] * (max_ranges - len(ranges))  # a repeated range adds nothing
    bad = np.zeros(256, np.uint8)
    for lo, hi in ranges:
        bad[lo:hi + 1] = 1
    return np.array(ranges, np.int64).reshape(-1), bad


# --------------------------------------------------------------- tokenizer.json
def _byte_level_family(pre) -> Tuple[str, str]:
    """(family, dialect) of a byte-level pre-tokenizer, or NotServed."""
    from .kernels.pretok_cpu import family_of_pattern

    if isinstance(pre, C.ByteLevel):
        if pre.add_prefix_space:
            raise NotServed("pre_tokenizer ByteLevel add_prefix_space=true")
        if not pre.use_regex:
            raise NotServed("pre_tokenizer ByteLevel use_regex=false alone (no split)")
        return "gpt2", "onig"
    if isinstance(pre, C.PreTokenizerSequence) and len(pre.pretokenizers) == 2:
        split, bl = pre.pretokenizers
        if not (isinstance(split, C.Split) and isinstance(bl, C.ByteLevel)):
            raise NotServed("pre_tokenizer Sequence other than [Split, ByteLevel]")
        if bl.add_prefix_space or bl.use_regex:
            raise NotServed("pre_tokenizer ByteLevel with add_prefix_space or use_regex after a Split")
        if split.pattern.kind != "Regex":
            raise NotServed("Split with a String pattern")
        if not ((split.behavior == "Isolated" and not split.invert)
                or (split.behavior == "Removed" and split.invert)):
            raise NotServed(f"Split behavior {split.behavior} invert={split.invert}")
        fam = family_of_pattern(split.pattern.value, "onig")
        if fam is None:
            raise NotServed("Split pattern is not one of the compiled families")
        return fam, "onig"
    raise NotServed(f"pre_tokenizer {type(pre).__name__}")


def spec_for_config(cfg: C.TokenizerConfig, ref) -> EngineSpec:
    """The engine spec for a tokenizer.json, or ``NotServed`` naming what is not served."""
    from .cpu_ref.byte_level import BYTE_TO_CHAR, CHAR_TO_BYTE
    from .kernels.hash_table import merge_table_from_model

    m = cfg.model
    if not isinstance(m, C.BPE):
        raise NotServed(f"model {type(m).__name__}")
    if m.byte_fallback or m.continuing_subword_prefix or m.end_of_word_suffix:
        raise NotServed("BPE with byte_fallback / continuing_subword_prefix / end_of_word_suffix")
    norm = cfg.normalizer
    nfc = False
    if norm is not None:
        if isinstance(norm, C.UnicodeNormalizer) and norm.form == "NFC":
            nfc = True
        else:
            raise NotServed(f"normalizer {type(norm).__name__}")
    family, dialect = _byte_level_family(cfg.pre_tokenizer)
    model = ref.model
    vocab = model.vocab
    init = []
    for b in range(256):
        i = vocab.get(BYTE_TO_CHAR[b])
        if i is None:
            raise NotServed(f"the vocabulary lacks the byte-level character of byte {b}")
        init.append(i)
    size = max(vocab.values()) + 1
    token_bytes: List[Optional[bytes]] = [None] * size
    for tok, i in vocab.items():
        try:
            token_bytes[i] = bytes(CHAR_TO_BYTE[c] for c in tok)
        except KeyError:
            token_bytes[i] = None  # not a byte-level token: BPE can never produce it from bytes
    if size > MAX_IDS:
        raise NotServed(f"ids of {MAX_IDS} and beyond (the word caches keep 21-bit ids)")
    raw, norm_toks = _added_token_lists(ref)
    # the reference's trie is built in the order of its map (first entry wins on equal content)
    return EngineSpec(family=family, dialect=dialect, init_ids=np.array(init, np.int32), token_bytes=token_bytes,
                      merges=merge_table_from_model(model), whole_first=bool(m.ignore_merges),
                      raw_tokens=raw, norm_tokens=norm_toks, nfc=nfc)


@dataclass
class NfcSpans:
    """The spans ``ByteBPEEngine.nfc_normalize`` replaced: span ``k`` was ``old[sp_s[k]:sp_e[k]]``
    and is ``new[new_s[k]:new_e[k]]``, the text ``olds[which[k]]`` -> ``news[which[k]]``."""

    sp_s: np.ndarray
    sp_e: np.ndarray
    new_s: np.ndarray
    new_e: np.ndarray
    which: np.ndarray
    olds: list
    news: list


def _char_index(data: np.ndarray) -> np.ndarray:
    """``cidx: int64[N + 1]``: characters before each byte (``cidx[b + 1] - 1``: the character of byte ``b``)."""
    cidx = np.zeros(data.shape[0] + 1, np.int64)
    np.cumsum((data & 0xC0) != 0x80, out=cidx[1:])
    return cidx


def nfc_char_map(c_old: np.ndarray, c_new: np.ndarray, sp: NfcSpans) -> Tuple[np.ndarray, np.ndarray]:
    """``(map_s, map_e)``, per character of ``new`` (``old`` with ``sp``'s spans NFC-normalized;
    ``c_old``, ``c_new``: their ``_char_index``):
    the characters ``[map_s, map_e)`` of ``old`` it comes from, as the reference's
    alignments give them. Outside the spans a character is the one it was; inside, each
    distinct span's alignment is the ``cpu_ref`` normalizer's on that span alone (a span
    starts at a character NFC leaves a starter, so nothing is inserted before its first
    character and its alignment is the same in its text)."""
    from .cpu_ref.normalized import NormalizedString
    from .cpu_ref.normalizers import unicode_normalize

    n_new = int(c_new[-1])
    t_s, t_e, t_off = [], [], [0]
    for o, w in zip(sp.olds, sp.news):
        ns = NormalizedString.from_original(o.decode("utf-8"))
        unicode_normalize(ns, "NFC")
        if ns.text.encode("utf-8") != w:  # pragma: no cover - nfc_normalize used the same normalizer
            raise AssertionError("NFC span: the normalizer gave another text")
        t_s += ns.starts
        t_e += ns.ends
        t_off.append(len(t_s))
    t_s, t_e, t_off = np.array(t_s, np.int64), np.array(t_e, np.int64), np.array(t_off, np.int64)
    oc = c_old[sp.sp_s]  # first old character of each span
    on = c_old[sp.sp_e] - oc
    nc = c_new[sp.new_s]
    nn = c_new[sp.new_e] - nc
    delta = np.zeros(n_new + 1, np.int64)
    np.add.at(delta, nc + nn, on - nn)
    map_s = np.arange(n_new, dtype=np.int64) + np.cumsum(delta)[:-1]
    map_e = map_s + 1
    j = np.arange(int(nn.sum()), dtype=np.int64) - np.repeat(np.cumsum(nn) - nn, nn)
    pos = np.repeat(nc, nn) + j
    src = np.repeat(t_off[sp.which], nn) + j
    map_s[pos] = np.repeat(oc, nn) + t_s[src]
    map_e[pos] = np.repeat(oc, nn) + t_e[src]
    return map_s, map_e


def _nfc_groups(engine: ByteBPEEngine, todo: List[int], data: np.ndarray, offsets: np.ndarray, done: dict,
                spans: bool):
    """``(group, old, sub, normalized)`` for ``todo`` all together, then one by one (each
    time without the documents in ``done``, which the caller fills): ``old`` the group's
    bytes and ``sub`` their offsets, ``normalized`` what ``engine.nfc_normalize`` gives
    them (a group it gives None for is not yielded)."""
    for group in ([todo] if len(todo) > 1 else []) + [[i] for i in todo]:
        group = [i for i in group if i not in done]
        if not group:
            continue
        sub = np.zeros(len(group) + 1, np.int64)
        np.cumsum(offsets[1:][group] - offsets[:-1][group], out=sub[1:])
        old = np.concatenate([data[offsets[i]:offsets[i + 1]] for i in group])
        norm = engine.nfc_normalize(old, sub, spans=spans)
        if norm is not None:
            yield group, old, sub, norm


def rows_after_nfc(engine: ByteBPEEngine, ref, texts: Sequence[str], todo: List[int], data: np.ndarray,
                   offsets: np.ndarray, run) -> dict:
    """``{index: ids}`` of the documents ``todo`` of the packed ``data``/``offsets`` of
    ``texts`` (ones NFC changes): their gaps normalized (``engine.nfc_normalize``) and
    encoded by ``run(data, offsets)`` -> ``(ids, row_splits, done)`` (``done``: per
    document, whether it was encoded; None: all were), all together, else one by one; a
    document neither gives (the raw tokens would match the normalized text differently)
    by the reference path."""
    rows: dict = {}
    for group, _old, _sub, norm in _nfc_groups(engine, todo, data, offsets, rows, False):
        ids, rs, done = run(*norm)
        rows.update((i, ids[rs[k]:rs[k + 1]]) for k, i in enumerate(group) if done is None or done[k])
    for i in todo:
        if i not in rows:
            rows[i] = ref.encode(texts[i], None, False, False).ids
    return rows


def template_ids(cfg: C.TokenizerConfig, ref) -> Tuple[np.ndarray, np.ndarray]:
    """(prefix, suffix) ids the post-processor puts around a single sequence."""
    sentinel = -7
    enc = Encoding([sentinel], [0], ["a"], [(0, 1)], [0], [0])
    out = post_processors.process(cfg.post_processor, [enc], True)
    k = out.ids.index(sentinel)
    return np.array(out.ids[:k], np.int32), np.array(out.ids[k + 1:], np.int32)


class CpuTokenizerEngine:
    """``device="cpu"`` for a ``Tokenizer`` (tokenizer.json)."""

    def __init__(self, cfg: C.TokenizerConfig, ref):
        self.cfg = cfg
        self.ref = ref
        self.engine = ByteBPEEngine(spec_for_config(cfg, ref))
        self.prefix, self.suffix = template_ids(cfg, ref)
        self._prefix_list, self._suffix_list = self.prefix.tolist(), self.suffix.tolist()  # (quick_ids)
        self._absent = None  # quick_ids' Absent check of the added tokens, made on first use
        self._nfc_lo = int(self.engine.nfc[5][0]) if self.engine.nfc is not None else 256
        self._vocab_r = None
        self._text = KeptArray(np.uint8, _KEEP_TEXT_MAX)

    def quick_ids(self, text: str, add_special_tokens: bool) -> Optional[List[int]]:
        """The ids of one ``str`` as ``encode_ids`` gives them (the post-processor's around),
        through ``ByteBPEEngine.text_ids``, where none of the added tokens occurs in it and
        (with NFC) it has no byte a character NFC may change begins with; else None (the
        caller's other path). No truncation or padding: the caller's."""
        absent = self._absent
        if absent is None:
            absent = self._absent = Absent(self.engine.added_contents())
        if not absent(text):
            return None
        ids = _text_ids(self.engine, text, self._nfc_lo)
        if ids is None or not add_special_tokens:
            return ids
        return templated(ids, self._prefix_list, self._suffix_list)

    def encode_ids(self, texts: Sequence[str], add_special_tokens: bool, num_threads: Optional[int]):
        texts = text_list(texts)
        with self._text.hold() as kept:  # the packed text lives only in this block
            data, offsets, hint = pack_probed(texts, check_text, num_threads, self.engine.probe,
                                              self.engine.probe_pairs, kept=kept)
            template = (self.prefix, self.suffix) if add_special_tokens and (self.prefix.shape[0] or self.suffix.shape[0]) else None
            ids, rs, skip = self.engine.run_ids(data, offsets, num_threads=num_threads, template=template, hint=hint,
                                                own_data=True)
            rows = self.skipped_rows(texts, skip, num_threads, data, offsets) if skip is not None and skip.any() else None
        if rows is not None:
            if template is not None:
                rows = {i: np.concatenate((self.prefix, np.asarray(r, np.int32), self.suffix)) for i, r in rows.items()}
            ids, rs = splice_rows(ids, rs, rows)
        return ids, rs

    def skipped_rows(self, texts: Sequence[str], skip: np.ndarray, num_threads: Optional[int],
                     data: np.ndarray, offsets: np.ndarray) -> dict:
        """``{index: ids}`` of the documents ``run_ids`` skipped (those NFC changes) in the
        packed ``data``/``offsets`` of ``texts``: their gaps normalized
        (``ByteBPEEngine.nfc_normalize``) and encoded by the engine, all together, else one
        by one, and a document the raw tokens would match differently in by the reference
        path."""
        def run(d, o):
            ids, rs, _ = self.engine.run_ids(d, o, num_threads=num_threads, normalized=True)
            return ids, rs, None

        return rows_after_nfc(self.engine, self.ref, texts, [int(i) for i in np.flatnonzero(skip)], data, offsets, run)

    def _K(self):
        from .kernels import engine_cpu

        return engine_cpu

    def _tokens_of(self) -> np.ndarray:
        """The model's token strings by id (an object array; None where no token has the id)."""
        if self._vocab_r is None:
            vr = self.ref.model.vocab_r
            size = max(vr) + 1 if vr else 0
            arr = np.empty(max(size, 1), dtype=object)
            arr[:size] = [vr.get(i) for i in range(size)]
            self._vocab_r = arr
        return self._vocab_r

    def encode_single_encodings(self, texts: List[str], type_id: int, num_threads: Optional[int]) -> List[Encoding]:
        """Per text, the ``Encoding`` before post-processing (the reference's ``_encode_single``);
        a document NFC changes normalized first and its offsets mapped back (``nfc_encodings``)."""
        data, offsets, hint = pack_probed(texts, check_text, num_threads, self.engine.probe, self.engine.probe_pairs)

        def arrays_of(d, o, normalized=False):
            return self._encoding_arrays(d, o, num_threads, normalized, None if normalized else hint)

        return encodings_with_nfc(self.engine, self.ref, texts, type_id, data, offsets, arrays_of)

    def _encoding_arrays(self, data: np.ndarray, offsets: np.ndarray, num_threads: Optional[int],
                         normalized: bool = False, hint: Optional[np.ndarray] = None):
        """``(row_splits, ids, tokens, char_starts, char_ends, words, skipped, added)`` of packed
        documents (``skipped``: those NFC changes, left out, unless ``normalized``; offsets in
        characters of each document; ``added``: which tokens are added tokens; ``hint``:
        ``pack_probed``'s flags of the packed text, as ``ByteBPEEngine.run`` takes them)."""
        ids, rs, skip, (starts, ends, special, pts) = self.engine.run(data, offsets, num_threads=num_threads,
                                                                       want_pieces=True, normalized=normalized,
                                                                       hint=hint)
        threads, parallel = plan_threads(num_threads, data.shape[0])
        nw = threads if parallel else 1
        blocks = byte_blocks(offsets, offsets[-1], offsets.shape[0] - 1, _UNITS_PER_THREAD * nw)
        first_piece = np.searchsorted(starts, offsets, side="left").astype(np.int64)
        with numba_threads(nw):
            c_start, c_end, word, is_sp = self.engine._spans.token_char_spans(
                data, offsets, first_piece, starts, ends, special, pts, ids, self.engine.tok_len, blocks, np.int64(nw))
        sp = np.flatnonzero(special >= 0)  # an added token (one, its whole piece): its text
        toks = TokenStrings(self._tokens_of(), ids, pts[sp],
                            [data[starts[p]:ends[p]].tobytes().decode("utf-8") for p in sp.tolist()])
        skipped = np.flatnonzero(skip).tolist() if skip is not None else []
        return rs, ids, toks, c_start, c_end, word, skipped, is_sp

    def encode_batch(self, inputs, add_special_tokens: bool, num_threads: Optional[int]) -> List[Encoding]:
        return batch_of_singles(self, inputs, add_special_tokens, num_threads)


def encodings_with_nfc(engine: ByteBPEEngine, ref, texts: List[str], type_id: int, data: np.ndarray,
                       offsets: np.ndarray, arrays_of) -> List[Encoding]:
    """The engine's encodings of packed ``texts`` (``arrays_of(data, offsets, normalized=False)``:
    its ``_encoding_arrays``), those NFC changes by ``nfc_encodings``, what neither gives by
    the reference path (``assemble``)."""
    arrays = arrays_of(data, offsets)
    done = nfc_encodings(engine, arrays_of, arrays[6], data, offsets, type_id) if arrays[6] else {}
    out = assemble(ref, texts, type_id, *arrays[:6], [d for d in arrays[6] if d not in done], arrays[7])
    for d, e in done.items():
        out[d] = e
    return out


def nfc_encodings(engine: ByteBPEEngine, arrays_of, todo: List[int], data: np.ndarray, offsets: np.ndarray,
                  type_id: int) -> dict:
    """``{index: Encoding}`` of the documents ``todo`` of the packed ``data``/``offsets`` (ones
    NFC changes): their gaps normalized (``engine.nfc_normalize``, all together, else one by
    one), encoded by ``arrays_of(data, offsets, True)`` (an engine's ``_encoding_arrays``), and each
    token's characters mapped back to the text's (``nfc_char_map``: the first character's
    start, the last one's end, as the reference's offsets). A document that cannot be (the
    raw tokens would match the normalized text differently, or the engine skips it again)
    is not in the result: the reference path's."""
    out: dict = {}
    for group, old, sub, (new, offsets2, sp) in _nfc_groups(engine, todo, data, offsets, out, True):
        rs, ids, toks, c_s, c_e, words, skipped, added = arrays_of(new, offsets2, True)
        c_old, c_new = _char_index(old), _char_index(new)
        map_s, map_e = nfc_char_map(c_old, c_new, sp)
        doc = np.repeat(np.arange(len(group), dtype=np.int64), np.diff(rs))
        base2 = c_new[offsets2[:-1]][doc]
        base = c_old[sub[:-1]][doc]
        rows = EncodingRows(ids, toks, map_s[base2 + c_s] - base, map_e[base2 + c_e - 1] - base, words, rs, type_id)
        rows.added = added
        skipped = set(skipped)
        out.update((i, Encoding._lazy(rows, k)) for k, i in enumerate(group) if k not in skipped)
    return out


def split_pairs(inputs):
    """``(firsts, seconds, pair_at)``: each input's first text, the pairs' second texts, and
    per input the index of its second text in ``seconds`` (-1 for a single text)."""
    if isinstance(inputs, list) and set(map(type, inputs)) <= {str}:  # no pairs: the list itself
        return inputs, [], [-1] * len(inputs)
    firsts, seconds, pair_at = [], [], []
    for item in inputs:
        if isinstance(item, (tuple, list)):
            if len(item) != 2:
                raise ValueError("a pair input must have exactly two texts")
            firsts.append(item[0])
            pair_at.append(len(seconds))
            seconds.append(item[1])
        else:
            firsts.append(item)
            pair_at.append(-1)
    return firsts, seconds, pair_at


def assemble(ref, texts: List[str], type_id: int, bounds: np.ndarray, ids: np.ndarray, toks: np.ndarray,
             starts: np.ndarray, ends: np.ndarray, words: np.ndarray, slow, added=None) -> List[Encoding]:
    """Per text, the ``Encoding`` before post-processing from an engine's flat arrays (text
    ``d``'s tokens at ``bounds[d]:bounds[d + 1]``; ``toks`` an object array of their
    strings, ``starts``/``ends`` their characters; ``added``, where the engine finds added
    tokens in the text, which tokens are those): lazy encodings (``encoding.EncodingRows``),
    the texts in ``slow`` from the reference path."""
    rows = EncodingRows(ids, toks, starts, ends, words, bounds, type_id)
    rows.added = added
    out = [Encoding._lazy(rows, d) for d in range(len(texts))]
    for d in slow:
        out[d] = ref._encode_single(texts[d], type_id)
    return out


def gathered(slot_starts: np.ndarray, counts: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """``(first, idx)`` for rows written into slots (row ``d``'s ``counts[d]`` items at
    ``slot_starts[d]:``): ``first`` the row splits of the rows back to back, ``idx`` the
    slot position of each of their items."""
    first = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    return first, np.repeat(slot_starts - first[:-1], counts) + np.arange(int(first[-1]))


def early_stop(rows: EncodingRows, max_tokens: int, direction: str):
    """The reference's early stop (``cpu_ref.truncation.tokenize_with_limit``) on an
    engine's rows: per row, ``(keep_from, keep_to, word_shift, ok)``, the tokens the stop
    keeps and what their word ids lose (the pieces dropped before them, left truncation).
    The pieces are the runs of equal word ids; the stop ends at the first piece, in
    ``direction``, by which ``max_tokens`` tokens are reached, unless that piece is an added
    token (those count but never stop it: the next *model* piece does, which may be one
    the model turned into no token at all, not seen here): ``ok`` is False there, and for
    ``max_tokens`` 0 (a tokenless first piece would stop it)."""
    b = rows.bounds
    n = b.shape[0] - 1
    words = rows.words
    N = words.shape[0]
    keep_from, keep_to = b[:-1].copy(), b[1:].copy()
    shift = np.zeros(n, np.int64)
    ok = np.full(n, max_tokens > 0)
    if N == 0 or max_tokens <= 0:
        return keep_from, keep_to, shift, ok
    first = np.ones(N, bool)
    first[1:] = words[1:] != words[:-1]
    starts = b[:-1][b[:-1] < b[1:]]
    first[starts] = True
    gstart = np.flatnonzero(first)
    gend = np.append(gstart[1:], N)
    gdoc = np.searchsorted(b, gstart, side="right") - 1
    gadded = rows.added[gstart] if rows.added is not None else np.zeros(gstart.shape[0], bool)
    if direction == "right":
        hit = np.flatnonzero(gend - b[gdoc] >= max_tokens)
        docs, at = np.unique(gdoc[hit], return_index=True)
        g = hit[at]
        keep_to[docs] = gend[g]
    else:
        hit = np.flatnonzero(b[gdoc + 1] - gstart >= max_tokens)[::-1]
        docs, at = np.unique(gdoc[hit], return_index=True)
        g = hit[at]
        keep_from[docs] = gstart[g]
        shift[docs] = words[gstart[g]]
    ok[docs[gadded[g]]] = False
    return keep_from, keep_to, shift, ok


def truncated_batch(engine, ref, inputs, add_special_tokens: bool,
                    num_threads: Optional[int], offsets: bool = True) -> List[Encoding]:
    """``encode_batch`` with truncation set, of texts and ``(text, pair)`` tuples, each as the
    reference's ``encode``: the engine's encodings cut by ``early_stop`` (the first texts
    unless the strategy is ``only_second``, the pairs always, as ``cpu_ref.pipeline``'s
    ``_encode_single``), then ``post_process`` (the strategy, truncation's windows, the
    post-processor, padding); an input whose text the engine leaves to the reference path,
    or whose stop ``early_stop`` cannot settle, from the reference's ``encode``. The inputs
    are finished in order, so a batch fails with its first failing input's error.
    ``offsets=False``: ``encode_batch_fast``'s (``without_offsets`` before the post-processor).
    (The caller pads the batch.)"""
    from .cpu_ref import post_processors, truncation
    from .cpu_ref.pipeline import without_offsets

    firsts, seconds, pair_at = split_pairs(inputs)
    a = _stopped(engine, ref.truncation, firsts, 0, ref.truncation.strategy != "only_second", num_threads)
    b = _stopped(engine, ref.truncation, seconds, 1, True, num_threads) if seconds else []
    if not offsets:  # encode_batch_fast's: ids alone, type id 0 (``without_offsets``), laid out as below
        a, b = _bare(a), _bare(b)
    # a single text whose tokens fit the truncation's budget is not cut (``truncate_encodings``
    # returns it as it is, whatever the strategy): under a fixed layout its lazy encoding is
    # moved onto the laid-out rows, as ``batch_of_singles`` does (the caller pads the batch,
    # to the length ``post_process``'s own padding would reach)
    pp = engine.cfg.post_processor
    lay, aps = layout_processor(pp)
    if not offsets:  # (every offset (0, 0): a processor's trim changes nothing)
        aps = None
    single = post_processors.single_layout(lay, add_special_tokens) if len(seconds) < len(firsts) else None
    room = (min(truncation.budget(ref.truncation, post_processors.added_tokens(pp, False), add_special_tokens), 1 << 62)
            if single is not None else 0)
    # a single text whose tokens do not fit is cut into windows (``Encoding.truncate``), each
    # laid out as the post-processor lays out a window (``post_processors.window_layout``):
    # lazy encodings on the windows' rows where both layouts are fixed (``_windowed``)
    trunc = ref.truncation
    win = None
    if room > 0 and trunc.stride < room and trunc.strategy != "only_second":
        win = post_processors.window_layout(lay, add_special_tokens)
    windowed = _windowed(a, pair_at, room, trunc, single, win, aps) if win is not None else {}
    made: dict = {}
    # pairs: lazy on PairRows where the pair's layout is fixed, those that fit as they are and
    # those cut into windows, the second text's under ``only_second``, either's or both's under
    # ``longest_first`` and the first's under ``only_first`` (``_pair_windowed``)
    if seconds:
        t2 = 1 if offsets else 0  # (the second texts' type id before the post-processor)
        pair = post_processors.pair_layout(lay, add_special_tokens, t2)
        # (the budget wraps around below zero, as the reference's unsigned arithmetic: never cuts)
        p_room = min(truncation.budget(trunc, post_processors.added_tokens(pp, True), add_special_tokens), 1 << 62)
        pwin = (post_processors.pair_window_layout(lay, add_special_tokens, t2) if trunc.strategy == "only_second"
                else None)
        cross = (post_processors.pair_cross_layout(lay, add_special_tokens, t2) if trunc.strategy != "only_second"
                 else None)
        if pair is not None and p_room > 0:
            windowed.update(_pair_windowed(a, b, pair_at, p_room, trunc, pair, pwin, aps, made, cross, t2))
    out: List[Encoding] = []
    for d, j in enumerate(pair_at):
        x, y = a[d], (None if j < 0 else b[j])
        if x is None or (j >= 0 and y is None):
            out.append(ref.encode(firsts[d], None if j < 0 else seconds[j], add_special_tokens, offsets=offsets))
            continue
        if j < 0 and room > 0 and x._rows is not None and len(x) <= room:
            laid = _laid_out(x, single, made, aps)
            if laid is not None:
                out.append(laid)
                continue
        w = windowed.get(d)
        if w is not None:
            out.append(w)
            continue
        if not offsets:
            x, y = without_offsets(x), (None if y is None else without_offsets(y))
        out.append(ref.post_process(x, y, add_special_tokens))
    return out


def _windowed(encs: List[Optional[Encoding]], pair_at, room: int, trunc, single, window, aps=None) -> dict:
    """The single texts (``pair_at`` -1) among ``encs`` (the engine's lazy encodings, new)
    whose tokens exceed ``room`` (the truncation's budget, above ``trunc.stride``; strategy
    ``longest_first`` or ``only_first``, which then cut the same), each cut into the windows
    of ``Encoding.truncate`` (``room`` tokens, each repeating the ``stride`` before it, in
    ``trunc.direction``): text index -> a lazy encoding of its first window laid out as
    ``single``, its ``overflowing`` the others, laid out as ``window``
    (``post_processors.single_layout`` / ``window_layout``); all of a rows object's windows
    on one rows object. ``aps``: not None where the post-processor trims offsets first
    (``layout_processor``): each window's trimmed (``post_processors.trim_rows``)."""
    groups: dict = {}
    for d, j in enumerate(pair_at):
        x = encs[d]
        if j < 0 and x is not None and x._rows is not None:
            groups.setdefault(id(x._rows), (x._rows, []))[1].append(d)
    out: dict = {}
    for rows, ds in groups.values():
        if rows.type_id != 0 or not _whole(rows):  # (what the probes assumed)
            continue
        b = rows.bounds
        at = np.array([encs[d]._row for d in ds], np.int64)
        n = (b[1:] - b[:-1])[at]
        cut = n > room
        if not cut.any():
            continue
        ds, at, n = np.asarray(ds)[cut], at[cut], n[cut]
        # the windows in rows: each text's first window, in text order, then the others (in
        # text order, each text's in order), so that each layout's rows object reads rows of
        # its own, side by side (``EncodingRows`` makes its lists a chunk of rows at a time)
        m = n.shape[0]
        got = _row_windows(rows, at, n, np.full(m, room, np.int64), trunc.stride, trunc.direction, aps)
        if got is None:  # (then post_process trims each one)
            continue
        w, first = got
        main, rest = w.with_layout(*single), w.with_layout(*window)
        fl = first.tolist()
        for q, d in enumerate(ds.tolist()):
            e = Encoding._lazy(main, q)
            e.overflowing = [Encoding._lazy(rest, r) for r in range(m + fl[q] - q, m + fl[q + 1] - q - 1)]
            out[d] = e
    return out


def _whole(rows) -> bool:
    """Whether ``rows`` hold all their fields (offsets, tokens, words: ``encode_batch``'s) or
    none (``encode_batch_fast``'s, ``_bare``), as the layouts' probes took them."""
    return (rows.tokens is None) == (rows.starts is None) == (rows.ends is None) == (rows.words is None)


def _taken(rows, idx, bounds) -> EncodingRows:
    """The tokens ``idx`` of ``rows`` as rows of ``bounds`` (the fields ``rows`` lack absent)."""
    def f(x):
        return None if x is None else x[idx]

    return EncodingRows(rows.ids[idx], f(rows.tokens), f(rows.starts), f(rows.ends), f(rows.words), bounds,
                        rows.type_id)


def _bare(encs: List[Optional[Encoding]]) -> List[Optional[Encoding]]:
    """The engine's lazy encodings (new, read by no one) as ``encode_batch_fast`` makes them
    before the post-processor (``pipeline.without_offsets``): on rows of their ids alone,
    type id 0 (the second texts' too); the others as they are."""
    made: dict = {}
    out: List[Optional[Encoding]] = []
    for e in encs:
        r = None if e is None else e._rows
        if r is None or not isinstance(r, EncodingRows) or r.before["ids"] or r.after["ids"]:
            out.append(e)
            continue
        bare = made.get(id(r))
        if bare is None:
            bare = made[id(r)] = EncodingRows(r.ids, None, None, None, None, r.bounds, 0)
        out.append(Encoding._lazy(bare, e._row))
    return out


def _window_cuts(n: np.ndarray, room: np.ndarray, stride: int, direction: str):
    """``Encoding.truncate``'s windows of rows of ``n`` tokens cut to ``room`` (each over
    ``stride``; ``n > room``), each row's first window first, then the others in row order:
    ``(of, start, stop, first)``, each window's row and token range within it, and where each
    row's other windows start (``first[q] - q`` of them before row ``q``'s)."""
    step = room - stride
    k = 1 + (n - room + step - 1) // step  # windows per row
    first = np.zeros(k.shape[0] + 1, np.int64)
    np.cumsum(k, out=first[1:])
    of = np.repeat(np.arange(k.shape[0]), k)
    i = np.arange(int(first[-1])) - first[:-1][of]  # each window's place in its row's
    order = np.argsort(i > 0, kind="stable")
    of, i = of[order], i[order]
    if direction == "right":
        start = i * step[of]
        stop = np.minimum(start + room[of], n[of])
    else:
        stop = n[of] - i * step[of]
        start = np.maximum(stop - room[of], 0)
    return of, start, stop, first


def _pair_windowed(a, b, pair_at, room: int, trunc, pair, pwin, aps, made: dict, cross=None, t2: int = 1) -> dict:
    """The pairs (``pair_at`` >= 0) among the engine's lazy encodings ``a`` (first texts) and
    ``b`` (second texts) that ``truncate_encodings`` leaves whole (both texts' tokens within
    ``room``, the budget with the pair's special tokens) or, with ``pwin`` (strategy
    ``only_second``: ``post_processors.pair_window_layout``), cuts the second text of into
    windows (``room`` less the first text's tokens, over ``trunc.stride``): pair index ->
    a lazy encoding on ``PairRows`` laid out as ``pair``, its ``overflowing`` (the second
    text's other windows with the whole first text) as ``pwin``; with ``cross`` (strategies
    ``longest_first`` and ``only_first``: ``post_processors.pair_cross_layout``), the pairs
    it cuts (``_pair_crossed``). Offsets trimmed first with ``aps`` (``layout_processor``).
    ``t2``: the second texts' type id the layouts were probed with (0: ``encode_batch_fast``'s
    bare rows, ``_bare``). Pairs left out go through ``post_process`` (an error there is the
    reference's)."""
    groups: dict = {}
    for d, j in enumerate(pair_at):
        if j < 0:
            continue
        x, y = a[d], b[j]
        if x is None or y is None or x._rows is None or y._rows is None:
            continue
        groups.setdefault((id(x._rows), id(y._rows)), (x._rows, y._rows, []))[2].append(d)
    out: dict = {}
    for xr, yr, ds in groups.values():
        xa = _prepped(xr, aps, made)
        if xa is None or not _whole(xr) or not _whole(yr) or xr.type_id != 0 or yr.type_id != t2:
            continue
        xi = np.array([a[d]._row for d in ds], np.int64)
        yi = np.array([b[pair_at[d]]._row for d in ds], np.int64)
        n1 = (xr.bounds[1:] - xr.bounds[:-1])[xi]
        n2 = (yr.bounds[1:] - yr.bounds[:-1])[yi]
        fits = n1 + n2 <= room
        if fits.any():
            yb = _prepped(yr, aps, made)
            if yb is not None:
                rows = PairRows(xa, yb, pair)
                for d, i, j in zip(np.asarray(ds)[fits].tolist(), xi[fits].tolist(), yi[fits].tolist()):
                    out[d] = Encoding._lazy(rows, rows.add(i, j))
        if cross is not None and not fits.all():
            out.update(_pair_crossed(xr, yr, np.asarray(ds)[~fits], xi[~fits], yi[~fits], n1[~fits], n2[~fits],
                                     room, trunc, cross, aps))
        if pwin is None:
            continue
        r2 = room - n1  # the second text's windows (only_second)
        cut = ~fits & (r2 > trunc.stride)
        if not cut.any():
            continue
        dc, xc, yc, nc, rc = np.asarray(ds)[cut], xi[cut], yi[cut], n2[cut], r2[cut]
        got = _row_windows(yr, yc, nc, rc, trunc.stride, trunc.direction, aps)
        if got is None:
            continue
        w, first = got
        main, rest = PairRows(xa, w, pair), PairRows(xa, w, pwin)
        m = dc.shape[0]
        fl = first.tolist()
        for q, (d, i) in enumerate(zip(dc.tolist(), xc.tolist())):
            e = Encoding._lazy(main, main.add(i, q))
            e.overflowing = [Encoding._lazy(rest, rest.add(i, r)) for r in range(m + fl[q] - q, m + fl[q + 1] - q - 1)]
            out[d] = e
    return out


def _pair_keeps(n1, n2, room: int, strategy: str):
    """``truncate_encodings``' lengths for pairs of ``n1`` and ``n2`` tokens over ``room``
    (``longest_first``, or ``only_first``: the first text cut alone): ``(k1, k2)``, each
    text's ``Encoding.truncate`` length (a text of no more tokens is not cut)."""
    if strategy == "only_first":
        return n1 - (n1 + n2 - room), n2.copy()
    swap = n1 > n2  # (the reference swaps them so: t1 for the shorter text, t2 for the other)
    t1 = np.minimum(n1, n2)
    t2 = np.where(t1 > room, t1, np.maximum(t1, room - t1))
    over = t1 + t2 > room
    t1 = np.where(over, room // 2, t1)
    t2 = np.where(over, room // 2 + room % 2, t2)
    return np.where(swap, t2, t1), np.where(swap, t1, t2)


def _row_windows(rows, at, n, k, stride: int, direction: str, aps):
    """``Encoding.truncate(k)``'s windows of the rows ``at`` of ``rows`` (``n`` tokens each;
    a row of ``k`` tokens or fewer whole), on one ``EncodingRows``: each row's first window
    at its own place, then the others (``_window_cuts``' order), trimmed with ``aps`` where
    it is not None; ``(windows, first)``, ``first`` as ``_window_cuts``' (row ``q``'s other
    windows from ``m + first[q] - q``, ``m`` rows); None where they cannot be trimmed so."""
    m = n.shape[0]
    start, stop, per = np.zeros(m, np.int64), n.astype(np.int64), np.ones(m, np.int64)
    rest_of, rest_start, rest_stop = (np.zeros(0, np.int64),) * 3
    ci = np.flatnonzero(n > k)
    if ci.shape[0]:
        of, st, sp, fi = _window_cuts(n[ci], k[ci], stride, direction)
        mc = ci.shape[0]
        start[ci], stop[ci], per[ci] = st[:mc], sp[:mc], fi[1:] - fi[:-1]
        rest_of, rest_start, rest_stop = ci[of[mc:]], st[mc:], sp[mc:]
    first = np.zeros(m + 1, np.int64)
    np.cumsum(per, out=first[1:])
    of = np.concatenate([np.arange(m), rest_of])
    start, stop = np.concatenate([start, rest_start]), np.concatenate([stop, rest_stop])
    bounds, idx = gathered(rows.bounds[at][of] + start, stop - start)
    w = _taken(rows, idx, bounds)
    if aps is not None:
        w = post_processors.trim_rows(w, aps)
    return None if w is None else (w, first)


def _pair_crossed(xr, yr, ds, xi, yi, n1, n2, room: int, trunc, cross, aps) -> dict:
    """``_pair_windowed``'s pairs ``ds`` (rows ``xi`` of ``xr`` and ``yi`` of ``yr``, ``n1``
    and ``n2`` tokens, more than ``room`` together) that ``truncate_encodings`` cuts under
    ``longest_first`` or ``only_first`` (``_pair_keeps``): each text into the windows of
    ``Encoding.truncate`` (a text not cut: one window), the pair of their first windows laid
    out as ``cross``' ``main``, its ``overflowing`` as the reference nests them
    (``post_processors.pair_cross_layout``), lazy on four ``PairRows`` over the two texts'
    windows. A pair the reference would refuse or treats apart (a text cut to no more tokens
    than the stride, to none, or ``only_first``'s first text too short) is left out
    (``post_process`` raises the error or makes it)."""
    k1, k2 = _pair_keeps(n1, n2, room, trunc.strategy)
    ok = ((n1 <= k1) | (k1 > trunc.stride)) & ((n2 <= k2) | (k2 > trunc.stride))  # (a text not cut: any length)
    if not ok.any():
        return {}
    ds, xi, yi, n1, n2, k1, k2 = ds[ok], xi[ok], yi[ok], n1[ok], n2[ok], k1[ok], k2[ok]
    wa = _row_windows(xr, xi, n1, k1, trunc.stride, trunc.direction, aps)
    wb = _row_windows(yr, yi, n2, k2, trunc.stride, trunc.direction, aps)
    if wa is None or wb is None:
        return {}
    (wa, fa), (wb, fb) = wa, wb
    main, wm, ww, mw = (PairRows(wa, wb, lay) for lay in cross)
    m = ds.shape[0]
    fa, fb = fa.tolist(), fb.tolist()
    lazy = Encoding._lazy
    out: dict = {}
    for q, d in enumerate(ds.tolist()):
        e = lazy(main, main.add(q, q))
        ra, rb = range(m + fa[q] - q, m + fa[q + 1] - q - 1), range(m + fb[q] - q, m + fb[q + 1] - q - 1)
        both = {(i, j): ww.add(i, j) for i in ra for j in rb}
        ovf = []
        for i in ra:
            x = lazy(wm, wm.add(i, q))
            x.overflowing = [lazy(ww, both[i, j]) for j in rb]
            ovf.append(x)
            ovf.extend(lazy(ww, both[i, j]) for j in rb)
        for j in rb:
            y = lazy(mw, mw.add(q, j))
            y.overflowing = [lazy(ww, both[i, j]) for i in ra]
            ovf.append(y)
        e.overflowing = ovf
        out[d] = e
    return out

def _stopped(engine, trunc, texts: List[str], type_id: int, limited: bool,
             num_threads: Optional[int]) -> List[Optional[Encoding]]:
    """Per text, the engine's encoding before post-processing, cut by the early stop when
    ``limited``; ``None`` where the reference path must make it (the engine left the text
    to it and the stop applies, or ``early_stop`` cannot settle the stop)."""
    encs = engine.encode_single_encodings(texts, type_id, num_threads)
    if not limited:  # the whole encoding, the engine's or the reference path's
        return encs
    out: List[Optional[Encoding]] = [None] * len(texts)
    groups: dict = {}  # the engine's rows objects (more than one: the texts NFC changes, run apart)
    for d, e in enumerate(encs):
        if e._rows is not None:
            groups.setdefault(id(e._rows), (e._rows, []))[1].append(d)
    for rows, texts_of in groups.values():  # each text by its own row of its rows (not its index)
        keep_from, keep_to, shift, ok = early_stop(rows, trunc.max_length, trunc.direction)
        at = np.array([encs[d]._row for d in texts_of], np.int64)
        sel = ok[at]
        fast = at[sel]
        lens = (keep_to - keep_from)[fast]
        bounds, idx = gathered(keep_from[fast], lens)
        cut = EncodingRows(rows.ids[idx], rows.tokens[idx], rows.starts[idx], rows.ends[idx],
                           rows.words[idx] - np.repeat(shift[fast], lens), bounds, rows.type_id)
        for k, d in enumerate(np.asarray(texts_of)[sel].tolist()):
            out[d] = Encoding._lazy(cut, k)
    return out


def layout_processor(pp):
    """``(lay, aps)``: the post-processor whose layouts the engines' rows take, and None, or,
    where ``pp`` trims offsets first (``post_processors.offset_trim``), ``pp`` without that
    trim and its ``add_prefix_space`` (the rows' offsets then trimmed before they are laid
    out: ``_prepped``)."""
    trim = post_processors.offset_trim(pp)
    return (pp, None) if trim is None else (trim[1], trim[0])


def _prepped(rows, aps, made: dict):
    """``rows`` as the layouts take them: trimmed (``post_processors.trim_rows``) when ``aps``
    is not None, once per rows object (kept in ``made``); None where they cannot be."""
    if aps is None:
        return rows
    key = ("trim", id(rows))
    hit = made.get(key)
    if hit is None or hit[0] is not rows:
        hit = made[key] = (rows, post_processors.trim_rows(rows, aps))
    return hit[1]


def _laid_out(x: Encoding, single, made: dict, aps=None) -> Optional[Encoding]:
    """``x`` (an engine's lazy encoding, new, read by no one yet) moved onto its rows laid out
    as ``single`` (``post_processors.single_layout``'s), their offsets trimmed first when
    ``aps`` is not None (``layout_processor``), one laid-out rows object per rows object,
    kept in ``made``; None (``x`` untouched) where the rows cannot be trimmed so."""
    key = ("laid", id(x._rows))
    hit = made.get(key)
    if hit is None or hit[0] is not x._rows:
        base = _prepped(x._rows, aps, made)
        hit = made[key] = (x._rows, None if base is None else base.with_layout(*single))
    if hit[1] is None:
        return None
    return x._relaid(hit[1])


def batch_of_singles(engine, inputs, add_special_tokens: bool, num_threads: Optional[int]) -> List[Encoding]:
    """``encode_batch`` from an engine's ``encode_single_encodings`` (the first texts, then
    the pairs' second texts) and the post-processor. Where the post-processor's layout is
    fixed (``post_processors.single_layout``, ``pair_layout``), the engine's lazy encodings
    stay lazy, with that layout (a pair's as ``encoding.PairRows``); elsewhere, and for
    texts the engine left to the reference path, ``post_processors.process``."""
    firsts, seconds, pair_at = split_pairs(inputs)
    a = engine.encode_single_encodings(firsts, 0, num_threads)
    b = engine.encode_single_encodings(seconds, 1, num_threads) if seconds else []
    pp = engine.cfg.post_processor
    lay, aps = layout_processor(pp)  # (a processor that trims offsets: the rows trimmed, then laid out)
    single = post_processors.single_layout(lay, add_special_tokens) if len(seconds) < len(firsts) else None
    pair = post_processors.pair_layout(lay, add_special_tokens) if seconds else None
    made: dict = {}
    if not seconds and single is not None:  # single texts, a fixed layout: the engine's encodings
        # (new, read by no one yet) moved onto the laid-out rows, no second object each
        out = a
        for i, x in enumerate(a):
            if x._rows is None or _laid_out(x, single, made, aps) is None:  # (None: the reference path's)
                out[i] = post_processors.process(pp, [x], add_special_tokens)
        return out
    out = []
    for i, j in enumerate(pair_at):
        x = a[i]
        if j < 0:
            laid = None if single is None or x._rows is None else _laid_out(x, single, made, aps)
            if laid is None:  # (x._rows None: the reference path's)
                out.append(post_processors.process(pp, [x], add_special_tokens))
                continue
            out.append(laid)
            continue
        y = b[j]
        rows = None
        if pair is not None and x._rows is not None and y._rows is not None:
            key = ("pair", id(x._rows), id(y._rows))
            hit = made.get(key)
            if hit is None or hit[0] is not x._rows or hit[1] is not y._rows:
                ra, rb = _prepped(x._rows, aps, made), _prepped(y._rows, aps, made)
                hit = made[key] = (x._rows, y._rows, None if ra is None or rb is None else PairRows(ra, rb, pair))
            rows = hit[2]
        if rows is None:
            out.append(post_processors.process(pp, [x, y], add_special_tokens))
            continue
        out.append(Encoding._lazy(rows, rows.add(x._row, y._row)))
    return out


# ------------------------------------------------------- SentencePiece-style BPE
_SP = "\u2581"


def _sp_normalizer(norm) -> bool:
    """Whether a "prepend" is part of a SentencePiece normalizer we serve; NotServed otherwise."""
    def is_replace(n):
        return (isinstance(n, C.Replace) and n.pattern.kind == "String" and n.pattern.value == " "
                and n.content == _SP)

    if is_replace(norm):
        return False
    if isinstance(norm, C.NormalizerSequence) and len(norm.normalizers) == 2:
        a, b = norm.normalizers
        if isinstance(a, C.Prepend) and a.prepend == _SP and is_replace(b):
            return True
        if isinstance(b, C.Prepend) and b.prepend == _SP and is_replace(a):
            return True  # "▁" is no space: replacing then prepending gives the same text
    raise NotServed("a SentencePiece normalizer other than Replace(' ', '▁') with or without Prepend('▁')")


def _trie_tuple(K, toks):
    """The matchers' trie tuple of added tokens ``[(content bytes, id, flags)]``:
    ``searchable_trie``'s, then the flags by id from ``base`` and ``base`` (an empty trie
    without tokens: ``term`` empty)."""
    if not toks:
        empty = np.full(8, np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64)
        return (empty, empty.copy(), np.zeros(0, np.int32), np.zeros(256, np.uint8), np.zeros(0, np.uint8),
                np.zeros(0, np.uint8), np.zeros(1, np.uint8), 0)
    ids = [t[1] for t in toks]
    base = min(ids)
    flags = np.zeros(max(ids) - base + 1, np.uint8)
    for _c, i, f in toks:
        flags[i - base] = f
    return K.searchable_trie(K.build_trie([(c, i) for c, i, _f in toks])) + (flags, base)


def _added_token_lists(ref):
    raw, norm = [], []
    added = ref.added
    for i, t in added.map_r.items():
        flags = (1 if t.single_word else 0) | (2 if t.lstrip else 0) | (4 if t.rstrip else 0)
        if t.normalized:
            norm.append((added.normalized_form.get(i, t.content).encode("utf-8"), i, flags))
        else:
            raw.append((t.content.encode("utf-8"), i, flags))
    return raw, norm


def _held_pairs(vocab, model):
    """``held`` of a SentencePiece-style vocabulary (``kernels.engine_cpu._sp_piece``,
    ``_sp_word_parts``). ``held: uint8[130 * 130 + 0x110000 // 8]``: first a pair table,
    ``held[x * 130 + y]`` = 1 when some token holds character ``x`` right before ``y`` (the
    ASCII bytes, "▁" as 128, 129 for a lone character: all zeros), then one bit per code
    point (``held[130 * 130 + c // 8] >> (c % 8) & 1``) set for a lone character: one no
    token of two or more characters holds (a character of no token is one too: its
    ``<0xXX>`` bytes join nothing). No token spans a place between two characters the table
    does not hold together, so no merge crosses it and words are cut there (the GPU host
    path's cuts read the same table: ``kernels.sp_host``). Empty (no cuts) when a merge has
    a ``<0xXX>`` byte token on a side (a token's text then no longer shows which characters
    it joins) or some token holds a character other than ASCII and "▁" right before a "▁"
    (the cut before a "▁" tells only those apart)."""
    none = np.zeros(0, np.uint8)
    keys = list(vocab)
    lens = np.fromiter(map(len, keys), np.int64, count=len(keys))
    cps = np.frombuffer("".join(keys).encode("utf-32-le", "surrogatepass"), np.uint32).astype(np.int64)
    start = np.zeros(len(keys) + 1, np.int64)
    np.cumsum(lens, out=start[1:])
    six = np.flatnonzero(lens == 6)
    at = start[six]
    byte_tok = six[(cps[at] == 0x3C) & (cps[at + 1] == 0x30) & (cps[at + 2] == 0x78) & (cps[at + 5] == 0x3E)]
    byte_text = {keys[i] for i in byte_tok.tolist()}  # "<0x??>": six characters; a merge's sides are tokens
    if byte_text and not byte_text.isdisjoint(itertools.chain.from_iterable(model.merges)):
        return none
    kept = lens >= 2
    kept[byte_tok] = False
    tok_of = np.repeat(np.arange(len(keys)), lens)  # each character's token
    on = kept[tok_of]
    code = np.where(cps == ord(_SP), 128, cps)
    inside = on[:-1] & (tok_of[:-1] == tok_of[1:])  # two characters of one kept token
    x, y = code[:-1][inside], code[1:][inside]
    if np.any((y == 128) & (x > 128)):
        return none
    ascii_pair = (x <= 128) & (y <= 128)
    pairs = np.zeros((130, 130), np.uint8)
    pairs[x[ascii_pair], y[ascii_pair]] = 1
    lone = np.ones(0x110000, np.uint8)
    lone[cps[on]] = 0
    lone[:0x80] = 0  # ASCII and "▁" have rows of their own
    lone[ord(_SP)] = 0
    return np.concatenate((pairs.reshape(-1), np.packbits(lone, bitorder="little")))


def _raw_spelling(arena: np.ndarray, tok_off: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The bytes of each token (``arena[tok_off[i]:tok_off[i + 1]]``, valid UTF-8) that holds
    a "▁", each "▁" a space, and no bytes for the others: ``(bytes, offsets)``, the layout
    of ``engine_cpu.short_seed``'s ``karena`` / ``ktok_off``."""
    n = tok_off.shape[0] - 1
    a = arena[:tok_off[n]]
    tok_of = np.repeat(np.arange(n), np.diff(tok_off))
    at = np.flatnonzero((a[:-2] == 0xE2) & (a[1:-1] == 0x96) & (a[2:] == 0x81))  # "▁"
    at = at[tok_of[at] == tok_of[at + 2]]
    holds = np.zeros(n, np.bool_)
    holds[tok_of[at]] = True
    keep = holds[tok_of]
    keep[at + 1] = False
    keep[at + 2] = False
    spelt = a.copy()
    spelt[at] = 0x20
    off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(tok_of[keep], minlength=n), out=off[1:])
    return np.ascontiguousarray(spelt[keep]), off


_NO_RECORD = None  # kernels.engine_cpu._sp_doc's rec when only ids are wanted (its checks compiled away)


class CpuSentencePieceEngine:
    """``device="cpu"`` for SentencePiece-style BPE files (llama2, mistral-v0.1, phi-3,
    gemma3, mistral-v0.3 with ``Metaspace``): byte_fallback BPE over whole normalized
    pieces (``kernels.engine_cpu.sp_*``); ``encode_batch`` from the same kernels recording
    each token's text bytes and piece (``encode_single_encodings``)."""

    def __init__(self, cfg: C.TokenizerConfig, ref):
        from .cpu_ref.unicode_props import _np_flags
        from .kernels import engine_cpu as K
        from .kernels.hash_table import merge_table_from_model

        m = cfg.model
        if not isinstance(m, C.BPE) or not m.byte_fallback:
            raise NotServed("not a byte_fallback BPE")
        if m.continuing_subword_prefix or m.end_of_word_suffix:
            raise NotServed("BPE with continuing_subword_prefix / end_of_word_suffix")
        pre = cfg.pre_tokenizer
        if cfg.normalizer is None and isinstance(pre, C.Metaspace):
            if pre.replacement != _SP or pre.split or pre.prepend_scheme not in ("first", "always"):
                raise NotServed("Metaspace other than replacement '▁', split false, prepend_scheme first/always")
            self.prepend = 2 if pre.prepend_scheme == "first" else 3
        else:
            self.prepend = int(_sp_normalizer(cfg.normalizer))
            if pre is not None and not (isinstance(pre, C.Split) and pre.pattern.kind == "String"
                                        and pre.pattern.value == " " and not pre.invert):
                # after every " " became "▁" a Split on " " has nothing left to cut
                raise NotServed(f"pre_tokenizer {type(pre).__name__} with a SentencePiece normalizer")
        vocab = ref.model.vocab
        byte_id = [vocab.get("<0x%02X>" % b) for b in range(256)]
        if any(b is None for b in byte_id):
            raise NotServed("byte_fallback without all 256 <0xXX> tokens")
        self.byte_id = np.array(byte_id, np.int32)
        self.char_id = np.full(0x110000, -1, np.int32)
        size = max(vocab.values()) + 1
        if size > MAX_IDS:
            raise NotServed(f"ids of {MAX_IDS} and beyond (the word caches keep 21-bit ids)")
        token_bytes: List[Optional[bytes]] = [None] * size
        for tok, i in vocab.items():
            token_bytes[i] = tok.encode("utf-8")
            if len(tok) == 1:
                self.char_id[ord(tok)] = i
        self.K = K
        self.cfg = cfg
        self.ref = ref
        self.whole_first = bool(m.ignore_merges)
        self.held = _held_pairs(vocab, m)
        self.bt = tuple(on_huge_pages(x) for x in K.build_bytes_table(token_bytes))
        self.mtab = on_huge_pages(interleave(*merge_table_from_model(ref.model)))
        self.pfilt = pair_filter(self.mtab)
        raw, norm = _added_token_lists(ref)
        self.rt = _trie_tuple(K, raw)
        self.nt = _trie_tuple(K, norm)
        self.raw_walk = self._raw_walk_marker(K, norm)
        self.cls = _np_flags()
        self.prefix, self.suffix = template_ids(cfg, ref)
        self._prefix_list, self._suffix_list = self.prefix.tolist(), self.suffix.tolist()  # (quick_ids)
        self._lock = threading.Lock()
        self._wcache = None
        self._wrows, self._wshared = 0, False
        self._spare_lock = threading.Lock()
        self._spares, self._spares_out = [], {}
        self._seed = [None]  # short_seed's entries for words, made once
        self._out = KeptArray(np.int32, _KEEP_OUT_MAX, self._lock)
        self._text = KeptArray(np.uint8, _KEEP_TEXT_MAX)

    # the short, wide and long word caches and the pair caches with the merge table's pair
    # filter (``ByteBPEEngine``'s layout, about 68 MiB per worker thread), kept across calls
    # the same way, and so is the scratch (3 ids per input byte here)
    _alloc_word_cache = ByteBPEEngine._alloc_word_cache
    _word_cache = ByteBPEEngine._word_cache
    _ready_rows = ByteBPEEngine._ready_rows
    _spare_cache = ByteBPEEngine._spare_cache
    _word_cache_done = ByteBPEEngine._word_cache_done
    _scratch_out = ByteBPEEngine._scratch_out
    _shares_words = False  # its kernels never read the shared word table's rows (tried: no gain)
    _seeds_words = True  # its kept short cache starts with the vocabulary's words (``_seed_short``)

    _seed_short = ByteBPEEngine._seed_short

    def _raw_walk_marker(self, K, norm) -> tuple:
        """``_sp_doc``'s ``raw_walk`` for the ids: the trie tuple of the tails when the gaps
        may be walked as raw text (decision 0041: a normalizer form, word cuts (``held``), no
        ``ignore_merges``, and every normalized added token's content, its leading "▁"s left
        out, a non-empty text with no "▁" or space: its tail, which must be in a gap for the
        token to be), else ``()``."""
        if self.prepend not in (0, 1) or self.whole_first or self.held.shape[0] == 0:
            return ()
        mark = _SP.encode("utf-8")
        tails = {}
        for content, i, _flags in norm:
            t = content
            while t.startswith(mark):
                t = t[len(mark):]
            if not t or mark in t or b" " in t:
                return ()
            tails.setdefault(t, (t, i, 0))
        return _trie_tuple(K, list(tails.values()))

    def _seed_tables(self):
        """``short_seed``'s arguments but the block count, for words (``char_id`` given: the
        byte-level tables unused): keyed on the tokens' bytes, and when the ids path walks
        raw text (``raw_walk``) once more keyed on their raw spelling, each "▁" a space (a
        word of raw text is keyed so: decision 0041)."""
        tables = (self.bt[0], self.bt[1], self.byte_id, _NO_GRID, self.mtab, self.bt[2], self.bt[3], False,
                  self.char_id, self.byte_id)
        sets = [tables + _NO_SPELLING]
        if len(self.raw_walk):
            sets.append(tables + _raw_spelling(self.bt[0], self.bt[1]))  # the others: seeded already
        return sets

    def quick_ids(self, text: str, add_special_tokens: bool) -> Optional[List[int]]:
        """The ids of one ``str`` as ``encode_ids`` gives them (the post-processor's around),
        from one call of the serial kernel (``sp_block``; it matches the added tokens itself)
        without the batch path's set-up; None for a text whose UTF-8 cannot be made (a lone
        surrogate: the caller's other path). No truncation or padding: the caller's."""
        try:
            b = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        n = len(b)
        data = np.frombuffer(bytearray(b), np.uint8) if n else _NO_TEXT
        bounds = np.array((0, n), np.int64)
        dst = np.array((0, 3 * n + 3), np.int64)
        out = np.empty(3 * n + 3, np.int32)
        counts = np.zeros(1, np.int64)
        locked = self._lock.acquire(blocking=False)
        try:
            self._kernel(data, bounds, dst, out, counts, _NO_RECORD, locked, 1, False)
        finally:
            if locked:
                self._lock.release()
        ids = out[:int(counts[0])].tolist()
        return templated(ids, self._prefix_list, self._suffix_list) if add_special_tokens else ids

    def encode_ids(self, texts, add_special_tokens: bool, num_threads: Optional[int]):
        with self._text.hold() as kept:  # the packed text lives only in this block
            return self._encode_ids(texts, add_special_tokens, num_threads, kept)

    def _encode_ids(self, texts, add_special_tokens: bool, num_threads: Optional[int], kept: Optional[KeptArray]):
        texts = text_list(texts)
        data, offsets = pack(texts, check_text, num_threads, kept)
        return self.encode_packed(data, offsets, add_special_tokens, num_threads)

    def encode_packed(self, data: np.ndarray, offsets: np.ndarray, add_special_tokens: bool,
                      num_threads: Optional[int]):
        """``(ids, row_splits)`` of packed documents (``pack``'s ``data``/``offsets``; the GPU
        engine's hybrid loop gives it a range of its call's documents)."""
        K = self.K
        n = offsets.shape[0] - 1
        dst = np.zeros(n + 1, np.int64)
        np.cumsum(3 * np.diff(offsets) + 3, out=dst[1:])
        counts = np.zeros(n, np.int64)
        threads, parallel = plan_threads(num_threads, data.shape[0])
        par = parallel and n > 1
        locked = self._lock.acquire(blocking=False)
        try:
            out = self._scratch_out(int(dst[-1])) if locked else np.empty(max(int(dst[-1]), 1), np.int32)
            self._kernel(data, offsets, dst, out, counts, _NO_RECORD, locked, threads, par)
            templated = add_special_tokens and (self.prefix.shape[0] or self.suffix.shape[0])
            return gather_rows(K, out, dst[:-1].copy(), counts, (self.prefix, self.suffix) if templated else None,
                               threads if par else 1)
        finally:
            if locked:
                self._lock.release()

    def _kernel(self, data, offsets, dst, out, counts, rec, locked: bool, threads: int, par: bool) -> None:
        """``sp_encode_parallel`` (blocks of documents) or ``sp_block`` (all of them) into ``out`` at
        ``dst``; the kept word caches when ``locked`` (the caller holds ``_lock``)."""
        K = self.K
        n = offsets.shape[0] - 1
        cache = self._word_cache(locked, threads if par else 1)
        try:
            args = (self.rt, self.nt, self.cls, K.sp_form_marker(self.prepend), self.raw_walk if rec is None else (),
                    self.char_id, self.byte_id, self.mtab, *self.bt, self.whole_first, self.held, *cache, out, counts,
                    rec)
            if par:
                blocks = byte_blocks(offsets, data.shape[0], n, _UNITS_PER_THREAD * threads)
                with numba_threads(threads):
                    K.sp_encode_parallel(data, offsets, dst, blocks, np.int64(threads), *args)
            else:
                K.sp_block(data, offsets, dst, 0, n, *args[:-3], 0, *args[-3:])  # worker 0, before out, counts, rec
        finally:
            self._word_cache_done(cache)

    def _token_lengths(self) -> np.ndarray:
        """Bytes of normalized text each id stands for (a byte-fallback token: 1)."""
        if getattr(self, "_nlen", None) is None:
            vocab = self.ref.model.vocab
            nlen = np.zeros(max(vocab.values()) + 1, np.int64)
            for t, i in vocab.items():
                nlen[i] = len(t.encode("utf-8"))
            nlen[self.byte_id] = 1
            self._nlen = nlen
            vr = np.empty(nlen.shape[0], dtype=object)
            for t, i in vocab.items():
                vr[i] = t
            self._vocab_r = vr
        return self._nlen

    def encode_single_encodings(self, texts: List[str], type_id: int, num_threads: Optional[int]) -> List[Encoding]:
        """Per text, the ``Encoding`` before post-processing (the reference's
        ``_encode_single``): the kernels record each token's first and last text bytes and
        its piece (``_sp_doc``'s ``rec``); a text holding a normalized added token takes the
        reference path."""
        texts = text_list(texts)
        data, offsets = pack(texts, check_text, num_threads)
        n = len(texts)
        dst = np.zeros(n + 1, np.int64)
        np.cumsum(3 * np.diff(offsets) + 3, out=dst[1:])
        m = max(int(dst[-1]), 1)
        counts = np.zeros(n, np.int64)
        # slots for 3 tokens a byte, about one in ten written, the written ones dense (each
        # block's documents back to back, _sp_docs): arrays whose pages cost only when
        # written (sparse_empty), the records int32 where the text's positions fit
        out = sparse_empty(m, np.int32)
        rdt = np.int32 if data.shape[0] <= _REC32_MAX else np.int64
        tb = sparse_empty(m, rdt)
        te = sparse_empty(m, rdt)
        word = sparse_empty(m, rdt)
        rec = (self._token_lengths(), tb, te, word)
        threads, parallel = plan_threads(num_threads, data.shape[0])
        par = parallel and n > 1
        locked = self._lock.acquire(blocking=False)
        try:
            self._kernel(data, offsets, dst, out, counts, rec, locked, threads, par)
        finally:
            if locked:
                self._lock.release()
        from .kernels.spans_cpu import sp_token_spans

        nw = threads if par else 1
        blocks = byte_blocks(offsets, offsets[-1], n, _UNITS_PER_THREAD * nw)
        with numba_threads(nw):
            first, ids_a, starts, ends, words, added, bad = sp_token_spans(data, offsets, dst, counts, out, tb, te,
                                                                           word, blocks, np.int64(nw))
        at = np.flatnonzero(added)  # a raw added token: its token is the text it matched
        row = np.searchsorted(first, at, side="right") - 1  # (an empty row starts where the next does)
        k = dst[row] + at - first[row]  # where the kernel recorded it
        toks = TokenStrings(self._vocab_r, ids_a, at,
                            [data[a:b + 1].tobytes().decode("utf-8") for a, b in zip(tb[k].tolist(), te[k].tolist())])
        slow = np.flatnonzero(bad).tolist()  # a normalized added token: the reference path's
        return assemble(self.ref, texts, type_id, first, ids_a, toks, starts, ends, words, slow, added)

    def encode_batch(self, inputs, add_special_tokens: bool, num_threads: Optional[int]) -> List[Encoding]:
        return batch_of_singles(self, inputs, add_special_tokens, num_threads)


def cpu_engine_for(cfg: C.TokenizerConfig, ref):
    """The engine for a tokenizer.json, or ``NotServed`` with every engine's reason: the
    compiled byte-level and SentencePiece engines, or, for BPE with an end-of-word suffix,
    the CLIP one (``fast_clip``); the WordPiece / WordLevel one (``fast_wordpiece``) or the
    Unigram one (``fast_unigram``)."""
    from .fast_unigram import CpuUnigramEngine
    from .fast_wordpiece import CpuWordPieceEngine

    if isinstance(cfg.model, (C.WordPiece, C.WordLevel)):
        return CpuWordPieceEngine(cfg, ref)
    if isinstance(cfg.model, C.Unigram):
        return CpuUnigramEngine(cfg, ref)
    try:
        return CpuTokenizerEngine(cfg, ref)
    except NotServed as e1:
        try:
            return CpuSentencePieceEngine(cfg, ref)
        except NotServed as e2:
            if cfg.model.end_of_word_suffix:
                from .fast_clip import CpuClipEngine

                try:
                    return CpuClipEngine(cfg, ref)
                except NotServed as e3:
                    raise NotServed(f"byte-level engine: {e1}; SentencePiece engine: {e2}; "
                                    f"CLIP engine: {e3}") from None
            raise NotServed(f"byte-level engine: {e1}; SentencePiece engine: {e2}") from None


# ---------------------------------------------------------------------- tiktoken
def spec_for_tiktoken(pat_str: str, id_bytes: dict) -> EngineSpec:
    """The engine spec of a tiktoken encoding (``id_bytes``: rank -> bytes), or ``NotServed``."""
    from .kernels import engine_cpu as K
    from .kernels.hash_table import build_merge_table
    from .kernels.pretok_cpu import family_of_pattern

    fam = family_of_pattern(pat_str, "tiktoken")
    if fam is None:
        raise NotServed("pat_str is not one of the compiled families")
    size = max(id_bytes) + 1
    if size > MAX_IDS:
        raise NotServed(f"ranks of {MAX_IDS} and beyond (the word caches keep 21-bit ids)")
    token_bytes: List[Optional[bytes]] = [None] * size
    for i, b in id_bytes.items():
        token_bytes[i] = b
    bt = K.build_bytes_table(token_bytes)
    rows = K.concat_merges(*bt, np.arange(size, dtype=np.int64))
    init = np.array([K.bytes_lookup(np.array([b], np.uint8), 0, 1, *bt) for b in range(256)], np.int32)
    return EngineSpec(family=fam, dialect="tiktoken", init_ids=init, token_bytes=token_bytes,
                      merges=build_merge_table(rows), whole_first=True, raw_tokens=[], norm_tokens=[],
                      bytes_table=bt)


class Absent:
    """``absent(text)``: True when none of ``tokens`` (strings, not empty) occurs in the text;
    False when one does, or may: their heads (first two characters, when they are at most
    eight, else their first characters: llama3's 256 special tokens have the one head
    "<|", rare in code where "<" is not) are searched for first (``str.__contains__``; most
    texts hold none), and the tokens themselves only where one is there and they are at
    most ``_TEXT_PROBE_TOKENS``."""

    __slots__ = ("firsts", "tokens")

    def __init__(self, tokens):
        heads = {t[:2] for t in tokens}  # ("" is in every text: never absent)
        self.firsts = tuple(sorted(heads if len(heads) <= 8 else {t[:1] for t in tokens}))
        self.tokens = tuple(tokens) if len(tokens) <= _TEXT_PROBE_TOKENS else None

    def __call__(self, text: str) -> bool:
        for c in self.firsts:
            if c in text:
                if self.tokens is None:
                    return False
                for t in self.tokens:
                    if t in text:
                        return False
                return True
        return True


def _text_ids(engine: "ByteBPEEngine", text: str, nfc_lo: int = 256) -> Optional[List[int]]:
    """``engine.text_ids`` of one ``str`` as a list, or None where its UTF-8 cannot be made (a
    lone surrogate) or, with ``nfc_lo`` (the lowest lead byte of a character NFC may change)
    below 256, NFC changes the text (the engine's check, for a text with such a byte)."""
    try:
        b = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    if not b:
        return []
    data = np.frombuffer(bytearray(b), np.uint8)
    if (nfc_lo < 256 and not text.isascii() and max(b) >= nfc_lo
            and engine._nfc_changed(data, np.array((0, len(b)), np.int64), None)[0]):
        return None
    return engine.text_ids(data).tolist()


def one_text_ids(eng, text: str, add_special_tokens: bool) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    """``(ids, row_splits)`` of one ``str`` of at most ``_ONE_TEXT_CHARS`` characters (the
    caller's check: from a few thousand characters the ids' list costs more than the batch
    set-up saves) by the byte-level or SentencePiece engine's ``quick_ids``
    (``Tokenizer.encode_batch_ids([text])``: gpt2 and llama2 25-27 -> 10-15 us up to 500
    characters), else None: another engine (WordPiece's and Unigram's ``quick_ids`` are their
    batch path), or a text ``quick_ids`` leaves to the batch path."""
    if not isinstance(eng, (CpuTokenizerEngine, CpuSentencePieceEngine)):
        return None
    ids = eng.quick_ids(text, add_special_tokens)
    if ids is None:
        return None
    return np.array(ids, np.int32), np.array((0, len(ids)), np.int64)


class CpuTiktokenEngine:
    """``encode_*`` of a ``TiktokenEncoding`` on the compiled engine."""

    def __init__(self, pat_str: str, id_bytes: dict, special_tokens: dict):
        self.engine = ByteBPEEngine(spec_for_tiktoken(pat_str, id_bytes))
        self.special_tokens = special_tokens
        self._by_allowed = {}  # allowed special tokens: (engine, hint covers its probe)
        self._checkers = {}
        self.text = KeptArray(np.uint8, _KEEP_TEXT_MAX)  # TiktokenEncoding._fast_batch packs into it
        # the first bytes of every special token, when there are at most three (all of
        # tiktoken's encodings: "<"): ``pack`` flags the texts holding one, and the
        # special-token check and matching search only those
        fb = sorted({s.encode("utf-8")[0] for s in special_tokens if s})
        self.probe = np.array([(b, b, _PROBE_ADDED) for b in fb], np.int64) if 1 <= len(fb) <= 3 else None
        self._text_probes = {}  # ordinary_ids: an Absent check per token set
        self._text_ok = self.engine.serves_text_ids

    def pack(self, texts: Sequence[str], check, num_threads: Optional[int], kept: Optional[KeptArray] = None):
        """``(data, offsets, hint)``: ``pack_probed`` with ``self.probe`` (``kept``: as there)."""
        return pack_probed(texts, check, num_threads, self.probe, kept=kept)

    def ordinary_ids(self, text, tokens: frozenset) -> Optional[List[int]]:
        """tiktoken's ids of one text (``encode`` / ``encode_ordinary``) when none of ``tokens``
        (the special tokens allowed or disallowed; empty for ``encode_ordinary``) occurs in it:
        then it is ordinary text, and the base engine's ``text_ids`` encodes it without the
        batch path's set-up. None when it cannot tell (``Absent``), or the text is not a
        ``str`` of valid UTF-8 (a lone surrogate): the caller takes the batch path, which
        raises the reference's errors and repairs such text as tiktoken does."""
        if type(text) is not str or not self._text_ok:
            return None
        if tokens:
            absent = self._text_probes.get(tokens)
            if absent is None:
                absent = Absent(tokens)
                if len(self._text_probes) < 64:
                    self._text_probes[tokens] = absent
            if not absent(text):
                return None
        return _text_ids(self.engine, text)

    def _engine(self, allowed: frozenset) -> ByteBPEEngine:
        """The engine matching the special tokens ``allowed``."""
        return self._entry(allowed)[0]

    def _entry(self, allowed: frozenset) -> Tuple[ByteBPEEngine, bool]:
        """The engine matching the special tokens ``allowed``, and whether ``self.pack``'s hint
        covers its probe (made once per set)."""
        got = self._by_allowed.get(allowed)
        if got is None:
            toks = [(s.encode("utf-8"), self.special_tokens[s], 0) for s in sorted(allowed)]
            e = self.engine.with_added(toks) if allowed else self.engine
            covered = (self.probe is not None and e.probe is not None
                       and bool(np.isin(e.probe[:, 0], self.probe[:, 0]).all()))
            got = self._by_allowed[allowed] = (e, covered)
        return got

    def contains_any(self, data, offsets, tokens: frozenset, hint: Optional[np.ndarray] = None) -> np.ndarray:
        """Per document, whether one of ``tokens`` occurs in it (``hint``: ``self.pack``'s;
        only the documents it flags are searched)."""
        K = self.engine._K
        got = self._checkers.get(tokens)
        if got is None:  # the trie, and whether the hint covers its first bytes (made once per set)
            trie = K.searchable_trie(K.build_trie([(s.encode("utf-8"), 0) for s in sorted(tokens)]))
            covered = (self.probe is not None and "" not in tokens
                       and bool(np.isin(np.flatnonzero(trie[3]), self.probe[:, 0]).all()))
            got = self._checkers[tokens] = (trie, covered)
        trie, covered = got
        if not covered:
            hint = None  # a token not among the special ones, with another first byte
        if hint is None:
            return K.any_match(data, offsets[:-1].copy(), offsets[1:].copy(), *trie)
        out = np.zeros(offsets.shape[0] - 1, np.uint8)
        if not hint.any():  # (no document holds a first byte: most calls)
            return out
        docs = np.flatnonzero(hint)
        if docs.shape[0]:
            out[docs] = K.any_match(data, offsets[:-1][docs], offsets[1:][docs], *trie)
        return out

    def encode_ids(self, data, offsets, allowed: frozenset, num_threads: Optional[int],
                   hint: Optional[np.ndarray] = None):
        """``(ids, row_splits)`` with the special tokens in ``allowed`` matched (``hint``:
        ``self.pack``'s, passed on where it covers the matcher's first bytes)."""
        eng, covered = self._entry(allowed)
        if not covered:
            hint = None
        ids, rs, _skip = eng.run_ids(data, offsets, num_threads=num_threads, hint=hint)
        return ids, rs


def env_threads() -> Optional[int]:
    v = os.environ.get("GPU_TOK_NUM_THREADS")
    return int(v) if v else None
