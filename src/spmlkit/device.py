"""Device and precision: one place that resolves, validates and describes them.

Used alike by the command line (``--device``, ``--precision``, ``--sync-bn``) and the
Python API (:class:`~spmlkit.config.TrainConfig`, :class:`~spmlkit.SPMLClassifier`,
:func:`~spmlkit.features.extract_features`), so a bad choice fails the same way
everywhere: a :class:`~spmlkit.errors.ConfigError` naming the option and what this
machine has, raised before anything is written.

Devices: ``auto`` (CUDA when available, else the CPU; under ``torchrun`` with CUDA each
rank takes its local GPU, ``cuda:$LOCAL_RANK``), ``cpu``, ``cuda`` (the current GPU, or
the local rank's under torchrun), ``cuda:N``, ``mps``.

Precisions (fine-tuning and feature extraction; the linear setting always computes in
float32): ``32`` (float32, the default), ``bf16`` (autocast to bfloat16; CPU or CUDA),
``16-mixed`` (autocast to float16 with a gradient scaler; CUDA only).

Files are device-free: what is written holds CPU tensors (:func:`to_cpu`) and what is
read is mapped to the CPU first and then moved to the run's device.
"""
from __future__ import annotations

import contextlib
import os
import platform

import torch

from .config import _CUDA_RE, PRECISIONS, check_device_syntax  # (torch-free: a config is checked without torch)
from .errors import ConfigError

DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N", "mps")
#: the linear setting keeps the training features on the device when they take at most
#: this fraction of the device's free memory (else batches are copied from pinned host
#: memory, or read from the memory map, one step ahead)
DEVICE_MEMORY_FRACTION = 0.5


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


def mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def available_devices() -> list[str]:
    """The devices this machine offers, e.g. ``['cpu', 'cuda:0', 'cuda:1']``."""
    out = ["cpu"]
    if cuda_available():
        out += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    if mps_available():
        out.append("mps")
    return out


def _available_text() -> str:
    return "available: " + ", ".join(available_devices())


def _local_rank() -> int | None:
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    return None


def _local_gpu(local: int, option: str, text: str) -> torch.device:
    """``cuda:$LOCAL_RANK`` under torchrun, after checking this machine has that GPU (more
    processes per node than GPUs would hit an invalid device ordinal on the first CUDA call)."""
    n = torch.cuda.device_count()
    if local >= n:
        raise ConfigError(f"{option} {text}: torchrun started this process with LOCAL_RANK={local} but this machine "
                          f"has {n} CUDA device{'s' if n != 1 else ''} ({_available_text()}): start at most {n} "
                          f"process{'es' if n != 1 else ''} per node (--nproc_per_node {n}), or use --device cpu")
    return torch.device("cuda", local)


def resolve_device(spec=None, *, option: str = "--device") -> torch.device:
    """``auto`` / ``cpu`` / ``cuda`` / ``cuda:N`` / ``mps`` (or a :class:`torch.device`) ->
    the :class:`torch.device` to run on, after checking that this machine has it."""
    if isinstance(spec, torch.device):
        spec = str(spec)
    text = check_device_syntax(spec, option)
    local = _local_rank()
    if text == "auto":
        if cuda_available():
            return _local_gpu(local, option, text) if local is not None else \
                torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    if text == "cpu":
        return torch.device("cpu")
    if text == "mps":
        if not mps_available():
            raise ConfigError(f"{option} mps: this machine has no Apple MPS device ({_available_text()})")
        return torch.device("mps")
    index = _CUDA_RE.match(text).group(1)
    if not cuda_available():
        why = "this torch build has no CUDA support" if torch.version.cuda is None else "no CUDA device is visible"
        raise ConfigError(f"{option} {text}: CUDA is not available ({why}; {_available_text()})")
    n = torch.cuda.device_count()
    if index is None:
        return _local_gpu(local, option, text) if local is not None else \
            torch.device("cuda", torch.cuda.current_device())
    if int(index) >= n:
        raise ConfigError(f"{option} {text}: this machine has {n} CUDA device{'s' if n != 1 else ''} "
                          f"({_available_text()})")
    if local is not None and int(index) != local:
        raise ConfigError(f"{option} {text}: under torchrun each process takes its local GPU (this one has "
                          f"LOCAL_RANK={local}, i.e. cuda:{local}); use --device auto or cuda")
    return torch.device("cuda", int(index))


