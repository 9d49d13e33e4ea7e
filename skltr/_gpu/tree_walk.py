"""The device functions every GPU scoring kernel shares: node records, routing, tree walks
and per-row sums (CUDA source, prepended to each scoring module's own kernels).

``go_left`` is ``skltr._cpu.traversal.go_left`` line for line; ``walk`` follows one tree from
its root to a leaf in the layout of :mod:`skltr._gpu.forest_layout` (16-byte records, or the
8-byte float32 layout when ``COMPACT``); ``Acc`` sums a row's contributions as
``skltr._cpu.traversal.finish_output`` does. The traversal placements
(:mod:`skltr._gpu.traversal`) and GPU-QuickScorer (:mod:`skltr._gpu.quickscorer`, which walks
trees of more than 64 leaves and routes categorical nodes with them) both compile it, so it
lives apart from both: neither module imports the other for it. The source reads the
compile-time constants of the module it is compiled into (``COMPACT``, ``STRICT``, ``XT``,
``NOUT``, ...; see ``skltr._gpu.traversal._module``) and needs ``skltr._gpu._compile``'s
``COMMON`` and ``EXACT_FLOAT32`` before it. A string only: importing this module needs no
CuPy.
"""

__all__ = ["DEVICE_SOURCE", "ROUTE_SOURCE"]

#: ``skltr._cpu.traversal.go_left`` once, for every GPU kernel that routes a value at a node
#: (the scoring walks below, TreeSHAP's path conditions): the node's flags, threshold and
#: index into the categorical sets are the caller's. Reads the defines ``STRICT``,
#: ``F32_INPUTS``, ``INPUT_F32``, ``HAS_SENTINEL``, ``HAS_CAT``, ``HAS_MISSING_NONE``,
#: ``HAS_MISSING_ZERO`` (a kernel that cannot tell which node kinds a model has sets the last
#: three to 1) and the typedef ``XT``.
ROUTE_SOURCE = r"""
// float32 values are held in doubles (widen, f32_round: skltr._gpu._compile.EXACT_FLOAT32,
// prepended), so that CuPy's -ftz=true cannot flush a subnormal the CPU keeps.

#define F_CAT 1
#define F_DEFAULT_LEFT 2
#define F_SET_RIGHT 16
#define F_INVALID_DEFAULT 32
#define F_TRUNC_FIRST 64
#define ZERO_THRESHOLD 1.0000000180025095e-35

template <typename OFF>
__device__ __forceinline__ bool route(double x, int fl, double thr, i64 g, const OFF* cat_off,
                                      const int* cat_nw, const u32* bits, double missing) {
    // skltr._cpu.traversal.go_left line for line; g: the node's index into the
    // categorical sets. float32 routing, or the model's input rule reads every value as a
    // float32 (a float64 CuPy array is rounded here); a no-op for float32 input
    if ((F32_INPUTS || INPUT_F32) && sizeof(XT) == 8) x = f32_round(x);
    if (HAS_SENTINEL && x == missing) x = __longlong_as_double(0x7ff8000000000000LL);
    const bool default_left = (fl & F_DEFAULT_LEFT) != 0;
    if (HAS_CAT && (fl & F_CAT)) {
        if (isnan(x)) return default_left;
        const bool invalid = (fl & F_TRUNC_FIRST) ? trunc(x) < 0.0 : x < 0.0;
        bool in_set = false;
        if (invalid) {
            if (fl & F_INVALID_DEFAULT) return default_left;
        } else if (x < 2147483648.0) {
            const i64 c = (i64)x;
            const i64 word = c >> 5;
            if (word < cat_nw[g]) in_set = ((bits[cat_off[g] + word] >> (u32)(c & 31)) & 1u) == 1u;
        }
        return (fl & F_SET_RIGHT) ? !in_set : in_set;
    }
    const int missing_type = (fl >> 2) & 3;
    if (isnan(x)) {
        if (HAS_MISSING_NONE && missing_type == 0) x = 0.0; else return default_left;
    }
    if (HAS_MISSING_ZERO && missing_type == 1 && fabs(x) <= ZERO_THRESHOLD)
        return default_left;
    return STRICT ? x < thr : x <= thr;
}
"""

