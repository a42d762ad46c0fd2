"""The meta-device trap (issue 13): a run placed explicitly on the CPU inside it fails
loudly if any of its tensors was created without a device."""
from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def device_trap():
    """Every tensor created without an explicit device goes to ``meta`` (no data): any
    later use of it next to real CPU tensors raises."""
    torch.set_default_device("meta")
    try:
        yield
    finally:
        torch.set_default_device(None)
