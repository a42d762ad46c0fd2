"""Classifier heads on fixed features, stacked over ``G`` independent members.

A *member* is one model of a grid (one learning rate and seed).  Stacking the
members' weights as ``(G, D, L)`` trains a whole learning-rate × seed grid as one
model: one batched matrix product and one optimizer step per batch instead of ``G``.
Members never interact, so each behaves exactly as a separate run with
the same seed (tested).  A single run is ``G = 1``.

Initialisation matches ``torch.nn.Linear`` (U(−1/√fan_in, 1/√fan_in) for weights and
biases) but draws from each member's own ``torch.Generator``, so member ``g`` of a grid
starts where a separate run with seed ``seed_g`` starts.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from ..registry import Registry
from .maxent_features import FeatureHead, MaxEntFeatures
from .maxent_head import KNOTS as MAXENT_KNOTS
from .maxent_head import MaxEntHead
from .trees import build_tree_head


def _uniform(shape, bound: float, generators: list[torch.Generator], dtype=torch.float32) -> torch.Tensor:
    # drawn on the CPU from CPU generators (the same initial weights on every device); the
    # learner moves the module to its device afterwards
    out = torch.empty((len(generators), *shape), dtype=dtype, device="cpu")
    for g, gen in enumerate(generators):
        out[g] = (torch.rand(shape, generator=gen, dtype=dtype, device="cpu") * 2 - 1) * bound
    return out


class StackedLinear(nn.Module):
    """``G`` independent linear layers: ``(G, B, D) -> (G, B, L)``."""

    def __init__(self, in_features: int, out_features: int, generators: list[torch.Generator]):
        super().__init__()
        bound = 1.0 / math.sqrt(in_features)
        self.weight = nn.Parameter(_uniform((in_features, out_features), bound, generators))
        self.bias = nn.Parameter(_uniform((1, out_features), bound, generators))

    @property
    def n_members(self) -> int:
        return self.weight.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 2:  # shared inputs (evaluation): (B, D) -> (G, B, L), one GEMM for all members
            G, D, L = self.weight.shape
            w = self.weight.permute(1, 0, 2).reshape(D, G * L)
            out = torch.addmm(self.bias.permute(1, 0, 2).reshape(1, G * L), x, w)
            return out.view(-1, G, L).permute(1, 0, 2)
        return torch.baddbmm(self.bias, x, self.weight)


class StackedMLP(nn.Module):
    """``G`` independent one-hidden-layer MLPs (ReLU): ``(G, B, D) -> (G, B, L)``."""

    def __init__(self, in_features: int, out_features: int, generators: list[torch.Generator], hidden: int = 512):
        super().__init__()
        self.hidden = StackedLinear(in_features, hidden, generators)
        self.out = StackedLinear(hidden, out_features, generators)

    @property
    def n_members(self) -> int:
        return self.out.n_members

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(x)))


@dataclass(frozen=True)
class HeadSpec:
    name: str
    #: ``build(in_features, out_features, generators, *, hidden) -> nn.Module``: a stacked
    #: module mapping ``(G, B, in_features)`` to ``(G, B, out_features)``, one member per
    #: generator, every parameter with the leading member axis (see :func:`select_members`)
    build: Callable[..., nn.Module]
    description: str


#: the heads of the linear setting (and of fine-tuning's pooled features) by name
HEADS: Registry = Registry("head", package=None)


def register_head(name: str, *, description: str):
    """Register a head builder (see :class:`HeadSpec`); ``--head NAME`` then accepts it."""
    def deco(build):
        HEADS.add(name, HeadSpec(name, build, description), owner=build)
        return build

    return deco


@register_head("linear", description="one linear layer per member (the papers' linear setting)")
def _linear_head(in_features: int, out_features: int, generators, *, hidden: int) -> nn.Module:
    return StackedLinear(in_features, out_features, generators)


@register_head("mlp", description="a hidden ReLU layer of width --hidden, then a linear layer, per member")
def _mlp_head(in_features: int, out_features: int, generators, *, hidden: int) -> nn.Module:
    return StackedMLP(in_features, out_features, generators, hidden=hidden)


@register_head("maxent-features", description="MaxEnt's feature classes of each covariate (linear, quadratic, hinge, "
               "product; ranges fitted on the training rows, clamped at prediction), then one linear layer per member")
def _maxent_features_head(in_features: int, out_features: int, generators, *, hidden: int) -> nn.Module:
    expansion = MaxEntFeatures(in_features, len(generators))
    return FeatureHead(expansion, StackedLinear(expansion.n_out, out_features, generators))


def _maxent_head(in_features: int, out_features: int, generators, *, hidden: int, regmult: float = 1.0) -> nn.Module:
    expansion = MaxEntFeatures(in_features, len(generators), n_knots=MAXENT_KNOTS)
    return MaxEntHead(expansion, StackedLinear(expansion.n_out, out_features, generators), regmult=regmult)


register_head("maxent", description="MaxEnt itself: its features (as maxent-features) with its regularised "
              "objective solved to convergence on the training rows (Phillips & Dudik 2008); one epoch scores it, "
              "none steps it")(_maxent_head)
#: MaxEnt with its penalties multiplied (maxnet's ``regmult``): smoother responses, for data
#: where the default overfits (Radosavljevic & Anderson 2014 tune it on spatially separate
#: validation); ``auto`` chooses among these and ``maxent`` on one species' validation rows
MAXENT_REGMULTS = {"maxent-x2": 2.0, "maxent-x4": 4.0}
for _name, _mult in MAXENT_REGMULTS.items():
    register_head(_name, description=f"MaxEnt (as maxent) with every penalty multiplied by {_mult:g} (maxnet's "
                  "regmult): smoother responses")(functools.partial(_maxent_head, regmult=_mult))


register_head("tree", description="gradient-boosted trees (XGBoost, the trees extra) trained with the method's loss; "
              "tabular and presence-only features only")(build_tree_head)


def select_members(module: nn.Module, keep) -> None:
    """Keep only members ``keep`` (positions, in that order) of every parameter of a
    stacked module (all parameters carry the leading member axis)."""
    keep = list(keep)
    for mod in module.modules():
        for name, p in list(mod.named_parameters(recurse=False)):
            idx = torch.as_tensor(keep, dtype=torch.long, device=p.device)
            setattr(mod, name, nn.Parameter(p.detach().index_select(0, idx).contiguous(),
                                            requires_grad=p.requires_grad))


def build_head(kind: str, in_features: int, out_features: int, generators: list[torch.Generator],
               hidden: int = 512) -> nn.Module:
    """Head ``kind`` (:data:`HEADS`) with one member per generator."""
    return HEADS.lookup(kind).build(in_features, out_features, generators, hidden=hidden)


class MixedHeads(nn.Module):
    """Members of several head kinds side by side (a recipe whose members are linear and
    MLP heads): one stacked head per kind, in the order the kinds first appear in
    ``kinds`` (one kind per member; each kind's members contiguous), and
    ``(B, D) -> (G, B, L)`` over all members in that order.  Its state keys are
    ``<kind>.<parameter>``."""

    def __init__(self, kinds: list[str], in_features: int, out_features: int, hidden: int = 512):
        super().__init__()
        order = list(dict.fromkeys(kinds))
        if kinds != [k for k in order for _ in range(kinds.count(k))]:
            raise ValueError(f"the members of one head kind must be contiguous, got {kinds}")
        gen = [torch.Generator(device="cpu").manual_seed(0)]
        self.heads = nn.ModuleDict({k: build_head(k, in_features, out_features, gen * kinds.count(k), hidden=hidden)
                                    for k in order})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([h(x) for h in self.heads.values()], 0)

    def load_state_dict(self, state, strict: bool = True, assign: bool = False):
        return super().load_state_dict({f"heads.{k}": v for k, v in state.items()}, strict=strict, assign=assign)

    def state_dict(self, *args, **kwargs):
        return {k[len("heads."):]: v for k, v in super().state_dict(*args, **kwargs).items()}
