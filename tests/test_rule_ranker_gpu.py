"""OnDemandRuleRanker on the GPU (``skltr._rules.kernels_cuda``, launching ``skltr._gpu.rules``):
the rule statistics equal the naive enumeration's and the CPU kernels' exactly (rule counts,
fixed-point confidence sums, rule-set digests), so the scores are the same bit for bit. The
bodies are the CPU tests' (run_x).

Skipped without CuPy and a CUDA GPU (the ``gpu`` marker).
"""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

cupy = pytest.importorskip("cupy")

pytestmark = pytest.mark.gpu

from skltr import OnDemandRuleRanker  # noqa: E402
from skltr._gpu import rules as gpu_rules  # noqa: E402
from skltr._rules import kernels_cuda  # noqa: E402
from skltr._rules.intervals import transform  # noqa: E402
from skltr._rules.model import fit_rules  # noqa: E402
from skltr._rules.ranking import make_params  # noqa: E402
from skltr.datasets import make_ranking  # noqa: E402
from test_rule_ranker import (make_kernels, problem, run_documents_without_rules_get_the_prior,  # noqa: E402
                              run_fit_predict_score, run_rules_equal_naive)


def _quantile_setup(seed, n, n_features, n_docs):
    """A quantile-interval rule model of :func:`problem`'s data, the codes of its first
    ``n_docs`` rows, and predict parameters of rules of 3 items with digests."""
    X, y = problem(seed, n=n, n_features=n_features)
    intervals, train, model = fit_rules(X, y, discretization="quantile", n_bins=4, seed=0)
    params = make_params(model, max_rule_size=3, min_support=1, min_confidence=0.001,
                         cache_size=0, digest=True)
    return model, transform(X[:n_docs], intervals), params


def _assert_same_stats(want, got):
    """Rule counts, fixed-point confidence sums and digests equal, element for element."""
    for a, b in zip(want[:3], got[:3]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("K", [1, 2, 3, 4])
@pytest.mark.parametrize("disc", ["mdl", "quantile"])
def test_rules_equal_naive(K, disc):
    run_rules_equal_naive("cuda", 0, disc, K, 1, 0.001, None, 0, n_bins=4)


@pytest.mark.parametrize("min_support,min_confidence", [(1, 0.0), (3, 0.001), (2, 0.5),
                                                        (1, 1.0), (40, 0.0)])
def test_support_and_confidence_edges(min_support, min_confidence):
    run_rules_equal_naive("cuda", 2, "quantile", 3, min_support, min_confidence, None, 0,
                          n_bins=3)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), K=st.integers(1, 4), min_support=st.integers(1, 4),
       min_confidence=st.sampled_from([0.0, 0.001, 0.25, 1 / 3, 0.7]))
def test_rules_equal_naive_property(seed, K, min_support, min_confidence):
    run_rules_equal_naive("cuda", seed, "quantile", K, min_support, min_confidence, None, 0,
                          n_bins=3)


@pytest.mark.parametrize("stage", [True, False])
@pytest.mark.parametrize("batch,chunk,group", [(32, 256, 2), (3, 5, 1), (2, 7, 4)])
def test_gpu_equals_cpu_on_wider_data(monkeypatch, stage, batch, chunk, group):
    # many prefixes a block and blocks a document, partial batches and groups, staged or
    # global item bitmaps: the CPU kernels' statistics exactly
    X, y, qid = make_ranking(n_queries=40, docs_per_query=30, n_features=24, n_informative=8,
                             random_state=3)
    X = X.astype(np.float64)
    X[::13, 5] = np.nan
    intervals, train, model = fit_rules(X, y, discretization="quantile", n_bins=6, seed=0)
    codes = transform(X[:50], intervals)
    for attr, v in (("STAGE", stage), ("BATCH", batch), ("CHUNK", chunk), ("GROUP", group)):
        monkeypatch.setattr(gpu_rules, attr, v)
    for K, min_support, min_confidence in ((3, 1, 0.001), (4, 3, 0.2)):
        params = make_params(model, max_rule_size=K, min_support=min_support,
                             min_confidence=min_confidence, cache_size=0, digest=True)
        cpu = make_kernels("cpu", model, params).rule_stats(codes)
        gpu = make_kernels("cuda", model, params).rule_stats(codes)
        _assert_same_stats(cpu, gpu)


