"""Device resolution (spmlkit.device, issue 13) without a GPU: CUDA faked away or
present through monkeypatched ``torch.cuda.is_available`` / ``device_count``, and the
one-line errors of impossible choices."""
from __future__ import annotations

import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.device import (available_devices, check_precision, check_sync_bn, device_info, resolve_device,
                            to_cpu, validate_config)
from spmlkit.errors import ConfigError


def _no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def _one_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


# ------------------------------------------------------------------ resolution
def test_auto_is_cpu_without_cuda_and_cuda_with_it(monkeypatch):
    _no_cuda(monkeypatch)
    assert resolve_device("auto") == torch.device("cpu") and resolve_device(None) == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    assert available_devices()[0] == "cpu"
    _one_gpu(monkeypatch)
    assert resolve_device("auto") == torch.device("cuda", 0)
    assert resolve_device("cuda") == torch.device("cuda", 0)
    assert resolve_device("cuda:0") == torch.device("cuda", 0)


def test_auto_takes_the_local_rank_under_torchrun(monkeypatch):
    _one_gpu(monkeypatch)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert resolve_device("auto") == torch.device("cuda", 3) == resolve_device("cuda") == resolve_device("cuda:3")
    with pytest.raises(ConfigError, match="under torchrun each process takes its local GPU"):
        resolve_device("cuda:0")


@pytest.mark.parametrize("spec, needle", [("cuda", "CUDA is not available"), ("cuda:1", "CUDA is not available"),
                                          ("gpu", "expected one of auto, cpu, cuda, cuda:N, mps")])
def test_impossible_devices_are_one_line_errors(monkeypatch, spec, needle):
    _no_cuda(monkeypatch)
    with pytest.raises(ConfigError) as e:
        resolve_device(spec)
    msg = str(e.value)
    assert "--device" in msg and needle in msg and "\n" not in msg
    if "available" in needle:
        assert "available: cpu" in msg


def test_cuda_index_beyond_the_machine(monkeypatch):
    _one_gpu(monkeypatch)
    with pytest.raises(ConfigError, match=r"--device cuda:3: this machine has 1 CUDA device \(available: cpu, cuda:0"):
        resolve_device("cuda:3")


def test_precision_and_sync_bn_need_cuda():
    cpu = torch.device("cpu")
    assert check_precision("32", cpu) == "32" and check_precision("bf16", cpu) == "bf16"
    with pytest.raises(ConfigError, match="--precision 16-mixed needs a CUDA device"):
        check_precision("16-mixed", cpu)
    with pytest.raises(ConfigError, match="--precision 'fp8'"):
        check_precision("fp8", cpu)
    check_sync_bn(False, cpu)
    with pytest.raises(ConfigError, match="--sync-bn needs CUDA"):
        check_sync_bn(True, cpu)
    with pytest.raises(ConfigError, match="device"):
        TrainConfig(device="tpu")
    with pytest.raises(ConfigError, match="precision"):
        TrainConfig(precision="8")


def test_validate_config(monkeypatch):
    _no_cuda(monkeypatch)
    assert validate_config(TrainConfig()) == torch.device("cpu")  # the default is auto
    with pytest.raises(ConfigError, match="16-mixed"):
        validate_config(TrainConfig(precision="16-mixed"))
    with pytest.raises(ConfigError, match="sync-bn"):
        validate_config(TrainConfig(sync_bn=True))


def test_device_info_of_the_cpu():
    info = device_info(torch.device("cpu"))
    assert info["device"] == "cpu" and info["torch"] == torch.__version__ and info["name"]
    assert {"cuda", "driver", "total_memory_bytes"} <= set(info)


def test_to_cpu_follows_containers():
    t = torch.ones(2)
    out = to_cpu({"a": [t, (t, 1)], "b": "x"})
    assert out["a"][0] is t and out["a"][1][1] == 1 and out["b"] == "x"
