"""Fixed-width vector operations for the byte-sliced QuickScorer kernel (numba intrinsics).

numba runs LLVM with its SLP vectoriser off (``NUMBA_SLP_VECTORIZE=0``), and the loop
vectoriser never sees a loop of constant trip count: it is fully unrolled first. So a
per-lane ``for d in range(LANES)`` stays scalar (checked with ``inspect_asm``). These
intrinsics emit the vector IR directly; LLVM then lowers it to AVX-512 / AVX2 / SSE / NEON as
the CPU allows.

The leaf bitvectors of a group are *byte-sliced* (RapidScorer, Ye et al., KDD 2018)::

    bv[tree, j, d]   byte j (leaves 8j .. 8j+7) of tree ``tree``'s leaf vector for lane d;
                     LANES lanes of one byte are one row of LANES bytes (a 64-byte vector)

A node clears one contiguous run of leaves, which covers one or two bytes for all but the
few nodes near a tree's root: its update is one compare of the LANES values against its
threshold and an AND of two rows (one 64-byte load and store each), where a uint64-per-lane
layout moves 8 bytes per lane. :func:`scan_list_gt` / :func:`scan_list_ge` run a whole list
in one intrinsic so that the group's LANES values stay in registers across its nodes (numba
code would reload them after every store: it cannot tell the arrays apart). Why these
choices, with the measurements: ``docs/scoring_internals.rst``.

The arithmetic is exactly the scalar one, lane by lane: ordered IEEE comparisons (false for
NaN), integer AND, and one IEEE addition per lane in the accumulator's dtype, so float32
and float64 sums are bit-equal to scalar code. The callers check the arrays' shapes and
alignment (the kernel allocates them); the intrinsics do not.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .._dtypes import QS_NODE_BYTE_WIDE, NodeFlags
from .traversal import ZERO_THRESHOLD

#: Documents scored together (the group width): one byte each in a 64-byte row.
LANES = 64
#: Bytes of one tree's state for a group: 8 rows of LANES bytes (64 leaves).
TREE_BYTES = 8 * LANES
#: ``node_byte`` bit set when a node's cleared run reaches past its two rows.
WIDE = QS_NODE_BYTE_WIDE
_MISSING_NONE = NodeFlags.MISSING_NONE
_MISSING_ZERO = NodeFlags.MISSING_ZERO

_I1 = ir.IntType(1)
_I8 = ir.IntType(8)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


def _splat(builder, value, n):
    """<n x T> vector with every lane equal to ``value``."""
    vty = ir.VectorType(value.type, n)
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(v, ir.Constant(vty, ir.Undefined),
                                  ir.Constant(ir.VectorType(_I32, n), [0] * n))


def _data(context, builder, aty, aval):
    return context.make_array(aty)(context, builder, aval).data


def _vector_at(builder, data, first, elty):
    """Pointer to LANES elements of type ``elty`` from ``data[first]``."""
    return builder.bitcast(builder.gep(data, [first]), ir.PointerType(ir.VectorType(elty,
                                                                                     LANES)))


def _is_array(ty, ndim, dtype=None):
    return (isinstance(ty, types.Array) and ty.layout == "C" and ty.ndim == ndim
            and (dtype is None or ty.dtype == dtype))


class _Entries:
    """Data pointers of one kind of table entry (nodes, or default-right entries): tree index
    within the block, node_byte, two mask bytes, 64-bit mask."""

    def __init__(self, context, builder, types_, values):
        self.tree, self.byte, self.mbytes, self.mask = (
            _data(context, builder, t, v) for t, v in zip(types_, values))


def _emit_update(builder, bvp, entries, i, fires, after):
    """Emit entry ``i``'s update of the lanes where ``fires``: AND its two rows of the tree's
    state with its two mask bytes (a byte broadcast from memory is one shuffle uop on Intel
    cores, from a register two), and all 8 rows with the whole mask when the entry is wide
    (its bytes outside the cleared run are 0xFF, so the two rows done first are unchanged);
    then branch to ``after``."""
    rows = ir.VectorType(_I8, LANES)
    keep_all = ir.Constant(rows, [-1] * LANES)

    def and_row(first, m8):
        p = _vector_at(builder, bvp, first, _I8)
        keep = builder.select(fires, _splat(builder, m8, LANES), keep_all)
        builder.store(builder.and_(builder.load(p, align=64), keep), p, align=64)

    tree = builder.zext(builder.load(builder.gep(entries.tree, [i])), _I64)
    byte = builder.load(builder.gep(entries.byte, [i]))
    m8p = builder.gep(entries.mbytes, [builder.shl(i, ir.Constant(_I64, 1))])
    tree_row = builder.mul(tree, ir.Constant(_I64, TREE_BYTES))
    first = builder.add(tree_row, builder.mul(
        builder.zext(builder.and_(byte, ir.Constant(_I8, 7)), _I64), ir.Constant(_I64, LANES)))
    and_row(first, builder.load(m8p))
    and_row(builder.add(first, ir.Constant(_I64, LANES)),
            builder.load(builder.gep(m8p, [ir.Constant(_I64, 1)])))
    wide = builder.function.append_basic_block("entry.wide")
    is_wide = builder.icmp_unsigned("!=", builder.and_(byte, ir.Constant(_I8, WIDE)),
                                    ir.Constant(_I8, 0))
    builder.cbranch(is_wide, wide, after)
    builder.position_at_end(wide)
    mask = builder.load(builder.gep(entries.mask, [i]))
    for j in range(8):
        and_row(builder.add(tree_row, ir.Constant(_I64, j * LANES)),
                builder.trunc(builder.lshr(mask, ir.Constant(_I64, 8 * j)), _I8))
    builder.branch(after)


def _emit_loop(builder, lo, hi, name, body):
    """Emit ``for i in range(lo, hi): body(i, step, done)``; ``body`` ends its block(s) with
    a branch to ``step`` (next entry) or ``done`` (leave the loop)."""
    fn = builder.function
    entry = builder.block
    head = fn.append_basic_block(f"{name}.head")
    work = fn.append_basic_block(f"{name}.body")
    step = fn.append_basic_block(f"{name}.step")
    done = fn.append_basic_block(f"{name}.done")
    builder.branch(head)
    builder.position_at_end(head)
    i = builder.phi(_I64)
    i.add_incoming(lo, entry)
    builder.cbranch(builder.icmp_unsigned("<", i, hi), work, done)
    builder.position_at_end(work)
    body(i, step, done)
    builder.position_at_end(step)
    i.add_incoming(builder.add(i, ir.Constant(_I64, 1)), step)
    builder.branch(head)
    builder.position_at_end(done)


def _entry_arrays_ok(tree, byte, mbytes, mask):
    return (_is_array(tree, 1) and isinstance(tree.dtype, types.Integer)
            and _is_array(byte, 1, types.uint8) and _is_array(mbytes, 1, types.uint8)
            and _is_array(mask, 1, types.uint64))


def _make_scan(fire, stop):
    @intrinsic
    def scan_list(typingctx, bv, xs, xoff, node_thr, node_tree, node_byte, node_mbytes,
                  node_mask, lo, hi, top):
        # bv: (n,) uint8, 64-byte aligned, tree t's rows from t * TREE_BYTES (t: node_tree,
        # the index within the block); xs[xoff:xoff + LANES]: the group's values in
        # node_thr's dtype; top: the largest of them.
        ok = (_is_array(bv, 1, types.uint8) and _is_array(xs, 1)
              and isinstance(xs.dtype, types.Float) and _is_array(node_thr, 1, xs.dtype)
              and _entry_arrays_ok(node_tree, node_byte, node_mbytes, node_mask)
              and top == xs.dtype
              and all(isinstance(t, types.Integer) for t in (xoff, lo, hi)))
        if not ok:
            return None
        sig = types.void(bv, xs, xoff, node_thr, node_tree, node_byte, node_mbytes, node_mask,
                         lo, hi, top)

        def codegen(context, builder, signature, args):
            a = signature.args
            bvp = _data(context, builder, a[0], args[0])
            thrp = _data(context, builder, a[3], args[3])
            nodes = _Entries(context, builder, a[4:8], args[4:8])
            u64 = types.uint64
            fty = context.get_value_type(a[1].dtype)
            xs = builder.load(_vector_at(builder, _data(context, builder, a[1], args[1]),
                                         context.cast(builder, args[2], a[2], u64), fty),
                              align=4)
            top = args[10]

            def body(i, step, done):
                # Nodes are in ascending threshold order: once no lane can fire, none after
                # can.
                thr = builder.load(builder.gep(thrp, [i]))
                work = builder.function.append_basic_block("scan.work")
                builder.cbranch(builder.fcmp_ordered(stop, thr, top), done, work)
                builder.position_at_end(work)
                fires = builder.fcmp_ordered(fire, xs, _splat(builder, thr, LANES))
                _emit_update(builder, bvp, nodes, i, fires, step)

            _emit_loop(builder, context.cast(builder, args[8], a[8], u64),
                       context.cast(builder, args[9], a[9], u64), "scan", body)
            return context.get_dummy_value()

        return sig, codegen

    return scan_list


#: Scan list nodes ``lo:hi`` for a group, non-strict test (a lane fires -- goes right and
#: clears the node's left leaves -- when x > thr); stops at the first thr >= top.
scan_list_gt = _make_scan(">", ">=")
#: The same for the strict test (fires when x >= thr); stops at the first thr > top.
scan_list_ge = _make_scan(">=", ">")


@intrinsic
def default_lanes(typingctx, bv, xs, xoff, mode, xfix, dr_tree, dr_byte, dr_mbytes, dr_mask,
                  lo, hi):
    """Route a list's missing lanes by its missing type ``mode`` (``NodeFlags``), for a group
    whose values ``xs[xoff:xoff + LANES]`` have NaN (or, for type ZERO, zero) lanes:
    ``xfix[:LANES]`` = the values to scan instead (NaN reads as 0.0 for type NONE; a lane
    taking the default direction becomes NaN, which never fires), and default-right entries
    ``lo:hi`` applied to the lanes taking the default direction, all lanes at once."""
    ok = (_is_array(bv, 1, types.uint8) and _is_array(xs, 1)
          and isinstance(xs.dtype, types.Float) and _is_array(xfix, 1, xs.dtype)
          and isinstance(mode, types.Integer)
          and _entry_arrays_ok(dr_tree, dr_byte, dr_mbytes, dr_mask)
          and all(isinstance(t, types.Integer) for t in (xoff, lo, hi)))
    if not ok:
        return None
    sig = types.void(bv, xs, xoff, mode, xfix, dr_tree, dr_byte, dr_mbytes, dr_mask, lo, hi)

    def codegen(context, builder, signature, args):
        a = signature.args
        u64 = types.uint64
        bvp = _data(context, builder, a[0], args[0])
        fty = context.get_value_type(a[1].dtype)
        vty = ir.VectorType(fty, LANES)
        x = builder.load(_vector_at(builder, _data(context, builder, a[1], args[1]),
                                    context.cast(builder, args[2], a[2], u64), fty), align=4)
        mode = context.cast(builder, args[3], a[3], types.int64)
        none = builder.icmp_signed("==", mode, ir.Constant(_I64, _MISSING_NONE))
        zero_type = builder.icmp_signed("==", mode, ir.Constant(_I64, _MISSING_ZERO))
        isnan = builder.fcmp_unordered("uno", x, x)
        suffix = "f32" if fty == ir.FloatType() else "f64"
        fabs = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty]),
                                              f"llvm.fabs.v{LANES}{suffix}")
        iszero = builder.fcmp_ordered("<=", builder.call(fabs, [x]),
                                      ir.Constant(vty, [ZERO_THRESHOLD] * LANES))
        no_lane = ir.Constant(ir.VectorType(_I1, LANES), [0] * LANES)
        default = builder.select(zero_type, builder.or_(isnan, iszero),
                                 builder.select(none, no_lane, isnan))
        fixed = builder.select(none, builder.select(isnan, ir.Constant(vty, [0.0] * LANES), x),
                               builder.select(default, ir.Constant(vty, [float("nan")] * LANES),
                                              x))
        builder.store(fixed, _vector_at(builder, _data(context, builder, a[4], args[4]),
                                        ir.Constant(_I64, 0), fty), align=4)
        entries = _Entries(context, builder, a[5:9], args[5:9])
        _emit_loop(builder, context.cast(builder, args[9], a[9], u64),
                   context.cast(builder, args[10], a[10], u64), "default",
                   lambda i, step, done: _emit_update(builder, bvp, entries, i, default, step))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def and_where(typingctx, bv, lanes, tree, byte, mbytes, mask, i):
    """Apply entry ``i`` (of the arrays ``tree``, ``byte``, ``mbytes``, ``mask``: e.g. a
    categorical node) to the lanes d where ``lanes[d]`` (uint8, LANES of them) is non-zero:
    the lanes routed one by one (categorical sets) are updated together."""
    if not (_is_array(bv, 1, types.uint8) and _is_array(lanes, 1, types.uint8)
            and _entry_arrays_ok(tree, byte, mbytes, mask) and isinstance(i, types.Integer)):
        return None
    sig = types.void(bv, lanes, tree, byte, mbytes, mask, i)

    def codegen(context, builder, signature, args):
        a = signature.args
        bvp = _data(context, builder, a[0], args[0])
        flags = builder.load(_vector_at(builder, _data(context, builder, a[1], args[1]),
                                        ir.Constant(_I64, 0), _I8), align=1)
        fires = builder.icmp_unsigned("!=", flags, ir.Constant(flags.type, [0] * LANES))
        entries = _Entries(context, builder, a[2:6], args[2:6])
        done = builder.function.append_basic_block("and_where.done")
        _emit_update(builder, bvp, entries, context.cast(builder, args[6], a[6], types.uint64),
                     fires, done)
        builder.position_at_end(done)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def exit_leaves(typingctx, bv, tree_row, leaf):
    """``leaf[d]`` = the exit leaf (0..63) of lane d of the tree whose state starts at
    ``bv[tree_row]``, for every lane d: its lowest set bit.

    The leaf values are then added per lane by scalar code: building a vector of 64 loaded
    values costs an element insert and extract per lane, on the one shuffle port of Intel
    cores, where scalar loads and adds spread over the load and ALU ports.
    """
    if not (_is_array(bv, 1, types.uint8) and _is_array(leaf, 1, types.uint8)
            and isinstance(tree_row, types.Integer)):
        return None
    sig = types.void(bv, tree_row, leaf)

    def codegen(context, builder, signature, args):
        bv_v, row_v, leaf_v = args
        a = signature.args
        row = context.cast(builder, row_v, a[1], types.uint64)
        bvp = _data(context, builder, a[0], bv_v)
        v8 = ir.VectorType(_I8, LANES)
        cttz = cgutils.get_or_insert_function(builder.module, ir.FunctionType(v8, [v8, _I1]),
                                              f"llvm.cttz.v{LANES}i8")
        # The lowest set bit in the lowest non-zero byte (a tree's rightmost leaf is never
        # cleared, so some byte is non-zero).
        zero = ir.Constant(v8, [0] * LANES)
        out = zero
        for j in range(7, -1, -1):
            b = builder.load(_vector_at(builder, bvp,
                                        builder.add(row, ir.Constant(_I64, j * LANES)), _I8),
                             align=64)
            here = builder.add(builder.call(cttz, [b, ir.Constant(_I1, 0)]),
                               ir.Constant(v8, [8 * j] * LANES))
            out = builder.select(builder.icmp_unsigned("!=", b, zero), here, out)
        builder.store(out, _vector_at(builder, _data(context, builder, a[2], leaf_v),
                                      ir.Constant(_I64, 0), _I8), align=1)
        return context.get_dummy_value()

    return sig, codegen
