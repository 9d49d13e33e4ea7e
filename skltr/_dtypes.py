"""Every representation choice of the package, written down once with its reason.

Kernels (CPU and GPU) and estimators import these names instead of spelling dtypes inline,
so that a change of representation is one edit here.
"""

import numpy as np

#: Binned feature values. ``max_bins <= 255`` keeps one byte per value (the bin 255 is kept
#: for missing values), which is what makes histogram building memory-bound rather than
#: compute-bound and matches LightGBM's and XGBoost's memory use.
X_BINNED_DTYPE = np.uint8
#: codes of categorical features with more categories than bins (``BinMapper.transform_wide``)
WIDE_CODE_DTYPE = np.uint16

#: Raw features inside kernels. Tree thresholds are compared in float64 so that LightGBM and
#: scikit-learn models (double thresholds) route exactly; XGBoost rounds inputs to float32
#: first, which the TreeEnsemble's ``precision`` field selects.
X_DTYPE = np.float64

#: Labels and scores. Relevance labels are small integers, but float64 keeps gains such as
#: ``2**label - 1`` exact up to label 52 and lets every metric be accumulated without loss.
Y_DTYPE = np.float64

#: Gradients and hessians. float32 halves memory traffic in histogram building; the
#: histogram itself accumulates in float64 (or fixed-point integers) so sums stay accurate.
G_H_DTYPE = np.float32

#: Histogram accumulators (sum of gradients, sum of hessians) -- see G_H_DTYPE.
HIST_DTYPE = np.float64

#: Query identifiers after factorisation: dense 0..n_queries-1 codes in sorted order.
QID_DTYPE = np.int64

#: Node indices and feature indices in tree arrays. int32 is ample (2**31 nodes per tree) and
#: halves the memory of inference layouts.
NODE_INDEX_DTYPE = np.int32

#: Leaf values and base scores are stored in float64; float32-summing libraries (XGBoost) are
#: reproduced by the TreeEnsemble's ``sum_dtype`` field, not by storing float32 leaves.
LEAF_VALUE_DTYPE = np.float64

#: Categorical bitsets: 32-bit words, bit ``c % 32`` of word ``c // 32`` is category ``c``
#: (LightGBM's and scikit-learn's layout).
BITSET_DTYPE = np.uint32

#: Quantised gradients and hessians (``hist_mode="quantised"``): ``round(g * 2**k)`` with one
#: power-of-two scale per round. int32 is the same width as float32 (no extra memory traffic
#: in histogram building) and keeps 30 bits of the largest gradient -- more than float32's 24 --
#: while ``n_rows * 2**30 <= 2**62`` leaves int64 histogram sums no room to overflow for any
#: ``n_rows <= 2**32``. A power-of-two scale makes the scaling itself exact.
QUANTISED_G_H_DTYPE = np.int32

#: Histogram accumulators of the quantised mode: integer sums are exact, so histograms do not
#: depend on the summation order (threads, distributed workers, GPU atomics).
QUANTISED_HIST_DTYPE = np.int64

#: Row indices of a node in the grower's partition buffer. Unsigned, so numba emits no
#: negative-index wraparound fix-up in the histogram and partition loops (measured 1.9x on the
#: QuickScorer scan); 32 bits halve the traffic of int64 and cover 4 billion rows.
ROW_INDEX_DTYPE = np.uint32


class NodeFlags:
    """Bits of ``TreeEnsemble.flags`` (uint8 per node). Bits 0-3 equal LightGBM's decision_type.

    The one definition: ``skltr.trees`` re-exports it, and the numba kernels bind its values
    to module constants (numba freezes global ints at compile time).
    """

    CATEGORICAL = 1 << 0
    DEFAULT_LEFT = 1 << 1
    MISSING_SHIFT = 2  # bits 2-3: missing type
    MISSING_MASK = 3 << 2
    MISSING_NONE = 0
    MISSING_ZERO = 1
    MISSING_NAN = 2
    CAT_SET_RIGHT = 1 << 4
    CAT_INVALID_DEFAULT = 1 << 5
    CAT_TRUNC_FIRST = 1 << 6

    @staticmethod
    def missing_type(flags):
        return (np.asarray(flags) & NodeFlags.MISSING_MASK) >> NodeFlags.MISSING_SHIFT

#: QuickScorer's per-node byte of the CPU kernel's byte-sliced leaf vectors
#: (``QuickScorerLayout.node_byte``; ``skltr._cpu._simd``): bits 0-2 are the first of the two
#: bytes (leaves 8j .. 8j+15) that the node's update ANDs, ``node_mbytes`` their two mask bytes;
#: this bit is set when the node's cleared run of leaves reaches past those two bytes (a node
#: near the root), and the kernel then applies the whole 64-bit mask.
QS_NODE_BYTE_WIDE = 0x80