@pytest.mark.parametrize("a_chunk,ct,threads", [(4, 2, 512), (1, 1, 64), (3, 2, 96)])
def test_triples_on_the_tensor_cores_equal_the_cpu(monkeypatch, a_chunk, ct, threads):
    # the triples kernel (binary mma) on documents of up to 40 items (several 16-row tiles,
    # chunks of first items cut anywhere, fewer items where a value is missing), 5 levels, and
    # the same with the itemsets kernel for size 3: the CPU kernels' statistics exactly
    X, y, qid = make_ranking(n_queries=30, docs_per_query=40, n_features=40, n_informative=10,
                             random_state=6)
    X = X.astype(np.float64)
    X[::7, 3] = np.nan
    X[::5, 17] = np.nan
    intervals, train, model = fit_rules(X, y, discretization="quantile", n_bins=5, seed=0)
    assert model.n_levels == 5
    codes = transform(X[:60], intervals)
    for attr, v in (("A_CHUNK", a_chunk), ("CT", ct), ("TRIPLE_THREADS", threads)):
        monkeypatch.setattr(gpu_rules, attr, v)
    assert gpu_rules._use_triples(model.level_word_ptr, 40, model.n_train)
    for K, min_support, min_confidence in ((3, 1, 0.001), (3, 4, 0.3), (4, 2, 0.0)):
        params = make_params(model, max_rule_size=K, min_support=min_support,
                             min_confidence=min_confidence, cache_size=0, digest=True)
        cpu = make_kernels("cpu", model, params).rule_stats(codes)
        for triples in (True, False):
            monkeypatch.setattr(gpu_rules, "TRIPLES", triples)
            gpu = make_kernels("cuda", model, params).rule_stats(codes)
            _assert_same_stats(cpu, gpu)


@pytest.mark.parametrize("ct", [1, 2])
def test_itemsets_of_one_and_two_items_in_the_triples_launch(monkeypatch, ct):
    # sizes 1 and 2 ride in triples' first chunks (two virtual items every training document
    # holds): documents of 0 to 6 usable items, so some have no itemset of 3 (or of 2) and
    # their only block is the virtual a's; chunks of 1 and 4 first items
    from skltr._cpu.rules import NO_ITEM

    model, codes, _ = _quantile_setup(5, 300, 12, 70)
    codes = codes.copy()
    for i in range(codes.shape[0]):
        codes[i, i % 7:] = NO_ITEM
    monkeypatch.setattr(gpu_rules, "CT", ct)
    assert gpu_rules._use_triples(model.level_word_ptr, 8, model.n_train)
    launched = []
    real = gpu_rules._launch_triples
    monkeypatch.setattr(gpu_rules, "_launch_triples",
                        lambda *a, **k: launched.append(k["small"]) or real(*a, **k))
    for a_chunk in (1, 4):
        monkeypatch.setattr(gpu_rules, "A_CHUNK", a_chunk)
        for K, min_support, min_confidence in ((3, 1, 0.001), (3, 3, 0.25), (4, 2, 0.0)):
            params = make_params(model, max_rule_size=K, min_support=min_support,
                                 min_confidence=min_confidence, cache_size=0, digest=True)
            want = make_kernels("cpu", model, params).rule_stats(codes)
            _assert_same_stats(want, make_kernels("cuda", model, params).rule_stats(codes))
    assert launched and all(launched)


def test_documents_of_at_most_two_items_get_their_rules_from_the_triples_launch():
    # no document with 3 items: the one triples launch still counts the itemsets of 1 and 2
    # (its first chunks' virtual rows), as the CPU does
    from skltr._cpu.rules import NO_ITEM

    model, codes, _ = _quantile_setup(5, 300, 12, 40)
    codes = codes.copy()
    for i in range(codes.shape[0]):
        codes[i, i % 3:] = NO_ITEM
    params = make_params(model, max_rule_size=3, min_support=1, min_confidence=0.001,
                         cache_size=0, digest=True)
    want = make_kernels("cpu", model, params).rule_stats(codes)
    assert want[0].sum() > 0
    _assert_same_stats(want, make_kernels("cuda", model, params).rule_stats(codes))


