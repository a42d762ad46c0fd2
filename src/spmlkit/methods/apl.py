"""Asymmetric pseudo-labelling (APL), Zhou et al. (2022) §3.3, Algorithm 1, Eq. 6–8.

The component owns the pseudo-labels (never the dataset, never the full labels) and
hands the loss ``em-apl`` a ``pseudo_targets`` tensor for each batch.

Schedule (Algorithm 1)
----------------------
Epochs are 1-based; "the end of epoch e" is after e complete epochs, i.e. the model
``f_e`` of Algorithm 1.  Algorithm 1 starts from ``f_{T_w}`` (``T_w`` warm-up epochs
with the EM loss), generates pseudo-labels with ``f_i`` and trains ``f_{i+1}``, for
``i = T_w, …, T_t − 1``.  Hence a labelling pass runs at the end of every epoch
``e`` with ``T_w ≤ e < T_t``: ``T_t − T_w`` passes, the last one before the final
epoch, and pseudo-labels made at the end of epoch ``e`` are used from epoch ``e + 1``.
The authors' ``main.py`` runs the pass after every epoch ``e ≥ T_w`` including
``e = T_t``; that last pass changes no trained weight (training is over), only the
final pseudo-label state, so it is skipped here (precision figures therefore cover
exactly the pseudo-labels the model was trained with).

Each pass, for each class c, among entries that are unobserved (``Z = 0``) and were
never pseudo-labelled, the ``n_c = ⌊θ/(T_t − T_w) · U_c⌋`` entries with the lowest
predicted probability become negative pseudo-labels (Eq. 6), where ``U_c`` is the
class's number of unobserved entries at the start of training (the authors'
``unlabel_num``).  After all passes at most ``θ·U_c`` entries of class c are
pseudo-labelled.  The soft target is the probability at assignment time, ``s = f``,
frozen thereafter (§3.3); the loss on the entry becomes ``β·BCE(f, s)`` (Eq. 7–8).
With ``soft=False`` the target is the hard 0 (the "w/o soft labels" ablation, Table 3).

Positive pseudo-labels are off by default ("APL directly ignores them", §3.3).  With
``positive=True`` the same rule runs on the *highest* probabilities with its own
proportion ``positive_theta`` (10% in their ablation, Fig. 3b / Table 3), target ``s = f``
(or 1 with ``soft=False``); negatives are chosen first, positives among the rest.

Ties in probability are broken by example index (stable sort), so the selection is
deterministic.  State: ``kind`` (G, N, L) int8 (−1 / +1 / 0), ``target`` (G, N, L)
float32 and ``assigned_epoch`` (G, N, L) int16 (0 = never); the last one lets the
pseudo-label precision at every epoch be recomputed afterwards
(:func:`spmlkit.metrics.pseudo_label_precision_by_epoch`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ..errors import ConfigError
from .base import Batch, Component, TrainContext


def default_warmup(total_epochs: int) -> int:
    """Half of the training epochs (at least 1).

    The authors warm up 5 of 10 epochs on VOC and COCO, 4 on NUS-WIDE and 3 on CUB
    (official code, the authors' code, Correr-Zhou/SPML-AckTheUnknown); ⌊T_t/2⌋ keeps their most common
    ratio for any number of epochs (5 of 10; 12 of the linear setting's 25)."""
    return max(1, total_epochs // 2)


class AsymmetricPseudoLabeler(Component):
    """Zhou et al.'s APL: progressive, per-class, soft negative pseudo-labels (Algorithm 1)."""

    supports_members = True

    def __init__(self, *, theta: float = 0.9, warmup: int | None = None, soft: bool = True,
                 positive: bool = False, positive_theta: float = 0.1):
        if not 0.0 <= theta <= 1.0:
            raise ConfigError(f"em-apl: theta must be in [0, 1], got {theta}")
        if not 0.0 <= positive_theta <= 1.0:
            raise ConfigError(f"em-apl: positive_theta must be in [0, 1], got {positive_theta}")
        if positive and theta + positive_theta > 1.0:
            raise ConfigError(f"em-apl: theta + positive_theta must be <= 1, got {theta} + {positive_theta}")
        if warmup is not None and warmup < 1:
            raise ConfigError(f"em-apl: warmup must be >= 1 epoch (pseudo-labels come from a trained model), "
                              f"got {warmup}")
        self.theta = float(theta)
        self.warmup_param = warmup
        self.soft = bool(soft)
        self.positive = bool(positive)
        self.positive_theta = float(positive_theta)

    state_alternative = "em-apl's pseudo-labels are per entry: em (the same loss without them) keeps none"
    reads_train_predictions = True

    def state_bytes(self, ctx: TrainContext) -> int:
        """Pseudo-label kind (int8), target (float32) and labelling epoch (int16) per member
        and entry, and the unobserved mask (bool) per entry."""
        return 7 * ctx.n_members * ctx.n_train * ctx.n_labels + ctx.n_train * ctx.n_labels

    # ------------------------------------------------------------------ setup
    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        G, N, L = ctx.n_members, ctx.n_train, ctx.n_labels
        self.total_epochs = int(ctx.epochs)
        self.warmup = default_warmup(self.total_epochs) if self.warmup_param is None else int(self.warmup_param)
        Z = ctx.observed_tensor("cpu")
        self.unobserved = (Z == 0)  # (N, L) bool, fixed
        self.initial_unobserved = self.unobserved.sum(0).numpy().astype(np.int64)  # U_c
        self.n_negative = self._per_pass(self.theta)
        self.n_positive = self._per_pass(self.positive_theta) if self.positive else np.zeros(L, dtype=np.int64)
        dev = ctx.device
        self.kind = torch.zeros(G, N, L, dtype=torch.int8, device=dev)
        self.target = torch.zeros(G, N, L, dtype=torch.float32, device=dev)
        self.assigned_epoch = torch.zeros(G, N, L, dtype=torch.int16, device=dev)

    def _per_pass(self, proportion: float) -> np.ndarray:
        """``n_c = ⌊proportion / (T_t − T_w) · U_c⌋`` (0 when no pass is scheduled)."""
        passes = self.total_epochs - self.warmup
        if passes <= 0:
            return np.zeros_like(self.initial_unobserved)
        return np.floor(proportion * self.initial_unobserved.astype(np.float64) / passes).astype(np.int64)

    def labels_epochs(self) -> list[int]:
        """The epochs at whose end a labelling pass runs (``T_w ≤ e < T_t``)."""
        return list(range(self.warmup, self.total_epochs))

    # ------------------------------------------------------------------ hooks
    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        idx = batch.index.to(self.kind.device)
        L = self.kind.shape[-1]
        gather = idx.unsqueeze(-1).expand(*idx.shape, L)
        kind = self.kind.gather(1, gather)
        target = self.target.gather(1, gather)
        pseudo = torch.where(kind != 0, target, torch.full_like(target, float("nan")))
        return {"pseudo_targets": pseudo.to(device=logits.device, dtype=logits.dtype)}

    @torch.no_grad()
    def on_epoch_end(self, epoch: int, predict_train: Callable[[], torch.Tensor]) -> dict:
        G = self.kind.shape[0]
        new_neg = [0] * G
        new_pos = [0] * G
        if self.warmup <= epoch < self.total_epochs:
            probs = predict_train()  # (G, N, L)
            for g in range(G):
                new_neg[g], new_pos[g] = self.assign(g, probs[g], epoch)
        return {"apl_new_negatives": new_neg, "apl_new_positives": new_pos,
                "apl_negatives": (self.kind == -1).sum(dim=(1, 2)).tolist(),
                "apl_positives": (self.kind == 1).sum(dim=(1, 2)).tolist()}

    def assign(self, g: int, probs: torch.Tensor, epoch: int) -> tuple[int, int]:
        """One labelling pass for member ``g`` with training-set probabilities ``probs`` (N, L)."""
        dev = self.kind.device
        probs = probs.to(dev, torch.float32)
        candidates = self.unobserved.to(dev) & (self.kind[g] == 0)
        neg = self._lowest(probs, candidates, self.n_negative)
        self._write(g, neg, -1, probs, epoch)
        n_pos = 0
        if self.positive:
            pos = self._lowest(-probs, candidates & ~neg, self.n_positive)
            self._write(g, pos, 1, probs, epoch)
            n_pos = int(pos.sum())
        return int(neg.sum()), n_pos

    @staticmethod
    def _lowest(key: torch.Tensor, candidates: torch.Tensor, counts: np.ndarray) -> torch.Tensor:
        """Mask of the ``counts[c]`` candidates with the lowest ``key`` in each column c (ties
        by row index).  On the CPU by each column's threshold (:func:`lowest_by_threshold`,
        O(N·L)); elsewhere by one column-wise stable sort (:func:`lowest_by_sort`, its twin)."""
        if key.device.type == "cpu":
            return lowest_by_threshold(key, candidates, counts)
        return lowest_by_sort(key, candidates, counts)

    def _write(self, g: int, mask: torch.Tensor, sign: int, probs: torch.Tensor, epoch: int) -> None:
        self.kind[g][mask] = sign
        if self.soft:
            self.target[g][mask] = probs[mask]
        else:
            self.target[g][mask] = 1.0 if sign > 0 else 0.0
        self.assigned_epoch[g][mask] = epoch

    # ------------------------------------------------------------------ state
    def pseudo_labels(self, g: int | None = None) -> dict:
        """NumPy copies of the state (all members, or member ``g``): ``kind`` (−1/0/+1),
        ``target`` and ``assigned_epoch`` — the input of the precision diagnostics."""
        sl = slice(None) if g is None else g
        return {"kind": self.kind[sl].cpu().numpy(), "target": self.target[sl].cpu().numpy(),
                "assigned_epoch": self.assigned_epoch[sl].cpu().numpy()}

    def state_dict(self) -> dict:
        return {"kind": self.kind.clone(), "target": self.target.clone(),
                "assigned_epoch": self.assigned_epoch.clone(), "warmup": self.warmup,
                "total_epochs": self.total_epochs,
                "initial_unobserved": torch.from_numpy(self.initial_unobserved.copy()),  # tensors, not NumPy
                "theta": self.theta, "positive": self.positive, "positive_theta": self.positive_theta,
                "soft": self.soft}

    def load_state_dict(self, state: dict) -> None:
        if tuple(state["kind"].shape) != tuple(self.kind.shape):
            raise ConfigError(f"APL state has shape {tuple(state['kind'].shape)}, this run {tuple(self.kind.shape)}")
        self.kind.copy_(state["kind"])
        self.target.copy_(state["target"])
        self.assigned_epoch.copy_(state["assigned_epoch"])


def lowest_by_sort(key: torch.Tensor, candidates: torch.Tensor, counts: np.ndarray) -> torch.Tensor:
    """Mask of the ``counts[c]`` candidates with the lowest ``key`` in each column c, ties
    broken by row index: one stable sort of every column (the plain twin of
    :func:`lowest_by_threshold`; fast on a GPU, minutes on a CPU at 16,000 x 5,000)."""
    N, L = key.shape
    masked = torch.where(candidates, key, torch.full_like(key, float("inf")))
    order = torch.sort(masked, dim=0, stable=True).indices  # (N, L)
    n = torch.as_tensor(counts, device=key.device).view(1, L)
    take = torch.arange(N, device=key.device).view(N, 1) < n  # the first n_c ranks of each column
    chosen = torch.zeros(N, L, dtype=torch.bool, device=key.device)
    chosen.scatter_(0, order, take)
    return chosen & candidates  # fewer candidates than n_c: take them all, nothing else


def lowest_by_threshold(key: torch.Tensor, candidates: torch.Tensor, counts: np.ndarray) -> torch.Tensor:
    """The same mask as :func:`lowest_by_sort` without sorting: each column's ``counts[c]``-th
    smallest masked key ``v_c`` by selection (``np.partition``, O(N) a column), then every
    candidate below ``v_c`` and, of those equal to it, the first ones by row index until
    ``counts[c]`` are taken (a cumulative count over the tied columns only).  Keys must not
    be NaN (probabilities are not)."""
    N, L = key.shape
    counts = np.asarray(counts, dtype=np.int64).reshape(L)
    masked = torch.where(candidates, key, torch.full_like(key, float("inf")))
    m = masked.numpy()
    kth = np.full(L, -np.inf, dtype=np.float64)  # (a column taking nothing: nothing is below -inf)
    for c in np.flatnonzero(counts > 0):
        k = int(min(counts[c], N)) - 1
        kth[c] = np.partition(m[:, c], k)[k]
    v = torch.from_numpy(kth).to(device=key.device, dtype=masked.dtype).view(1, L)
    less = masked < v
    tied = masked == v
    need = torch.as_tensor(counts, device=key.device).view(1, L) - less.sum(0, keepdim=True)
    ragged = torch.nonzero((tied.sum(0, keepdim=True) > need).view(L)).view(-1)  # more ties than places
    if ragged.numel():
        sub = tied[:, ragged]
        tied[:, ragged] = sub & (sub.cumsum(0) <= need[:, ragged])
    return (less | tied) & candidates
