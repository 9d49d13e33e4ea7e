"""numba intrinsics that numba does not expose: a software prefetch, popcount, ctz, an atomic
add, the bits of a float64.

``prefetch(arr, i)`` asks the CPU to bring the cache line of ``arr[i]`` into cache without
waiting for it (LLVM's ``llvm.prefetch``: read, high locality, data cache). A plain load of
a future row would instead hold up retirement for the full memory latency. No bounds check:
prefetching an invalid address is harmless on x86 and ARM, but callers pass valid indices.
"""

import llvmlite.binding as _llvm
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

# LLVM >= 15 has opaque pointers and names the intrinsic by address space only.
_PREFETCH_NAME = "llvm.prefetch.p0" if _llvm.llvm_version_info >= (15,) else "llvm.prefetch.p0i8"


@intrinsic
def prefetch(typingctx, arr, idx):
    """Prefetch the cache line holding ``arr[idx]`` (1-D array, integer index)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(idx, types.Integer)):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH_NAME)
        # (address, rw = read, locality = 3 (keep in all levels), cache type = data)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3),
                          ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


def _unary_i64(name, zero_flag):
    """An intrinsic ``f(x) -> uint64`` calling LLVM's 64-bit integer intrinsic ``name``
    (``zero_flag``: the intrinsic takes the "zero is undefined" flag, passed as false)."""

    def typer(typingctx, x):
        if not isinstance(x, types.Integer):
            return None
        sig = types.uint64(x)

        def codegen(context, builder, signature, args):
            value = context.cast(builder, args[0], signature.args[0], types.uint64)
            extra = [ir.Constant(_I1, 0)] if zero_flag else []
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(_I64, [_I64] + [e.type for e in extra]), name)
            return builder.call(fn, [value] + extra)

        return sig, codegen

    return typer


_I1 = ir.IntType(1)
_I64 = ir.IntType(64)

#: Set bits of a 64-bit integer, as uint64 (``llvm.ctpop.i64``: one ``popcnt``; a loop of
#: them vectorises with AVX-512 VPOPCNTDQ where the CPU has it).
popcount64 = intrinsic(_unary_i64("llvm.ctpop.i64", False))

#: Trailing zero bits of a 64-bit integer, as uint64: 64 for 0 (``llvm.cttz.i64``).
ctz64 = intrinsic(_unary_i64("llvm.cttz.i64", True))


@intrinsic
def fetch_add(typingctx, arr, idx, value):
    """Atomically add ``value`` to ``arr[idx]`` (1-D int64 array) and return the old value.

    A work counter shared by the threads of a parallel loop (``atomicrmw add``, monotonic:
    only the counter itself needs to be atomic; what each thread then writes is joined at
    the end of the loop).
    """
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.int64
            and isinstance(idx, types.Integer) and isinstance(value, types.Integer)):
        return None
    sig = types.int64(arr, idx, value)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False)
        val = context.cast(builder, args[2], signature.args[2], types.int64)
        return builder.atomic_rmw("add", ptr, val, "monotonic")

    return sig, codegen


@intrinsic
def float64_bits(typingctx, x):
    """The IEEE-754 bits of the float64 ``x`` as an int64 (a bitcast, no conversion): sign,
    biased exponent and fraction, as :mod:`skltr._cpu.exact_sum` decomposes every value. (A
    scalar has no ``.view`` in numba; ``math.frexp`` would be a libm call per value.)"""
    if not isinstance(x, types.Float) or x.bitwidth != 64:
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _I64)

    return sig, codegen
