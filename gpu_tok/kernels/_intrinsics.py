"""LLVM intrinsics the CPU kernels use (Numba ``@intrinsic``): a prefetch hint, an unaligned
8-byte load, count-trailing-zeros and a 64-byte range mask (none of them changes a result);
for packing (``pack_cpu``) and lists of ids (``lists_cpu``), a copy from a raw address, loads
and stores at raw addresses and calls of C functions by address; for the gathers of ids, a
copy between two arrays (``copy_items``)."""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _prefetch(context, builder, signature, args):
    """Emit ``llvm.prefetch`` (read, high locality, data) of one array element's address
    (``_item_ptr`` of all the intrinsic's index arguments)."""
    ptr = _item_ptr(context, builder, signature, args, len(signature.args) - 1)
    i8p = ir.IntType(8).as_pointer()
    fnty = ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
    i32 = ir.IntType(32)
    builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
    return context.get_dummy_value()


def _item_ptr(context, builder, signature, args, n=1):
    """The address of ``arr[i]`` (``arr[i, j, k]`` with ``n=3``) for an intrinsic whose first
    argument is an array and the next ``n`` its indices."""
    aryty = signature.args[0]
    ary = context.make_array(aryty)(context, builder, args[0])
    idx = [context.cast(builder, a, t, types.intp) for a, t in zip(args[1:1 + n], signature.args[1:1 + n])]
    return cgutils.get_item_pointer(context, builder, aryty, ary, idx, wraparound=False)


@intrinsic
def prefetch3(typingctx, arr, i, j, k):
    """Hint the processor to load ``arr[i, j, k]``'s cache line (LLVM ``llvm.prefetch``, read,
    high locality); no effect on results."""
    sig = types.void(arr, i, j, k)

    def codegen(context, builder, signature, args):
        return _prefetch(context, builder, signature, args)

    return sig, codegen


@intrinsic
def prefetch1(typingctx, arr, i):
    """``prefetch3`` for ``arr[i]`` of a one-dimensional array."""
    sig = types.void(arr, i)

    def codegen(context, builder, signature, args):
        return _prefetch(context, builder, signature, args)

    return sig, codegen


