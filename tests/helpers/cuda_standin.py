"""CPU stand-ins for CUDA (issue 28): code that branches on ``tensor.device.type`` can be
driven down its CUDA branch on a machine without a GPU."""
from __future__ import annotations

import torch


def _not_cuda(a) -> bool:
    return not ((isinstance(a, torch.device) and a.type == "cuda") or (isinstance(a, str) and a.startswith("cuda")))


class ReportsCuda(torch.Tensor):
    """A CPU tensor that reports ``device == cuda:0``; moves to CUDA are no-ops.  Results of
    operations on it are ``ReportsCuda`` too, so a whole computation takes the CUDA path."""

    @property
    def device(self):
        return torch.device("cuda", 0)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.to or getattr(func, "__name__", "") == "to":
            args = tuple(a for a in args if _not_cuda(a))
            if not _not_cuda(kwargs.get("device")):
                kwargs.pop("device")
        elif "device" in kwargs and not _not_cuda(kwargs["device"]):
            kwargs["device"] = "cpu"
        return super().__torch_function__(func, types, args, kwargs)


def reports_cuda(t: torch.Tensor) -> ReportsCuda:
    return t.as_subclass(ReportsCuda)


def host_syncs_during(monkeypatch, fn):
    """Run ``fn()`` recording every operation that synchronises the host with a GPU (or
    makes a blocking copy) were the tensors on one: reads (``item``, ``tolist``, ``numpy``,
    ``float``/``int``/``bool``), ``.cpu()``, ``.to("cpu")``, a blocking ``.to(device)`` of a host tensor (a
    device other than the CPU, e.g. ``meta`` standing in for CUDA), ``torch.as_tensor`` /
    ``torch.tensor`` of Python numbers or lists (a blocking host-to-device copy on a GPU
    device), ``nonzero``, indexing with a boolean mask (its size is read back) and
    ``torch.equal``.  Returns ``(fn(), [names])`` (issue 28: a stronger detector than
    ``_training_checks.host_reads_during``)."""
    calls = []

    def spy_method(name):
        orig = getattr(torch.Tensor, name)

        def spy(self, *a, **k):
            calls.append(name)
            return orig(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, spy)

    for name in ("item", "tolist", "__float__", "__int__", "__bool__", "numpy", "cpu", "nonzero"):
        spy_method(name)

    orig_to = torch.Tensor.to

    def to(self, *a, **k):
        target = k.get("device", a[0] if a else None)
        if isinstance(target, str) and not target.startswith(("cpu", "cuda", "meta", "mps")):
            target = None  # a dtype given by name, etc.
        target = torch.device(target) if isinstance(target, str) else target
        if isinstance(target, torch.device):
            if target.type == "cpu" and self.device.type != "cpu" or (a and a[0] == "cpu"):
                calls.append("to(cpu)")
            elif target.type != "cpu" and self.device.type == "cpu" and not k.get("non_blocking", False):
                calls.append("blocking to(device)")  # from pageable host memory: the host waits
        return orig_to(self, *a, **k)

    monkeypatch.setattr(torch.Tensor, "to", to)

    orig_getitem = torch.Tensor.__getitem__

    def getitem(self, key):
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, torch.Tensor) and k.dtype == torch.bool for k in keys):
            calls.append("mask indexing")
        return orig_getitem(self, key)

    monkeypatch.setattr(torch.Tensor, "__getitem__", getitem)

    for name in ("as_tensor", "tensor"):
        orig = getattr(torch, name)

        def make(*a, _orig=orig, _name=name, **k):
            data = a[0] if a else k.get("data")
            # a device given as a torch.device (e.g. ``logits.device``) is the run's device, CUDA
            # on a GPU: the data is copied there, blocking; the string "cpu" is a host tensor
            if not isinstance(data, torch.Tensor) and k.get("device") not in (None, "cpu"):
                calls.append(f"{_name}(python data, device=...)")
            return _orig(*a, **k)

        monkeypatch.setattr(torch, name, make)
    for name in ("equal", "nonzero"):
        orig = getattr(torch, name)

        def spy_fn(*a, _orig=orig, _name=name, **k):
            calls.append(f"torch.{_name}")
            return _orig(*a, **k)

        monkeypatch.setattr(torch, name, spy_fn)
    out = fn()
    return out, list(calls)
