"""A registered method's single-positive loss as a gradient-boosting objective: the
gradient and the curvature of the summed loss with respect to every ``(example, label)``
margin, as XGBoost's custom objectives take them (Chen & Guestrin 2016, Eq. 2–4: the
second-order expansion ``Σ g_ij f_j(x_i) + ½ h_ij f_j(x_i)²`` per boosting round).

**Gradient**: autograd of ``Σ_ij loss_ij`` (the method's own unreduced loss matrix, its
components' inputs included) on the ``(N, L)`` margins (float32 in training; float64 in
the finite-difference tests, and the two agree there).

**Curvature** (the diagonal of the Hessian), by loss family:

* *entry-separable losses* — every entry's loss depends on its own margin only (AN, BCE,
  WAN, DW, label smoothing, focal, ASL, Hill, EM, entropy minimisation, IU/IUN,
  SINR's AN-full and the full-weighted loss of Zbinden et al. 2024): the exact diagonal
  in one Hessian-vector product with the all-ones vector (the Hessian is diagonal).  For
  the BCE family it is ``w·p(1 − p)`` (``w`` the entry's weight), the Gauss–Newton
  diagonal;
* *row-coupled losses* — entries of one example interact (ZLPR, OPML's ranking loss,
  AN-SLDS's drawn other label, the ``-me`` entropy terms): the exact diagonal in ``L``
  Hessian-vector products, one per label (rows stay independent, so the product with the
  label-``j`` indicator reads ``H[(i,j),(i,j)]`` for every row ``i`` at once);
* losses written as a custom autograd function without a second derivative (ZLPR and
  OPML's pairwise log-sum-exp): central differences of the exact gradient, by the same
  per-label shifts (error O(step²), float64).

Where the exact diagonal is negative or tiny (EM's and entropy minimisation's
unobserved entries are concave near 0, focal-type losses flatten) it is **clipped** to
``H_MIN``: the boosting step ``−G/(H + λ)`` then stays a descent step, damped by
XGBoost's ``λ`` (XGBoost's documentation recommends the same for non-convex objectives).

**Refused** (one line naming the alternative): methods whose targets evolve per epoch
(ROLE's estimator, APL's pseudo-labels, Large-Loss's rejection, GR's schedule,
SPLC, OPML's corrections, external pseudo-labels, LAC), methods with a regulariser
of a neural head (L1R/L2R's weight norm, OPML's high-rank term) and losses that couple
examples (EPR's expected-positive batch term): their state has no counterpart per
boosting round that the papers define.

**Background rows** (presence-only data, a loss with ``background_logits``): the SGD
trainer pairs each presence example with one background row drawn per step; here every
background row is paired once per round: ``c = ⌈n_background / n_labelled⌉`` calls of the
loss over all labelled rows, each with the next ``n_labelled`` background rows of a
seeded permutation (wrapped around), averaged — each labelled term counts once and each
background row about ``n_labelled / n_background`` times, the expectation of the draws.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import ConfigError
from ..methods.base import Batch, Component, Method, TrainContext

#: curvature floor (see the module docstring)
H_MIN = 1e-6
#: step of the central differences for losses without a second derivative in autograd
FD_STEP = 1e-4
#: losses whose entries do not interact (one Hessian-vector product gives the exact diagonal)
SEPARABLE = frozenset({"an", "an-ls", "an-ls-asym", "bce", "bce-ls", "wan", "dw", "ls", "n-ls", "focal",
                       "focal-margin", "asl", "hill", "em", "entmin", "iu", "iun", "an-full", "full-weighted",
                       "an-ssdl"})
#: losses that couple examples (a row's loss reads other rows): no per-entry curvature
COUPLE_EXAMPLES = frozenset({"epr"})
#: component hooks that change a method's targets as training goes (no boosting-round counterpart)
EVOLVING_HOOKS = ("on_epoch_start", "on_epoch_end", "after_optimizer_step", "after_backward", "modify_loss")
ALTERNATIVE = "train it with --head linear or mlp, or use a static loss with --head tree (wan, an, full-weighted)"


def check_tree_method(method: Method) -> None:
    """Refuse a method the tree head cannot express (one line naming the alternative)."""
    if not isinstance(method, Method):
        raise ConfigError(f"method {getattr(method, 'name', method)!r} is not a single loss; {ALTERNATIVE}")
    evolving = [type(c).__name__ for c in method.components
                if any(getattr(type(c), h) is not getattr(Component, h) for h in EVOLVING_HOOKS)]
    if evolving:
        raise ConfigError(f"method {method.name!r} updates its targets every epoch ({', '.join(evolving)}), which has "
                          f"no boosting-round counterpart in its paper; {ALTERNATIVE}")
    if method.regularizers:
        raise ConfigError(f"method {method.name!r} has a regulariser of a neural head's weights or ranks; "
                          f"{ALTERNATIVE} (trees are regularised by depth, rounds and XGBoost's lambda)")
    if method.loss.name in COUPLE_EXAMPLES:
        raise ConfigError(f"method {method.name!r}: its loss couples examples (a batch-level term), so it has no "
                          f"per-entry curvature; {ALTERNATIVE}")
    if method.setting == "finetune":
        raise ConfigError(f"method {method.name!r} is a fine-tuning method; {ALTERNATIVE}")


class TreeObjective:
    """``grad_hess(margins) -> (g, h)``, both ``(N, L)`` float32, for ``method`` (set up on
    ``ctx``) on the training observations ``Z`` ``(N, L)`` int8; ``seed`` fixes the pairing
    of background rows; ``dtype`` the precision of the loss evaluation (float64 for the
    finite-difference tests; the trainer uses float32, its twin in the tests)."""

    def __init__(self, method: Method, ctx: TrainContext, Z: np.ndarray, *, seed: int = 0,
                 dtype: torch.dtype = torch.float64):
        check_tree_method(method)
        self.dtype = dtype
        self.method, self.ctx = method, ctx
        self.Z = torch.from_numpy(np.asarray(Z, dtype=np.int8))
        self.separable = method.loss.name in SEPARABLE
        self.pairs = None
        if method.uses_background:
            has = (self.Z != 0).any(1)
            labelled, background = torch.nonzero(has).flatten(), torch.nonzero(~has).flatten()
            if len(background) == 0 or len(labelled) == 0:
                raise ConfigError(f"method {method.name!r} needs background rows (training examples with no observed "
                                  "label) and labelled rows; this data lacks one of them")
            gen = torch.Generator(device="cpu").manual_seed(1_000_003 + int(seed))
            calls = math.ceil(len(background) / len(labelled))
            order = background[torch.randperm(len(background), generator=gen, device="cpu")]
            order = order.repeat(math.ceil(calls * len(labelled) / len(order)))[: calls * len(labelled)]
            self.pairs = (labelled, order.view(calls, len(labelled)))

    def total(self, z: torch.Tensor) -> torch.Tensor:
        """``Σ loss`` over the training set at margins ``z`` ``(N, L)`` (see the module docstring)."""
        if self.pairs is None:
            batch = Batch(inputs=None, index=torch.arange(len(z), device=z.device)[None], observed=self.Z[None], distinct=True)
            return self.method.loss_matrix(z[None], batch).sum()
        labelled, order = self.pairs
        batch = Batch(inputs=None, index=labelled[None], observed=self.Z[labelled][None], distinct=True)
        zl = z[labelled][None]
        return sum(self.method.loss_matrix(zl, batch, z[row][None]).sum() for row in order) / len(order)

    def gradient(self, margins: np.ndarray) -> np.ndarray:
        """``∂ Σ loss / ∂ z`` ``(N, L)``."""
        z = torch.tensor(np.asarray(margins), dtype=self.dtype, device="cpu").requires_grad_(True)
        (g,) = torch.autograd.grad(self.total(z), z)
        return g.numpy()

    def grad_hess(self, margins: np.ndarray, *, separable: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Gradient and clipped curvature diagonal ``(N, L)`` float32 at ``margins``;
        ``separable`` overrides the loss family's path (tests compare the two)."""
        z = torch.tensor(np.asarray(margins), dtype=self.dtype, device="cpu").requires_grad_(True)
        (g,) = torch.autograd.grad(self.total(z), z, create_graph=True)
        sep = self.separable if separable is None else separable
        if not g.requires_grad:  # a loss without a second derivative in autograd (a custom Function)
            h = self._central_difference(z.detach(), sep)
        elif sep:
            (h,) = torch.autograd.grad(g.sum(), z, allow_unused=True)
        else:
            h = torch.zeros_like(z)
            for j in range(z.shape[1]):
                (col,) = torch.autograd.grad(g[:, j].sum(), z, retain_graph=True, allow_unused=True)
                if col is not None:
                    h[:, j] = col[:, j]
        h = torch.zeros_like(z) if h is None else h
        return g.detach().float().numpy(), h.detach().clamp_min(H_MIN).float().numpy()

    def _central_difference(self, z: torch.Tensor, separable: bool) -> torch.Tensor:
        """The curvature diagonal from central differences of the exact gradient (step
        ``FD_STEP``, error O(step²)): one pair of gradients for a separable loss, one per
        label otherwise (rows stay independent, so shifting label ``j`` of every row reads
        ``H[(i,j),(i,j)]`` for all rows at once)."""
        def grad_at(x):
            x = x.clone().requires_grad_(True)
            return torch.autograd.grad(self.total(x), x)[0]

        if separable:
            return (grad_at(z + FD_STEP) - grad_at(z - FD_STEP)) / (2 * FD_STEP)
        h = torch.zeros_like(z)
        for j in range(z.shape[1]):
            step = torch.zeros_like(z)
            step[:, j] = FD_STEP
            h[:, j] = ((grad_at(z + step) - grad_at(z - step)) / (2 * FD_STEP))[:, j]
        return h
