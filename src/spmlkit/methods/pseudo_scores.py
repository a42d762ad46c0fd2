"""Vision-language pseudo-label methods with **user-supplied scores**: VLPL (Xing et al.
2023, arXiv:2310.15985) and the GPR loss of AEVLP (Tran et al., ICCV 2025,
arXiv:2508.20381).

Both papers score every (training image, label) pair with CLIP and turn the scores
into pseudo-labels on the unobserved entries.  No vision-language model can be
downloaded here, so the scores come from the user: ``pseudo_scores`` (CLI
``--pseudo-scores FILE``) names an ``N × L`` ``.npy`` array of floats aligned with the
bundle's **training rows** (``<bundle>/train/index.npy`` gives each row's position in
the source split) and label columns — e.g. CLIP's label probabilities, or any other
model's.  The file is read with ``allow_pickle=False`` and checked for shape and
finite values.

Pseudo-labels (:class:`ExternalPseudoLabels`), per training row, on unobserved entries:

* **positive** where the score is ``≥ threshold`` and among the row's ``top_k`` highest
  (``top_k=None``: no limit) — VLPL uses the threshold alone (θ = 0.3 on CLIP's
  label-softmax scores, temperature 0.01); AEVLP's DAMP keeps the top 3 above 0.5;
* **negative** for the row's ``⌊negative_ratio·L⌋`` lowest scores (off by default: VLPL's
  released configurations set β⁻ = 0, and AEVLP's released code writes 0 — "unknown" —
  there, never −1);
* unknown otherwise.

They are computed once in :meth:`ExternalPseudoLabels.setup` (deterministic; ties in
the top-k broken by label index) and never change.  DAMP's *dynamic* part (re-scoring
crops of the image as training proceeds) needs the vision-language model and is left
out (docs/newer_methods.md).

Without ``pseudo_scores`` the methods run with no pseudo-labels (a warning says so):
VLPL is then the EM loss and GPR the GR-Loss with AEVLP's schedule and the EPR term.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch

from ..errors import ConfigError, DataFormatError
from ..io import load_numpy
from .base import Batch, Component, Method, TrainContext, register_method, resolve_k
from .generalized_robust import gr_schedule

FAMILY = "vision-language"
VLPL_REF = "Xing et al. 2023, VLPL (arXiv:2310.15985)"
GPR_REF = "Tran et al. 2025 (ICCV), AEVLP / GPR-Loss (arXiv:2508.20381)"


def load_pseudo_scores(path: str | Path, n_train: int, n_labels: int) -> np.ndarray:
    """The ``(n_train, n_labels)`` float64 score array in ``path`` (``.npy``, no pickles), or a
    :class:`ConfigError` naming the file and what was expected."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"pseudo-scores file {p} not found")

    try:
        S = load_numpy(p)  # one-line errors (no numpy allow_pickle hint), never unpickles
    except DataFormatError as exc:
        why = str(exc)[len(str(p)) + 2:] if str(exc).startswith(f"{p}: ") else str(exc)
        raise ConfigError(f"{p}: not a readable .npy array of real numbers ({why})") from None
    if not isinstance(S, np.ndarray):  # an .npz archive
        raise ConfigError(f"{p}: an .npz archive; pseudo-scores must be one N x L .npy array of real numbers")
    if S.ndim != 2 or S.shape != (n_train, n_labels):
        raise ConfigError(f"{p}: pseudo-scores have shape {S.shape}; expected ({n_train}, {n_labels}) = "
                          "(training rows of the bundle, labels)")
    if S.dtype.kind not in "biuf":  # complex scores would lose their imaginary part silently
        raise ConfigError(f"{p}: pseudo-scores must be real numbers, got dtype {S.dtype}")
    S = S.astype(np.float64)
    bad = ~np.isfinite(S)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ConfigError(f"{p}: non-finite pseudo-score at training row {r + 1}, label column {c + 1}")
    out = (S < 0) | (S > 1)  # probabilities (a vision-language model's), compared with a threshold in [0, 1]
    if out.any():
        r, c = np.argwhere(out)[0]
        raise ConfigError(f"{p}: pseudo-score {S[r, c]:g} at training row {r + 1}, label column {c + 1} is not a "
                          "probability; pseudo-scores must lie in [0, 1] (apply a sigmoid or softmax to logits first)")
    return S


def pseudo_labels_from_scores(S: np.ndarray, observed: np.ndarray, *, threshold: float, top_k: int | None,
                              negative_ratio: float) -> np.ndarray:
    """``(N, L)`` int8 pseudo-labels (+1 / −1 / 0) from scores ``S``; observed entries get 0.

    >>> import numpy as np
    >>> S = np.array([[0.9, 0.6, 0.55, 0.1]])
    >>> pseudo_labels_from_scores(S, np.zeros((1, 4)), threshold=0.5, top_k=2, negative_ratio=0.25).tolist()
    [[1, 1, 0, -1]]
    """
    S = np.asarray(S, dtype=np.float64)
    N, L = S.shape
    order = np.argsort(-S, axis=1, kind="stable")  # highest first, ties by label index
    rank = np.empty_like(order)
    rank[np.arange(N)[:, None], order] = np.arange(L)[None, :]
    pos = S >= threshold
    if top_k is not None:
        pos &= rank < int(top_k)
    n_neg = int(np.floor(negative_ratio * L))
    neg = (rank >= L - n_neg) & ~pos if n_neg > 0 else np.zeros_like(pos)
    out = np.zeros((N, L), dtype=np.int8)
    out[pos] = 1
    out[neg] = -1
    out[np.asarray(observed) != 0] = 0
    return out