@intrinsic
def load64(typingctx, arr, i):
    """The 8 bytes ``arr[i:i + 8]`` of a ``uint8`` array as one little-endian ``uint64``
    (an unaligned load; the caller keeps ``i + 8 <= arr.shape[0]``)."""
    sig = types.uint64(arr, i)

    def codegen(context, builder, signature, args):
        ptr = _item_ptr(context, builder, signature, args)
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@intrinsic
def load64_2(typingctx, arr, i, j):
    """``load64`` of ``arr[i, j:j + 8]`` in a two-dimensional ``uint8`` array (a row's bytes;
    the caller keeps ``j + 8`` within the row)."""
    sig = types.uint64(arr, i, j)

    def codegen(context, builder, signature, args):
        ptr = _item_ptr(context, builder, signature, args, 2)
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@intrinsic
def ctz64(typingctx, x):
    """Trailing zero bits of a ``uint64`` (64 for 0), LLVM ``llvm.cttz.i64``."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        v = context.cast(builder, args[0], signature.args[0], types.uint64)
        return builder.cttz(v, ir.Constant(ir.IntType(1), 0))

    return sig, codegen


@intrinsic
def range_mask64(typingctx, arr, i, lo, hi):
    """Bit ``k`` set where ``lo <= arr[i + k] <= hi`` (unsigned bytes), for the 64 bytes
    ``arr[i:i + 64]`` of a ``uint8`` array: one vector load and compare (LLVM lowers it to
    the machine's SIMD: AVX-512 / AVX2 / SSE2). The caller keeps ``i + 64 <= arr.shape[0]``;
    ``lo`` and ``hi`` are best literal constants (the splats then fold)."""
    sig = types.uint64(arr, i, lo, hi)

    def codegen(context, builder, signature, args):
        ptr = _item_ptr(context, builder, signature, args)
        i8 = ir.IntType(8)
        vty = ir.VectorType(i8, 64)
        v = builder.load(builder.bitcast(ptr, vty.as_pointer()), align=1)
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), 64), [0] * 64)

        def splat(x):
            one = builder.insert_element(ir.Constant(vty, ir.Undefined), builder.trunc(x, i8), ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(one, ir.Constant(vty, ir.Undefined), zeros)

        lo_v = context.cast(builder, args[2], signature.args[2], types.int64)
        hi_v = context.cast(builder, args[3], signature.args[3], types.int64)
        span = builder.sub(hi_v, lo_v)
        d = builder.sub(v, splat(lo_v))
        bits = builder.icmp_unsigned("<=", d, splat(span))
        return builder.bitcast(bits, ir.IntType(64))

    return sig, codegen


@intrinsic
def opaque64(typingctx, x):
    """``x`` (a ``uint64``) unchanged, through an empty inline assembly block that LLVM
    cannot see into: the optimizer then keeps the bit operations after it on the 64-bit
    word. Without it, shifts and masks of ``range_mask64`` results in gpt2's window
    (``pretok_cpu._gpt2_starts``) were turned back into shuffles of the compare vectors,
    which AVX2 lowers byte by byte (120 ``vpinsrb`` through the stack)."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        return builder.asm(ir.FunctionType(i64, [i64]), "", "=r,0", [args[0]], False)

    return sig, codegen


@intrinsic
def copy_from_address(typingctx, arr, i, src, n):
    """Copy ``n`` bytes from the raw address ``src`` (an ``int64``) to ``arr[i:i + n]`` of a
    ``uint8`` array (``llvm.memcpy``); the caller keeps both ranges valid and disjoint."""
    sig = types.void(arr, i, src, n)

    def codegen(context, builder, signature, args):
        dst = _item_ptr(context, builder, signature, args)
        sp = builder.inttoptr(context.cast(builder, args[2], signature.args[2], types.int64), ir.IntType(8).as_pointer())
        cgutils.raw_memcpy(builder, dst, sp, context.cast(builder, args[3], signature.args[3], types.int64), 1)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def copy_items(typingctx, dst, o, src, a, n):
    """``dst[o:o + n] = src[a:a + n]`` for two one-dimensional, C-contiguous arrays of one
    dtype, as one ``llvm.memcpy``: the slice assignment's code (broadcast, overlap check)
    took about 2 s of Numba's compile time per function, and twice the time on records of a
    few ids (RESULTS 2026-12-06 21:40). The caller keeps both ranges in bounds and the
    arrays distinct (nothing is checked)."""
    if not (isinstance(dst, types.Array) and isinstance(src, types.Array) and dst.dtype == src.dtype
            and dst.ndim == 1 and src.ndim == 1 and dst.layout == "C" and src.layout == "C"):
        return None
    sig = types.void(dst, o, src, a, n)

    def codegen(context, builder, signature, args):
        dp = _item_ptr(context, builder, signature, args)
        sty = signature.args[2]
        sary = context.make_array(sty)(context, builder, args[2])
        si = context.cast(builder, args[3], signature.args[3], types.intp)
        sp = cgutils.get_item_pointer(context, builder, sty, sary, [si], wraparound=False)
        cnt = context.cast(builder, args[4], signature.args[4], types.int64)
        cgutils.raw_memcpy(builder, dp, sp, cnt, context.get_abi_sizeof(context.get_data_type(sty.dtype)))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def call_i64_i64_i64(typingctx, fn, a, b):
    """Call the C function at address ``fn`` as ``int64 f(int64, int64)`` (pointers passed as
    integers, the x86-64 / AArch64 calling conventions treat them alike). Taking the address
    as an argument, not a ctypes object, keeps the calling kernel cacheable."""
    sig = types.int64(types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64, i64])
        f = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(f, [args[1], args[2]])

    return sig, codegen


