"""What both growers share of symmetric growth (``growth="symmetric"``): the tree's split-noise
scale and a level's split from its nodes' histograms.

The CPU grower (:class:`~skltr._gbdt.grower_cpu.TreeGrower`) passes its level buffer; the
CUDA grower (:class:`~skltr._gbdt.grower_cuda.GPUTreeGrower`) copies the level's histograms
from its slots to the host in the CPU's layout (:func:`one_word_from_two`): the same integer
sums, so the same search (:mod:`skltr._cpu.split_symmetric`) gives the same splits.
"""

from __future__ import annotations

import numpy as np

from .._cpu.split_symmetric import (find_level_split, find_level_split_serial, level_children,
                                    noise_key, noise_scale)
from .._records import SplitInfo
from .position_bias import position_sums

__all__ = ["noise_sigma", "level_splits", "one_word_from_two"]


def noise_sigma(params, grad, round_, communicator=None) -> float:
    """The tree's split-noise standard deviation (:func:`~skltr._cpu.split_symmetric.
    noise_scale`) from every row's gradient (float32 ``grad``, this process's rows), its
    squares summed exactly and over the workers: the same scale on any partition."""
    if params.random_strength <= 0.0:
        return 0.0
    g = np.asarray(grad, np.float64)
    (sum_sq,), n = position_sums((g * g,), np.zeros(g.size, np.int64), 1, communicator)
    return noise_scale(params.random_strength, sum_sq[0], int(n[0]), round_,
                       params.learning_rate)


def level_splits(hist, nodes, active, depth, *, n_bins, feature_mask, constants, sigma, seed,
                 round_, work, parallel):
    """The split every node of a level takes: per node a :class:`SplitInfo` (its own left
    sums and gain; gain -inf where a child would break a limit, left count from the bins),
    or None when no candidate qualifies.

    ``hist``: the level's histograms, shape ``(len(nodes), n_features, n_bins_total,
    n_channels)`` in a CPU layout (``skltr._cpu.split``); ``work``: float64 scratch of shape
    ``(n_features, n_bins_total, 2)``."""
    kind = np.int64 if hist.dtype.kind == "i" else np.float64
    sum_g = np.array([node.sum_g for node in nodes], kind)
    sum_h = np.array([node.sum_h for node in nodes], kind)
    count = np.array([node.count for node in nodes], np.int64)
    kernel = find_level_split if parallel else find_level_split_serial
    key = np.uint64(noise_key(seed, round_, depth))
    f, b, default_left, _ = kernel(hist, n_bins, feature_mask, active, sum_g, sum_h, count,
                                   constants, sigma, key, work)
    if f < 0:
        return None
    gain, left_g, left_h, left_count = level_children(hist, f, n_bins[f], b, default_left,
                                                      sum_g, sum_h, count, constants)
    return [SplitInfo(int(f), float(gain[k]), int(b), bool(default_left), left_g[k],
                      left_h[k], int(left_count[k])) for k in range(len(nodes))]


def one_word_from_two(hist, count_shift):
    """The CPU's one-word bins (``g * 2**32 + h``, :mod:`skltr._cpu.histogram`) of two-word
    bins ``(g, count << count_shift | h)`` (the GPU's, whatever the layout): the same sums
    (the one-word scales keep ``|g| <= 2**31`` and ``h < 2**32``)."""
    h = hist[..., 1] & ((np.int64(1) << np.int64(count_shift)) - 1)
    return ((hist[..., 0] << np.int64(32)) + h)[..., None]
