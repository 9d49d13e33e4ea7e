import sys
import warnings

import pytest

import skltr._device as dev
from skltr._device import Device, resolve_device


def test_cpu_and_parsing():
    assert resolve_device("cpu") == Device("cpu")
    assert resolve_device(" CPU ") == Device("cpu")
    assert resolve_device(Device("cpu")) == Device("cpu")
    for bad in ("gpu", "cuda:x", "cpu:1", "cuda:-1", ""):
        with pytest.raises(ValueError, match="not understood"):
            resolve_device(bad)
    with pytest.raises(TypeError, match="device must be a string"):
        resolve_device(0)


def test_cuda_without_cupy_says_how_to_install(monkeypatch):
    monkeypatch.setattr(dev, "is_cupy_available", lambda: False)
    with pytest.raises(ImportError, match=r"pip install \"skltr\[gpu\]\""):
        resolve_device("cuda")
    with pytest.raises(ImportError, match="needs CuPy"):
        resolve_device("cuda:1")


def test_cuda_without_gpu(monkeypatch):
    monkeypatch.setattr(dev, "is_cupy_available", lambda: True)
    monkeypatch.setattr(dev, "_cuda_device_count", lambda: 0)
    with pytest.raises(RuntimeError, match="sees no CUDA GPU"):
        resolve_device("cuda")


def test_cuda_index_out_of_range(monkeypatch):
    monkeypatch.setattr(dev, "is_cupy_available", lambda: True)
    monkeypatch.setattr(dev, "_cuda_device_count", lambda: 2)
    assert resolve_device("cuda:1") == Device("cuda", 1)
    with pytest.raises(ValueError, match=r"only 2 GPU\(s\)"):
        resolve_device("cuda:2")


def test_auto_falls_back_with_warning(monkeypatch):
    monkeypatch.setattr(dev, "is_cupy_available", lambda: False)
    with pytest.warns(UserWarning, match="CuPy is not installed"):
        assert resolve_device("auto") == Device("cpu")
    monkeypatch.setattr(dev, "is_cupy_available", lambda: True)
    monkeypatch.setattr(dev, "_cuda_device_count", lambda: 0)
    with pytest.warns(UserWarning, match="no CUDA GPU"):
        assert resolve_device("auto") == Device("cpu")
    monkeypatch.setattr(dev, "_cuda_device_count", lambda: 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_device("auto") == Device("cuda", 0)


def test_import_skltr_is_light():
    import subprocess

    code = ("import sys, skltr; import skltr.ranking, skltr.model_selection, skltr.trees, "
            "skltr.utils; bad = [m for m in ('cupy', 'xgboost', 'lightgbm') if m in "
            "sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
