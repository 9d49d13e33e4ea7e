"""Reference fits that pin the GBDT engine's models bit for bit across refactorings.

Each case fits ``GPUHistGBDTRanker`` with one set of parameters on small ``make_ranking``
data and reduces the fitted model to a SHA-256 of its ``TreeEnsemble`` document (every node
array, leaf value, threshold and the base score) plus its ``evals_result_``. The digests of
the code before a restructuring are stored in ``tests/golden/reference_fits_cpu.json``
(``python tests/reference_fits.py --write cpu``); ``tests/test_reference_fits.py`` refits every
case on each device and compares: a GPU fit gives the CPU's model (one growth driver and one
quantisation rule, issue #27), so one file pins both. A change that is meant to alter models
rewrites the file in its own commit, saying why.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).resolve().parent / "golden"

#: name -> estimator parameters (random_state is added). Covers every objective, both growth
#: policies, the three histogram layouts (one word, two words, float), query and feature
#: subsampling, early stopping on an eval set, sample weights and a small max_bins.
CASES = {
    "default": {},
    "depthwise": {"growth": "depthwise", "max_depth": 4, "max_leaves": 16},
    "two_word_rows": {"min_samples_leaf_counts": "rows"},
    "float_hist": {"hist_mode": "float"},
    "rank_pairwise": {"objective": "rank_pairwise"},
    "rank_xendcg": {"objective": "rank_xendcg"},
    "regression": {"objective": "regression"},
    "lambdarank_truncated_linear": {"lambdarank_truncation_level": 5, "gain": "linear",
                                    "reg_lambda": 1.0, "reg_alpha": 0.5},
    "subsample_colsample": {"subsample": 0.7, "colsample_bytree": 0.6},
    "max_bins_15_min_leaf_5": {"max_bins": 15, "min_samples_leaf": 5,
                               "min_child_weight": 0.1, "min_split_gain": 0.01},
    "early_stopping": {"early_stopping": True, "n_iter_no_change": 8, "n_estimators": 80,
                       "learning_rate": 0.3},
    "weighted": {"weights": True},
}

#: Cases the GPU does not run (it always sums quantised gradients).
CPU_ONLY = {"float_hist"}


def cases(device):
    return sorted(n for n in CASES if device == "cpu" or n not in CPU_ONLY)


def data(seed=0):
    from skltr.datasets import make_ranking

    X, y, qid = make_ranking(n_queries=60, docs_per_query=25, n_features=12,
                             n_informative=6, random_state=seed)
    X[::17, 3] = np.nan  # missing values in one feature
    return X, y, qid


#: the schema the digests were written under; later schemas only add optional arrays
#: (1.3: ``cover``, TreeSHAP's training statistics), which the digest leaves out
DIGEST_SCHEMA = "1.2"


def digest(model) -> dict:
    doc = model.ensemble_.to_document()
    doc["arrays"].pop("cover", None)
    doc["schema_version"] = DIGEST_SCHEMA
    text = json.dumps(doc, sort_keys=True)
    evals = json.dumps(getattr(model, "evals_result_", {}) or {}, sort_keys=True)
    return {"model_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "evals_sha256": hashlib.sha256(evals.encode()).hexdigest(),
            "n_trees": int(model.ensemble_.n_trees)}


def fit_case(name, device):
    from skltr import GPUHistGBDTRanker

    params = dict(CASES[name])
    weighted = params.pop("weights", False)
    X, y, qid = data()
    fit_kw = {}
    if weighted:
        w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(np.unique(qid)))
        fit_kw["sample_weight"] = w[np.searchsorted(np.unique(qid), qid)]
    if params.get("early_stopping"):
        Xe, ye, qe = data(seed=1)
        fit_kw["eval_set"] = [(Xe, ye, qe)]
    params.setdefault("n_estimators", 20)
    model = GPUHistGBDTRanker(random_state=0, device=device, n_jobs=2, **params)
    return model.fit(X, y, qid=qid, **fit_kw)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", choices=["cpu"], required=True)
    args = parser.parse_args(argv)
    path = GOLDEN / f"reference_fits_{args.write}.json"
    if path.exists():
        sys.exit(f"{path} exists; remove it first if the models are meant to change")
    out = {name: digest(fit_case(name, args.write)) for name in cases(args.write)}
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