DEVICE_SOURCE = ROUTE_SOURCE + r"""
#if COMPACT
struct Node { u32 key; u32 packed; };      // see ForestLayout: the 8-byte float32 layout
#else
struct Node { double v; int feature; int meta; };
#endif

#define HOT_RIGHT 128

#if !COMPACT
__device__ __forceinline__ bool go_left(double x, const Node& nd, i64 g, const int* cat_off,
                                        const int* cat_nw, const u32* bits, double missing) {
    // g: the node's index in the layout (categorical sets)
    return route(x, nd.meta & 255, nd.v, g, cat_off, cat_nw, bits, missing);
}

template <typename T>
__device__ __forceinline__ double walk(const Node* nd, i64 g0, const T* x, int step,
                                       const int* cat_off, const int* cat_nw, const u32* bits,
                                       double missing) {
    // the leaf contribution of one tree: nd its root (shared or global), g0 its layout index
    int i = 0;
    while (true) {
        const Node n = nd[i];
        if (n.feature < 0) return n.v;
        const double xv = widen(x[(i64)n.feature * step]);
        const bool hot_right = (n.meta & HOT_RIGHT) != 0;   // the next record is the right child
        i += go_left(xv, n, g0 + i, cat_off, cat_nw, bits, missing) != hot_right
             ? 1 : (n.meta >> 8);
    }
}

#else
// The 8-byte layout: float32 routing by integer compares of order-preserving keys of the
// float32 bits (no float compare: -ftz cannot flush anything), as go_left on float32 values.
#define ZERO_BITS 0x0554ad2eu   // bits of float32(1e-35), LightGBM's kZeroThreshold
__device__ __forceinline__ u32 x_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ u32 x_bits(double v) {      // bits of the nearest float32
    const double r = f32_round(v);
    if (fabs(r) < __longlong_as_double(0x3810000000000000LL))
        return (u32)(fabs(r) * __longlong_as_double(0x4940000000000000LL))
               | (signbit(r) ? 0x80000000u : 0u);
    return __float_as_uint((float)r);
}

template <typename T>
__device__ __forceinline__ double walk(const Node* nd, i64 g0, const T* x, int step,
                                       const int* cat_off, const int* cat_nw, const u32* bits,
                                       double missing) {
    // packed: bits 0-14 feature (0x7fff: leaf, key = its contribution's float32 bits),
    // bit 15 the next record is the right child, bit 16 default left, bits 17-18 missing
    // type, bits 19-31 offset of the other child
    int i = 0;
    while (true) {
        const Node n = nd[i];
        const u32 f = n.packed & 0x7fffu;
        if (f == 0x7fffu) return widen(__uint_as_float(n.key));
        u32 b = x_bits(x[(i64)f * step]);
        if (b == 0x80000000u) b = 0u;                      // -0.0 compares as 0.0
        const u32 mtype = (n.packed >> 17) & 3u;
        bool nan = (b & 0x7fffffffu) > 0x7f800000u;
        if (HAS_SENTINEL) {
            u32 mb = x_bits(missing);
            if (mb == 0x80000000u) mb = 0u;
            nan = nan || b == mb;
        }
        bool left;
        if (nan && !(HAS_MISSING_NONE && mtype == 0u)) {
            left = ((n.packed >> 16) & 1u) != 0u;                // the default direction
        } else if (HAS_MISSING_ZERO && !nan && mtype == 1u && (b & 0x7fffffffu) <= ZERO_BITS) {
            left = ((n.packed >> 16) & 1u) != 0u;
        } else {
            if (nan) b = 0u;                                     // missing type none: 0.0
            const u32 k = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
            left = STRICT ? k < n.key : k <= n.key;
        }
        i += left != (((n.packed >> 15) & 1u) != 0u) ? 1 : (int)(n.packed >> 19);
    }
}
#endif

// Per-row sums: float64, or float32 sums held in doubles (a float32 sum computed in double
// then rounded once is the float32 sum: double rounding is exact for + at these widths).
struct Acc { double a[NOUT]; };

__device__ __forceinline__ void acc_init(Acc& a, const double* base) {
    for (int k = 0; k < NOUT; ++k) {
        const double s = AVERAGE ? 0.0 : base[k];
        a.a[k] = SUM_F32 ? f32_round(s) : s;
    }
}
__device__ __forceinline__ void acc_add(Acc& a, int k, double c) {
    // c: the leaf's contribution, already a float32 value when SUM_F32
    a.a[k] = SUM_F32 ? f32_round(a.a[k] + c) : a.a[k] + c;
}
__device__ __forceinline__ void acc_store(const Acc& a, const double* base,
                                          const double* counts, double* out) {
    // skltr._cpu.traversal.finish_output
    for (int k = 0; k < NOUT; ++k) {
        double total = a.a[k];
        if (AVERAGE) {
            if (counts[k] > 0.0) total = total / counts[k];
            total = SUM_F32 ? f32_round(f32_round(total) + f32_round(base[k]))
                            : total + base[k];
        }
        out[k] = total;
    }
}


// the leading arguments of every scoring kernel
#define ARGS const XT* __restrict__ X, i64 n, int n_cols, const Node* __restrict__ nodes, \
    const i64* __restrict__ tree_start, const int* __restrict__ tree_out, int n_trees, \
    const int* __restrict__ cat_off, const int* __restrict__ cat_nw, \
    const u32* __restrict__ bits, const double* __restrict__ base, \
    const double* __restrict__ counts, double missing, double* __restrict__ out
"""