@intrinsic
def call_i64_i64(typingctx, fn, a):
    """Call the C function at address ``fn`` as ``int64 f(int64)``."""
    sig = types.int64(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        f = builder.inttoptr(args[0], ir.FunctionType(i64, [i64]).as_pointer())
        return builder.call(f, [args[1]])

    return sig, codegen


@intrinsic
def call_void_i64(typingctx, fn, a):
    """Call the C function at address ``fn`` as ``void f(int64)``."""
    sig = types.void(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        f = builder.inttoptr(args[0], ir.FunctionType(ir.VoidType(), [i64]).as_pointer())
        builder.call(f, [args[1]])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def call_i32_i64_i64_i64(typingctx, fn, a, b, c):
    """Call the C function at address ``fn`` as ``int32 f(int64, int64, int64)`` (a C
    ``int`` result)."""
    sig = types.int32(types.int64, types.int64, types.int64, types.int64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        f = builder.inttoptr(args[0], ir.FunctionType(ir.IntType(32), [i64, i64, i64]).as_pointer())
        return builder.call(f, list(args[1:]))

    return sig, codegen


@intrinsic
def load_at(typingctx, addr):
    """The ``int64`` at the raw address ``addr`` (8-byte aligned)."""
    sig = types.int64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], ir.IntType(64).as_pointer()), align=8)

    return sig, codegen


@intrinsic
def store_at(typingctx, addr, v):
    """Store the ``int64`` ``v`` at the raw address ``addr`` (8-byte aligned)."""
    sig = types.void(types.int64, types.int64)

    def codegen(context, builder, signature, args):
        builder.store(args[1], builder.inttoptr(args[0], ir.IntType(64).as_pointer()), align=8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def call_void(typingctx, fn):
    """Call the C function at address ``fn`` as ``void f(void)``."""
    sig = types.void(types.int64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.VoidType(), [])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [])
        return context.get_dummy_value()

    return sig, codegen


# ------------------------------------------------------------ atomics (the shared word table)
# ``engine_cpu``'s shared word table is written by every worker thread of a parallel call
# at once: an entry is claimed with a compare-and-swap of its state word, written, then
# published by a release store of that word; a reader loads the state with acquire before
# it reads the entry, so it never sees a half-written one (C11 release/acquire, which LLVM
# lowers on x86-64 and AArch64 alike).

@intrinsic
def load_acquire3(typingctx, arr, i, j, k):
    """``arr[i, j, k]`` (a ``uint64`` array) loaded atomically with acquire ordering: the
    loads after it see every store made before the release store that wrote the value."""
    sig = types.uint64(arr, i, j, k)

    def codegen(context, builder, signature, args):
        return builder.load_atomic(_item_ptr(context, builder, signature, args, 3), "acquire", 8)

    return sig, codegen


@intrinsic
def store_release3(typingctx, arr, i, j, k, v):
    """``arr[i, j, k] = v`` (``uint64``) atomically with release ordering: the stores before
    it are seen by whoever loads ``v`` with acquire (``load_acquire3``)."""
    sig = types.void(arr, i, j, k, types.uint64)

    def codegen(context, builder, signature, args):
        v = context.cast(builder, args[4], signature.args[4], types.uint64)
        builder.store_atomic(v, _item_ptr(context, builder, signature, args, 3), "release", 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def cas3(typingctx, arr, i, j, k, expected, new):
    """Compare-and-swap of ``arr[i, j, k]`` (``uint64``, sequentially consistent): set to
    ``new`` when it holds ``expected``; returns the value it held (``expected`` on success)."""
    sig = types.uint64(arr, i, j, k, types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        e = context.cast(builder, args[4], signature.args[4], types.uint64)
        n = context.cast(builder, args[5], signature.args[5], types.uint64)
        res = builder.cmpxchg(_item_ptr(context, builder, signature, args, 3), e, n, "seq_cst", "seq_cst")
        return builder.extract_value(res, 0)

    return sig, codegen



# ------------------------------------------------------------ a work queue (parallel kernels)
# ``workqueue``: each block of a parallel kernel claimed by one worker (an atomic add).

@intrinsic
def fetch_add1(typingctx, arr, i, v):
    """``arr[i] += v`` atomically (an ``int64`` array, sequentially consistent); returns the
    value ``arr[i]`` held before."""
    sig = types.int64(arr, i, v)

    def codegen(context, builder, signature, args):
        d = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", _item_ptr(context, builder, signature, args, 1), d, "seq_cst")

    return sig, codegen
