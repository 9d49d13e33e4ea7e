import sys
import warnings

import pytest

import skltr._device as dev
from skltr._device import Device, names_gpu, resolve_device


def test_cpu_and_parsing():
    assert resolve_device("cpu") == Device("cpu")
    assert resolve_device(" CPU ") == Device("cpu")
    assert resolve_device(Device("cpu")) == Device("cpu")
    for bad in ("gpu", "cuda:x", "cpu:1", "cuda:-1", "", "cpu:all", "auto:all", "cuda:al"):
        with pytest.raises(ValueError, match="not understood"):
            resolve_device(bad)
        with pytest.raises(ValueError, match="not understood.*'cuda:all'"):
            resolve_device(bad, allow_all=True)
    with pytest.raises(TypeError, match="device must be a string"):
        resolve_device(0)


def test_cuda_without_cupy_says_how_to_install(monkeypatch):
    monkeypatch.setattr(dev, "is_cupy_available", lambda: False)
    # skltr installs from a clone: the extra is ".[gpu]", never "skltr[gpu]" (issue #33)
    with pytest.raises(ImportError, match=r"pip install \"\.\[gpu\]\" \(CUDA 12\)") as info:
        resolve_device("cuda")
    assert "skltr[" not in str(info.value)
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


def test_cuda_all_only_where_allowed(monkeypatch):
    monkeypatch.setattr(dev, "is_cupy_available", lambda: True)
    monkeypatch.setattr(dev, "_cuda_device_count", lambda: 2)
    every = resolve_device(" CUDA:ALL ", allow_all=True)
    assert every == Device("cuda", 0, all_gpus=True) and every.is_gpu
    assert str(every) == "cuda:all"
    assert resolve_device(str(every), allow_all=True) == every  # device_ round-trips
    assert resolve_device(every, allow_all=True) is every
    assert str(resolve_device("cuda:1", allow_all=True)) == "cuda:1"
    # refused before CuPy or a GPU is looked for, naming the estimator and what it takes
    for device in ("cuda:all", every):
        with pytest.raises(ValueError, match=r"^GPUHistGBDTRanker does not support "
                                             r"device='cuda:all' \(every visible GPU\); "
                                             r"use 'cpu', 'cuda', 'cuda:N'"):
            resolve_device(device, estimator="GPUHistGBDTRanker")
        with pytest.raises(ValueError, match="'cuda:all' .* is not supported here"):
            resolve_device(device)
    monkeypatch.setattr(dev, "is_cupy_available", lambda: False)
    with pytest.raises(ImportError, match="device='cuda:all' needs CuPy"):
        resolve_device("cuda:all", allow_all=True)
    monkeypatch.setattr(dev, "is_cupy_available", lambda: True)
    monkeypatch.setattr(dev, "_cuda_device_count", lambda: 0)
    with pytest.raises(RuntimeError, match="sees no CUDA GPU"):
        resolve_device("cuda:all", allow_all=True)


def test_names_gpu_reads_the_string_alone(monkeypatch):
    monkeypatch.setattr(dev, "is_cupy_available", lambda: False)  # never asked
    for device in ("cuda", "cuda:3", " CUDA:1 ", "cuda:all", Device("cuda", 1),
                   Device("cuda", 0, all_gpus=True)):
        assert names_gpu(device)
    for device in ("cpu", "auto", "tpu", "cudax", "cuda:x", "", None, 0, Device("cpu")):
        assert not names_gpu(device)


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
