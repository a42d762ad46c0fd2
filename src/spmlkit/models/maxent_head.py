"""MaxEnt fitted as MaxEnt: its features, its regularised objective, solved to convergence.

The ``maxent-features`` head (:mod:`.maxent_features`) puts MaxEnt's features under the
method's loss and the trainer's gradient steps, stopped early on validation.  This head
(``maxent``) fits what MaxEnt fits (Phillips, Anderson & Schapire 2006, Ecol. Model.
190:231; Phillips & Dudík 2008, Ecography 31:161, eq. 2 and §"Regularization"; Elith et
al. 2011, Divers. Distrib. 17:43): for each label ``l`` with ``m_l`` records, the Gibbs
distribution ``p_λ(x) = exp(λ·f(x)) / Σ_b exp(λ·f(x_b))`` over the background rows ``x_b``
minimising the regularised log loss

    ``L_l(λ) = − λ·f̄_l + log Σ_b exp(λ·f(x_b)) + Σ_j β_jl |λ_j|``

with ``f̄_l`` the mean of the features over the label's records and
``β_jl = β(m_l)·s_jl/√m_l`` (:func:`spmlkit.models.maxent_features.regularisation`, the
same penalties: ``s_jl`` the feature's standard deviation over the label's records).  The
objective is convex; it is minimised by accelerated proximal gradient (FISTA, Beck &
Teboulle 2009, SIAM J. Imaging Sci. 2:183: a gradient step on the smooth part, then soft
thresholding at ``β_j·step``, with backtracking on the step) until the objective changes by
less than :data:`TOLERANCE` (relative) or :data:`MAX_ITERATIONS` steps — a fit, not an
early-stopped descent, so it needs no validation rows and no learning rate.

The features are MaxEnt's (:class:`~spmlkit.models.maxent_features.MaxEntFeatures`: classes by
the number of records, clamped outside the training range) with maxnet's 50 hinge knots per
covariate (:data:`KNOTS`).  The background is every training row (MaxEnt adds the records to the background by
default), at most :data:`MAX_BACKGROUND` of them, evenly spaced (MaxEnt's default draws
10,000 background points, Phillips & Dudík 2008).

**Output scale: MaxEnt's cloglog.**  With ``η(x) = λ·f(x) − log Σ_b exp(λ·f(x_b))`` the
log of MaxEnt's raw output (``p_λ(x)``, summing to 1 over the background) and ``H = −Σ_b
p_λ(x_b) log p_λ(x_b)`` its entropy, the head's probability is MaxEnt's cloglog output
``1 − exp(−exp(η(x) + H))`` (Phillips et al. 2017, Ecography 40:887: the probability of
presence under the assumption that a site of typical suitability, ``p_λ = e^{−H}``, holds the
species with probability 1 − e^{−1} ≈ 0.63 — an assumption about prevalence, which
presence-only data cannot give).  The linear layer holds ``z = η + H``; the head returns the
logit of the cloglog, ``log(expm1(e^z))`` (:func:`cloglog_logit`), so that the sigmoid the
model applies gives the cloglog.  Ranks, AUC and thresholds at a quantile of the records are
those of ``η``.  A label without training records gets λ = 0 and ``e^z`` of half a record
spread over the background (nearly 0 everywhere).

**Training.**  The weights are written when the head is fitted on the training rows
(:meth:`MaxEntHead.fit_inputs`, which the trainer calls before its first epoch, again for a
refit on training + validation rows); an epoch leaves them unchanged: the head's output
passes no gradient to them (:meth:`MaxEntHead.forward`), so the method's loss is computed
(and validation scores the fit) but takes no step, and the trainer runs that one epoch
only (``fitted``; every later epoch would score the same).  Every member of
the stack holds the same fit (it has no learning rate or seed to differ by).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .maxent_features import MAX_RECORD_ROWS, FeatureHead, regularisation

#: hinge knots per covariate: maxnet's default (``maxnet.formula``'s 50 hinge knots, Phillips et
#: al. 2017, Ecography 40:887); the ``maxent-features`` head, trained by gradient steps, uses
#: fewer (:data:`spmlkit.models.maxent_features.HINGE_KNOTS`)
KNOTS = 50
#: background rows at most (evenly spaced beyond it): MaxEnt's default number of background points
MAX_BACKGROUND = 10_000
#: the fit stops when the objective changes by less than this share of its size in a step:
#: stricter than MaxEnt's own default (``convergencethreshold``, 10⁻⁵ of log loss; Phillips
#: et al. 2006), and the ranking no longer moves (at 10⁻⁹ the Bradypus records' validation
#: AUC differs in the fourth decimal)
TOLERANCE = 1e-6
#: proximal gradient steps at most
MAX_ITERATIONS = 5_000
#: (background rows × labels) entries of one block of labels fitted together: the fit's
#: (B, L) float64 arrays (scores, softmax, the backtracking's trial scores) are held for one
#: block at a time, 2²² entries (32 MiB each), so memory does not grow with the labels
BLOCK_ENTRIES = 1 << 22


def soft_threshold(z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``sign(z)·max(|z| − t, 0)``, the proximal map of ``t·|·|``.

    >>> soft_threshold(torch.tensor([-2.0, -0.5, 0.5, 3.0]), torch.tensor(1.0)).tolist()
    [-1.0, -0.0, 0.0, 2.0]
    """
    return torch.sign(z) * torch.clamp(z.abs() - t, min=0.0)