def test_first_items_of_a_block_keep_the_32_bit_sums_below_2_to_the_32(monkeypatch):
    # a thread's 32-bit parts of the confidence sums take at most per_a itemsets an a, each
    # adding less than the training documents' count: the host caps a block's first items
    assert gpu_rules._a_chunk(136, 7337) == gpu_rules.A_CHUNK       # PROFL's shape: no cap
    monkeypatch.setattr(gpu_rules, "A_CHUNK", 10**9)
    for m_max, n_train in ((136, 7337), (4842, 384), (2000, 65535), (3, 10)):
        a_chunk = gpu_rules._a_chunk(m_max, n_train)
        n = m_max + 1
        tiles = -(-n // 16) * -(-n // (8 * gpu_rules.CT))
        per_a = -(-tiles // (gpu_rules.TRIPLE_THREADS // 32)) * 4 * gpu_rules.CT
        assert 1 <= a_chunk < 10**9
        assert a_chunk * per_a * max(n_train, 256) < 2**32


def test_triples_give_way_where_they_do_not_fit(monkeypatch):
    # bitmaps too wide for a triples block, more levels than it holds, or 2**16 training
    # documents: size 3 goes to the itemsets kernel, with the same statistics
    model, codes, params = _quantile_setup(9, 400, 10, 40)
    want = make_kernels("cpu", model, params).rule_stats(codes)
    assert gpu_rules._use_triples(model.level_word_ptr, 10, model.n_train)
    assert not gpu_rules._use_triples(model.level_word_ptr, 10, 2**16)  # the table's limit
    need = gpu_rules.triples_shared_bytes(model.level_word_ptr, 3)  # the least a block takes
    monkeypatch.setattr(gpu_rules, "MAX_SHARED_BYTES", need - 1)
    assert not gpu_rules._use_triples(model.level_word_ptr, 3, model.n_train)
    _assert_same_stats(want, make_kernels("cuda", model, params).rule_stats(codes))
    monkeypatch.undo()
    monkeypatch.setattr(gpu_rules, "TRIPLE_MAX_LEVELS", model.n_levels - 1)
    assert not gpu_rules._use_triples(model.level_word_ptr, 10, model.n_train)
    _assert_same_stats(want, make_kernels("cuda", model, params).rule_stats(codes))


def test_kernels_are_kept_between_calls_and_not_pickled():
    # the GPU kernels (the model's tables on the device) serve the next predict with the same
    # parameters; other parameters, a refit and a pickle make new ones, with the same scores
    X, y = problem(10, n=200, n_features=6)
    qid = np.repeat(np.arange(20), 10)
    ranker = OnDemandRuleRanker(max_rule_size=3, discretization="quantile", n_bins=4,
                                device="cuda").fit(X, y, qid=qid)
    want = OnDemandRuleRanker(max_rule_size=3, discretization="quantile", n_bins=4).fit(
        X, y, qid=qid).predict(X)
    np.testing.assert_array_equal(ranker.predict(X), want)
    kept = ranker._kept_kernels[2]
    np.testing.assert_array_equal(ranker.predict(X), want)
    assert ranker._kept_kernels[2] is kept
    ranker.set_params(max_rule_size=2)
    ranker.predict(X)
    assert ranker._kept_kernels[2] is not kept
    back = pickle.loads(pickle.dumps(ranker.set_params(max_rule_size=3)))
    assert "_kept_kernels" not in back.__dict__
    np.testing.assert_array_equal(back.predict(X), want)
    ranker.fit(X[:150], y[:150], qid=qid[:150])
    assert ranker._kept_kernels[1] is ranker._model


def test_prefix_batch_halves_until_the_lists_fit():
    # 32 prefixes of a 40,000-document training set do not fit in 227 KiB of shared memory
    assert gpu_rules.prefix_batch(579, 136) == 32
    assert gpu_rules.prefix_batch(625, 136) == 16
    assert gpu_rules.prefix_batch(18_750, 136) == 1
    assert gpu_rules.prefix_batch(19_532, 136) == 0


def test_training_set_too_big_for_one_prefix_batch_equals_the_cpu():
    # 45,000 training documents: the kernel builds 16 prefixes a batch, not 32 (the example
    # plot_gpu_rankers.py failed to launch at 78,000 before); the CPU's statistics exactly
    X, y, qid = make_ranking(n_queries=900, docs_per_query=50, n_features=12, n_informative=4,
                             random_state=4)
    assert gpu_rules.prefix_batch(-(-X.shape[0] // 64), X.shape[1]) < gpu_rules.BATCH
    kw = dict(max_rule_size=3, discretization="quantile", n_bins=4)
    want = OnDemandRuleRanker(**kw).fit(X, y, qid=qid).predict(X[:300])
    gpu = OnDemandRuleRanker(device="cuda", **kw).fit(X, y, qid=qid)
    np.testing.assert_array_equal(gpu.predict(X[:300]), want)


def test_training_set_too_big_for_the_gpu_is_refused_at_fit(monkeypatch):
    # a prefix's bitmap must fit in a block's shared memory: beyond, fit says so and keeps
    # the fitted state it had
    X, y, qid = make_ranking(n_queries=40, docs_per_query=50, n_features=8, n_informative=4,
                             random_state=5)
    ranker = OnDemandRuleRanker(max_rule_size=2, device="cuda").fit(X[:500], y[:500],
                                                                    qid=qid[:500])
    before = ranker.predict(X[:50])
    monkeypatch.setattr(gpu_rules, "MAX_SHARED_BYTES", 12 * 20)  # room for 20 words
    with pytest.raises(ValueError, match="at most about .* training documents.*device='cpu'"):
        ranker.fit(X, y, qid=qid)
    monkeypatch.undo()
    np.testing.assert_array_equal(ranker.predict(X[:50]), before)


def test_documents_without_rules_get_the_prior():
    run_documents_without_rules_get_the_prior("cuda")


def test_fit_predict_score_and_every_device_string():
    run_fit_predict_score("cuda")
    X, y = problem(7, n=200, n_features=6)
    qid = np.repeat(np.arange(20), 10)
    cpu = OnDemandRuleRanker(max_rule_size=3, discretization="quantile", n_bins=4).fit(
        X, y, qid=qid)
    want = cpu.predict(X)
    for device in ("cuda", "cuda:0", "cuda:all"):  # cuda:all: every visible GPU (one here)
        gpu = OnDemandRuleRanker(max_rule_size=3, discretization="quantile", n_bins=4,
                                 device=device).fit(X, y, qid=qid)
        assert gpu.device_.startswith("cuda")
        np.testing.assert_array_equal(gpu.predict(X), want)
        back = pickle.loads(pickle.dumps(gpu))
        np.testing.assert_array_equal(back.predict(X), want)


@pytest.mark.parametrize("batch_itemsets", [1, 500])
def test_rounds_of_documents_give_the_same_stats(monkeypatch, batch_itemsets):
    # rounds of launches (a document each, or a few), read back in turn so that Ctrl-C lands
    # between them: the statistics of one round, exactly
    model, codes, params = _quantile_setup(8, 120, 9, 30)
    whole = make_kernels("cuda", model, params).rule_stats(codes)
    monkeypatch.setattr(kernels_cuda, "BATCH_ITEMSETS", batch_itemsets)
    kernels = make_kernels("cuda", model, params)
    rounds = kernels._rounds(codes)
    assert len(rounds) > (1 if batch_itemsets > 1 else 29)
    assert rounds[0][0] == 0 and rounds[-1][1] == 30
    _assert_same_stats(whole, kernels.rule_stats(codes))
    _assert_same_stats(whole, make_kernels("cuda:all", model, params).rule_stats(codes))
