"""The machine line in the headers of tables and benchmarks (spmlkit.experiments.machine)."""
import os
import platform

import numpy as np
import torch

from spmlkit import __version__
from spmlkit.experiments.machine import machine_info


def test_names_the_system_the_libraries_and_the_device():
    line = machine_info(device="cpu")
    assert line.startswith(f"{platform.system()} {platform.release()} {platform.machine()}; CPU ")
    assert f"; {os.cpu_count()} cores (torch threads 1); " in line  # the linear setting trains on one thread
    for part in (f"python {platform.python_version()}", f"torch {torch.__version__}", f"numpy {np.__version__}",
                 f"spmlkit {__version__}", "; device cpu"):
        assert part in line, part


def test_worker_processes_and_threads():
    assert "(4 worker processes × 2 torch threads each)" in machine_info(jobs=4, threads=2, device="cpu")
    assert "(2 worker processes × 1 torch thread each)" in machine_info(jobs=2, device="cpu")
    assert "(torch threads 3)" in machine_info(threads=3, device="cpu")


def test_a_device_this_machine_lacks_is_said_so_not_an_error():
    """Tables rebuilt on a machine without the bench's GPU (tests/conftest.py hides CUDA here)."""
    assert machine_info(device="cuda").endswith("device cuda (not available on the machine writing this table)")
