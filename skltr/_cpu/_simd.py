"""Fixed-width vector operations for the vectorised QuickScorer kernel (numba intrinsics).

numba runs LLVM with its SLP vectoriser off (``NUMBA_SLP_VECTORIZE=0``), and the loop
vectoriser never sees a loop of constant trip count ``LANES``: it is fully unrolled first. So
a per-lane ``for d in range(LANES)`` over the bitvectors stays scalar (checked with
``inspect_asm``: one ``cmov`` + ``and`` per lane). These intrinsics emit the vector IR
directly; LLVM then lowers them to AVX-512 / AVX2 / SSE as the CPU allows. Each operates on
one row of ``LANES`` consecutive elements; the arrays' shapes are checked by the caller
(the kernel allocates them), not here.

The arithmetic is exactly the scalar one, lane by lane: ordered IEEE comparisons (false for
NaN), integer AND, and one IEEE addition per lane in the accumulator's dtype, so float32
and float64 sums are bit-equal to scalar code.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: Documents scored together per node (the vQS block width D). 16 uint64 bitvectors are two
#: AVX-512 registers; see the measurements in skltr.trees._quickscorer_layout.
LANES = 16

_I1 = ir.IntType(1)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


def _splat(builder, value, n):
    """<n x T> vector with every lane equal to ``value``."""
    vty = ir.VectorType(value.type, n)
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                                  ir.Constant(ir.VectorType(_I32, n), [0] * n))


def _vector_ptr(context, builder, aty, aval, first, elty):
    """Pointer to ``LANES`` elements of array ``aval`` starting at flat index ``first``."""
    arr = context.make_array(aty)(context, builder, aval)
    p = builder.gep(arr.data, [first])
    return builder.bitcast(p, ir.PointerType(ir.VectorType(elty, LANES)))


def _is_row_array(ty, dtype=None):
    return (isinstance(ty, types.Array) and ty.layout == "C"
            and (dtype is None or ty.dtype == dtype))


def _make_and_if(predicate):
    @intrinsic
    def and_if(typingctx, bv, row, xs, thr, mask):
        # bv: (n, LANES) uint64, C order; xs: (LANES,) float; thr: scalar of xs's dtype.
        if not (_is_row_array(bv, types.uint64) and bv.ndim == 2 and _is_row_array(xs)
                and xs.ndim == 1 and isinstance(xs.dtype, types.Float) and thr == xs.dtype
                and isinstance(row, types.Integer) and mask == types.uint64):
            return None
        sig = types.void(bv, row, xs, thr, mask)

        def codegen(context, builder, signature, args):
            bv_v, row_v, xs_v, thr_v, mask_v = args
            row64 = context.cast(builder, row_v, signature.args[1], types.uint64)
            first = builder.mul(row64, ir.Constant(_I64, LANES))
            p = _vector_ptr(context, builder, signature.args[0], bv_v, first, _I64)
            fty = context.get_value_type(signature.args[2].dtype)
            xp = _vector_ptr(context, builder, signature.args[2], xs_v,
                             ir.Constant(_I64, 0), fty)
            fires = builder.fcmp_ordered(predicate, builder.load(xp, align=4),
                                         _splat(builder, thr_v, LANES))
            keep = builder.select(fires, _splat(builder, mask_v, LANES),
                                  ir.Constant(ir.VectorType(_I64, LANES), [-1] * LANES))
            builder.store(builder.and_(builder.load(p, align=8), keep), p, align=8)
            return context.get_dummy_value()

        return sig, codegen

    return and_if


#: ``bv[row, d] &= mask if xs[d] > thr else ~0`` for every lane d (node false when x > thr).
and_if_gt = _make_and_if(">")
#: ``bv[row, d] &= mask if xs[d] >= thr else ~0`` for every lane d (node false when x >= thr).
and_if_ge = _make_and_if(">=")


@intrinsic
def add_exit_leaves(typingctx, bv, row, base, leaves, acc):
    """``acc[d] += leaves[base + tzcnt(bv[row, d])]`` for every lane d (one IEEE add each)."""
    if not (_is_row_array(bv, types.uint64) and bv.ndim == 2 and _is_row_array(leaves)
            and leaves.ndim == 1 and _is_row_array(acc) and acc.ndim == 1
            and acc.dtype == leaves.dtype
            and isinstance(acc.dtype, types.Float) and isinstance(row, types.Integer)
            and isinstance(base, types.Integer)):
        return None
    sig = types.void(bv, row, base, leaves, acc)

    def codegen(context, builder, signature, args):
        bv_v, row_v, base_v, leaves_v, acc_v = args
        row64 = context.cast(builder, row_v, signature.args[1], types.uint64)
        base64 = context.cast(builder, base_v, signature.args[2], types.uint64)
        vty = ir.VectorType(_I64, LANES)
        p = _vector_ptr(context, builder, signature.args[0], bv_v,
                        builder.mul(row64, ir.Constant(_I64, LANES)), _I64)
        cttz = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty, _I1]),
                                              f"llvm.cttz.v{LANES}i64")
        # A bitvector is never zero (a tree's rightmost leaf is never masked out).
        idx = builder.add(builder.call(cttz, [builder.load(p, align=8), ir.Constant(_I1, 0)]),
                          _splat(builder, base64, LANES))
        fty = context.get_value_type(signature.args[4].dtype)
        data = context.make_array(signature.args[3])(context, builder, leaves_v).data
        vals = ir.Constant(ir.VectorType(fty, LANES), ir.Undefined)
        for d in range(LANES):
            i = builder.extract_element(idx, ir.Constant(_I32, d))
            vals = builder.insert_element(vals, builder.load(builder.gep(data, [i])),
                                          ir.Constant(_I32, d))
        ap = _vector_ptr(context, builder, signature.args[4], acc_v, ir.Constant(_I64, 0), fty)
        builder.store(builder.fadd(builder.load(ap, align=4), vals), ap, align=4)
        return context.get_dummy_value()

    return sig, codegen
