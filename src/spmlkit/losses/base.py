"""The loss registry and the conventions every loss follows.

Signature
---------
``loss(logits, observed, *, <hyper-parameters>, <method inputs>) -> Tensor``

* ``logits`` — ``(..., B, L)`` float tensor of scores (before the sigmoid).  Leading
  dimensions are independent models trained together (a grid of learning rates and
  seeds, see :mod:`spmlkit.training.linear`); losses never mix them.
* ``observed`` — ``(..., B, L)`` integer tensor in the one encoding of
  :mod:`spmlkit.labels`: +1 observed positive, −1 observed negative, 0 unobserved.
* hyper-parameters are keyword-only, with the paper's defaults, and named as in the paper.
* method inputs (e.g. ROLE's estimator logits, APL's pseudo-label targets) are
  keyword-only tensors shaped like ``logits``, supplied by the method's components.
* the result is **unreduced**: per-entry losses ``(..., B, L)``, or ``(..., B, 1)`` for
  losses that couple the labels of an example (ZLPR, OPML).  Reduction is separate
  (:func:`reduce_mean`), because the papers differ exactly there.

Work on logits with ``logsigmoid`` / ``logsumexp`` for stability (the authors' code uses
``log(p + 1e-5)``; that is not copied).

Registering
-----------
A loss module decorates its function with :func:`register_loss`; modules in this
package are imported automatically, so adding a loss is: its module, its test file.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

from ..params import check_params, constraints_from_signature
from ..registry import Registry


@dataclass(frozen=True)
class LossSpec:
    name: str
    fn: Callable[..., torch.Tensor]
    hyperparameters: dict  # keyword-only hyper-parameters and their defaults
    inputs: tuple[str, ...]  # keyword-only tensors a method must supply (no default)
    reference: str = ""
    summary: str = ""
    #: hyper-parameter -> constraints (:mod:`spmlkit.params`): the types of the signature,
    #: with the ranges and choices the registration declares
    constraints: dict = field(default_factory=dict)

    def __call__(self, logits: torch.Tensor, observed: torch.Tensor, **kwargs) -> torch.Tensor:
        return self.fn(logits, observed, **kwargs)

    def check_params(self, params: dict) -> dict:
        """The loss's hyper-parameters: its defaults, overridden by ``params`` once they are
        checked (:func:`spmlkit.params.check_params`: unknown names, types, ranges)."""
        check_params(params, self.constraints or {k: ["any"] for k in self.hyperparameters},
                     owner=f"loss {self.name!r}")
        return {**self.hyperparameters, **params}


LOSSES: Registry = Registry("loss", package=__package__)
_INPUT_NAMES = {"estimator_logits", "pseudo_targets", "soft_targets", "targets"}


def register_loss(name: str, *, reference: str = "", inputs: tuple[str, ...] = (), constraints: dict | None = None):
    """Register ``fn`` under ``name``.  Keyword-only parameters with defaults are its
    hyper-parameters (their annotations say their types; ``constraints`` adds ranges and
    choices, :mod:`spmlkit.params`); ``inputs`` lists keyword-only tensors that a method
    supplies."""

    def deco(fn):
        sig = inspect.signature(fn)
        hp = {p.name: p.default for p in sig.parameters.values()
              if p.kind is p.KEYWORD_ONLY and p.name not in inputs}
        summary = (inspect.getdoc(fn) or "").split("\n", 1)[0]
        checks = constraints_from_signature(fn, hp, constraints)
        LOSSES.add(name, LossSpec(name, fn, hp, tuple(inputs), reference, summary, checks), owner=fn)
        return fn

    return deco


def get_loss(name: str) -> LossSpec:
    return LOSSES.lookup(name)


def reduce_mean(loss: torch.Tensor) -> torch.Tensor:
    """Mean over the batch and label dimensions: ``(..., B, L)`` or ``(..., B, 1)`` -> ``(...)``.

    For per-entry losses this is Cole et al.'s ``sum(loss_mtx) / (B*L)`` (entries with
    zero loss still count); for per-example losses it is the mean over examples."""
    return loss.mean(dim=(-2, -1))


# ------------------------------------------------------------------ shared helpers
def masks(observed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boolean masks (positive, negative, unobserved) of an observation tensor."""
    return observed == 1, observed == -1, observed == 0


def bce_with_target(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-entry ``-[t log σ(s) + (1-t) log(1-σ(s))]`` for any target ``t ∈ [0, 1]``, stably."""
    return F.binary_cross_entropy_with_logits(logits, target.to(logits.dtype), reduction="none")


def neg_log_sigmoid(x: torch.Tensor) -> torch.Tensor:
    """``-log σ(x)``, stable for large |x|."""
    return F.softplus(-x)
