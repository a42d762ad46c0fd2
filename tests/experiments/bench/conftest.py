"""Fixtures of the bench tests."""
import pytest


@pytest.fixture
def two_gpus(monkeypatch):
    """This CPU machine reports two CUDA devices (nothing is ever run on them)."""
    import torch

    import spmlkit.device as D

    monkeypatch.setattr(D, "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
