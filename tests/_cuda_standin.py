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
