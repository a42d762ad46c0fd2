"""Issue 28: the GPU path reviewed before any GPU runs it.  Every check here runs on the
CPU with stand-ins for CUDA (the ``meta`` device, a faked ``mem_get_info`` / device count,
a tensor that reports ``cuda``); the checks only a GPU can make are in tests/test_gpu.py.
Each test failed on the code before its fix."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError


# ------------------------------------------------------------------ item 8: the suite is pinned to the CPU
def test_the_ordinary_suite_is_pinned_to_the_cpu():
    from spmlkit.device import resolve_device

    assert os.environ.get("CUDA_VISIBLE_DEVICES") == ""  # subprocesses (CLI, torchrun) see no GPU
    assert torch.cuda.is_available() is False
    assert resolve_device("auto") == torch.device("cpu")
