"""The GPU engine (``device="cuda"``): host pre-tokenization, device dedupe and BPE.

Flow of one batch of documents (decision record 0020):

1. **host**: the texts are packed, and the CPU engine's added-token passes, NFC check and
   compiled scanners cut them into pieces (``kernels.gpu_host``, in parallel, into the
   pinned staging buffers; SentencePiece-style files: ``kernels.sp_host``, which also writes
   the normalized buffer), giving the buffer, piece bounds and fixed ids; pieces over
   8 KiB are encoded here with the CPU engine's BPE (one GPU thread would be far slower);
2. **to the device**: the buffer once, ``starts: int32[P+1]``, ``special: int32[P]`` and
   each document's first piece, staged in pinned host buffers and copied asynchronously
   on the batch's CUDA stream;
3. **kernels** (``kernels/bpe_cuda.py``, ``kernels/dedupe_cuda.py``): hash every piece,
   dedupe through a device hash table (a collision is caught by comparing bytes), BPE once
   per distinct piece (one thread per short piece; a heap per long one), counts, an
   exclusive scan, the scatter into the flat ``ids`` and ``row_splits``;
4. **back**: CuPy arrays that stay on the device (``return_numpy=False`` where CuPy is
   installed), or NumPy arrays.

Batches alternate between two streams and two sets of pinned/device buffers, so batch
``k + 1``'s host work runs while batch ``k``'s copies and kernels do. A CUDA out-of-memory
error halves the failing batch (by bytes) and goes on, never losing or reordering texts.

The same pipeline runs on the CPU twins (``backend="twin"``: the kernels compiled with
``numba.njit``, serial), which the tests compare with the simulator and ``device="cpu"``.
Under ``NUMBA_ENABLE_CUDASIM=1`` the ``cuda`` backend is the simulator: slow, for tests,
and its arrays are NumPy (CuPy needs a real device).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np

from .fast_cpu import KeptArray, numba_threads, plan_threads
from .kernels.hash_table import new_pair_cache

_BATCH_BYTES = 64 << 20  # bytes of input text per batch at most (GPU_TOK_CUDA_BATCH_MB overrides)
_MIN_BATCH_BYTES = 4 << 20  # an input is cut into at least _SPLIT batches of at least this much,
_SPLIT = 4  # so the host's work on one batch overlaps the device's on the previous one
_PINNED_TEXT_MAX = 256 << 20  # bytes of packed text kept in pinned host memory between calls
_HUGE_BYTES = 8 << 10  # pieces longer than this are encoded on the host (GPU_TOK_CUDA_HOST_PIECE overrides)
_CUDA_ERROR_OUT_OF_MEMORY = 2
# the hybrid loop (GpuEngine._encode_hybrid): calls of at least this many bytes; the device's
# share of a round kept within [_HYBRID_LO, _HYBRID_HI] ("auto", so that both parts stay
# measured); a part's rates are learnt from rounds where it had at least _HYBRID_SAMPLE bytes
_HYBRID_MIN_BYTES = 1 << 20
_HYBRID_LO, _HYBRID_HI = 0.05, 0.95
_HYBRID_SAMPLE = 32 << 10


class DeviceNotAvailable(RuntimeError):
    """``device="cuda"`` was asked for where no CUDA device is usable (the message says why)."""


class NotServedOnDevice(ValueError):
    """``device="cuda"`` was asked for a tokenizer the GPU engine does not serve exactly."""


# ------------------------------------------------------------------ detection
_USABLE: Optional[Tuple[bool, str]] = None
_USABLE_LOCK = threading.Lock()


def simulator_requested() -> bool:
    """``NUMBA_ENABLE_CUDASIM`` is on (then ``numba.cuda`` is the simulator)."""
    from .kernels.twins import simulator_enabled

    return simulator_enabled()


def cuda_usable() -> Tuple[bool, str]:
    """``(usable, reason)``: a real CUDA device that Numba can use (never the simulator).

    Cheap where there is obviously no GPU (no NVIDIA driver files): ``numba.cuda`` is then
    not even imported. The answer is kept for the process."""
    global _USABLE
    with _USABLE_LOCK:
        if _USABLE is None:
            _USABLE = _probe()
        return _USABLE


def _probe() -> Tuple[bool, str]:
    try:
        if simulator_requested():
            return False, "NUMBA_ENABLE_CUDASIM=1 (the simulator is for tests; device='cuda' uses it explicitly)"
        if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
            return False, "CUDA_VISIBLE_DEVICES hides every device"
        if os.name == "posix" and not any(os.path.exists(p) for p in ("/proc/driver/nvidia", "/dev/nvidia0",
                                                                       "/dev/nvidiactl", "/dev/dxg")):
            return False, "no NVIDIA driver found (/proc/driver/nvidia, /dev/nvidia*)"
        from numba import cuda

        if not cuda.is_available():
            return False, "numba.cuda.is_available() is False"
        cuda.current_context()
        return True, ""
    except Exception as e:  # noqa: BLE001 - any failure means "not usable"
        return False, f"{type(e).__name__}: {e}"


def is_oom(e: BaseException) -> bool:
    """A CUDA out-of-memory error from Numba (``CudaAPIError`` code 2) or CuPy."""
    name = type(e).__name__
    if name == "OutOfMemoryError":  # cupy.cuda.memory.OutOfMemoryError
        return True
    if name == "CudaAPIError":
        code = getattr(e, "code", None)
        return code == _CUDA_ERROR_OUT_OF_MEMORY or "OUT_OF_MEMORY" in str(e)
    return False


def _cupy():
    """CuPy when it is installed and a real device is in use, else None."""
    if simulator_requested():
        return None
    try:
        import cupy
    except Exception:  # noqa: BLE001
        return None
    return cupy


# ------------------------------------------------------------------- backends
class _Backend:
    """Where the kernels run: ``CudaBackend`` (numba.cuda, real or simulated) or
    ``TwinBackend`` (the njit twins on NumPy arrays)."""

    name = "?"
    K = None

    def scan(self, x, n: int, out, stream, scratch=None, level: int = 0):
        """``out[:n+1]`` = exclusive prefix sums of ``x[:n]`` (``out[n]`` the total), by chunks
        of ``SCAN_CHUNK`` items per thread, recursively over the chunk sums. ``scratch(name,
        k, dtype)``: where the chunk sums of each level go (a batch's pooled arrays; fresh ones
        when None: an allocation per level cost a device allocation each, on the H200)."""
        K = self.K
        if n == 0:
            self.launch(K.k_fill_i64, 1, stream, 1, out, np.int64(0))
            return
        get = scratch if scratch is not None else (lambda name, k, dt: self.empty(k, dt))
        ch = K.SCAN_CHUNK
        nc = (n + ch - 1) // ch
        if nc == 1:
            base = get(f"scan_base{level}", 1, np.int64)
            self.launch(K.k_fill_i64, 1, stream, 1, base, np.int64(0))
        else:
            sums = get(f"scan_sums{level}", nc, np.int64)
            self.launch(K.k_chunk_sums, nc, stream, nc, n, x, sums)
            base = get(f"scan_base{level}", nc + 1, np.int64)
            self.scan(sums, nc, base, stream, scratch, level + 1)
        self.launch(K.k_chunk_scan, nc, stream, nc, n, x, base, out)


class TwinBackend(_Backend):
    name = "twin"

    def __init__(self):
        from .kernels import twins

        self.K = twins.load("cpu")

    def stream(self):
        return None

    def launch(self, kernel, n, stream, *args):
        if n > 0:
            kernel(*args)

    def empty(self, n, dtype):
        return np.empty(max(int(n), 0), dtype)

    def upload(self, host, stream=None):
        return np.ascontiguousarray(host)

    def to_host(self, dev, stream=None):
        return np.array(dev)  # a copy, as from a device: the engine reuses pooled arrays

    def read_scalar(self, dev, i, stream=None):
        return dev[i]

    def to_host_into(self, dev, host, stream=None):
        host[:] = dev[:host.shape[0]]

    def copy_into(self, dev, at, host, stream=None):
        dev[at:at + host.shape[0]] = host

    def sync(self, stream):
        pass

    def event(self, stream):
        """A CUDA event recorded on ``stream`` (None where there is no device)."""
        return None

    def release(self):
        pass


class CudaBackend(_Backend):
    name = "cuda"

    def __init__(self):
        from numba import cuda

        from .kernels import twins

        self.cuda = cuda
        self.sim = twins.simulator_enabled()
        self.K = twins.load("cuda")
        self.tpb = 32 if self.sim else 256
        try:  # one-thread kernels (bounds, scan tails) are small on purpose
            import numba

            numba.config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
        except Exception:  # noqa: BLE001
            pass
        # the short launch path (FastLauncher); off on the simulator (no compiled kernels) and
        # with GPU_TOK_CUDA_FAST_LAUNCH=0
        self.fast = None
        if not self.sim and os.environ.get("GPU_TOK_CUDA_FAST_LAUNCH", "1") != "0":
            self.fast = FastLauncher.create()

    def stream(self):
        return self.cuda.stream()

    def launch(self, kernel, n, stream, *args):
        n = int(n)
        if n <= 0:
            return
        blocks = (n + self.tpb - 1) // self.tpb
        if stream is None:
            kernel[blocks, self.tpb](*args)
        elif self.fast is None or not self.fast.launch(kernel, blocks, self.tpb, stream, args):
            kernel[blocks, self.tpb, stream](*args)

    def empty(self, n, dtype):
        return self.cuda.device_array(max(int(n), 1), dtype)[:max(int(n), 0)]

    def pinned(self, n, dtype):
        return self.cuda.pinned_array(max(int(n), 1), dtype)

    def upload(self, host, stream=None):
        """A new device array holding ``host`` (tables, small arrays; the batches' data goes
        through ``GpuEngine._put`` and pinned staging)."""
        host = np.ascontiguousarray(host)
        n = host.shape[0]
        dev = self.empty(n, host.dtype)
        if n:
            dev.copy_to_device(host, stream=stream if stream is not None else 0)
        return dev

    def to_host(self, dev, stream=None):
        if dev.shape[0] == 0:
            return np.zeros(0, dev.dtype)
        return dev.copy_to_host(stream=stream if stream is not None else 0)

    def read_scalar(self, dev, i, stream=None):
        v = self.to_host(dev[i:i + 1], stream)
        self.sync(stream)
        return v[0]

    def to_host_into(self, dev, host, stream=None):
        """``dev`` (of ``host``'s length) copied into the host array ``host`` (a view of a
        larger one: its place in the call's result)."""
        if host.shape[0]:
            dev.copy_to_host(ary=host, stream=stream if stream is not None else 0)

    def copy_into(self, dev, at, host, stream=None):
        if host.shape[0]:
            dev[at:at + host.shape[0]].copy_to_device(np.ascontiguousarray(host), stream=stream if stream is not None
                                                      else 0)

    def sync(self, stream):
        if stream is None:
            self.cuda.synchronize()
        else:
            stream.synchronize()

    def event(self, stream):
        e = self.cuda.event()  # timing on by default (the simulator takes no arguments)
        e.record(stream=stream if stream is not None else 0)
        return e

    def release(self):
        """Give cached device memory back after an out-of-memory error."""
        try:
            self.cuda.current_context().deallocations.clear()
        except Exception:  # noqa: BLE001
            pass
        cp = _cupy()
        if cp is not None:
            try:
                cp.get_default_memory_pool().free_all_blocks()
            except Exception:  # noqa: BLE001
                pass


class FastLauncher:
    """Kernel launches without Numba's per-argument preparation (numba-cuda 0.30: about 10 us
    per array argument on the H200 machine, 2026-12-05; ``k_long`` takes 20 arrays).

    Numba launches a compiled kernel (``_Kernel.launch``) by turning each argument into the
    values of the kernel's parameters (``_Kernel._prepare_args``: seven for a 1-D array,
    ``meminfo, parent, size, itemsize, data, shape[0], strides[0]``; a ``ctypes`` value of
    the argument's Numba type for an integer; the value for a boolean) and handing them to
    ``cuda.core``'s ``launch``. This makes the same values directly from the arrays' sizes and
    device pointers, and calls the same ``launch`` with the same launch configuration.

    Nothing is assumed about that layout unchecked: the first launch of each kernel with each
    kind of arguments goes through Numba (which compiles and picks the overload), then Numba's
    own ``_prepare_args`` and this class's values are compared for those arguments; only where
    they are equal (value and kind, item by item) does that kernel take this path, else it
    stays with Numba (``refused`` names it and why). Any error on this path (a numba-cuda
    without these internals, a failed launch) also hands the launch back to Numba."""

    def __init__(self, launch, config):
        self._launch = launch
        self._config = config
        self._kernels: dict = {}  # (kernel, argument kinds) -> (cuda.core kernel, kinds) or None
        self._configs: dict = {}
        self.fast = 0  # launches made here
        self.refused: dict = {}  # kernel name -> why it stays with Numba

    @classmethod
    def create(cls) -> Optional["FastLauncher"]:
        try:
            from numba.cuda import dispatcher as nd

            launch, LaunchConfig = nd.launch, nd.LaunchConfig
            coop = "is_cooperative" if getattr(nd, "CUDA_CORE_GE_1_0", False) else "cooperative_launch"
        except Exception:  # noqa: BLE001 - another numba-cuda: Numba's own launches
            return None

        def config(grid, block):
            return LaunchConfig(grid=grid, block=block, shmem_size=0, **{coop: False})

        return cls(launch, config)

    @staticmethod
    def _kind(a):
        """What picks a kernel's overload, cheaply: an array's dtype and dimensions (contiguous
        1-D only; others stay with Numba), a scalar's type."""
        dt = getattr(a, "dtype", None)
        if dt is None:
            return type(a)
        nd = getattr(a, "ndim", 0)
        if nd == 0:
            return (type(a), dt.num)
        if nd != 1 or a.strides[0] != dt.itemsize:
            return None
        return dt.num

    @staticmethod
    def values(kinds, args) -> list:
        """The kernel parameters' values of ``args``: what ``_Kernel._prepare_args`` makes for
        1-D contiguous arrays, integers and booleans (``kinds``: per argument ``"a"``, a
        ``ctypes`` integer type, or ``"b"``)."""
        out = []
        for k, a in zip(kinds, args):
            if k == "a":
                isz = a.dtype.itemsize
                n = a.shape[0]
                out += [0, 0, n, isz, a.device_ctypes_pointer.value, n, isz]  # the pointer as Numba reads it
            elif k == "b":
                out.append(a)
            else:
                out.append(k(a))
        return out

    def launch(self, kernel, blocks: int, tpb: int, stream, args) -> bool:
        """Launch ``kernel`` on ``stream`` here; False: the caller launches it through Numba."""
        kinds = tuple(self._kind(a) for a in args)
        key = (kernel, kinds)
        entry = self._kernels.get(key, False)
        if entry is None:
            return False
        if entry is False:
            if None in kinds:
                self._kernels[key] = None
                return False
            kernel[blocks, tpb, stream](*args)  # compiles and picks the overload; then checked
            self._kernels[key] = self._learn(kernel, stream, args)
            return True
        cuk, pk = entry
        cfg = self._configs.get((blocks, tpb))
        try:
            if cfg is None:
                cfg = self._configs[(blocks, tpb)] = self._config((blocks, 1, 1), (tpb, 1, 1))
            self._launch(stream, cfg, cuk, *self.values(pk, args))
        except Exception as e:  # noqa: BLE001 - Numba launches it, and this kernel from now on
            self._kernels[key] = None
            self.refused[_kernel_name(kernel)] = f"launch failed: {type(e).__name__}: {e}"
            return False
        self.fast += 1
        return True

    def _learn(self, kernel, stream, args):
        """``(cuda.core kernel, parameter kinds)`` of ``kernel`` for arguments like ``args``,
        where this class's values equal Numba's own; else None (``refused`` says why)."""
        import ctypes

        name = _kernel_name(kernel)
        try:
            sig = tuple(kernel.typeof_pyval(a) for a in args)
            k = kernel.overloads.get(sig)
            if k is None:
                self.refused[name] = f"no overload for {sig}"
                return None
            pk = []
            for t in k.argument_types:  # by the Numba types' names (their module moved between versions)
                cls = {c.__name__ for c in type(t).__mro__}
                if "Array" in cls and getattr(t, "ndim", 0) == 1 and getattr(t, "layout", "") == "C":
                    pk.append("a")
                elif "Boolean" in cls:
                    pk.append("b")
                elif "Integer" in cls and hasattr(ctypes, f"c_{t}"):
                    pk.append(getattr(ctypes, f"c_{t}"))
                else:
                    self.refused[name] = f"parameter type {t}"
                    return None
            theirs, retr = [], []
            for t, v in zip(k.argument_types, args):
                k._prepare_args(t, v, stream, retr, theirs)
            ours = self.values(pk, args)
            why = _same_params(theirs, ours)
            if why:
                self.refused[name] = why
                return None
            return k._codelibrary.get_cufunc().kernel, tuple(pk)
        except Exception as e:  # noqa: BLE001
            self.refused[name] = f"{type(e).__name__}: {e}"
            return None


def _same_params(theirs: list, ours: list) -> str:
    """'' where two lists of kernel parameter values are the same (item by item: a ``ctypes``
    value of the same type and value, or an equal plain value, a Python int and an 8-byte NumPy
    integer being the same parameter); else what differs."""
    import ctypes

    if len(theirs) != len(ours):
        return f"{len(theirs)} parameters, not {len(ours)}"
    for i, (a, b) in enumerate(zip(theirs, ours)):
        if isinstance(a, ctypes._SimpleCData) or isinstance(b, ctypes._SimpleCData):
            if type(a) is not type(b) or a.value != b.value:
                return f"parameter {i}: {a!r} against {b!r}"
            continue
        ta, tb = type(a), type(b)
        wide = lambda t: t is int or (issubclass(t, np.integer) and np.dtype(t).itemsize == 8)  # noqa: E731
        if not (ta is tb or (wide(ta) and wide(tb))) or a != b:
            return f"parameter {i}: {a!r} ({ta.__name__}) against {b!r} ({tb.__name__})"
    return ""


# ------------------------------------------------------------------ tables
class DeviceTables:
    """One vocabulary's tables on the backend (``bpe_cuda`` layouts)."""

    def __init__(self, be: _Backend, mode: int, mtab, arena, tok_off, bkeys, bvals, whole_first: bool,
                 init_ids=None, grid=None, char_id=None, byte_id=None):
        def up(a, dtype, min_len=1):
            a = np.ascontiguousarray(a, dtype)
            if a.shape[0] < min_len:
                a = np.concatenate([a, np.zeros(min_len - a.shape[0], dtype)])
            return be.upload(a)

        self.mode = mode
        self.whole_first = bool(whole_first)
        self.mtab = up(mtab, np.uint64)
        self.arena = up(arena, np.uint8)
        self.tok_off = up(tok_off, np.int64)
        self.bkeys = up(bkeys, np.uint64)
        self.bvals = up(bvals, np.int32)
        self.init_ids = up(init_ids if init_ids is not None else np.zeros(256), np.int32, 256)
        self.grid = up(grid if grid is not None else np.zeros(1), np.uint64)
        self.char_id = up(char_id if char_id is not None else np.full(1, -1), np.int32)
        self.byte_id = up(byte_id if byte_id is not None else np.zeros(256), np.int32, 256)


def byte_level_tables(be: _Backend, eng) -> DeviceTables:
    """Tables of a ``fast_cpu.ByteBPEEngine`` (tokenizer.json ByteLevel or tiktoken)."""
    return DeviceTables(be, be.K.MODE_BYTE, eng.mtab, eng.arena, eng.tok_off, eng.bkeys, eng.bvals,
                        eng.spec.whole_first, init_ids=eng.init_ids, grid=eng.grid)


def sentencepiece_tables(be: _Backend, sp) -> DeviceTables:
    """Tables of a ``fast_cpu.CpuSentencePieceEngine``: ``whole_first`` is applied on the host
    (``sp_host``: to whole pieces, before they are cut into words), so the kernels do not."""
    arena, tok_off, bkeys, bvals = sp.bt
    return DeviceTables(be, be.K.MODE_SP, sp.mtab, arena, tok_off, bkeys, bvals, False,
                        char_id=sp.char_id, byte_id=sp.byte_id)


# ------------------------------------------------------------------ host sides
@dataclass
class HostPieces:
    buf: np.ndarray  # uint8[M]
    starts: np.ndarray  # int32[P+1]
    special: np.ndarray  # int32[P] (byte-level: left unwritten where model_only)
    first: np.ndarray  # int64[n+1]
    skip: Optional[np.ndarray]  # uint8[n]: documents the reference path encodes (rows left empty)
    stats: Tuple[int, int, int]  # model pieces of >= 2 bytes, long ones, the long ones' bytes (huge excluded)
    huge: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None  # (pieces, ids, offsets) encoded on the host
    # pieces cut on the device (GpuEngine._device_step): (data, starts, special, first) there, and P;
    # starts/special/first above are then those device arrays too
    device: Optional[tuple] = None
    P: int = -1
    M: int = -1  # the device's data length where it is not buf's (SentencePiece cut on the device)
    # every piece's special is -1 (no added token, no document left to the reference path, no
    # huge piece): the device fills it (GpuEngine._launch) instead of copying P x 4 bytes
    model_only: bool = False


class ByteLevelHost:
    """Pieces of a ``fast_cpu.ByteBPEEngine`` (its NFC check, added tokens, compiled scanner),
    cut in parallel by ``kernels.gpu_host``."""

    def __init__(self, eng):
        self.eng = eng

    def pieces(self, data, offsets, num_threads, alloc=None, scratch=None, huge_bytes=_HUGE_BYTES,
               times=None, hint=None) -> HostPieces:
        """The batch's pieces; ``times``: a dict the parts' seconds are added to (``nfc``,
        ``added``, ``cut``, ``assemble``, ``huge``), or None; ``hint``: ``pack_probed``'s flags
        of these documents for the engine's ``probe`` (``run_ids``' ``hint``), or None."""
        from .kernels import gpu_host as H

        eng = self.eng
        threads, parallel = plan_threads(num_threads, data.shape[0])
        with numba_threads(threads if parallel else None):
            t0 = time.perf_counter()
            skip = eng._nfc_skip(data, offsets, None, hint)
            H.lap(times, "nfc", t0)
            starts, special, first, stats = H.byte_level_pieces(eng, data, offsets, skip, parallel, threads, alloc,
                                                                scratch, huge_bytes, times, hint, False)
            t0 = time.perf_counter()
            huge = _byte_level_huge(eng, data, starts, special, huge_bytes, threads, parallel) if stats[3] else None
            H.lap(times, "huge", t0)
        return HostPieces(data, starts, special, first, skip, stats[:3], huge,
                          model_only=stats[4] == 0 and huge is None)


def _byte_level_huge(eng, data, starts, special, huge_bytes, threads: int, parallel: bool):
    """``(idx, ids, off)``: the model pieces over ``huge_bytes`` bytes and their ids, encoded
    on the host with a ``fast_cpu.ByteBPEEngine``'s tables (``gpu_host.huge_pieces``,
    ``huge_byte_level``, which marks them in ``special``), or None when there are none; the
    caller sets the threads (``numba_threads``)."""
    from .kernels import gpu_host as H

    idx = H.huge_pieces(starts, special, huge_bytes, 4 * threads if parallel else 1)
    if not idx.shape[0]:
        return None
    return (idx,) + H.huge_byte_level(data, starts, special, idx, eng.init_ids, eng.mtab, new_pair_cache(eng.pfilt),
                                      eng.arena, eng.tok_off, eng.bkeys, eng.bvals, eng.spec.whole_first,
                                      threads if parallel else 1)


class SentencePieceHost:
    """Pieces of a ``fast_cpu.CpuSentencePieceEngine`` (``kernels.sp_host``)."""

    def __init__(self, sp):
        from .fast_cpu import _KEEP_OUT_MAX, KeptArray

        self.sp = sp
        self.cut_trie = _sp_cut_trie(sp)  # the device cut's check (None: the device cut never takes this file)
        # the blocks' regions (sp_host.sp_blocks), kept between calls under one lock as the CLIP
        # engine's scratch is: made fresh, their written pages were faulted in on every call
        # (the host step 1.09-1.42x faster kept, more so on two threads; RESULTS 2026-12-06 00:03)
        self._lock = threading.Lock()
        self._regions = tuple(KeptArray(dt, _KEEP_OUT_MAX, self._lock) for dt in (np.uint8, np.int64, np.int32))

    def pieces(self, data, offsets, num_threads, alloc=None, scratch=None, huge_bytes=_HUGE_BYTES,
               times=None, hint=None) -> HostPieces:
        """The batch's pieces; ``times``: a dict the parts' seconds are added to (``walk``,
        ``gather``, ``huge``), or None; ``hint``: not used (its callers pass None)."""
        from .fast_cpu import _UNITS_PER_THREAD, byte_blocks
        from .kernels import gpu_host as H
        from .kernels.sp_host import sp_pieces_parallel

        sp = self.sp
        n = offsets.shape[0] - 1
        threads, parallel = plan_threads(num_threads, data.shape[0])
        blocks = (byte_blocks(offsets[:-1], data.shape[0], n, _UNITS_PER_THREAD * threads) if parallel
                  else np.array([0, n], np.int64))
        locked = self._lock.acquire(blocking=False)  # another caller holds them: fresh regions
        try:
            with numba_threads(threads if parallel else 1):
                buf, starts, special, first, stats = sp_pieces_parallel(
                    data, offsets, blocks, sp.rt, sp.nt, sp.cls, sp.prepend, *sp.bt, sp.whole_first, sp.held,
                    H.SHORT, alloc, huge_bytes, self._regions if locked else None, times)
        finally:
            if locked:
                self._lock.release()
        t0 = time.perf_counter()
        with numba_threads(threads if parallel else 1):
            huge = None
            if stats[3]:
                idx = H.huge_pieces(starts, special, huge_bytes, 4 * threads if parallel else 1)
                huge = (idx,) + H.huge_sentencepiece(buf, starts, special, idx, sp.char_id, sp.byte_id, sp.mtab,
                                                     new_pair_cache(sp.pfilt), threads if parallel else 1)
        H.lap(times, "huge", t0)
        return HostPieces(buf, starts, special, first, None, stats[:3], huge,
                          model_only=stats[4] == 0 and huge is None)


def _sp_cut_trie(sp):
    """The trie ``sp_host.sp_items_parallel`` checks the gaps with, for a SentencePiece engine
    whose pieces the device can cut (``kernels.sp_cuda``: ``prepend`` 0/1, no
    ``ignore_merges``): the normalized added tokens' contents less their leading "▁"s, matched
    anywhere. Those normalizers only turn " " into "▁" and put one "▁" before a gap, so a
    normalized token found in a gap's normalized text has its content after its "▁"s in the
    raw gap, unless that rest holds a "▁" or a " " (or is empty): None then, as for every
    other engine (the host step always)."""
    from .fast_cpu import _added_token_lists, _trie_tuple

    if sp.prepend not in (0, 1) or sp.whole_first:
        return None
    _raw, norm = _added_token_lists(sp.ref)
    seen, toks = set(), []
    for content, i, _flags in norm:
        rest = content
        while rest.startswith(_SP_BYTES):
            rest = rest[len(_SP_BYTES):]
        if not rest or _SP_BYTES in rest or b" " in rest:
            return None
        if rest not in seen:
            seen.add(rest)
            toks.append((rest, i, 0))
    return _trie_tuple(sp.K, toks)


_SP_BYTES = "\u2581".encode("utf-8")


class ClipHost:
    """Pieces of a ``fast_clip.CpuClipEngine``: its ``_pieces`` (lowercased text, CLIP's
    split, each piece followed by byte 0xFF) put back to back by ``gpu_host.clip_counts`` /
    ``clip_fill`` in the staging buffers (an added token: one byte, 0, its id in
    ``special``); the device tables are its byte-level engine's, whose vocabulary reads 0xFF
    as the suffix (decision 0033)."""

    def __init__(self, clip):
        self.clip = clip

    def pieces(self, data, offsets, num_threads, alloc=None, scratch=None, huge_bytes=_HUGE_BYTES,
               times=None, hint=None) -> HostPieces:
        """The batch's pieces; ``times``: a dict the parts' seconds are added to (``nfc``,
        ``items``: the engine's ``_pieces``, ``fill``, ``huge``), or None; ``hint``: not used
        (its callers pass None)."""
        from .fast_cpu import _UNITS_PER_THREAD
        from .kernels import gpu_host as H

        c = self.clip
        eng = c.engine
        n = offsets.shape[0] - 1
        threads, parallel = plan_threads(num_threads, data.shape[0])
        t0 = time.perf_counter()
        skip = eng._nfc_changed(data, offsets, None).astype(np.uint8)
        t0 = H.lap(times, "nfc", t0)
        if alloc is None:
            alloc = H._alloc
        # the engine's kept scratch (fresh arrays: page faults that two threads took longer
        # over than one), held until the items are copied out
        locked = c._lock.acquire(blocking=False)
        try:
            with numba_threads(threads if parallel else 1):
                buf, starts, ends, special, doc = c._pieces(data, offsets, skip, None, threads, parallel,
                                                            kept=locked, runs=False)
                t0 = H.lap(times, "items", t0)
                nb = np.int64(_UNITS_PER_THREAD * threads if parallel else 1)
                nbytes, last = H.clip_counts(starts, ends, special, doc, nb)
                P, M = int(special.shape[0]), int(nbytes.sum())
                if M >= 2 ** 31:
                    raise ValueError("a batch's pieces must stay below 2**31 bytes: lower GPU_TOK_CUDA_BATCH_MB")
                packed, starts32 = alloc("data", max(M, 1), np.uint8), alloc("starts", P + 1, np.int32)
                special32, first = alloc("special", P, np.int32), alloc("first", n + 1, np.int64)
                stats = H.clip_fill(buf, starts, ends, special, doc, nbytes, last, packed, starts32, special32, first,
                                    np.int64(huge_bytes))
        finally:
            if locked:
                c._lock.release()
        t0 = H.lap(times, "fill", t0)
        with numba_threads(threads if parallel else None):
            huge = _byte_level_huge(eng, packed, starts32, special32, huge_bytes, threads, parallel) if stats[3] else None
        H.lap(times, "huge", t0)
        return HostPieces(packed, starts32, special32, first, skip if skip.any() else None,
                          tuple(int(x) for x in stats[:3]), huge, model_only=int(stats[4]) == 0 and huge is None)


# ------------------------------------------------------------------ the engine
_POOL_GROWTH = 1.25


class HostResult:
    """Where one call's host-bound ids go: each batch's ids copied from the device straight to
    their place in one array, its row splits to theirs (then offset by the ids before them),
    rather than an array per batch joined at the end (a second pass over every id, into
    fresh memory). The array starts at ``cap`` ids (``_host_result``: as many as the input has
    bytes, within a share of the RAM: address space, its pages touched only where written) and
    doubles where the next batch's do not fit (a fresh array, the ids written so far copied:
    ``ndarray.resize`` copied the whole block and zeroed the new part, 25 ms for 40 MB on the
    development host; on the H100 of 2026-12-06 a third of the bytes was too few for gpt2 on
    code, whose copy back took 8.8 ms of a 14 ms run, 0.7 where nothing grew); ``done()``
    shrinks it to the ids written (``realloc`` to a smaller block: no copy), so the caller
    gets an array of its own and of its size. Between calls to ``ids_at`` no view of the array
    is kept (a growth moves it)."""

    def __init__(self, n_docs: int, cap: int, threads: Optional[int] = None):
        self.ids = np.empty(max(int(cap), 1), np.int32)
        self.rs = np.zeros(n_docs + 1, np.int64)
        self.t = 0
        self.threads = threads  # the call's num_threads (the copy from pinned memory)

    def ids_at(self, count: int) -> np.ndarray:
        """The place of the next ``count`` ids."""
        need = self.t + count
        if need > self.ids.shape[0]:
            grown = np.empty(max(need, 2 * self.ids.shape[0]), np.int32)
            grown[:self.t] = self.ids[:self.t]
            self.ids = grown
        return self.ids[self.t:need]

    def done(self):
        self.ids.resize(self.t, refcheck=False)
        return self.ids, self.rs


@dataclass
class _Flight:
    """A batch whose kernels were launched and whose ids are not collected yet."""

    d0: int
    d1: int
    slot: int
    stream: object
    P: int
    n: int
    skip: Optional[np.ndarray]
    arrays: dict = field(default_factory=dict)
    total: object = None


class GpuEngine:
    """The batch loop for one vocabulary's ``DeviceTables`` on one backend (thread-safe: one
    caller at a time runs on the device; others wait)."""

    min_batch_bytes = _MIN_BATCH_BYTES  # plan(): the smallest batch a split makes (benchmarks vary it)

    def __init__(self, be: _Backend, tables: DeviceTables, batch_bytes: Optional[int] = None):
        self.be = be
        self.K = be.K
        self.tables = tables
        env = os.environ.get("GPU_TOK_CUDA_BATCH_MB")
        self.batch_bytes = int(batch_bytes or (float(env) * (1 << 20) if env else _BATCH_BYTES))
        env = os.environ.get("GPU_TOK_CUDA_HOST_PIECE")
        self.huge_bytes = int(env) if env else _HUGE_BYTES  # longer pieces: BPE on the host
        # GPU_TOK_CUDA_MEDIUM=N (at most K.MEDIUM): distinct pieces of K.SHORT + 1 .. N bytes
        # rescanned by k_medium (local arrays) rather than by k_long's heap; K.SHORT: none
        # (the default until a card has timed it: benchmarks/gpu_check.sh's ab step)
        env = os.environ.get("GPU_TOK_CUDA_MEDIUM")
        self.medium_bytes = min(max(int(env), self.K.SHORT), self.K.MEDIUM) if env else self.K.SHORT
        self.key_mask = np.uint64(0xFFFFFFFFFFFFFFFF)  # dedupe key bits (tests narrow it to force collisions)
        self.profile = False  # synchronize after each phase and kernel and time it (stats); no overlap
        # CUDA events around each kernel, scan and copy (no waits added): their device time
        # by name in stats["gpu"] after the call, and the device's span from the first to the last
        self.events = False
        self._ev: list = []
        self.stats = _new_stats()
        self.batch_log: List[Tuple[int, int]] = []  # (d0, d1) of every batch collected, in order
        self._lock = threading.Lock()
        self._streams = [be.stream(), be.stream()]
        self._pools: List[dict] = [{}, {}]
        # GPU_TOK_CUDA_OVERLAP=1: the host step on a worker thread (_encode_overlapped)
        self.overlap = os.environ.get("GPU_TOK_CUDA_OVERLAP") == "1"
        # host-bound ids copied back through pinned memory (_collect); GPU_TOK_CUDA_PINNED_D2H=0: straight
        # into the result (pageable), as before
        self.pinned_d2h = os.environ.get("GPU_TOK_CUDA_PINNED_D2H", "1") != "0"
        self._hscratch = None
        self._text = None  # KeptArray of pinned memory: the packed text (CUDA backend)
        # GPU_TOK_CUDA_DEVICE_CUT=1: pieces cut on the device, not on the host (byte-level files: _device_step;
        # SentencePiece files sp_cuda takes: _device_step_sp)
        self.device_cut = os.environ.get("GPU_TOK_CUDA_DEVICE_CUT") == "1"
        self._scanners: dict = {}  # id(engine) -> its scanner's tables on the device
        # GPU_TOK_CUDA_HYBRID: host-bound calls shared between the device and the CPU engine on the
        # host's threads, which encodes the first documents of each round while the device runs
        # the rest (_encode_hybrid): "auto", the device's share of the bytes set from the rates
        # measured so far; a number in (0, 1], that share fixed; unset or 0, off (the default
        # until a card has timed it: benchmarks/gpu_check.sh's ab step)
        self.hybrid = hybrid_setting(os.environ.get("GPU_TOK_CUDA_HYBRID"))
        self.hybrid_min_bytes = _HYBRID_MIN_BYTES
        self._rates: Optional[List[Optional[float]]] = None  # seconds per byte: host, device, CPU engine

    # ----------------------------------------------------------- memory pools
    def _scratch(self, slot: int, name: str, n: int, dtype, exact: bool = True):
        """A device array of at least ``n`` items kept for ``slot`` (grown when too small):
        its first ``n`` items, or (``exact=False``) the whole pooled array, for a kernel that
        is told its counts and never reads an array's length (a slice of a Numba device
        array is a new Python object each time: its shape arithmetic alone took 9 us here)."""
        pool = self._pools[slot]
        have = pool.get(name)
        if have is None or have.shape[0] < n or have.dtype != np.dtype(dtype):
            size = max(int(n * _POOL_GROWTH), 16)
            have = self.be.empty(size, dtype)
            pool[name] = have
        return have[:n] if exact else have

    def _staging(self, slot: int, name: str, n: int, dtype):
        if not isinstance(self.be, CudaBackend):
            return None
        pool = self._pools[slot]
        key = "pin:" + name
        have = pool.get(key)
        if have is None or have.shape[0] < n or have.dtype != np.dtype(dtype):
            have = self.be.pinned(max(int(n * _POOL_GROWTH), 16), dtype)
            pool[key] = have
        return have

    def text_buffer(self):
        """Where ``fast_cpu.pack`` may put the texts (its ``kept``): pinned host memory kept
        between calls on a CUDA backend, so the batches' text is copied to the device from
        there, not through the slot's staging buffer first (a host copy of every byte); None
        on the twins."""
        if not isinstance(self.be, CudaBackend):
            return None
        if self._text is None:
            self._text = KeptArray(np.uint8, _PINNED_TEXT_MAX, alloc=self.be.pinned)
        return self._text

    def _put(self, slot, name, host, stream):
        """``host`` into the slot's device array ``name``, asynchronously through pinned memory
        (``host`` may already be the slot's staging buffer: ``_host_alloc``)."""
        host = np.ascontiguousarray(host)
        n = host.shape[0]
        if not isinstance(self.be, CudaBackend):
            return host
        dev = self._scratch(slot, name, n, host.dtype)
        if n:
            if self._text is not None and self._text.holds(host):  # pinned already
                stage = host
            else:
                stage = self._staging(slot, name, n, host.dtype)[:n]
                if stage.ctypes.data != host.ctypes.data:
                    stage[:] = host
            e0 = self._ev_begin(stream)
            dev.copy_to_device(stage, stream=stream)
            self._ev_end("h2d", e0, stream)
        return dev

    def _host_alloc(self, slot):
        """``alloc(name, n, dtype)`` for the host side: the slot's pinned staging buffers on a
        CUDA backend (the pieces are written where the copy reads them), else fresh arrays."""
        if not isinstance(self.be, CudaBackend):
            return None
        return lambda name, n, dtype: self._staging(slot, name, n, dtype)[:n]

    def _host_scratch(self, n: int):
        """An ``int32`` host work array of at least ``n`` items, kept between batches."""
        if self._hscratch is None or self._hscratch.shape[0] < n:
            self._hscratch = np.empty(max(int(n * _POOL_GROWTH), 16), np.int32)
        return self._hscratch[:n]

    def release(self):
        """Drop the pooled buffers (after the streams are idle) and give cached memory back."""
        for st in self._streams:
            try:
                self.be.sync(st)
            except Exception:  # noqa: BLE001 - a failed stream has nothing left to wait for
                pass
        self._pools = [{} for _ in self._streams]
        self.be.release()

    # ----------------------------------------------------------------- phases
    def _launch(self, hp: HostPieces, d0: int, d1: int, slot: int) -> _Flight:
        """Copies and kernels up to the scan, asynchronously on the slot's stream."""
        be, K, T = self.be, self.K, self.tables
        s = self._streams[slot]
        t0 = time.perf_counter()
        M = hp.M if hp.M >= 0 else hp.buf.shape[0]
        n = d1 - d0
        n_model, n_long, lb = hp.stats
        if hp.device is not None:  # cut on the device (_device_step)
            P = hp.P
            f = _Flight(d0, d1, slot, s, P, n, hp.skip)
            a = f.arrays
            a["data"], a["starts"], a["special"], a["first"] = hp.device
        else:
            P = hp.special.shape[0]
            f = _Flight(d0, d1, slot, s, P, n, hp.skip)
            a = f.arrays
            a["data"] = self._put(slot, "data", hp.buf, s)
            a["starts"] = self._put(slot, "starts", hp.starts, s)
            if hp.model_only and P:  # all -1: its bytes all 0xFF, set on the device below (no copy)
                a["special"] = self._scratch(slot, "special_ones", P, np.int32, False)
            else:
                a["special"] = self._put(slot, "special", hp.special, s)
            a["first"] = self._put(slot, "first", hp.first, s)
        huge = None
        if hp.huge is not None:  # pieces the host encoded: their ids in one array (k_place)
            idx, ids, off = hp.huge
            self.stats["host_pieces"] += int(idx.shape[0])
            if ids.shape[0]:
                huge = (int(ids.shape[0]), int(idx.shape[0]), self._put(slot, "huge_idx", idx, s),
                        self._put(slot, "huge_off", off, s), self._put(slot, "huge_ids", ids, s))
        self._tick("h2d_s", t0, s)
        t0 = time.perf_counter()
        if hp.device is None and hp.model_only and P:
            self._kernel(K.k_fill_u8, 4 * P, s, 4 * P, a["special"].view(np.uint8), np.uint8(0xFF))
        C = 16
        while C < 2 * P:
            C *= 2
        # the dedupe table's length is its hash mask and the bucket bounds are read back whole
        # (profile): exact; every other kernel is told its counts (the pooled arrays as they are)
        sc = lambda name, k, dt: self._scratch(slot, name, k, dt, False)  # noqa: E731
        tkeys, towner = self._scratch(slot, "tkeys", C, np.uint64), sc("towner", C, np.int32)
        ph, rep, cnt = sc("ph", P, np.uint64), sc("rep", P, np.int32), sc("cnt", P, np.int32)
        work, loff = sc("work", P, np.int32), sc("loff", P, np.int64)
        bcount, bounds, bcur = sc("bcount", K.NBUCKETS, np.int64), \
            self._scratch(slot, "bounds", K.NBUCKETS + 1, np.int64), sc("bcur", K.NBUCKETS, np.int64)
        lcur = sc("lcur", 1, np.int64)
        out = sc("out", max(M, 1), np.int32)
        lsym, llen = sc("lsym", max(lb, 1), np.int32), sc("llen", max(lb, 1), np.int32)
        lprv, lnxt = sc("lprv", max(lb, 1), np.int32), sc("lnxt", max(lb, 1), np.int32)
        hkey, hnew = sc("hkey", max(3 * lb, 1), np.uint64), sc("hnew", max(3 * lb, 1), np.int32)
        pos = sc("pos", P + 1, np.int64)
        data, starts, special = a["data"], a["starts"], a["special"]
        L = self._kernel
        if huge is not None:  # ids the host computed, put at each huge piece's first byte
            n_ids, n_huge, d_idx, d_off, d_ids = huge
            L(K.k_place, n_ids, s, n_ids, n_huge, d_idx, d_off, d_ids, starts, out)
        L(K.k_clear, C, s, C, tkeys, towner, bcount, lcur)
        L(K.k_insert, P, s, P, data, starts, special, ph, self.key_mask, tkeys, towner)
        medium = np.int64(self.medium_bytes)
        L(K.k_resolve, P, s, P, data, starts, special, ph, self.key_mask, tkeys, towner, rep, bcount, medium)
        L(K.k_bounds, 1, s, 1, bcount, bounds, bcur)
        L(K.k_fill, P, s, P, starts, special, rep, bounds, bcur, work, loff, lcur, medium)
        n_short = n_model - n_long  # at most this many distinct short pieces
        L(K.k_short, n_short, s, n_short, work, bounds, data, starts, ph, T.mode, T.init_ids, T.grid, T.char_id,
          T.byte_id, T.mtab, T.whole_first, T.arena, T.tok_off, T.bkeys, T.bvals, out, cnt)
        if self.medium_bytes > K.SHORT:  # (at most n_long distinct pieces between SHORT and medium)
            L(K.k_medium, n_long, s, n_long, work, bounds, data, starts, ph, T.mode, T.init_ids, T.grid, T.char_id,
              T.byte_id, T.mtab, T.whole_first, T.arena, T.tok_off, T.bkeys, T.bvals, out, cnt)
        L(K.k_long, n_long, s, n_long, work, bounds, data, starts, ph, loff, T.mode, T.init_ids, T.char_id,
          T.byte_id, T.mtab, T.whole_first, T.arena, T.tok_off, T.bkeys, T.bvals, lsym, llen, lprv, lnxt, hkey, hnew,
          out, cnt)
        L(K.k_counts, P, s, P, data, starts, special, rep, T.mode, T.init_ids, T.char_id, T.byte_id, out, cnt)
        self._scan(cnt, P, pos, s, sc)
        a.update(out=out, rep=rep, cnt=cnt, pos=pos, bounds=bounds)
        self._tick("kernel_s", t0, s)
        self.stats["pieces"] += P
        self.stats["bytes"] += M
        if self.profile:
            self.stats["distinct"] += int(be.to_host(bounds, s)[-1])
        return f

    def _collect(self, f: _Flight, prefix, suffix, sink: Optional[HostResult]):
        """Wait for the batch and scatter its ids (the template's ids around each row when
        ``prefix``/``suffix`` are given): host-bound, copied to their place in ``sink`` (then
        ``(None, None)`` is returned); device-bound (``sink`` None), returned as CuPy arrays
        ``(ids, row_splits)`` of their own."""
        be, K = self.be, self.K
        s = f.stream
        a = f.arrays
        t0 = time.perf_counter()
        total = int(be.read_scalar(a["pos"], f.P, s))
        self._tick("d2h_s", t0, s)
        t0 = time.perf_counter()
        if sink is None:  # handed to the caller: arrays of their own
            ids, rs = be.empty(total, np.int32), be.empty(f.n + 1, np.int64)
        else:  # copied to the host below: the slot's pooled arrays (no device allocation)
            ids, rs = self._scratch(f.slot, "ids", total, np.int32), self._scratch(f.slot, "rs", f.n + 1, np.int64)
        self._kernel(K.k_scatter, f.P, s, f.P, a["starts"], a["special"], a["rep"], a["cnt"], a["pos"], a["out"], ids)
        self._kernel(K.k_rows, f.n + 1, s, f.n + 1, a["first"], a["pos"], rs)
        if prefix is not None and (prefix.shape[0] or suffix.shape[0]):
            ids, rs = self._template(ids, rs, total, f.n, prefix, suffix, s)
        self._tick("kernel_s", t0, s)
        t0 = time.perf_counter()
        if sink is None:
            be.sync(s)
            cp = _cupy()
            ids, rs = cp.asarray(ids), cp.asarray(rs)
        else:
            e0 = self._ev_begin(s)
            count = int(ids.shape[0])
            r = sink.rs[f.d0:f.d1 + 1]  # its first item is the previous batch's last, rewritten as the same
            # the ids through the slot's pinned buffer (CUDA backend): a copy to pageable memory
            # goes through the driver's bounce buffer at the speed of one thread's memcpy into
            # pages new to the process (1-5 ms per 8 MB of text on the H200, 2026-12-05);
            # from pinned memory it is a DMA, then the copy into the result is on all threads
            stage = self._staging(f.slot, "ids_out", count, np.int32) if self.pinned_d2h else None
            dst = sink.ids_at(count)
            be.to_host_into(ids, dst if stage is None else stage[:count], s)
            be.to_host_into(rs, r, s)
            self._ev_end("d2h", e0, s)
            be.sync(s)
            if stage is not None and count:
                _copy_ids(stage[:count], dst, sink.threads)
            if sink.t:
                r += sink.t
            sink.t += count
            ids = rs = None
        self._tick("d2h_s", t0, s)
        return ids, rs

    def _template(self, ids, rs, T, n, prefix, suffix, s):
        """``engine_cpu.add_template`` on the backend: the post-processor's ids around every row."""
        be, K = self.be, self.K
        a, b = int(prefix.shape[0]), int(suffix.shape[0])
        d_pre = be.upload(np.append(prefix, 0).astype(np.int32))
        d_suf = be.upload(np.append(suffix, 0).astype(np.int32))
        ids2 = be.empty(T + n * (a + b), np.int32)
        rs2 = be.empty(n + 1, np.int64)
        self._kernel(K.k_template_rows, n + 1, s, n + 1, rs, a, b, rs2)
        self._kernel(K.k_template_docs, n, s, n, rs, rs2, d_pre[:a], d_suf[:b], ids2)
        self._kernel(K.k_template_toks, T, s, T, ids, rs, n, a, b, ids2)
        return ids2, rs2

    def _kernel(self, kernel, n, stream, *args):
        """``be.launch``; with ``profile``, waited for and its time added to
        ``stats["kernels"][name]`` (so the split says which kernel the device time is in)."""
        if not self.profile:
            e0 = self._ev_begin(stream)
            self.be.launch(kernel, n, stream, *args)
            if e0 is not None:
                self._ev_end(_kernel_name(kernel), e0, stream)
            return
        t0 = time.perf_counter()
        self.be.launch(kernel, n, stream, *args)
        self._kernel_time(_kernel_name(kernel), t0, stream)

    def _scan(self, x, n, out, stream, scratch=None):
        """``be.scan`` (several kernels), timed as ``"scan"`` with ``profile``."""
        t0 = time.perf_counter()
        e0 = self._ev_begin(stream)
        self.be.scan(x, n, out, stream, scratch)
        self._ev_end("scan", e0, stream)
        if self.profile:
            self._kernel_time("scan", t0, stream)

    def _ev_begin(self, stream):
        return self.be.event(stream) if self.events and not self.profile else None

    def _ev_end(self, name: str, e0, stream):
        if e0 is not None:
            self._ev.append((name, e0, self.be.event(stream)))

    def _ev_collect(self):
        """The events' times into ``stats["gpu"]`` (seconds by name; ``"span"``: from the
        first event recorded to the last one's end), after the streams are idle."""
        if not self._ev:
            return
        for st in self._streams:
            self.be.sync(st)
        g = self.stats.setdefault("gpu", {})
        first = self._ev[0][1]
        span = 0.0
        for name, e0, e1 in self._ev:
            g[name] = g.get(name, 0.0) + e0.elapsed_time(e1) / 1e3
            span = max(span, first.elapsed_time(e1) / 1e3)
        g["span"] = g.get("span", 0.0) + span
        self._ev = []

    def _kernel_time(self, name: str, t0: float, stream):
        self.be.sync(stream)
        k = self.stats.setdefault("kernels", {})
        k[name] = k.get(name, 0.0) + time.perf_counter() - t0

    def _tick(self, key: str, t0: float, stream):
        if self.profile:
            self.be.sync(stream)
        self.stats[key] += time.perf_counter() - t0

    # ---------------------------------------------------------------- the loop
    def plan(self, offsets: np.ndarray) -> List[Tuple[int, int]]:
        """Document ranges of at most ``batch_bytes`` bytes each (at least one document); an
        input of more than ``_MIN_BATCH_BYTES`` is cut into at least ``_SPLIT`` batches of at
        least that size, so host and device work overlap."""
        total = int(offsets[-1]) if offsets.shape[0] > 1 else 0
        return _ranges(offsets, min(self.batch_bytes, max(self.min_batch_bytes, -(-total // _SPLIT))))

    def encode_packed(self, host, data: np.ndarray, offsets: np.ndarray, num_threads: Optional[int] = None,
                      device_out: bool = False, prefix: Optional[np.ndarray] = None,
                      suffix: Optional[np.ndarray] = None, hint: Optional[np.ndarray] = None, cpu=None):
        """``(ids, row_splits, skip)`` of packed documents; ``host`` makes the pieces
        (``ByteLevelHost``/``SentencePieceHost``); ``prefix``/``suffix``: the template's ids
        around every row. ``skip``: documents whose rows hold only the template, left for
        the reference path (None when there are none). CuPy arrays when ``device_out``.
        ``hint``: ``fast_cpu.pack_probed``'s flags per document (the host step then skips the
        added-token and NFC passes over documents that cannot hold what they look for).
        ``cpu(buf, off, d0, d1)``: documents ``[d0, d1)`` (their bytes ``buf``, offsets ``off``
        from 0) encoded by the CPU engine, ``(ids, row_splits, skip)`` as a batch's (the
        template's ids around each row), for the hybrid loop (``hybrid``; None: the device
        alone)."""
        with self._lock:
            return self._encode_packed(host, data, offsets, num_threads, device_out, prefix, suffix, hint, cpu)

    def _host_step(self, host, data, offsets, d0: int, d1: int, num_threads, slot: int, hint=None) -> HostPieces:
        """Documents ``[d0, d1)``'s pieces, into ``slot``'s pinned staging (``hint``: the call's
        ``fast_cpu.pack_probed`` flags, per document, or None)."""
        t0 = time.perf_counter()
        a, b = int(offsets[d0]), int(offsets[d1])
        times = self.stats.setdefault("host_parts", {}) if self.profile else None  # the host step's parts
        hp = host.pieces(data[a:b], offsets[d0:d1 + 1] - a, num_threads, self._host_alloc(slot), self._host_scratch,
                         self.huge_bytes, times, None if hint is None else hint[d0:d1])
        self.stats["host_s"] += time.perf_counter() - t0
        return hp

    def _device_step(self, host, data, offsets, d0: int, d1: int, num_threads, slot: int, hint=None) -> HostPieces:
        """Documents ``[d0, d1)``'s pieces cut on the device (``kernels.pretok_cuda``) for a
        ``ByteLevelHost``: the host runs the NFC check and the added-token pass
        (``ByteBPEEngine._nfc_skip``, ``_segments``) and lays out the chunks; the text goes to
        the device and the pieces stay there (one read back: their number and counts).
        ``_host_step``'s pieces instead where the two could differ in layout: a fixed piece
        (added token, skipped document) at the first byte of another, or pieces over
        ``huge_bytes`` (which the host encodes)."""
        t0 = time.perf_counter()
        K = self.K
        eng = host.eng
        a, b = int(offsets[d0]), int(offsets[d1])
        buf = data[a:b]
        off = offsets[d0:d1 + 1] - a
        N = int(buf.shape[0])
        plan = device_cut_plan(eng, buf, off, num_threads, None if hint is None else hint[d0:d1], K.CUT_CHUNK)
        if plan is None:
            self.stats["device_cut_refused"] += 1
            return self._host_step(host, data, offsets, d0, d1, num_threads, slot, hint)
        skip, (fx_pos, fx_id), (ch_lo, ch_hi, ch_end, ch_first) = plan
        fam, end_whole, tab, fold = self._scanner_tables(eng)
        s = self._streams[slot]
        sc = lambda name, k, dt: self._scratch(slot, name, k, dt, False)  # noqa: E731
        L = self._kernel
        d_data = self._put(slot, "data", buf, s)
        mark = sc("mark", N, np.uint8)
        L(K.k_fill_u8, N, s, N, mark, np.uint8(0))
        Q = int(ch_lo.shape[0])
        if Q:
            lo, hi = self._put(slot, "ch_lo", ch_lo, s), self._put(slot, "ch_hi", ch_hi, s)
            end, fst = self._put(slot, "ch_end", ch_end, s), self._put(slot, "ch_first", ch_first, s)
            sync = sc("ch_sync", Q, np.int64)
            L(K.k_sync, Q, s, Q, d_data, lo, hi, end, fst, tab, sync)
            L(K.k_cut, Q, s, Q, d_data, end, fst, sync, fam, end_whole, tab, fold, mark)
        J = int(fx_pos.shape[0])
        if J:
            d_fx_pos, d_fx_id = self._put(slot, "fx_pos", fx_pos, s), self._put(slot, "fx_id", fx_id, s)
            L(K.k_mark, J, s, J, d_fx_pos, mark)
        cpos = sc("cpos", N + 1, np.int64)
        self._scan(mark, N, cpos, s, sc)
        starts, special = sc("starts", N + 1, np.int32), sc("special", N, np.int32)
        L(K.k_compact, N, s, N, mark, cpos, starts, special)
        if J:
            L(K.k_fixed, J, s, J, d_fx_pos, d_fx_id, cpos, special)
        n = d1 - d0
        d_off = self._put(slot, "doc_off", off, s)
        first = sc("first", n + 1, np.int64)
        L(K.k_first, n + 1, s, n + 1, N, d_off, cpos, starts, first)
        counts = self._cut_counts(s, sc, N, mark, cpos, starts, special)
        if counts[3]:  # pieces the host encodes: the host step's pieces
            self.stats["device_cut_refused"] += 1
            return self._host_step(host, data, offsets, d0, d1, num_threads, slot, hint)
        P = int(counts[4])
        self.stats["host_s"] += time.perf_counter() - t0
        self.stats["device_cut"] += 1
        return HostPieces(buf, starts, special, first, skip, (int(counts[0]), int(counts[1]), int(counts[2])), None,
                          (d_data, starts, special, first), P)

    def _cuts_on_device(self, host) -> bool:
        """Whether ``host``'s pieces are cut on the device (``device_cut``: byte-level files,
        and SentencePiece ones ``sp_cuda`` takes)."""
        if not self.device_cut:
            return False
        return isinstance(host, ByteLevelHost) or (isinstance(host, SentencePieceHost) and host.cut_trie is not None)

    def _device_step_sp(self, host, data, offsets, d0: int, d1: int, num_threads, slot: int, hint=None) -> HostPieces:
        """Documents ``[d0, d1)``'s pieces cut on the device (``kernels.sp_cuda``) for a
        ``SentencePieceHost``: the host runs the raw added-token pass and lists the items
        (``sp_host.sp_items_parallel``); the device writes the normalized text and cuts it,
        with one read back for its length and one for the counts. ``_host_step``'s pieces
        instead where the normalized added-token pass could find something, and where pieces
        are over ``huge_bytes`` (which the host encodes)."""
        t0 = time.perf_counter()
        be, K = self.be, self.K
        sp = host.sp
        a, b = int(offsets[d0]), int(offsets[d1])
        buf = data[a:b]
        off = offsets[d0:d1 + 1] - a
        n = d1 - d0
        plan = sp_device_cut_plan(host, buf, off, num_threads, K.CUT_CHUNK)
        if plan is None:
            self.stats["device_cut_refused"] += 1
            return self._host_step(host, data, offsets, d0, d1, num_threads, slot, hint)
        it_x, it_y, it_id, it_c0, it_c1, doc_item, (ch_lo, ch_hi, ch_item), (fx_item, fx_id) = plan
        s = self._streams[slot]
        sc = lambda name, k, dt: self._scratch(slot, name, k, dt, False)  # noqa: E731
        L = self._kernel
        lead = np.int64(sp.prepend)
        I, Q, J = int(it_x.shape[0]), int(ch_lo.shape[0]), int(fx_item.shape[0])
        d_data = self._put(slot, "text", buf, s)
        put = lambda name, arr: self._put(slot, name, arr, s)  # noqa: E731
        d_x, d_y, d_id = put("it_x", it_x), put("it_y", it_y), put("it_id", it_id)
        d_c0, d_c1 = put("it_c0", it_c0), put("it_c1", it_c1)
        csc = sc("csc", Q + 1, np.int64)
        if Q:
            d_lo, d_hi, d_item = put("ch_lo", ch_lo), put("ch_hi", ch_hi), put("ch_item", ch_item)
            cnt = sc("ch_sp", Q, np.int64)
            L(K.k_sp_count, Q, s, Q, d_data, d_lo, d_hi, cnt)
            self._scan(cnt, Q, csc, s, sc)
        ilen, ioff = sc("ilen", max(I, 1), np.int64), sc("ioff", I + 1, np.int64)
        if I:
            L(K.k_sp_len, I, s, I, d_x, d_y, d_id, d_c0, d_c1, csc, lead, ilen)
        self._scan(ilen, I, ioff, s, sc)
        M = int(be.read_scalar(ioff, I, s))
        out, mark = sc("sp_text", max(M, 1), np.uint8), sc("mark", max(M, 1), np.uint8)
        L(K.k_fill_u8, M, s, M, mark, np.uint8(0))
        if I:
            L(K.k_sp_items, I, s, I, d_id, ioff, lead, out, mark)
        if Q:
            L(K.k_sp_write, Q, s, Q, d_data, d_lo, d_hi, d_item, d_x, d_c0, csc, ioff, lead, out)
        if sp.held.shape[0] and M:
            L(K.k_sp_cut, M, s, M, out, mark, self._held(sp))
        cpos = sc("cpos", M + 1, np.int64)
        self._scan(mark, M, cpos, s, sc)
        starts, special = sc("starts", M + 1, np.int32), sc("special", max(M, 1), np.int32)
        L(K.k_compact, M, s, M, mark, cpos, starts, special)
        if J:
            L(K.k_sp_fixed, J, s, J, put("fx_item", fx_item), put("fx_id", fx_id), ioff, cpos, special)
        doff, first = sc("doff", n + 1, np.int64), sc("first", n + 1, np.int64)
        L(K.k_sp_docs, n + 1, s, n + 1, put("doc_item", doc_item), ioff, doff)
        L(K.k_first, n + 1, s, n + 1, M, doff, cpos, starts, first)
        counts = self._cut_counts(s, sc, M, mark, cpos, starts, special)
        if counts[3]:  # pieces the host encodes: the host step's pieces
            self.stats["device_cut_refused"] += 1
            return self._host_step(host, data, offsets, d0, d1, num_threads, slot, hint)
        P = int(counts[4])
        self.stats["host_s"] += time.perf_counter() - t0
        self.stats["device_cut"] += 1
        return HostPieces(buf, starts, special, first, None, (int(counts[0]), int(counts[1]), int(counts[2])), None,
                          (out, starts, special, first), P, M)

    def _cut_counts(self, s, sc, N: int, mark, cpos, starts, special):
        """The device cut's counts over its ``N`` bytes (``gpu_host.piece_terms`` summed, then
        the pieces' number), read back: the wait of the batch's cut."""
        K, L = self.K, self._kernel
        nc = (N + K.STATS_CHUNK - 1) // K.STATS_CHUNK
        part, st = sc("piece_part", 4 * max(nc, 1), np.int64), sc("piece_stats", 5, np.int64)
        L(K.k_piece_stats, nc, s, nc, N, mark, cpos, starts, special, np.int64(self.huge_bytes), part)
        L(K.k_stats_total, 1, s, 1, nc, N, part, cpos, st)
        counts = self.be.to_host(st[:5], s)
        self.be.sync(s)
        return counts

    def _held(self, sp):
        """``sp.held`` on the device (uploaded once per engine)."""
        key = ("held", id(sp))
        have = self._scanners.get(key)
        if have is None or have[0] is not sp:
            have = self._scanners[key] = (sp, self.be.upload(sp.held))
        return have[1]

    def _scanner_tables(self, eng):
        """``(family code, end_whole, class table, fold table)`` of ``eng``'s scanner (the
        code: the length of the CPU kernels' family marker, ``pretok_cpu.family_marker``), the
        tables on the device (uploaded once per engine)."""
        key = id(eng)
        have = self._scanners.get(key)
        if have is None or have[0] is not eng:
            fam, end_whole, tab, fold = eng._scanner()
            have = self._scanners[key] = (eng, len(fam), bool(end_whole), self.be.upload(tab), self.be.upload(fold))
        return have[1:]

    def _take(self, f: _Flight, parts: list, skips: list, prefix, suffix, sink) -> None:
        """Collect batch ``f`` into ``sink`` (host-bound) or ``parts``, ``skips``, and log it."""
        parts.append(self._collect(f, prefix, suffix, sink))
        skips.append((f.skip, f.d1 - f.d0))
        self.batch_log.append((f.d0, f.d1))
        self.stats["batches"] += 1

    def _slots(self, k: int) -> None:
        """At least ``k`` slots (a stream and a pool of device and pinned buffers each)."""
        while len(self._streams) < k:
            self._streams.append(self.be.stream())
            self._pools.append({})

    def _encode_packed(self, host, data, offsets, num_threads, device_out, prefix, suffix, hint, cpu=None):
        if (self.hybrid is not None and cpu is not None and not device_out and not self.profile
                and not self._cuts_on_device(host) and offsets.shape[0] > 2
                and int(offsets[-1]) >= self.hybrid_min_bytes):
            log = len(self.batch_log)
            try:
                return self._encode_hybrid(host, data, offsets, num_threads, prefix, suffix, hint, cpu)
            except Exception as e:  # noqa: BLE001
                if not is_oom(e):
                    raise
                # out of memory: the whole call again on the plain loop, which halves batches
                del self.batch_log[log:]
                self.release()
        plan = self.plan(offsets)
        if self.overlap and not self.profile and len(plan) > 1 and not self._cuts_on_device(host):
            log = len(self.batch_log)
            try:
                return self._encode_overlapped(plan, host, data, offsets, num_threads, device_out, prefix, suffix,
                                               hint)
            except Exception as e:  # noqa: BLE001
                if not is_oom(e):
                    raise
                # out of memory: the whole call again on the plain loop, which halves batches
                del self.batch_log[log:]
                self.release()
        return self._encode_plain(plan, host, data, offsets, num_threads, device_out, prefix, suffix, hint)

    def _encode_overlapped(self, plan, host, data, offsets, num_threads, device_out, prefix, suffix, hint=None):
        """The batch loop with the host step on a worker thread: batch ``k + 1``'s pieces are
        made (into slot ``(k + 1) % 3``'s pinned staging) while this thread issues batch
        ``k``'s copies and kernels and collects batch ``k - 1``; a slot is written again only
        after its batch was collected. Same batches, order and results as ``_encode_plain``
        (an error on the worker is raised here; an out-of-memory error is left to the caller)."""
        import queue

        self._ev = []
        S = 3
        self._slots(S)
        n = offsets.shape[0] - 1
        free = [threading.Semaphore(1) for _ in range(S)]
        ready: queue.Queue = queue.Queue()
        stop = threading.Event()

        def produce():
            for k, (d0, d1) in enumerate(plan):
                free[k % S].acquire()
                if stop.is_set():
                    return
                try:
                    hp = self._host_step(host, data, offsets, d0, d1, num_threads, k % S, hint)
                except BaseException as e:  # noqa: BLE001 - raised by the caller's thread
                    ready.put((None, e))
                    return
                ready.put((hp, None))

        sink = None if device_out else _host_result(offsets, prefix, suffix, num_threads)
        parts, skips, flights = [], [], deque()
        worker = threading.Thread(target=produce, name="gpu_tok-host-step", daemon=True)
        worker.start()
        try:
            for k, (d0, d1) in enumerate(plan):
                hp, err = ready.get()
                if err is not None:
                    raise err
                flights.append(self._launch(hp, d0, d1, k % S))
                while flights and (len(flights) > 1 or k == len(plan) - 1):
                    f = flights.popleft()
                    self._take(f, parts, skips, prefix, suffix, sink)
                    free[f.slot].release()
        finally:
            stop.set()
            for sem in free:  # a worker waiting for a slot wakes, sees stop and ends
                sem.release()
            worker.join()
        self._ev_collect()
        return self._join(parts, skips, n, sink)

    def _encode_plain(self, plan, host, data, offsets, num_threads, device_out, prefix, suffix, hint=None):
        self._ev = []
        n = offsets.shape[0] - 1
        sink = None if device_out else _host_result(offsets, prefix, suffix, num_threads)
        queue = deque(plan)
        step = self._host_step
        if self._cuts_on_device(host):
            step = self._device_step_sp if isinstance(host, SentencePieceHost) else self._device_step
        flights: deque = deque()
        parts = []
        skips = []
        k = 0
        while queue or flights:
            current = None
            try:
                if queue:
                    current = queue[0]
                    d0, d1 = current
                    hp = step(host, data, offsets, d0, d1, num_threads, k % 2, hint)
                    flights.append(self._launch(hp, d0, d1, k % 2))
                    queue.popleft()
                    k += 1
                # one batch stays in flight while the next one's host work runs
                while flights and (len(flights) > 1 or not queue or self.profile):
                    f = flights[0]
                    current = (f.d0, f.d1)
                    self._take(f, parts, skips, prefix, suffix, sink)
                    flights.popleft()
                current = None
            except Exception as e:  # noqa: BLE001
                if current is None or not is_oom(e) or current[1] - current[0] <= 1:
                    raise
                # halve the failing batch; the batches in flight are launched again, in order
                d0, d1 = current
                redo = [(f.d0, f.d1) for f in flights if (f.d0, f.d1) != current]
                flights.clear()
                if queue and queue[0] == current:
                    queue.popleft()
                mid = _byte_mid(offsets, d0, d1)
                for r in sorted(redo + [(d0, mid), (mid, d1)], reverse=True):
                    queue.appendleft(r)
                self.stats["oom_splits"] += 1
                self.release()
                k = 0
        self._ev_collect()
        return self._join(parts, skips, n, sink)

    def _encode_hybrid(self, host, data, offsets, num_threads, prefix, suffix, hint, cpu):
        """The device and the CPU engine on one call (host-bound ids): in each round of at most
        ``batch_bytes`` bytes, the device's share of the bytes (``_gpu_share``) is its last
        documents, whose host step runs and whose copies and kernels are launched; while the
        device runs them, ``cpu`` encodes the round's first documents on the host's threads
        into ``sink``; then the device's ids are collected after them. Where the host's cores
        wait for the device in the plain loop (its copies and kernels took 2-10 ms per 8 MB on
        the H100 of 2026-12-06, whose 16 cores ran the CPU engine at 1.0-3.4 GB/s), a round
        takes about the time of the slower part, not of both. Same ids, rows and order as
        ``_encode_plain``; each round's parts are timed for the next share (``_learn``)."""
        self._ev = []
        be = self.be
        n = offsets.shape[0] - 1
        sink = _host_result(offsets, prefix, suffix, num_threads)
        parts: list = []
        skips: list = []
        s = self._streams[0]
        for r0, r1 in _ranges(offsets, self.batch_bytes):
            f = self._gpu_share()
            lo = int(offsets[r0])
            at = lo + (1.0 - f) * (int(offsets[r1]) - lo)
            c = min(max(int(np.searchsorted(offsets, at, side="left")), r0), r1)
            if c > r0 and at - int(offsets[c - 1]) < int(offsets[c]) - at:
                c -= 1  # the document boundary nearest the share
            # the CPU engine: documents [r0, c); the device: [c, r1)
            host_s = dev_s = cpu_s = 0.0
            flight = e0 = e1 = None
            t0 = time.perf_counter()
            if c < r1:
                hp = self._host_step(host, data, offsets, c, r1, num_threads, 0, hint)
                t1 = time.perf_counter()
                e0 = be.event(s)
                flight = self._launch(hp, c, r1, 0)
                e1 = be.event(s)
                t2 = time.perf_counter()
                # the host step's and the launches' time is the host's (the twins ran the kernels
                # in the launches: their device time)
                host_s, dev_s = (t2 - t0, 0.0) if e0 is not None else (t1 - t0, t2 - t1)
            t2 = time.perf_counter()  # the CPU engine's part from here
            if c > r0:
                a, b = lo, int(offsets[c])
                ids, rs, skip = cpu(data[a:b], offsets[r0:c + 1] - a, r0, c)
                count = int(ids.shape[0])
                _copy_ids(ids, sink.ids_at(count), sink.threads)
                sink.rs[r0:c + 1] = rs + sink.t
                sink.t += count
                skips.append((skip, c - r0))
                cpu_s = time.perf_counter() - t2
                self.stats["hybrid_cpu_bytes"] += b - a
                self.stats["hybrid_cpu_s"] += cpu_s
            if flight is not None:
                be.sync(s)
                t4 = time.perf_counter()
                self._take(flight, parts, skips, prefix, suffix, sink)
                host_s += time.perf_counter() - t4
                if e0 is not None:
                    dev_s = e0.elapsed_time(e1) / 1e3
            self.stats["hybrid_share"] = f
            self._learn(int(offsets[r1]) - int(offsets[c]), int(offsets[c]) - lo, host_s, dev_s, cpu_s)
        self._ev_collect()
        return self._join(parts, skips, n, sink)

    def _gpu_share(self) -> float:
        """The device's share of a round's bytes: ``hybrid`` where it is a number; "auto": 1/2
        until both parts were timed, then the share the rates say is fastest. A round takes
        ``h f + max(c (1 - f), g f)`` seconds per byte (``h``: the host's work on the device's
        documents, their host step, launches and collection; ``g``: the device's copies and
        kernels, which run while the CPU engine's ``c`` does): the least of the bounds and
        ``f = c / (c + g)``, where the two parts end together."""
        if self.hybrid != "auto":
            return float(self.hybrid)
        r = self._rates
        if r is None or None in r:
            return 0.5
        h, g, c = r
        best = None
        for f in (_HYBRID_LO, c / (c + g) if c + g > 0 else 0.5, _HYBRID_HI):
            f = min(max(f, _HYBRID_LO), _HYBRID_HI)
            t = h * f + max(c * (1.0 - f), g * f)
            if best is None or t < best[0]:
                best = (t, f)
        return best[1]

    def _learn(self, bg: int, bc: int, host_s: float, dev_s: float, cpu_s: float) -> None:
        """A round's times (its device part's ``bg`` bytes, its CPU part's ``bc``) into the
        rates: each new one weighs half, but one under half the rate it follows replaces it
        (a first call's compiling, or a slow spell, is not carried for calls after it); a
        part under ``_HYBRID_SAMPLE`` bytes is not counted."""
        r = self._rates if self._rates is not None else [None, None, None]
        new = [host_s / bg, dev_s / bg, None] if bg >= _HYBRID_SAMPLE else [None, None, None]
        if bc >= _HYBRID_SAMPLE:
            new[2] = cpu_s / bc
        self._rates = [old if x is None else (x if old is None or x < 0.5 * old else 0.5 * (old + x))
                       for old, x in zip(r, new)]

    def _join(self, parts, skips, n, sink):
        """``(ids, row_splits, skip)`` of the call: ``sink``'s (host-bound), or the batches'
        CuPy ``parts`` joined (device-bound, ``sink`` None)."""
        skip = None
        if any(s is not None for s, _n in skips):  # (skip, documents) of each batch, in order
            skip = np.concatenate([np.zeros(k, np.uint8) if s is None else s for s, k in skips])
        if sink is not None:
            ids, rs = sink.done()
            return ids, rs, skip
        cp = _cupy()
        if not parts:
            return cp.zeros(0, np.int32), cp.zeros(n + 1, np.int64), skip
        if len(parts) == 1:
            return parts[0][0], parts[0][1], skip
        totals = [int(r[-1]) for _i, r in parts]
        base = np.concatenate([[0], np.cumsum(totals)]).astype(np.int64)
        ids = cp.concatenate([i for i, _r in parts])
        rs = cp.concatenate([r[:-1] + int(base[j]) for j, (_i, r) in enumerate(parts)] + [cp.asarray(base[-1:])])
        return ids, rs, skip


def device_cut_plan(eng, data, doc_offsets, num_threads, hint, chunk: int):
    """The host's part of ``GpuEngine._device_step`` for a ``ByteBPEEngine``: ``(skip,
    (fx_pos, fx_id), (ch_lo, ch_hi, ch_end, ch_first))``, the documents NFC changes, the fixed
    pieces (``_fixed_pieces``) and the chunks of the segments left to the scanner
    (``_chunks``); None where the device cut does not take the batch (no bytes, 2**31 bytes
    or more, or ``_fixed_pieces`` refuses it)."""
    N = int(data.shape[0])
    threads, parallel = plan_threads(num_threads, N)
    with numba_threads(threads if parallel else None):
        skip = eng._nfc_skip(data, doc_offsets, None, hint)
        seg_s, seg_e, m_s, _m_e, m_id = eng._segments(data, doc_offsets, skip, parallel, hint)
    fixed = _fixed_pieces(seg_s, seg_e, m_s, m_id, doc_offsets, skip)
    if N == 0 or N >= 2 ** 31 or fixed is None:
        return None
    return skip, fixed, _chunks(seg_s, seg_e, chunk)


def sp_device_cut_plan(host, data, doc_offsets, num_threads, chunk: int):
    """The host's part of ``GpuEngine._device_step_sp`` for a ``SentencePieceHost``:
    ``sp_host.sp_items_parallel``'s items and chunks, on the caller's threads in blocks of
    documents; None where the device cut does not take the batch (no bytes, 2**29 bytes or
    more, or the normalized added-token pass could find something in it)."""
    from .fast_cpu import _UNITS_PER_THREAD, byte_blocks
    from .kernels.sp_host import sp_items_parallel

    N, n = int(data.shape[0]), doc_offsets.shape[0] - 1
    if not 0 < N < 2 ** 29:  # normalized: under 4 N bytes (a space, 3, after a "▁" and a placeholder), int32 starts
        return None
    threads, parallel = plan_threads(num_threads, N)
    blocks = byte_blocks(doc_offsets[:-1], N, n, _UNITS_PER_THREAD * threads) if parallel else np.array([0, n], np.int64)
    sp = host.sp
    with numba_threads(threads if parallel else 1):
        return sp_items_parallel(data, doc_offsets, blocks, sp.rt, host.cut_trie, sp.cls, chunk)


def _fixed_pieces(seg_s, seg_e, m_s, m_id, doc_offsets, skip):
    """``(fx_pos, fx_id)``: the first bytes and ids of a batch's fixed pieces for the device
    cut, the added tokens' matches (their ids) and the non-empty documents left to the
    reference path (-2), as ``gpu_host.byte_level_pieces`` records them; None where one
    starts where another piece does (two fixed pieces, or one inside a segment the scanner
    cuts): the device's layout has one piece per first byte."""
    from .kernels.gpu_host import skipped_starts

    sk = skipped_starts(skip, doc_offsets)
    fx_pos = np.concatenate([m_s, sk]).astype(np.int64)
    fx_id = np.concatenate([m_id.astype(np.int32), np.full(sk.shape[0], -2, np.int32)])
    if fx_pos.shape[0] == 0:
        return fx_pos, fx_id
    order = np.argsort(fx_pos, kind="stable")
    fx_pos, fx_id = fx_pos[order], fx_id[order]
    if (np.diff(fx_pos) <= 0).any():
        return None
    live = seg_e > seg_s
    ls, le = seg_s[live], seg_e[live]
    if ls.shape[0]:
        if (ls[1:] < le[:-1]).any():  # segments out of text order (never seen): the search below needs them sorted
            return None
        i = np.searchsorted(ls, fx_pos, side="right") - 1
        if ((i >= 0) & (fx_pos < le[np.maximum(i, 0)])).any():
            return None
    return fx_pos, fx_id


def _chunks(seg_s, seg_e, size: int):
    """``(ch_lo, ch_hi, ch_end, ch_first)`` of ``kernels.pretok_cuda``: each non-empty
    segment in chunks of ``size`` bytes, in text order."""
    lens = seg_e - seg_s
    nc = np.maximum(lens + size - 1, 0) // size
    Q = int(nc.sum())
    si = np.repeat(np.arange(seg_s.shape[0]), nc)
    k = np.arange(Q, dtype=np.int64) - np.repeat(np.cumsum(nc) - nc, nc)
    ch_lo = seg_s[si] + k * size
    ch_end = np.ascontiguousarray(seg_e[si], dtype=np.int64)
    return (ch_lo.astype(np.int64), np.minimum(ch_lo + size, ch_end).astype(np.int64), ch_end,
            (k == 0).astype(np.uint8))


def _ranges(offsets: np.ndarray, size: int) -> List[Tuple[int, int]]:
    """Document ranges of at most ``size`` bytes each (at least one document each)."""
    n = offsets.shape[0] - 1
    out = []
    d0 = 0
    while d0 < n:
        d1 = int(np.searchsorted(offsets, offsets[d0] + size, side="right")) - 1
        d1 = min(max(d1, d0 + 1), n)
        out.append((d0, d1))
        d0 = d1
    return out


def _copy_ids(src: np.ndarray, dst: np.ndarray, threads: Optional[int]) -> None:
    """``dst[:] = src`` (ids into their place in a call's result), on the call's threads where
    it is large enough and Numba's threading layer allows it (``_threads_reentrant``)."""
    from .kernels.gpu_host import copy_parallel

    count = int(src.shape[0])
    t, parallel = plan_threads(threads, count * 4)
    if parallel and _threads_reentrant():
        with numba_threads(t):
            copy_parallel(src, dst, np.int64(4 * t))
    else:
        dst[:] = src


def _threads_reentrant() -> bool:
    """Whether Numba's threading layer takes parallel kernels from two threads at once (omp,
    tbb; not workqueue, which ends the process): the overlapped loop's worker runs the host
    step's while this thread copies ids back. False until a parallel kernel has chosen it."""
    try:
        import numba

        return numba.threading_layer() != "workqueue"
    except Exception:  # noqa: BLE001 - none chosen yet
        return False


def _host_result(offsets, prefix, suffix, threads: Optional[int] = None) -> HostResult:
    """The ``HostResult`` of one call: room for an id per byte (no model makes more tokens than
    its text has bytes, but for a "▁" it puts before a document) and the template's ids around
    every row, two more per row; where that is over a sixteenth of the RAM, the larger of that
    and a third of the bytes (one allocation far beyond the RAM is refused under the kernel's
    heuristic overcommit; it grows then)."""
    n = offsets.shape[0] - 1
    extra = (prefix.shape[0] + suffix.shape[0]) if prefix is not None else 0
    nbytes = int(offsets[-1])
    want = nbytes + n * (extra + 2) + 1024
    return HostResult(n, min(want, max(nbytes // 3 + n * extra + 1024, _ram_bytes() // 64)), threads)


def _ram_bytes() -> int:
    """The host's physical memory in bytes (8 GiB where it cannot be read)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _byte_mid(offsets, d0, d1) -> int:
    half = (int(offsets[d0]) + int(offsets[d1])) / 2
    mid = int(np.searchsorted(offsets, half, side="left"))
    return min(max(mid, d0 + 1), d1 - 1)


def _kernel_name(kernel) -> str:
    """A kernel's Python name (a Numba dispatcher, CUDA or njit twin)."""
    return getattr(getattr(kernel, "py_func", None), "__name__", None) or getattr(kernel, "__name__", "?")


def _new_stats() -> dict:
    return {"pack_s": 0.0, "host_s": 0.0, "h2d_s": 0.0, "kernel_s": 0.0, "d2h_s": 0.0, "batches": 0, "bytes": 0, "pieces": 0,
            "distinct": 0, "host_pieces": 0, "oom_splits": 0, "device_cut": 0, "device_cut_refused": 0,
            "hybrid_cpu_bytes": 0, "hybrid_cpu_s": 0.0, "hybrid_share": None}


def hybrid_setting(v: Optional[str]):
    """``GPU_TOK_CUDA_HYBRID``'s value as ``GpuEngine.hybrid``: None (unset, empty or 0: off),
    "auto", or the device's share of the bytes, a number in (0, 1]; anything else is refused
    by name."""
    if v is None or v.strip() in ("", "0"):
        return None
    v = v.strip()
    if v == "auto":
        return "auto"
    try:
        f = float(v)
    except ValueError:
        f = -1.0
    if not 0.0 < f <= 1.0:
        raise ValueError(f"GPU_TOK_CUDA_HYBRID={v!r}: expected 0 (off), 'auto' or the device's share in (0, 1]")
    return f
# ------------------------------------------------------------------ front ends
_BACKENDS: dict = {}


def backend(device: str) -> Optional[_Backend]:
    """The backend for ``device``: ``"cuda"`` a ``CudaBackend`` (the simulator under
    ``NUMBA_ENABLE_CUDASIM=1``) or ``DeviceNotAvailable``; ``"auto"`` a ``CudaBackend`` on a
    usable real device, else None; ``"twin"`` the CPU twins (tests)."""
    if device == "twin":
        key = "twin"
    elif device in ("cuda", "auto"):
        if simulator_requested():
            if device == "auto":
                return None
        else:
            ok, why = cuda_usable()
            if not ok:
                if device == "auto":
                    return None
                raise DeviceNotAvailable(f"device='cuda' is not usable here ({why}); use device='cpu' or 'auto'")
        key = "cuda"
    else:
        raise ValueError(f"no GPU backend for device {device!r}")
    be = _BACKENDS.get(key)
    if be is None:
        be = _BACKENDS[key] = TwinBackend() if key == "twin" else CudaBackend()
    return be


class GpuTokenizer:
    """``device="cuda"`` for a ``Tokenizer``: the CPU engine's host side, the device kernels."""

    def __init__(self, tok, be: _Backend):
        from .fast_clip import CpuClipEngine
        from .fast_cpu import CpuSentencePieceEngine, CpuTokenizerEngine

        cpu = tok._cpu_engine()
        if cpu is None:
            raise NotServedOnDevice(f"device='cuda' does not serve this tokenizer: {tok.cpu_engine_reason}")
        self.cpu = cpu
        if isinstance(cpu, CpuTokenizerEngine):
            self.host = ByteLevelHost(cpu.engine)
            tables = byte_level_tables(be, cpu.engine)
        elif isinstance(cpu, CpuClipEngine):
            self.host = ClipHost(cpu)
            tables = byte_level_tables(be, cpu.engine)
        elif not isinstance(cpu, CpuSentencePieceEngine):
            raise NotServedOnDevice(f"device='cuda' does not serve this tokenizer: model {type(tok.config.model).__name__}")
        else:
            self.host = SentencePieceHost(cpu)
            tables = sentencepiece_tables(be, cpu)
        self.engine = GpuEngine(be, tables)

    def encode_ids(self, texts: List[str], add_special_tokens: bool, num_threads: Optional[int],
                   return_numpy: bool):
        text = self.engine.text_buffer()  # the texts packed into pinned memory (one call at a time)
        with (text.hold() if text is not None else contextlib.nullcontext()) as kept:
            return self._encode_ids(texts, add_special_tokens, num_threads, return_numpy, kept)

    def _encode_ids(self, texts, add_special_tokens, num_threads, return_numpy, kept):
        from .cpu_ref.pipeline import check_text
        from .fast_cpu import _NO_PAIRS, pack_probed, splice_rows

        t0 = time.perf_counter()
        # the byte-level host step takes pack_probed's flags as the CPU engine does (documents
        # without an added token's first bytes are not searched for them)
        eng = self.host.eng if isinstance(self.host, ByteLevelHost) else None
        probe, pairs = (None, _NO_PAIRS) if eng is None else (eng.probe, eng.probe_pairs)
        data, offsets, hint = pack_probed(texts, check_text, num_threads, probe, pairs, kept=kept)
        self.engine.stats["pack_s"] += time.perf_counter() - t0
        device_out = not return_numpy and self.engine.be.name == "cuda" and _cupy() is not None
        pre = suf = None
        if add_special_tokens:
            pre, suf = self.cpu.prefix, self.cpu.suffix
        cpu = None if device_out else self._cpu_part(data, offsets, hint, pre, suf, num_threads)
        ids, rs, skip = self.engine.encode_packed(self.host, data, offsets, num_threads, device_out, pre, suf, hint,
                                                  cpu)
        if skip is not None and skip.any():  # documents NFC changes (fast_cpu)
            if device_out:
                ids, rs = ids.get(), rs.get()
            wrap = (list(pre), list(suf)) if pre is not None else ([], [])
            done = self.cpu.skipped_rows(texts, skip, num_threads, data, offsets)
            rows = {i: wrap[0] + list(r) + wrap[1] for i, r in done.items()}
            ids, rs = splice_rows(ids, rs, rows)
            if device_out:
                cp = _cupy()
                ids, rs = cp.asarray(ids), cp.asarray(rs)
        return ids, rs

    def _cpu_part(self, data, offsets, hint, pre, suf, num_threads):
        """``GpuEngine.encode_packed``'s ``cpu`` for this tokenizer (the hybrid loop): the CPU
        engine on documents ``[d0, d1)`` of the packed ``data``, with the template's ids
        ``pre``/``suf`` around each row (None: no template); None for CLIP's engine."""
        from .fast_cpu import CpuSentencePieceEngine, CpuTokenizerEngine

        cpu = self.cpu
        if isinstance(cpu, CpuTokenizerEngine):
            eng = cpu.engine
            template = (pre, suf) if pre is not None and (pre.shape[0] or suf.shape[0]) else None

            def run(buf, off, d0, d1):
                return eng.run_ids(buf, off, num_threads=num_threads, template=template,
                                   hint=None if hint is None else hint[d0:d1])
            return run
        if isinstance(cpu, CpuSentencePieceEngine):
            def run_sp(buf, off, d0, d1):
                ids, rs = cpu.encode_packed(buf, off, pre is not None, num_threads)
                return ids, rs, None
            return run_sp
        return None

    def warm_up(self):
        """Compile the kernels now (``device="auto"`` falls back to the CPU engine if they do not)."""
        self.encode_ids(["gpu_tok warm-up \u00e9 x"], False, None, True)


class GpuTiktoken:
    """``device="cuda"`` for a ``TiktokenEncoding`` (``fast_cpu.CpuTiktokenEngine``'s host side)."""

    def __init__(self, enc, be: _Backend):
        cpu = enc._cpu()
        if cpu is None:
            raise NotServedOnDevice(f"device='cuda' does not serve this encoding: {enc.cpu_engine_reason}")
        self.cpu = cpu
        self.engine = GpuEngine(be, byte_level_tables(be, cpu.engine))
        self._hosts: dict = {}

    def encode_ids(self, data, offsets, allowed: frozenset, num_threads: Optional[int], return_numpy: bool):
        host = self._hosts.get(allowed)
        if host is None:
            host = self._hosts[allowed] = ByteLevelHost(self.cpu._engine(allowed))
        device_out = not return_numpy and self.engine.be.name == "cuda" and _cupy() is not None
        eng = host.eng

        def cpu(buf, off, d0, d1):  # the CPU engine on documents [d0, d1) (the hybrid loop)
            return eng.run_ids(buf, off, num_threads=num_threads)

        ids, rs, _skip = self.engine.encode_packed(host, data, offsets, num_threads, device_out, cpu=cpu)
        return ids, rs

    def warm_up(self):
        from .fast_cpu import pack

        data, offsets = pack(["gpu_tok warm-up \u00e9 x"], None)
        self.encode_ids(data, offsets, frozenset(), None, True)


def _engine_for(obj, device: str, make):
    """The GPU front end kept on ``obj`` for ``device`` (``make(backend)`` builds it), or None
    for ``device="auto"`` where it cannot run (no device, not served, kernels that do not
    compile): then the caller uses the CPU engine."""
    be = backend(device)
    if be is None:
        return None
    cache = obj.__dict__.setdefault("_gpu_engines", {})
    key = be.name
    g = cache.get(key)
    if g is not None or (key in cache and device == "auto"):
        return g
    if device != "auto":  # built here, or the reason it cannot be raised (again)
        g = cache[key] = make(be)
        return g
    try:
        g = make(be)
        g.warm_up()
    except Exception:  # noqa: BLE001 - "auto" falls back to the CPU engine, silently
        g = None
    cache[key] = g
    return g


def tokenizer_batch_ids(tok, texts: List[str], add_special_tokens: bool, device: str,
                        num_threads: Optional[int] = None, return_numpy: bool = False):
    """``Tokenizer.encode_batch_ids`` on the GPU engine: ``(ids, row_splits)``, or None for
    ``device="auto"`` where the GPU engine does not run (then the CPU engine does)."""
    g = _engine_for(tok, device, lambda be: GpuTokenizer(tok, be))
    if g is None:
        return None
    return g.encode_ids(texts, add_special_tokens, num_threads, return_numpy)


def tiktoken_batch_ids(enc, texts: List[str], allowed_special, disallowed_special, device: str,
                       num_threads: Optional[int] = None, return_numpy: bool = False):
    """``TiktokenEncoding.encode_batch_ids`` on the GPU engine, or None (then the CPU engine or
    the reference path runs: ``device="auto"`` without a device, or a text holding a
    disallowed special token, for which the reference path raises tiktoken's error)."""
    g = _engine_for(enc, device, lambda be: GpuTiktoken(enc, be))
    if g is None:
        return None
    from .fast_cpu import pack
    from .tiktoken_encoding import _valid_text

    text = g.engine.text_buffer()  # the texts packed into pinned memory, as GpuTokenizer's are
    with (text.hold() if text is not None else contextlib.nullcontext()) as kept:
        t0 = time.perf_counter()
        data, offsets = pack(texts, _valid_text, num_threads, kept=kept)
        g.engine.stats["pack_s"] += time.perf_counter() - t0
        if disallowed_special and g.cpu.contains_any(data, offsets, frozenset(disallowed_special)).any():
            return None
        allowed = frozenset(allowed_special) & frozenset(enc._special_tokens) if allowed_special else frozenset()
        return g.encode_ids(data, offsets, allowed, num_threads, return_numpy)
