"""Label-aware global consistency (Xie et al. 2022, §3.2, Eq. 5–7).

Every (image i, label j) whose weak-view pseudo-label is at least δ — or which is the
observed positive (its pseudo-label is taken as 1) — has a label-wise embedding ``z``
(projected, L2-normalised); two augmented views give two embeddings per entry.  With
``I`` connecting embeddings of the **same label** and ``Ī`` embeddings of **different
labels** (Eq. 5, 6), the loss pulls an anchor towards its same-label embeddings and away
from the other labels' embeddings (Eq. 7)::

    L_LAC = −(1/B) Σ_k Σ_k' I_kk' log [ exp(z_k·z_k'/τ) / Σ_t Ī_kt exp(z_k·z_t/τ) ]

``k`` runs over the current batch's embeddings (anchors); ``k'`` and ``t`` over the
current embeddings and the memory queue of past ones (the matrices become B x (B + K)).
An anchor is never its own positive: its positive for ``k' = k`` is the embedding of the
*other* view of the same entry (the paper's remark below Eq. 7).  ``B`` is the number of
embedding slots of the batch, valid or not (``b · q`` per view), passed as ``n_slots``.

``form="paper"`` is Eq. 7 as printed: the denominator sums over *other-label* embeddings
only and the positives are summed.  ``form="supcon"`` is what the authors' code computes
(the authors' code, xiemk/SPML-LAC): the supervised-contrastive loss of Khosla et al. (2020),
denominator over every other embedding, mean over positives, mean over anchors that have
a positive.  Anchors without a positive (or, for ``paper``, without an other-label
embedding to contrast with) contribute 0.
"""
from __future__ import annotations

import torch

from ..errors import ConfigError

LAC_FORMS = ("paper", "supcon")


def label_aware_contrastive(z: torch.Tensor, labels: torch.Tensor, *, queue_z: torch.Tensor | None = None,
                            queue_labels: torch.Tensor | None = None, temperature: float = 0.5,
                            form: str = "paper", n_slots: int | None = None) -> torch.Tensor:
    """Scalar LAC loss.

    ``z`` ``(n, V, d)``: the ``V`` views' embeddings of the ``n`` valid (image, label)
    entries of the batch (with gradient); ``labels`` ``(n,)`` their label index.
    ``queue_z`` ``(K, V', d)`` / ``queue_labels`` ``(K,)``: past embeddings (no gradient).
    ``n_slots``: the normaliser ``B`` of Eq. 7 (default ``n · V``; ``form="paper"`` only).

    >>> import torch
    >>> z = torch.tensor([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]])  # two entries, two views
    >>> # each anchor: one positive (sim 1) and two other-label embeddings (sim 0): -(1 - log 2)
    >>> round(label_aware_contrastive(z, torch.tensor([0, 1]), temperature=1.0).item(), 4)
    -0.3069
    """
    if form not in LAC_FORMS:
        raise ConfigError(f"LAC form must be one of {', '.join(LAC_FORMS)}, got {form!r}")
    if temperature <= 0:
        raise ConfigError(f"LAC temperature τ must be > 0, got {temperature}")
    n, V, d = z.shape
    anchors = z.reshape(n * V, d)
    a_lab = labels.reshape(-1).repeat_interleave(V)
    contrast, c_lab = anchors, a_lab
    if queue_z is not None and queue_z.numel():
        contrast = torch.cat([anchors, queue_z.detach().reshape(-1, d).to(anchors.device, anchors.dtype)])
        c_lab = torch.cat([a_lab, queue_labels.reshape(-1).repeat_interleave(queue_z.shape[1]).to(a_lab.device)])
    if n == 0:
        return z.sum() * 0.0
    sim = anchors @ contrast.T / temperature  # (nV, C)
    not_self = torch.ones_like(sim, dtype=torch.bool)
    not_self[:, :n * V].fill_diagonal_(False)
    same = a_lab[:, None] == c_lab[None, :]
    pos = same & not_self
    neg = ~same
    neg_inf = torch.finfo(sim.dtype).min
    if form == "paper":
        log_den = torch.logsumexp(sim.masked_fill(~neg, neg_inf), dim=1, keepdim=True)
        ok = neg.any(1, keepdim=True)
        terms = ((sim - log_den) * pos).masked_fill(~ok, 0.0).sum(1)
        return -terms.sum() / float(n_slots if n_slots is not None else n * V)
    log_den = torch.logsumexp(sim.masked_fill(~not_self, neg_inf), dim=1, keepdim=True)
    n_pos = pos.sum(1)
    has = n_pos > 0
    if not has.any():
        return z.sum() * 0.0
    mean_log_prob = ((sim - log_den) * pos).sum(1)[has] / n_pos[has]
    return -mean_log_prob.mean()
