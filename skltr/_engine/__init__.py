"""The engine layer that every ranker's training loop shares (host orchestration only).

* :mod:`~skltr._engine.binning`: ``BinMapper``, features -> uint8 bins (cut points from a
  row sample; CPU kernels, and the GPU's in ``skltr._gpu.binning``);
* :mod:`~skltr._engine.histogram`: the histogram layouts (named channels) that the CPU and GPU
  histogram kernels fill, and the pool of histogram buffers;
* :mod:`~skltr._engine.rounds`: random streams, query / feature subsamples, eval sets, the
  round log with early stopping, and the loop's result;
* :mod:`~skltr._engine.binned_tree`: trees in bins (``GrownTree``, stumps) and the builder
  of one :class:`~skltr.trees.TreeEnsemble` from them;
* :mod:`~skltr._engine.communicator`: the all-reduce seam of distributed training.

Per-round evaluation goes through the public :class:`skltr.metrics.NDCGEvaluator`. Nothing
here is specific to gradient boosting (that is :mod:`skltr._gbdt`); layers:
``docs/devguide.rst``.
"""
