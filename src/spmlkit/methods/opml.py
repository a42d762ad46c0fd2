"""ZLPR and OPML methods (Su et al. 2022; Li, Wang & Chen 2023, arXiv 2302.14695).

OPML's equations are lost from our copy of the paper; everything here follows
``li-opml-equations-reconstructed.md``.  What is stated by the paper and what is ours is
listed in ``docs/opml_largeloss.md``.

Parts
-----
* :class:`HighRankRegularizer` — minus log-det of the batch's predicted label matrix
  (reconstructed Eq. 10), a batch regulariser ``(logits, batch, model) -> (G,)``.
* :class:`TrainingAP` — per-member average precision of every label on the training set,
  against the **observed** positives (observed positives vs everything else), refreshed
  at the end of each epoch.  Shared by the two components below.
* :class:`APSmoothing` — soft targets ``ỹ_ij = AP_j^ρ · p_ij`` for unobserved entries
  (reconstructed Eq. 11), fed to the ``opml-soft`` loss.
* :class:`APLabelCorrection` — after each epoch, per label, the ``n_j`` highest-scoring
  unobserved entries become observed positives (Sec. III-E), fed to the loss as an
  ``observed`` override.

Methods (Table II / III / IV rows of the paper)
-----------------------------------------------
==============  ==========================================================  ==========
method          parts                                                       paper row
==============  ==========================================================  ==========
``zlpr``        ZLPR loss                                                    Table III
``opml``        OPML loss                                                    Table II/III/IV row 1
``opml-hr``     OPML + high-rank regulariser                                 Table IV row 2
``opml-soft``   soft OPML (AP-adaptive smoothing)                            Table IV row 3
``opml-lc``     OPML + AP-based label correction                             Table IV row 4
``opml-sp``     soft OPML + high-rank + label correction                     Table II "OPML-SP"
==============  ==========================================================  ==========
"""
from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np
import torch

from ..errors import ConfigError
from ..losses.opml import odds
from ..metrics import average_precision, average_precision_torch
from .base import Batch, Component, Method, TrainContext, register_method

REFERENCE = "Li, Wang & Chen 2023 (arXiv 2302.14695)"


