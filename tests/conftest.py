"""Shared test configuration: hypothesis profiles, the gpu marker, the LETOR sample path."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# "ci" (default): derandomised so a run is reproducible; "nightly": many more examples.
# Select with HYPOTHESIS_PROFILE=nightly. Per-test @settings override max_examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=1000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

LETOR_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "letor_small"

# The tests compile this tree's kernels (and test the per-user cache and the pre-compiler),
# also where `python -m skltr._shipped_kernels` left built ones in skltr/_kernels; the shipped
# kernels have their own tests (test_shipped_kernels.py), which turn them on for their children.
os.environ.setdefault("SKLTR_SHIPPED_KERNELS", "0")


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - any failure means no usable GPU
        return False


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def letor_dir():
    if not LETOR_DIR.is_dir():
        pytest.skip(f"LETOR sample not found at {LETOR_DIR}")
    return LETOR_DIR
