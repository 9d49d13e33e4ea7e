"""Parallel pre-compiler: on a cold kernel cache, a second process compiles the kernels a CPU
fit needs later while the fit compiles the ones it needs first (issue #28).

A first fit + predict on a fresh install is nearly all numba compilation, one kernel after
the other, on one core (``benchmarks/cold_start.py``). The fit's kernels come in a fixed
order -- binning, gradients, then the grower's (quantisation, histograms, split search,
partition) and the update of the training scores, and ``predict``'s QuickScorer after the
last tree -- and the types of the later ones do not depend on the data, only on the
parameters and the dtype of ``X``. So when a CPU
fit starts on a cold cache, :func:`start` launches one worker process that compiles the
grower's kernels into the disk cache (then, if still unclaimed, predict's), while the fit's
own process compiles binning and gradients.

Each unit of work is a *stage* (:data:`STAGES`): a recipe that runs real code on tiny inputs
of the types the fit will use (the grower on synthetic binned rows with the fit's tree
parameters; QuickScorer on a one-split ensemble and an ``X`` of the fit's dtype), and the
kernel modules it compiles. numba writes its cache files atomically, but two processes that
save *different* signatures of one kernel at the same time can leave an index that points at
the wrong data file (``numba/core/caching.py``: ``IndexDataCacheFile.save`` reads, updates and
rewrites the index). So a stage belongs to exactly one process: whoever claims it first (an
``O_EXCL`` file in a private temporary folder). The fit's process, about to look a kernel of
a stage up that the worker claimed, waits until the worker says the stage is done
(:func:`_wait`: a load hook of :mod:`skltr._numba_cache`), then loads the kernel from disk; a
stage the worker has not reached, the fit claims and compiles itself.

When the fit reaches the grower (:func:`enter`) before the worker is done with it, it claims
and compiles the later stages itself while it waits, and once the grower's kernels are there
it claims whatever the worker has not started: the worker never compiles beside the boosting
rounds, whose many short parallel regions would wait for the core it holds -- but for the
background stage (:data:`BACKGROUND`): the compiled leaf-wise grower, which the fit does not
wait for. The worker compiles it last at the lowest priority (``nice 19``: the time the
fit's rounds leave), the fit grows its trees through the driver meanwhile
(:func:`compiled_growth`; the same trees) and in one numba call from the tree after the
worker is done; at the process's exit the worker is left to finish it, then exits.

Off when the stages' kernels are already cached (a warm run starts nothing), without a disk
cache (``skltr._numba_cache`` found no safe folder, or ``$NUMBA_CACHE_DIR`` leaves the cache
to numba), with fewer than two cores or one thread, in a distributed fit, inside a worker, and
with ``SKLTR_PRECOMPILE=0``. The worker is ended (SIGTERM, then waited for) when the process
exits before it is done with the stages the fit waits for. It writes kernels only to the
cache folder skltr's locator checked (the same checks run in the worker), and coordinates
through a private ``mkdtemp`` folder (mode 0700), removed when it ends.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .. import _numba_cache

__all__ = ["BACKGROUND", "STAGES", "compiled_growth", "enter", "start", "stop"]

#: stage -> the kernel modules it compiles, in the worker's order (tests/test_precompile.py
#: checks that a stage's recipe compiles no other skltr kernel; the grower of a symmetric
#: fit compiles the level search instead of the node searches)
STAGES = {
    "grow": ("skltr._cpu.quantise", "skltr._cpu.histogram", "skltr._cpu.split",
             "skltr._cpu.split_children", "skltr._cpu.split_symmetric",
             "skltr._cpu.partition", "skltr._cpu.predict_binned"),
    "score": ("skltr._cpu.quickscorer", "skltr._cpu.traversal"),
    "grow_tree": ("skltr._cpu.grow_leafwise",),
}

#: The stage the fit never waits for: the compiled leaf-wise grower (``grow_leafwise`` and
#: the kernels only it calls, a quarter of a cold fit's compilation) only speeds trees up --
#: the driver grows the same trees from the "grow" stage's kernels. The worker compiles it
#: last, at the lowest priority, beside the fit (which grows through the driver meanwhile:
#: the grower's ``compiled=False``), and finishes it after the fit's process exits. Its
#: compilation may add signatures to kernels of the "grow" stage's modules: the fit compiles
#: none of those meanwhile (:meth:`_Worker.before_load`).
BACKGROUND = "grow_tree"

#: longest wait for a stage before the worker is ended and the fit compiles it itself
_WAIT_S = 600.0

#: rows of the grower stage's synthetic data: the fit's, up to enough for the parallel
#: partition of the root (skltr._gbdt.grower_cpu.PARTITION_PARALLEL_MIN_ROWS on 2 threads),
#: so that the same serial / parallel kernels get compiled
_GROW_MAX_ROWS = 140_000

_ACTIVE = None  # the running _Worker, or None

#: what the pre-compiler did in this process (read by benchmarks/cold_start.py): whether a
#: worker started, the stages this process compiled while waiting, its seconds of waiting
STATS = {"started": False, "stolen": [], "waited_s": 0.0}


# ------------------------------------------------------------------------------ recipes
def _grow(spec, compiled=False):
    """One tree of the CPU grower with the fit's tree parameters and threads, on synthetic
    binned rows (as many as the fit's, up to ``_GROW_MAX_ROWS``), added to training scores;
    grown through the driver, or in one numba call (``compiled``: the background stage)."""
    import numpy as np  # noqa: PLC0415

    from .._engine.binning import transposed  # noqa: PLC0415
    from .grower_cpu import TreeGrower  # noqa: PLC0415
    from .params import TreeParams  # noqa: PLC0415

    n = int(min(max(spec["n_rows"], 2), _GROW_MAX_ROWS))
    n_features = int(min(max(spec["n_features"], 1), 8))
    max_bins = int(spec["max_bins"])
    rng = np.random.default_rng(0)
    Xb = rng.integers(0, max_bins, size=(n, n_features), dtype=np.uint8)
    # gradients that split: a step on feature 0 plus noise; hessians > 0
    grad = (np.where(Xb[:, 0] < max_bins // 2, -1.0, 1.0)
            + rng.normal(0.0, 0.5, n)).astype(np.float32)
    hess = (0.5 + rng.random(n)).astype(np.float32)
    tree = TreeGrower(Xb, grad, hess, n_bins=np.full(n_features, max_bins, np.int32),
                      missing_bin=max_bins, has_missing=np.zeros(n_features, bool),
                      X_binned_T=transposed(Xb), n_threads=spec["n_threads"],
                      tree_params=TreeParams(**spec["tree"]), compiled=compiled).grow()
    # the boosting loop's update of the training scores from the tree's row -> leaf map
    tree.add_to_training_scores(np.zeros(n), spec["n_threads"])


def _score(spec):
    """QuickScorer scoring (what ``predict`` of a CPU-fitted ranker runs) of a one-split
    ensemble with the arrays and options of a fitted skltr model, on an ``X`` of the fit's
    dtype."""
    import numpy as np  # noqa: PLC0415

    from ..trees import TreeEnsemble  # noqa: PLC0415
    from ..trees._backends import get_backend  # noqa: PLC0415

    ens = TreeEnsemble(tree_ptr=[0, 3], feature=[0, -1, -1], threshold=[0.5, 0.0, 0.0],
                       left=[1, -1, -1], right=[2, -1, -1], value=[0.0, -1.0, 1.0],
                       n_features=1, source={"library": "skltr"})
    backend = get_backend("quickscorer", ens)
    backend.predict_raw(ens, backend.layout(ens), np.zeros((4, 1), spec["x_dtype"]), 1)


_RECIPES = {"grow": _grow, "score": _score,
            "grow_tree": lambda spec: _grow(spec, compiled=True)}


def _probe(stage):
    """The kernel whose cached index tells that ``stage`` was compiled before."""
    if stage == BACKGROUND:
        from .._cpu.grow_leafwise import grow_leafwise  # noqa: PLC0415

        return grow_leafwise
    if stage == "grow":
        from .._cpu.split_children import find_child_splits  # noqa: PLC0415

        return find_child_splits
    from .._cpu.quickscorer import predict_raw_quickscorer  # noqa: PLC0415

    return predict_raw_quickscorer


def _cold(stages) -> list[str]:
    """The ``stages`` none of whose probe kernel is cached yet (none without a disk cache)."""
    if _numba_cache.kernel_cache_dir() is None:
        return []
    cold = []
    for stage in stages:
        probe = _probe(stage)
        path = _numba_cache.index_path(probe)
        if path is not None and not os.path.exists(path) and not _numba_cache.is_shipped(probe):
            cold.append(stage)
    return cold


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _claim(folder, stage) -> bool:
    try:
        os.close(os.open(os.path.join(folder, stage), os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                         0o600))
    except (FileExistsError, FileNotFoundError):  # claimed, or the worker is done (and
        return False                              # removed the folder)
    return True


# ------------------------------------------------------------------------------ the fit's side
class _Worker:
    """The worker process, its claim folder, and the stages not settled yet."""

    def __init__(self, stages, spec):
        self.folder = tempfile.mkdtemp(prefix="skltr-precompile-")  # mode 0700, ours
        self.spec = spec
        self.pending = list(stages)  # neither done by the worker nor claimed by us
        self.modules = {m: s for s in stages for m in STAGES[s]}
        #: the modules whose kernels the background stage compiles signatures of
        self.background_modules = set(STAGES["grow"]) | set(STAGES[BACKGROUND])
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # python -c puts the current folder first on sys.path, and it may be anybody's
        # (/tmp): dropped before any import; skltr's own folder goes first instead
        code = (f"import sys; sys.path[:] = [{root!r}] + [p for p in sys.path if p]; "
                "from skltr._gbdt.precompile import _main; _main()")
        env = dict(os.environ, SKLTR_PRECOMPILE="0", SKLTR_QUIET="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, self.folder, json.dumps({"stages": stages, **spec})],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env)

    def claim(self, stage) -> bool:
        """Claim ``stage`` for the fit's process. The fit compiling "grow" itself, the
        worker will skip the background stage: this process grows through the driver."""
        if not _claim(self.folder, stage):
            return False
        if stage == "grow" and BACKGROUND in self.pending:
            self.pending.remove(BACKGROUND)
            _SKIPPED.add(BACKGROUND)
        return True

    def before_load(self, py_func, missing):
        """The load hook: a kernel of a stage the worker claimed waits for it; of a stage
        nobody claimed, it is ours. ``missing``: not in the cache, about to be compiled
        here -- not beside the background stage's writes to the same kernels; returns
        whether it waited (the worker may have saved it meanwhile)."""
        module = py_func.__module__
        if missing:
            if BACKGROUND in self.pending and module in self.background_modules:
                _wait(self, BACKGROUND)
                return True
            return False
        stage = self.modules.get(module)
        if stage in self.pending and stage != BACKGROUND:
            self.settle(stage)
        return False

    def settle(self, stage):
        """Make ``stage`` ours (claimed now) or wait until the worker has it done."""
        if self.claim(stage):
            self.pending.remove(stage)
        else:
            _wait(self, stage)
        if not self.pending:
            stop()

    def steal(self, but):
        """Claim and compile here the pending stages the worker has not started (but
        ``but`` and the background stage): the fit would only wait meanwhile."""
        for stage in list(self.pending):
            if stage not in (but, BACKGROUND) and self.claim(stage):
                self.pending.remove(stage)
                STATS["stolen"].append(stage)
                _RECIPES[stage](self.spec)

    def read_done(self, timeout):
        """Read one line of the worker (a stage done); None at its end or timeout."""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return line.decode().strip() if line else None

    def poll(self):
        """Take what the worker said so far, without waiting; stop it once it is done."""
        while self.pending:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.0)
            if not ready:
                return
            line = self.proc.stdout.readline()
            if not line:  # it ended: what it did not save, the fit compiles
                break
            self.note(line.decode().strip())
        stop()

    def note(self, line):
        """Take a line of the worker: ``<stage>`` done, or ``<stage> skipped``."""
        stage, *rest = line.split()
        if stage in self.pending:
            self.pending.remove(stage)
            if rest == ["skipped"]:
                _SKIPPED.add(stage)


#: stages the worker gave up (the background stage, when the fit compiled the grower's
#: kernels itself): this process grows through the driver
_SKIPPED = set()


def _wait(worker, stage):
    t0 = time.monotonic()
    deadline = t0 + _WAIT_S
    try:
        while stage in worker.pending:
            done = worker.read_done(max(0.0, deadline - time.monotonic()))
            if done is None:  # the worker ended, failed or hangs: what it did not save we
                stop()        # compile
                return
            worker.note(done)
    finally:
        STATS["waited_s"] += time.monotonic() - t0


def compiled_growth() -> bool:
    """Whether the fit's trees may grow in one numba call: not while the worker compiles
    that call (the background stage), nor in a process whose worker gave it up."""
    worker = _ACTIVE
    if worker is not None and BACKGROUND in worker.pending:
        worker.poll()
        if _ACTIVE is worker and BACKGROUND in worker.pending:
            return False
    return BACKGROUND not in _SKIPPED


def start(X, params, n_threads) -> bool:
    """Start the worker for the cold stages of a local CPU fit on ``X`` with ``params`` (a
    :class:`~skltr._gbdt.params.BoostParams`) on ``n_threads`` numba threads; whether it
    started (see the module docstring)."""
    global _ACTIVE
    if (_ACTIVE is not None or os.environ.get("SKLTR_PRECOMPILE") == "0"
            or sys.platform == "win32" or _cores() < 2 or n_threads < 2):
        return False
    stages = ["grow"]
    tree = params.tree
    if (tree.growth == "leafwise" and tree.categorical is None and tree.monotone is None
            and tree.interaction is None):  # trees the compiled grower grows
        stages.append(BACKGROUND)
    dtype = getattr(X, "dtype", None)
    # predict's QuickScorer, when the trees will have at most 64 leaves (choose_backend's
    # pick) and predict will read dense rows of the fit's dtype
    # (symmetric trees have 2**max_depth leaves whatever max_leaves says)
    leaves = 2 ** tree.max_depth if tree.growth == "symmetric" else tree.max_leaves
    if leaves <= 64 and type(X).__module__ == "numpy" and dtype in ("float32", "float64"):
        stages.insert(1, "score")
    stages = _cold(stages)
    if not stages:
        return False
    # categorical splits' kernels are left to the fit (a fit without them is the common one)
    spec = {"tree": dataclasses.asdict(dataclasses.replace(tree, categorical=None)),
            "n_rows": int(X.shape[0]), "n_features": int(X.shape[1]),
            "max_bins": int(params.max_bins), "n_threads": int(n_threads),
            "x_dtype": str(dtype)}
    _ACTIVE = _Worker(stages, spec)
    _numba_cache.set_load_hook(_ACTIVE.before_load)
    STATS["started"] = True
    return True


def enter(stage) -> None:
    """The fit is about to run ``stage``'s kernels: if the worker is compiling them, compile
    the stages it has not started meanwhile, then wait; afterwards claim what is left, so
    that the worker compiles nothing beside the boosting rounds."""
    worker = _ACTIVE
    if worker is None:
        return
    if stage in worker.pending and not worker.claim(stage):
        worker.steal(but=stage)
        _wait(worker, stage)
    elif stage in worker.pending:
        worker.pending.remove(stage)
    if _ACTIVE is worker:
        for other in list(worker.pending):
            if other != BACKGROUND and worker.claim(other):
                worker.pending.remove(other)
        if not worker.pending:
            stop()


def stop(detach=False) -> None:
    """End the worker (SIGTERM when still running) and forget it; ``detach``: a worker
    left with the background stage only finishes it on its own (the process's exit)."""
    global _ACTIVE
    worker, _ACTIVE = _ACTIVE, None
    _numba_cache.set_load_hook(None)
    if worker is None:
        return
    running = worker.proc.poll() is None
    if detach and running and worker.pending == [BACKGROUND]:
        worker.proc.stdout.close()  # it removes its claim folder when done
        return
    if running and worker.pending:
        worker.proc.terminate()
    worker.proc.wait()
    worker.proc.stdout.close()
    shutil.rmtree(worker.folder, ignore_errors=True)


atexit.register(stop, detach=True)


# ------------------------------------------------------------------------------ the worker
def _lock_background() -> bool:
    """Take the kernel cache's lock of the background stage, held until this process ends
    (``flock``: released by the system even if it is killed); False when another process
    holds it. A worker left to finish the stage after its fit's exit and the worker of a
    fit started meanwhile would otherwise write the same kernels' indexes at once."""
    import fcntl  # noqa: PLC0415 -- POSIX only, as the pre-compiler

    folder = _numba_cache.kernel_cache_dir()
    if folder is None:
        return False
    fd = os.open(os.path.join(folder, f"{BACKGROUND}.lock"), os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    return True  # the descriptor stays open: the lock lasts as long as the process


def _main():
    """The worker: ``<claim folder> <spec json>``; prints each stage's name when it is done
    (or when the fit claimed it first)."""
    # SIGTERM raises, so that numba's atomic writes remove their temporary file
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    folder, spec = sys.argv[1], json.loads(sys.argv[2])
    done = set()
    for stage in spec["stages"]:
        word = stage
        if stage == BACKGROUND and (("grow" in spec["stages"] and "grow" not in done)
                                    or not _lock_background()):
            # the fit compiles "grow" kernels, or another process's worker compiles this
            # stage (a detached one, say): not beside them
            word = f"{stage} skipped"
        elif _claim(folder, stage):
            if stage == BACKGROUND:
                os.nice(19)  # beside the fit's rounds: only the time they leave
            _RECIPES[stage](spec)
            done.add(stage)
        try:
            print(word, flush=True)
        except OSError:  # the fit's process exited (detached): nobody reads
            pass
    shutil.rmtree(folder, ignore_errors=True)