def check_precision(precision, device: torch.device, option: str = "--precision") -> str:
    """Validate a precision for a device; returns it as text."""
    p = str(precision)
    if p not in PRECISIONS:
        raise ConfigError(f"{option} {precision!r}: expected one of {', '.join(PRECISIONS)}")
    if p == "16-mixed" and device.type != "cuda":
        raise ConfigError(f"{option} 16-mixed needs a CUDA device (float16 autocast with a gradient scaler); the "
                          f"run is on {device} ({_available_text()}): use --precision 32 or bf16")
    if p == "bf16" and device.type == "cuda":
        # torch.cuda.is_bf16_supported() counts emulation: below compute capability 8.0 (V100, T4)
        # bfloat16 runs in emulation, slower than float32
        idx = device.index if device.index is not None else torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(idx)
        if major < 8:
            raise ConfigError(f"{option} bf16: {device} ({torch.cuda.get_device_name(idx)}, compute capability "
                              f"{major}.{minor}) has no bfloat16 arithmetic (it would be emulated, slower than "
                              "float32; Ampere, compute capability 8.0, or newer is needed): use --precision "
                              "16-mixed or 32")
    return p


def check_sync_bn(sync_bn: bool, device: torch.device, option: str = "--sync-bn") -> None:
    if sync_bn and device.type != "cuda":
        raise ConfigError(f"{option} needs CUDA (SyncBatchNorm synchronises over NCCL); the run is on {device} "
                          f"({_available_text()}); use --freeze-bn for a distributed CPU run that equals one process")


def validate_config(config) -> torch.device:
    """The device of a :class:`~spmlkit.config.TrainConfig`, with its precision and
    ``sync_bn`` checked against it (raises :class:`ConfigError`)."""
    device = resolve_device(config.device)
    check_precision(getattr(config, "precision", "32"), device)
    check_sync_bn(bool(getattr(config, "sync_bn", False)), device)
    return device