class ExternalPseudoLabels(Component):
    """Pseudo-labels from user-supplied scores (see the module docstring), handed to the
    loss as ``pseudo_labels`` ``(G, B, L)`` for the batch's rows.  Fixed for the whole
    run; no state to checkpoint (they are recomputed from the file on setup)."""

    supports_members = True
    supports_compaction = True  # the same labels for every member

    def __init__(self, path: str | None, *, threshold: float, top_k: int | None, negative_ratio: float):
        if top_k is not None and int(top_k) < 1:
            raise ConfigError(f"top_k must be >= 1 or None, got {top_k}")
        if not 0.0 <= float(negative_ratio) < 1.0:
            raise ConfigError(f"negative_ratio must be in [0, 1), got {negative_ratio}")
        self.path = None if path in (None, "") else str(path)
        self.threshold = float(threshold)
        self.top_k = None if top_k is None else int(top_k)
        self.negative_ratio = float(negative_ratio)
        self.labels: torch.Tensor | None = None

    state_alternative = "pseudo-scores are an (N, L) input by nature: score and train on a subset"

    def state_bytes(self, ctx: TrainContext) -> int:
        """The pseudo-labels (int8), the scores read from the file (float32) and the dense
        observations they are combined with (int8), per entry."""
        return 6 * ctx.n_train * ctx.n_labels

    def setup(self, ctx: TrainContext) -> None:
        super().setup(ctx)
        Z = ctx.observed.dense()
        if self.path is None:
            warnings.warn("no pseudo-scores given (--pseudo-scores FILE): training without pseudo-labels", stacklevel=2)
            P = np.zeros(Z.shape, dtype=np.int8)
        else:
            S = load_pseudo_scores(self.path, ctx.n_train, ctx.n_labels)
            P = pseudo_labels_from_scores(S, Z, threshold=self.threshold, top_k=self.top_k,
                                          negative_ratio=self.negative_ratio)
        self.labels = torch.from_numpy(P).to(ctx.device)

    def batch_inputs(self, batch: Batch, logits: torch.Tensor) -> dict:
        idx = batch.index.to(self.labels.device)
        return {"pseudo_labels": self.labels[idx].to(logits.device)}

    def on_epoch_end(self, epoch: int, predict_train) -> dict:
        return {"pseudo_positives": int((self.labels == 1).sum()), "pseudo_negatives": int((self.labels == -1).sum())}


@register_method("vlpl", reference=f"{VLPL_REF}, §3", family=FAMILY, in_default_bench=False)
def build_vlpl(pseudo_scores: str | None = None, threshold: float = 0.3, top_k: int | None = None,
               negative_ratio: float = 0.0, alpha: float = 0.1, beta_pos: float = 0.7, beta_neg: float = 0.0,
               epsilon: float = 0.1) -> Method:
    """VLPL: EM loss on unknown labels, smoothed BCE (β⁺ = 0.7) on pseudo-positives from user scores ≥ θ = 0.3."""
    return Method("vlpl", "vlpl",
                  loss_params={"alpha": alpha, "beta_pos": beta_pos, "beta_neg": beta_neg, "epsilon": epsilon},
                  components=[ExternalPseudoLabels(pseudo_scores, threshold=threshold, top_k=top_k,
                                                   negative_ratio=negative_ratio)])


@register_method("gpr", reference=f"{GPR_REF}, §3.2", family=FAMILY, in_default_bench=False)
def build_gpr(pseudo_scores: str | None = None, threshold: float = 0.5, top_k: int | None = 3,
              negative_ratio: float = 0.0, q2: float = 0.01, q3: float = 1.0, lam1: float = 0.7, lam2: float = 0.5,
              rho: float = 0.9, reg: float = 0.001, k: float | None = None, w0: float = 0.0, w_max: float = 10.0,
              b0: float = -2.0, b_max: float = -8.0, mu0: float = 0.5, sigma0: float = 2.0, mu_max: float = 0.8,
              sigma_max: float = 0.5) -> Method:
    """GPR-Loss (AEVLP): GR-Loss + clipped-weight smoothed pseudo-positives (top 3 ≥ 0.5) + EPR term; COCO defaults."""
    base_resolve = resolve_k("gpr")

    def resolve(ctx: TrainContext, params: dict) -> dict:
        return base_resolve(ctx, params) if params.get("reg") else params

    return Method(
        "gpr", "gpr", loss_params={"q2": q2, "q3": q3, "lam1": lam1, "lam2": lam2, "rho": rho, "reg": reg, "k": k},
        resolve=resolve,
        components=[gr_schedule(w0, w_max, b0, b_max, mu0, sigma0, mu_max, sigma_max),
                    ExternalPseudoLabels(pseudo_scores, threshold=threshold, top_k=top_k,
                                         negative_ratio=negative_ratio)])
