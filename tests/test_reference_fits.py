"""The GBDT engine's models, bit for bit, against the digests stored before a refactoring
(see ``tests/reference_fits.py``). One growth driver and one quantisation rule (#27): a GPU
fit must give the CPU's model, digest for digest."""

import json

import pytest

from reference_fits import GOLDEN, cases, digest, fit_case


def _stored(device):
    path = GOLDEN / f"reference_fits_{device}.json"
    if not path.exists():
        pytest.skip(f"{path.name} not written")
    return json.loads(path.read_text())


@pytest.mark.parametrize("name", cases("cpu"))
def test_reference_fit_cpu(name):
    assert digest(fit_case(name, "cpu")) == _stored("cpu")[name]


@pytest.mark.gpu
@pytest.mark.parametrize("name", cases("cuda"))
def test_reference_fit_cuda(name):
    assert digest(fit_case(name, "cuda")) == _stored("cpu")[name]