# ------------------------------------------------------------------ description
def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_info(device: torch.device) -> dict:
    """What a run records about where it ran: device, its name and total memory, and the
    torch / CUDA / cuDNN / driver versions (``None`` where not applicable)."""
    device = torch.device(device)
    info = {"device": str(device), "type": device.type, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": None, "driver": None}
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(idx)
        info.update(name=props.name, total_memory_bytes=int(props.total_memory),
                    capability=f"{props.major}.{props.minor}")
        with contextlib.suppress(Exception):
            info["cudnn"] = torch.backends.cudnn.version()
        with contextlib.suppress(Exception):  # the CUDA driver API version the driver supports
            v = int(torch._C._cuda_getDriverVersion())
            info["driver"] = f"{v // 1000}.{(v % 1000) // 10}"
    elif device.type == "mps":
        info.update(name="Apple MPS", total_memory_bytes=None)
    else:
        total = None
        with contextlib.suppress(Exception):
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        info.update(name=_cpu_name(), total_memory_bytes=total, threads=torch.get_num_threads())
    return info


def describe(info: dict) -> str:
    """One line for table headers: ``cuda:0 (NVIDIA H100, 79.1 GiB; torch 2.x, CUDA 12.x)``."""
    mem = info.get("total_memory_bytes")
    parts = [str(info.get("name") or info.get("type"))]
    if mem:
        parts.append(f"{mem / 2 ** 30:.1f} GiB")
    versions = [f"torch {info.get('torch')}"]
    if info.get("type") == "cuda":
        versions.append(f"CUDA {info.get('cuda')}")
        if info.get("driver"):
            versions.append(f"driver CUDA {info.get('driver')}")
    return f"{info.get('device')} ({', '.join(parts)}; {', '.join(versions)})"


# ------------------------------------------------------------------ helpers
def free_memory_bytes(device: torch.device) -> int | None:
    """Free memory of a CUDA device (``None`` for other devices)."""
    if device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return int(free)


def plan_device_features(split_bytes: dict, free: int | None, *, reserve: int = 0,
                         fraction: float | None = None) -> dict:
    """Which feature splits the linear setting keeps on the device: one budget for all of
    them, ``fraction`` (:data:`DEVICE_MEMORY_FRACTION`) of the free memory less
    ``reserve`` (the method state allocated later), filled in the order given (train,
    val, test); a split that does not fit stays on the host (rows copied through pinned
    staging buffers).  ``free=None`` (not a CUDA device): every split is placed.

    >>> plan_device_features({"train": 400, "val": 200, "test": 200}, 1000)
    {'train': True, 'val': False, 'test': False}
    """
    if free is None:
        return {k: True for k in split_bytes}
    left = (DEVICE_MEMORY_FRACTION if fraction is None else fraction) * free - reserve
    plan = {}
    for name, nbytes in split_bytes.items():
        plan[name] = nbytes is not None and nbytes <= left
        if plan[name]:
            left -= nbytes
    return plan


def to_cpu(obj):
    """``obj`` with every tensor moved to the CPU (dicts, lists and tuples followed), so a
    file written on a GPU loads anywhere.  CPU tensors are returned as they are."""
    if isinstance(obj, torch.Tensor):
        return obj.cpu()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_cpu(v) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(to_cpu(v) for v in obj)
    return obj


def to_device(obj, device: torch.device):
    """``obj`` with every tensor moved to ``device`` (the inverse of :func:`to_cpu`)."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_device(v, device) for v in obj]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return tuple(to_device(v, device) for v in obj)
    return obj


def autocast(device: torch.device, precision: str = "32"):
    """The autocast context of a precision (``32``: none)."""
    if precision == "32":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


@contextlib.contextmanager
def cuda_numerics(device, precision: str = "32", deterministic: bool | None = None):
    """The CUDA arithmetic of a fine-tuning run or a feature extraction, set for its
    duration and restored afterwards, never set for the whole process (``cudnn.benchmark``
    left on, or TF32 convolutions left at PyTorch's default, on, would change every later run):

    * ``precision="32"``: float32 really — TF32 off for matrix products and cuDNN
      convolutions (``bf16`` / ``16-mixed`` leave PyTorch's settings alone);
    * default (fast): ``cudnn.benchmark`` on (fixed image size: cuDNN times its kernels
      once and keeps the fastest).  The kernels chosen may differ between processes, so a
      resumed CUDA run equals the uninterrupted one to rounding, not bit for bit;
    * ``deterministic`` (default: environment variable ``SPMLKIT_DETERMINISTIC=1``):
      ``cudnn.benchmark`` off, ``cudnn.deterministic`` on and
      ``torch.use_deterministic_algorithms(True)`` (with ``CUBLAS_WORKSPACE_CONFIG``
      ``:4096:8`` unless set), which resume-equality on CUDA relies on.

    Does nothing on other devices (CPU results are unchanged)."""
    device = torch.device(device)
    if device.type != "cuda":
        yield
        return
    if deterministic is None:
        deterministic = os.environ.get("SPMLKIT_DETERMINISTIC", "") == "1"
    cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
    saved = (cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32,
             torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        if str(precision) == "32":
            cudnn.allow_tf32 = matmul.allow_tf32 = False
        cudnn.benchmark = not deterministic
        cudnn.deterministic = bool(deterministic)
        if deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            torch.use_deterministic_algorithms(True, warn_only=True)
        yield
    finally:
        cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32, matmul.allow_tf32 = saved[:4]
        torch.use_deterministic_algorithms(saved[4], warn_only=saved[5])


def grad_scaler(device: torch.device, precision: str):
    """A gradient scaler for ``16-mixed`` (float16 gradients underflow without one), else None."""
    if precision != "16-mixed":
        return None
    return torch.amp.GradScaler(device.type)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (for timings only)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
