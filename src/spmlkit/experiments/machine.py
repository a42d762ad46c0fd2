"""The machine a result was measured on, for the headers of tables and benchmarks."""
from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np

from .._version import __version__
from ..device import describe, device_info, resolve_device
from ..errors import ConfigError
import torch


def machine_info(jobs: int = 1, threads: int | None = None, device: str | None = None,
                 setting: str = "linear") -> str:
    """uname, CPU model, cores and library versions, for the tables' headers; with
    ``jobs > 1`` the training parallelism (worker processes × torch threads each); the
    training device (``device``: the bench's ``--device``, default auto) with its name,
    memory and CUDA/driver versions."""
    par = (f"{jobs} worker processes × {threads or 1} torch thread{'s' if (threads or 1) != 1 else ''} each"
           if jobs > 1 else f"torch threads {threads or (1 if setting == 'linear' else torch.get_num_threads())}")
    u = platform.uname()
    cpu = u.processor or u.machine
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    try:
        dev = describe(device_info(resolve_device(device)))
    except ConfigError:  # tables rebuilt on a machine without the bench's device
        dev = f"{device} (not available on the machine writing this table)"
    return (f"{u.system} {u.release} {u.machine}; CPU {cpu}; {os.cpu_count()} cores "
            f"({par}); python {platform.python_version()}; "
            f"torch {torch.__version__}; numpy {np.__version__}; spmlkit {__version__}; device {dev}")