def gibbs_objective(lam: torch.Tensor, mean_records: torch.Tensor, background: torch.Tensor):
    """The smooth part of MaxEnt's objective of every label and its gradient:
    ``(L,)`` ``−λ_l·f̄_l + log Σ_b exp(λ_l·f(x_b))`` and ``(F, L)``
    ``−f̄_l + E_{p_λl}[f]``, for ``lam`` ``(F, L)``, ``mean_records`` ``(L, F)`` and
    ``background`` ``(B, F)``."""
    s = background @ lam                                     # (B, L)
    p = torch.softmax(s, 0)                                  # (B, L)
    grad = background.T @ p - mean_records.T                 # (F, L)
    return _smooth(lam, mean_records, s), grad


def gibbs_value(lam: torch.Tensor, mean_records: torch.Tensor, background: torch.Tensor) -> torch.Tensor:
    """``(L,)`` the smooth part of :func:`gibbs_objective` alone (no gradient: one product
    with the background where the pair needs two)."""
    return _smooth(lam, mean_records, background @ lam)


def _smooth(lam: torch.Tensor, mean_records: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """``−λ_l·f̄_l + log Σ_b exp(s_bl)`` from the background's scores ``s = background @ λ``."""
    return -(mean_records * lam.T).sum(1) + torch.logsumexp(scores, 0)


def label_blocks(n_background: int, n_labels: int, entries: int = BLOCK_ENTRIES) -> list[slice]:
    """Consecutive blocks of labels, each with at most ``entries`` (background × labels)
    entries and at least one label (every label once, in order).

    >>> label_blocks(10, 5, entries=20)
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    >>> label_blocks(10, 0), label_blocks(100, 3, entries=1)
    ([], [slice(0, 1, None), slice(1, 2, None), slice(2, 3, None)])
    """
    width = max(1, int(entries) // max(int(n_background), 1))
    return [slice(start, min(start + width, n_labels)) for start in range(0, n_labels, width)]


def fit_gibbs(mean_records: torch.Tensor, background: torch.Tensor, penalty: torch.Tensor,
              *, tolerance: float = TOLERANCE, max_iterations: int = MAX_ITERATIONS,
              entries: int = BLOCK_ENTRIES) -> torch.Tensor:
    """``(F, L)`` the λ minimising MaxEnt's regularised objective of every label (module
    docstring): ``mean_records`` ``(L, F)``, ``background`` ``(B, F)``, ``penalty`` ``(F, L)``
    (β_jl ≥ 0).  The labels share nothing but the background, so they are fitted in
    blocks of at most ``entries`` (B × labels) entries (:func:`label_blocks`), each block
    by :func:`fit_gibbs_labels`: the same λ as all labels at once, in bounded memory."""
    F, L = penalty.shape
    lam = torch.zeros((F, L), dtype=torch.float64, device=background.device)
    for block in label_blocks(len(background), L, entries):
        lam[:, block] = fit_gibbs_labels(mean_records[block], background, penalty[:, block],
                                         tolerance=tolerance, max_iterations=max_iterations)
    return lam


def fit_gibbs_labels(mean_records: torch.Tensor, background: torch.Tensor, penalty: torch.Tensor,
                     *, tolerance: float = TOLERANCE, max_iterations: int = MAX_ITERATIONS) -> torch.Tensor:
    """``(F, L)`` the λ of :func:`fit_gibbs` for every label of ``penalty`` at once: FISTA
    with a backtracking step per label (each label's own problem, stopping on its own), in
    float64."""
    mean_records, background = mean_records.double(), background.double()
    penalty = penalty.double()
    F, L = penalty.shape
    dev = background.device
    lam = torch.zeros((F, L), dtype=torch.float64, device=dev)
    y = lam.clone()
    t = torch.ones(L, dtype=torch.float64, device=dev)
    lip = torch.ones(L, dtype=torch.float64, device=dev)
    going = torch.ones(L, dtype=torch.bool, device=dev)  # each label stops on its own (as if fitted alone)
    last = _full(lam, mean_records, background, penalty)
    for _ in range(int(max_iterations)):
        fy, gy = gibbs_objective(y, mean_records, background)
        new, smooth = _backtracked(y, fy, gy, lip, mean_records, background, penalty, going)
        t_next = (1.0 + torch.sqrt(1.0 + 4.0 * t * t)) / 2.0
        now = smooth + (penalty * new.abs()).sum(0)
        # FISTA is not monotone: a label whose objective went up restarts its momentum
        # (O'Donoghue & Candès 2015, "Adaptive restart for accelerated gradient schemes")
        restart = now > last
        momentum = torch.where(restart, torch.zeros_like(t), (t - 1.0) / t_next)
        y = torch.where(going, new + momentum * (new - lam), y)
        t = torch.where(restart, torch.ones_like(t), t_next)
        converged = (last - now).abs() <= tolerance * now.abs().clamp(min=1.0)
        lam = torch.where(going, new, lam)
        last = torch.where(going, now, last)
        going &= ~converged
        if not bool(going.any()):
            break
    return lam


def _full(lam, mean_records, background, penalty) -> torch.Tensor:
    """``(L,)`` the whole objective, penalty included."""
    return gibbs_value(lam, mean_records, background) + (penalty * lam.abs()).sum(0)


def _backtracked(y, fy, gy, lip, mean_records, background, penalty, going) -> tuple[torch.Tensor, torch.Tensor]:
    """One proximal gradient step from ``y`` for every label, each label's step ``1/lip``
    halved until the smooth part lies under its quadratic bound (Beck & Teboulle 2009, §4);
    ``lip`` is updated in place (of the labels still ``going`` only).  The step's λ and its
    smooth part ``(L,)``."""
    while True:
        new = soft_threshold(y - gy / lip, penalty / lip)
        d = new - y
        fn = gibbs_value(new, mean_records, background)
        bound = fy + (gy * d).sum(0) + lip / 2.0 * (d * d).sum(0) + 1e-12 * fy.abs().clamp(min=1.0)
        bad = (fn > bound) & going
        if not bool(bad.any()) or bool((lip > 1e12).all()):
            return new, fn
        lip[bad] *= 2.0


def cloglog_offsets(background: torch.Tensor, lam: torch.Tensor, has: torch.Tensor,
                    entries: int = BLOCK_ENTRIES) -> torch.Tensor:
    """``(L,)`` the offset ``H − log Σ_b exp(λ·f(x_b))`` that makes ``λ·f(x) + offset`` the
    cloglog's ``z = η + H`` (module docstring), from the background ``(B, F)`` and ``lam``
    ``(F, L)``, in blocks of labels (:func:`label_blocks`); a label without records (``has``
    false) gets ``log(0.5 / B) − log Σ_b exp(0)``: ``e^z`` of half a record spread over the
    background."""
    offset = torch.empty(lam.shape[1], dtype=torch.float64, device=lam.device)
    none = math.log(0.5 / max(len(background), 1))
    for block in label_blocks(len(background), lam.shape[1], entries):
        scores = background @ lam[:, block]
        lse = torch.logsumexp(scores, 0)
        eta = scores - lse                                     # log p_λ over the background, (B, l)
        entropy = -(torch.exp(eta) * eta).sum(0)               # H, (l,)
        offset[block] = torch.where(has[block], entropy, torch.full_like(entropy, none)) - lse
    return offset


#: ``z`` above it gives a cloglog of 1 in any float (e^30 ≈ 10¹³): clamped there
CLOGLOG_TOP = 30.0
#: ``z`` below it: ``log(expm1(e^z)) = z + e^z/2 + O(e^{2z})`` (e^{−2·20} ≈ 4·10⁻¹⁸, below
#: float64's rounding of z), computed so; ``e^z`` of a z below about −104 (float32) or −745
#: (float64) is 0, and ``log(−expm1(−0))`` would be −inf
CLOGLOG_BOTTOM = -20.0


def cloglog_logit(z: torch.Tensor) -> torch.Tensor:
    """The logit of MaxEnt's cloglog ``1 − exp(−e^z)``: ``log(expm1(u))`` with ``u = e^z``,
    computed as ``u + log(−expm1(−u))`` (no overflow for large u) and, below
    :data:`CLOGLOG_BOTTOM`, as ``z + u/2`` (finite however negative z is; neither branch
    holds an infinity, so no gradient through :func:`torch.where` is NaN).

    >>> z = torch.tensor([-20.0, 0.0, 2.0], dtype=torch.float64)
    >>> torch.allclose(torch.sigmoid(cloglog_logit(z)), 1 - torch.exp(-torch.exp(z)))
    True
    >>> cloglog_logit(torch.tensor([-150.0, -1e6])).tolist()
    [-150.0, -1000000.0]
    """
    u = torch.exp(z.clamp(min=CLOGLOG_BOTTOM, max=CLOGLOG_TOP))
    return torch.where(z < CLOGLOG_BOTTOM, z + 0.5 * torch.exp(z.clamp(max=CLOGLOG_BOTTOM)),
                       u + torch.log(-torch.expm1(-u)))


def evenly_spaced(n: int, at_most: int) -> np.ndarray:
    """``min(n, at_most)`` row numbers evenly spaced over ``0..n−1`` (all of them when ``n ≤ at_most``).

    >>> evenly_spaced(5, 10).tolist(), evenly_spaced(10, 4).tolist()
    ([0, 1, 2, 3, 4], [0, 3, 6, 9])
    """
    if n <= at_most:
        return np.arange(n, dtype=np.int64)
    return np.linspace(0, n - 1, at_most).round().astype(np.int64)


class MaxEntHead(FeatureHead):
    """MaxEnt's features (:class:`~spmlkit.models.maxent_features.MaxEntFeatures`) under
    MaxEnt's own fit (module docstring): the weights are solved for when the head is fitted
    on the training rows and never stepped.

    ``regmult`` multiplies every feature's penalty ``β_jl`` (maxnet's ``regmult``:
    ``reg <- regfun(p, mm) * regmult``, Phillips et al. 2017; Maxent's "regularization
    multiplier", Phillips & Dudík 2008 §"Regularization"): 1 is MaxEnt's default; larger
    values give smoother responses, the setting the field tunes on spatially separate
    validation data (Radosavljevic & Anderson 2014, J. Biogeogr. 41:629; Muscarella et al.
    2014, Methods Ecol. Evol. 5:1198)."""

    #: the weights are written by :meth:`fit_inputs` and never stepped: the trainer runs one
    #: epoch (:func:`spmlkit.training.loop.fitted_epochs`), the others would repeat it
    fitted = True

    def __init__(self, expansion, linear, regmult: float = 1.0):
        super().__init__(expansion, linear)
        if not (float(regmult) > 0 and math.isfinite(float(regmult))):
            raise ValueError(f"regmult must be a positive finite number, got {regmult!r}")
        self.regmult = float(regmult)

    def fit_inputs(self, store, observed) -> None:
        """Fit the expansion (as :class:`FeatureHead`), then MaxEnt's λ of every label on
        the training rows ``store`` and the training observations ``observed`` (sparse;
        a label's records are its +1 entries), written into the linear layer."""
        super().fit_inputs(store, observed)
        ex = self.features
        pos = observed.positives()
        rows_of, labels_of = pos.row_of_entries(), np.asarray(pos.indices, dtype=np.int64)
        n_rows, n_labels = observed.shape
        bg_rows = torch.as_tensor(evenly_spaced(n_rows, MAX_BACKGROUND), dtype=torch.long, device="cpu")
        background = ex.features_unit(store.gather(bg_rows).to("cpu", torch.float32)).double()
        F = ex.n_out
        mean_records = torch.zeros((n_labels, F), dtype=torch.float64, device="cpu")
        penalty = torch.zeros((F, n_labels), dtype=torch.float64, device="cpu")
        counts = np.zeros(n_labels, dtype=np.int64)
        hinge, span = ex.layout()["hinge"], ex.span()  # the expansion's, the same for every label
        order = np.argsort(labels_of, kind="stable")  # each label's records in row order, found in one pass
        labels, starts, sizes = np.unique(labels_of[order], return_index=True, return_counts=True)
        for label, start, size in zip(labels, starts, sizes):
            rows = rows_of[order[start:start + size]]
            counts[label] = rows.size
            rows = rows[evenly_spaced(rows.size, MAX_RECORD_ROWS)]
            rec = ex.features_unit(store.gather(torch.as_tensor(rows, dtype=torch.long, device="cpu"))
                                   .to("cpu", torch.float32))
            mean_records[label] = rec.double().mean(0)
            beta = ex.class_beta(int(counts[label]))
            penalty[:, label] = regularisation(rec, beta, int(counts[label]), hinge, span=span).double() * self.regmult
        lam = torch.zeros((F, n_labels), dtype=torch.float64, device="cpu")  # a label without records: λ = 0
        has = torch.as_tensor(counts > 0, device="cpu")
        on = ex.active[0] > 0  # an inactive feature is 0 on every row: its λ stays 0 (left out of the fit)
        if bool(has.any()) and bool(on.any()):
            lam[torch.nonzero(on)[:, 0][:, None], torch.nonzero(has)[:, 0][None, :]] = fit_gibbs(
                mean_records[has][:, on], background[:, on], penalty[on][:, has])
        self._write(lam, cloglog_offsets(background, lam, has))

    @torch.no_grad()
    def _write(self, lam: torch.Tensor, offset: torch.Tensor) -> None:
        """λ ``(F, L)`` on the unit features and the offsets ``(L,)`` into the linear layer,
        which sees the standardised features ``(u − shift)/scale``: weight λ·scale, bias
        offset + λ·shift."""
        ex, lin = self.features, self.out
        shift, scale = ex.shift[0].double(), ex.scale[0].double()
        weight = (lam * scale[:, None])                       # (F, L)
        bias = offset + (lam * shift[:, None]).sum(0)          # (L,)
        lin.weight.copy_(weight.to(lin.weight.dtype).expand_as(lin.weight))   # (G, F, L)
        lin.bias.copy_(bias.to(lin.bias.dtype).expand_as(lin.bias))           # (G, 1, L)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = cloglog_logit(self.out(self.features(x)))
        if torch.is_grad_enabled():
            # the fit is MaxEnt's: the method's loss reaches the weights with a zero gradient
            # (a step of Adam on a zero gradient is zero), so the epochs leave the fit as it is
            return out.detach() + 0.0 * out
        return out
