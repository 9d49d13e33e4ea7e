"""Write the version-1 golden TreeEnsemble files (run once; never overwrite them).

    python tests/golden/make_golden.py

The models are defined in ``tests/test_tree_ensemble.py`` (GOLDEN_SPECS). The script refuses
to replace an existing file: the files record what schema 1.0 wrote, and a later skltr must
keep reading them. It prints the predictions on GOLDEN_X that the test hard-codes.
"""

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from test_tree_ensemble import GOLDEN_SPECS, GOLDEN_X  # noqa: E402

from skltr.trees import TreeEnsemble  # noqa: E402

for name, spec in GOLDEN_SPECS.items():
    path = HERE / f"tree_ensemble_v1_{name}.json"
    ens = TreeEnsemble(**spec)
    if path.exists():
        print(f"{path.name} exists; not overwritten")
    else:
        ens.save(path)
        print(f"wrote {path.name}")
    X = GOLDEN_X[:, : ens.n_features]
    print(f"    {name!r}: {np.asarray(ens.predict_raw(X)).tolist()!r},")
    print(f"    {name!r}: {np.asarray(ens.predict(X)).tolist()!r},")