# ------------------------------------------------------------------ helpers
def _member_rows(state: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Rows ``batch.index`` of a per-member table ``state`` (G, N, L) -> (G, B, L)."""
    G = state.shape[0]
    members = torch.arange(G, device=state.device)[:, None]
    return state[members, batch.index.to(state.device)]


def _per_member(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """(G, L) per-member label values viewed to broadcast against ``like`` (G, B, L) or (B, L)."""
    if like.dim() <= 2:
        return values[0]
    return values.view(values.shape[0], *([1] * (like.dim() - 2)), values.shape[-1])


def _override(observed: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    return torch.where(positive.reshape(observed.shape), torch.ones_like(observed), observed)


# ------------------------------------------------------------- high-rank (Eq. 10)
def _log_det_gram(F64: torch.Tensor, delta: float) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """``½ log det(G + δI)`` of the smaller Gram matrix ``G`` of ``F64`` (..., B, L) (float64),
    its Cholesky factor, and whether ``G = FFᵀ`` (``B ≤ L``) rather than ``FᵀF``."""
    rows = F64.shape[-2] <= F64.shape[-1]
    A, Bt = (F64, F64.transpose(-1, -2)) if rows else (F64.transpose(-1, -2), F64)
    ridge = _ridge(A.shape[-2], delta, A.device)
    gram = torch.baddbmm(ridge, A, Bt) if A.dim() == 3 else A @ Bt + ridge
    chol, _ = torch.linalg.cholesky_ex(gram)  # positive definite: δ > 0 (no status check, no sync)
    return torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1), chol, rows


@functools.lru_cache(maxsize=16)
def _ridge(n: int, delta: float, device: torch.device = torch.device("cpu")) -> torch.Tensor:
    """``δI`` (n × n, float64), made once; never written to."""
    return torch.eye(n, dtype=torch.float64, device=device).mul_(delta)


class _HighRankTerm(torch.autograd.Function):
    """``−λ log det(G + δI)``, ``G`` the smaller Gram matrix of ``F = σ(logits)`` (..., B, L),
    with the closed-form gradient

        ∂/∂F log det(FFᵀ + δI) = 2 (FFᵀ + δI)⁻¹ F     (and 2 F (FᵀF + δI)⁻¹ for the other Gram)

    from the Cholesky factor, times ``σ'(s) = F(1 − F)``: one triangular solve and one
    autograd node instead of autograd through the sigmoid, the factorisation and the
    scaling (at batch 8 the term's cost is per-operation overhead).  The gradient is
    formed in the forward pass (the factor is at hand; the term exists only in training
    losses).  Float64 inside (the Gram matrix's condition
    number reaches L/δ), the input's dtype outside."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, lam: float, delta: float) -> torch.Tensor:
        F64 = torch.sigmoid(logits.to(torch.float64))
        half_logdet, chol, rows = _log_det_gram(F64, delta)
        if rows:
            solved = torch.cholesky_solve(F64, chol)
        else:
            solved = torch.cholesky_solve(F64.transpose(-1, -2), chol).transpose(-1, -2)
        # ½ ∂ log det / ∂ logits = (G + δI)⁻¹F · σ'(s)
        ctx.save_for_backward(solved.mul_(F64 - F64 * F64).to(logits.dtype))
        ctx.lam = lam
        return half_logdet.mul_(-2.0 * lam).to(logits.dtype)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor):
        (half_grad,) = ctx.saved_tensors
        return half_grad * ((-2.0 * ctx.lam) * grad_out)[..., None, None], None, None


class HighRankRegularizer:
    """``R = −λ Σ_i log(σ_i(F)² + δ)``, ``F = σ(logits)`` the batch's (B × L) predicted label
    matrix, per member (Li et al., reconstructed Eq. 10: minus log-det, Fazel et al.'s
    surrogate of the rank, chosen by the paper over the trace norm because it is smooth).

    ``Σ_i log(σ_i² + δ)`` over the ``min(B, L)`` singular values equals
    ``log det(FᵀF + δI)`` up to the constant ``|L − B| log δ``; it is computed as
    ``log det`` of the smaller Gram matrix (``FFᵀ`` or ``FᵀF``) ``+ δI`` by a Cholesky
    factorisation in float64, with the closed-form gradient ``2(FFᵀ + δI)⁻¹F``
    (:class:`_HighRankTerm`) — differentiable everywhere (no singular-vector derivatives)
    and finite for rank-deficient ``F``.

    Defaults (the paper's λ values are in its Fig. 6, whose numbers our copy lacks; its
    prose says mAP is stable for small λ and drops for large λ):

    * ``delta = 1e-3`` (ours): singular values below √δ ≈ 0.03 count as "missing rank"
      and the term's gradient is bounded, ``|∂R/∂σ_i| ≤ λ/√δ``.
    * ``lam = 1e-3``: with δ = 1e-3 the largest possible gradient on a probability is
      ``λ/(4√δ) ≈ 0.008``, about a tenth of a mean-reduced loss's gradient per example at
      batch size 8, and ``2λ/σ ≈ 0.007`` for a typical singular value σ ≈ 0.3: a gentle
      push, in the small-λ range where the paper reports stable results.
    """

    def __init__(self, lam: float = 1e-3, delta: float = 1e-3):
        if lam < 0:
            raise ConfigError(f"high-rank weight lam must be >= 0, got {lam}")
        if not delta > 0:
            raise ConfigError(f"high-rank delta must be > 0, got {delta}")
        self.lam = float(lam)
        self.delta = float(delta)

    def log_det_term(self, probs: torch.Tensor) -> torch.Tensor:
        """``Σ_i log(σ_i(F)² + δ)`` of ``F = probs`` (..., B, L) -> (...), not differentiated."""
        return (2.0 * _log_det_gram(probs.detach().to(torch.float64), self.delta)[0]).to(probs.dtype)

    def __call__(self, logits: torch.Tensor, batch: Batch | None = None, model=None) -> torch.Tensor:
        if self.lam == 0:
            return logits.new_zeros(logits.shape[:-2])
        return _HighRankTerm.apply(logits, self.lam, self.delta)

    def __repr__(self) -> str:
        return f"HighRankRegularizer(lam={self.lam}, delta={self.delta})"


# ------------------------------------------------------------------ training AP
class TrainingAP:
    """Per-member AP of every label on the training set against the observed labels.

    "We use the AP scores of the observed labels" (Li et al. §III-E): the positives are
    the training set's observed positives (the annotator's, never the corrected ones),
    everything else counts as negative.  A label without observed positives has no AP;
    it gets AP = 0 (its predictions are treated as unreliable: no smoothing, no
    correction).  Computed once per epoch (memoised), from the model's probabilities on
    the training set at the end of that epoch.
    """

    def __init__(self):
        self.ap: torch.Tensor | None = None  # (G, L) float32, nan replaced by 0
        self.epoch = 0

    def setup(self, ctx: TrainContext) -> None:
        self.device = ctx.device
        self.positives = ctx.observed.positives().dense()
        if self.ap is not None and self.ap.shape != (ctx.n_members, ctx.n_labels):
            self.ap = None

    def update(self, epoch: int, predict_train: Callable[[], torch.Tensor]) -> torch.Tensor:
        if self.ap is None or self.epoch != epoch:
            probs = predict_train()
            if probs.dim() == 2:
                probs = probs.unsqueeze(0)
            if probs.device.type != "cpu":  # on the device; the CPU path below is unchanged
                pos = torch.from_numpy(self.positives).to(probs.device)
                ap = torch.stack([average_precision_torch(pos, p.detach()) for p in probs])
                self.raw = ap.cpu().numpy()
                self.ap = torch.nan_to_num(ap, nan=0.0).float()
            else:
                aps = [average_precision(self.positives, p.detach().cpu().numpy()) for p in probs]
                self.raw = np.stack(aps)
                self.ap = torch.from_numpy(np.nan_to_num(self.raw, nan=0.0)).float()
            self.epoch = epoch
        return self.ap

    def logs(self) -> dict:
        if self.ap is None:
            return {}
        with np.errstate(all="ignore"):
            return {"train_observed_map": [float(100 * np.nanmean(r)) if np.isfinite(r).any() else math.nan
                                           for r in self.raw]}

    def state_dict(self) -> dict:
        raw = getattr(self, "raw", None)  # tensors only in checkpoints (read with weights_only=True)
        return {"ap": self.ap, "epoch": self.epoch, "raw": None if raw is None else torch.from_numpy(np.array(raw))}

    def load_state_dict(self, state: dict) -> None:
        self.ap, self.epoch = state.get("ap"), state.get("epoch", 0)
        if self.ap is not None:  # a checkpoint's CPU tensor -> the run's device
            self.ap = self.ap.to(getattr(self, "device", None))
        if state.get("raw") is not None:
            raw = state["raw"]
            self.raw = raw.cpu().numpy() if isinstance(raw, torch.Tensor) else np.asarray(raw)


class _UsesTrainingAP(Component):
    #: the AP of every label on the training set, each epoch, from ``predict_train()``
    reads_train_predictions = True
    state_alternative = "opml (without smoothing or label correction) keeps no per-entry state"

    def __init__(self, ap: TrainingAP | None):
        self.ap = ap if ap is not None else TrainingAP()

    def state_bytes(self, ctx: TrainContext) -> int:
        """The observed positives as a dense bool matrix (the training AP's labels)."""
        return ctx.n_train * ctx.n_labels

    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        self.ap.setup(ctx)


# ---------------------------------------------------------- smoothing (Eq. 11)
class APSmoothing(_UsesTrainingAP):
    """Soft targets for unobserved labels: ``ỹ_ij = AP_j^ρ · p_ij`` (Li et al., reconstructed Eq. 11).

    ``p_ij`` is the model's current probability for the entry (``σ`` of the batch's
    logits, detached); ``AP_j`` is :class:`TrainingAP` from the end of the previous
    epoch.  "The larger the AP, the more reliable its prediction score is."

    * Epoch 1 has no AP yet: ``ỹ = 0``, i.e. plain OPML, until the first epoch ends.
    * ``rho = 1`` (default, ours; the paper's value is not in our copy): the identity power,
      smoothing exactly proportional to AP; ``rho > 1`` shrinks the targets of unreliable
      (low-AP) labels further.
    """

    def __init__(self, rho: float = 1.0, ap: TrainingAP | None = None):
        super().__init__(ap)
        if not rho >= 0:
            raise ConfigError(f"smoothing power rho must be >= 0, got {rho}")
        self.rho = float(rho)
        self.weights: torch.Tensor | None = None  # (G, L) = AP^ρ, set at epoch end

    def on_epoch_end(self, epoch: int, predict_train) -> dict:
        ap = self.ap.update(epoch, predict_train)
        self.weights = ap.clamp(0.0, 1.0) ** self.rho
        return self.ap.logs()

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        if self.weights is None:
            return {"soft_targets": torch.zeros_like(logits)}
        w = _per_member(self.weights.to(logits.device, logits.dtype), logits)
        return {"soft_targets": w * torch.sigmoid(logits.detach())}

    def state_dict(self) -> dict:
        return {"weights": self.weights, "ap": self.ap.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.weights = state.get("weights")
        if self.weights is not None and getattr(self, "ctx", None) is not None:
            self.weights = self.weights.to(self.ctx.device)  # not copied to the device every step
        if "ap" in state:
            self.ap.load_state_dict(state["ap"])


# ---------------------------------------------------------- label correction
class APLabelCorrection(_UsesTrainingAP):
    """AP-based label correction (Li et al. §III-E; the formula is the reconstruction's).

    At the end of every epoch ``t ≥ start_epoch``, for each member and label ``j``::

        n_j = min(⌊r · N · (1 − AP_j)⌋, ⌊κ · N_j^obs⌋)

    and the ``n_j`` unobserved training entries of label ``j`` with the highest predicted
    probability become observed positives for the following epochs (fed to the loss as an
    ``observed`` override; the dataset is never modified).  ``N`` = training examples,
    ``N_j^obs`` = observed positives of label j, ``AP_j`` from :class:`TrainingAP`.
    Higher AP → fewer corrections, the paper's stated monotonicity.

    By default (``cumulative=False``) the corrected set is recomputed from the original
    observations each epoch, so ``n_j`` is the total number of corrected entries of label
    j (bounded independently of the number of epochs) and an entry the model stops
    ranking high is un-corrected.  ``cumulative=True`` keeps earlier corrections and
    flips ``n_j`` *more* entries each epoch (a permanent correction like LL-Cp's).  The
    paper's Algorithm ("output: the modified label matrix") fits both readings.

    Defaults (ours; the paper's r and κ are in its Sec. IV, lost from our copy):

    * ``kappa = 1``: at most as many corrected as observed positives per label, i.e. a
      label's positives at most double.  Under single positives label j has about
      ``N_j^obs · (k − 1)`` missing positives (k = positives per example: 1.5 on VOC,
      2.9 on COCO), so κ = 1 never corrects more than the missing positives on average.
    * ``r = 0.05``: a label with training AP 0.5 gets up to 2.5 % of N corrected; the
      expected number of missing positives of a label is ``N (k − 1)/L`` (2.5 % of N on
      VOC and COCO), so the budget is of the right size without exceeding it.
    * ``start_epoch = 1``: corrections are first computed at the end of epoch 1 and used
      from epoch 2 on — the same start as Large-Loss's modifications (Kim et al.).
    """

    def __init__(self, r: float = 0.05, kappa: float = 1.0, start_epoch: int = 1, cumulative: bool = False,
                 ap: TrainingAP | None = None):
        super().__init__(ap)
        if not r >= 0:
            raise ConfigError(f"correction ratio r must be >= 0, got {r}")
        if not kappa >= 0:
            raise ConfigError(f"correction cap kappa must be >= 0, got {kappa}")
        if int(start_epoch) != start_epoch or start_epoch < 1:
            raise ConfigError(f"correction start_epoch must be an integer >= 1, got {start_epoch}")
        self.r, self.kappa, self.start_epoch = float(r), float(kappa), int(start_epoch)
        self.cumulative = bool(cumulative)

    def state_bytes(self, ctx: TrainContext) -> int:
        """The corrections (bool per member and entry), the unobserved mask and the dense
        observations (per entry), besides the training AP's."""
        return super().state_bytes(ctx) + ctx.n_members * ctx.n_train * ctx.n_labels + 2 * ctx.n_train * ctx.n_labels

    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        obs = ctx.observed_tensor()
        self.unobserved = obs == 0  # (N, L)
        self.n_observed = (obs == 1).sum(0)  # (L,)
        self.corrected = torch.zeros((ctx.n_members, ctx.n_train, ctx.n_labels), dtype=torch.bool,
                                     device=ctx.device)

    def budget(self, ap: torch.Tensor) -> torch.Tensor:
        """``n_j`` per member and label, ``(G, L)`` long (before capping at the candidates)."""
        n_train = self.unobserved.shape[0]
        by_ap = torch.floor(self.r * n_train * (1.0 - ap.double().clamp(0.0, 1.0)) + 1e-9)
        cap = torch.floor(self.kappa * self.n_observed.double().to(ap.device) + 1e-9)
        return torch.minimum(by_ap, cap.expand_as(by_ap)).long()

    def on_epoch_end(self, epoch: int, predict_train) -> dict:
        if epoch < self.start_epoch:
            return {}
        ap = self.ap.update(epoch, predict_train)
        probs = predict_train()
        if probs.dim() == 2:
            probs = probs.unsqueeze(0)
        probs = probs.to(self.corrected.device)
        candidates = self.unobserved.unsqueeze(0).expand_as(self.corrected)
        if self.cumulative:
            candidates = candidates & ~self.corrected
        n = torch.minimum(self.budget(ap).to(probs.device), candidates.sum(1))
        flips = top_n_per_column(probs, candidates, n)
        self.corrected = (self.corrected | flips) if self.cumulative else flips
        return {"corrected_positives": self.corrected.sum((1, 2)).tolist(), **self.ap.logs()}

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        rows = _member_rows(self.corrected, batch)
        if rows.device.type == "cpu" and not bool(rows.any()):  # (an accelerator always overrides: no host read)
            return {}
        return {"observed": _override(batch.observed, rows.to(batch.observed.device))}

    def state_dict(self) -> dict:
        return {"corrected": self.corrected.clone(), "ap": self.ap.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.corrected = state["corrected"].to(self.corrected.device)
        if "ap" in state:
            self.ap.load_state_dict(state["ap"])


def top_n_per_column(scores: torch.Tensor, candidates: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """Mask of the ``n[g, j]`` highest ``scores[g, :, j]`` among ``candidates[g, :, j]``.

    ``scores``, ``candidates``: (G, N, L); ``n``: (G, L), at most the number of candidates
    of its column.  One ``topk`` of the largest ``n`` over all columns.
    """
    kmax = int(n.max()) if n.numel() else 0
    out = torch.zeros_like(candidates, dtype=torch.bool)
    if kmax == 0:
        return out
    masked = scores.masked_fill(~candidates, -math.inf)
    idx = masked.topk(kmax, dim=1).indices  # (G, kmax, L)
    keep = torch.arange(kmax, device=n.device)[None, :, None] < n[:, None, :]
    return out.scatter(1, idx, keep)


# ------------------------------------------------------------------ registry
def _opml_params(alpha: float, beta: float) -> dict:
    odds(alpha, "alpha"), odds(beta, "beta")  # validate early, with a clear message
    return {"alpha": alpha, "beta": beta}


@register_method("zlpr", reference="Su et al. 2022 (arXiv 2208.02955)", family="su2022")
def build_zlpr() -> Method:
    """ZLPR: log(1 + Σ_neg e^s) + log(1 + Σ_pos e^{−s}), unobserved labels assumed negative."""
    return Method("zlpr", "zlpr")


@register_method("opml", reference=f"{REFERENCE}, Eq. 3/6", family="li2023")
def build_opml(alpha: float = 0.5, beta: float = 0.5) -> Method:
    """OPML loss (push the observed positive and the top unobserved label apart), a = α/(1−α), b = β/(1−β)."""
    return Method("opml", "opml", loss_params=_opml_params(alpha, beta))


@register_method("opml-hr", reference=f"{REFERENCE}, Eq. 3 + Eq. 10", family="li2023")
def build_opml_hr(alpha: float = 0.5, beta: float = 0.5, lam: float = 1e-3, delta: float = 1e-3) -> Method:
    """OPML + high-rank regulariser (minus log-det of the batch's predicted label matrix); Table IV row 2."""
    return Method("opml-hr", "opml", loss_params=_opml_params(alpha, beta),
                  regularizers=[HighRankRegularizer(lam, delta)])


@register_method("opml-soft", reference=f"{REFERENCE}, Eq. 11", family="li2023")
def build_opml_soft(alpha: float = 0.5, beta: float = 0.5, rho: float = 1.0) -> Method:
    """Soft OPML with AP-adaptive smoothing of the unobserved labels; Table IV row 3."""
    return Method("opml-soft", "opml-soft", loss_params=_opml_params(alpha, beta), components=[APSmoothing(rho)])


@register_method("opml-lc", reference=f"{REFERENCE}, Sec. III-E", family="li2023")
def build_opml_lc(alpha: float = 0.5, beta: float = 0.5, r: float = 0.05, kappa: float = 1.0, start_epoch: int = 1,
                  cumulative: bool = False) -> Method:
    """OPML + AP-based label correction; Table IV row 4."""
    return Method("opml-lc", "opml", loss_params=_opml_params(alpha, beta),
                  components=[APLabelCorrection(r, kappa, start_epoch, cumulative)])


@register_method("opml-sp", reference=f"{REFERENCE}, Table II (OPML-SP)", family="li2023")
def build_opml_sp(alpha: float = 0.5, beta: float = 0.5, lam: float = 1e-3, delta: float = 1e-3, rho: float = 1.0,
                  r: float = 0.05, kappa: float = 1.0, start_epoch: int = 1, cumulative: bool = False) -> Method:
    """OPML-SP: soft OPML + high-rank regulariser + AP-based label correction (Table II)."""
    ap = TrainingAP()  # computed once per epoch, shared by smoothing and correction
    return Method("opml-sp", "opml-soft", loss_params=_opml_params(alpha, beta),
                  components=[APSmoothing(rho, ap=ap), APLabelCorrection(r, kappa, start_epoch, cumulative, ap=ap)],
                  regularizers=[HighRankRegularizer(lam, delta)])
