"""MaxEnt's feature classes as a fixed expansion of the covariates, fitted on the training rows.

MaxEnt (Phillips, Anderson & Schapire 2006, Ecol. Model. 190:231; Phillips & Dudík 2008,
Ecography 31:161; Elith et al. 2011, Divers. Distrib. 17:43, "A statistical explanation of
MaxEnt for ecologists") fits a log-linear model of the covariates'
*features*: transformations of each covariate, each scaled to [0, 1] over the training
range.  With ``u = (x − min) / (max − min)`` a covariate scaled over its training range
(min and max over the training rows, records and background):

=============  =========================================  ===========================
class          feature(s) of a covariate ``u``             from (records, Phillips &
                                                           Dudík 2008 "auto features")
=============  =========================================  ===========================
linear         ``u``                                      always
quadratic      ``u²``                                     10
hinge          ``max(0, (u − t)/(1 − t))`` (forward) and   15
               ``max(0, (t − u)/t)`` (reverse) at each
               knot ``t`` of ``HINGE_KNOTS`` evenly
               spaced inside the range
product        ``u_i · u_j`` for every pair of covariates  80
=============  =========================================  ===========================

A column with two values on the training rows (a categorical covariate's one-hot
indicator, a 0/1 layer) is an indicator feature: linear only (a categorical covariate gives
one indicator per class in MaxEnt), no quadratic, hinge or product.  Threshold features are
left out, as MaxEnt 3.4 leaves them out by default (Phillips et al. 2017, Ecography
40:887).  At prediction a covariate outside the training range is **clamped** to it
(MaxEnt's default clamping; Elith et al. 2011): the features stay in [0, 1] and the map
does not extrapolate a hinge or a square beyond the data.

**Regularisation and fit.**  MaxEnt minimises the log loss plus ``Σ_j β_j |λ_j|`` with
``β_j = β(m)·s_j/√m`` (Phillips & Dudík 2008; ``s_j`` the feature's standard deviation at
the ``m`` records, ``β(m)`` a per-class table, :data:`BETA`), bounded from below as maxnet
bounds it (Phillips et al. 2017: a hinge at least ``½·max(s_j, 1/√m)/√m``, every feature at
least 0.001 of its range; :func:`regularisation`).  The
head (:class:`FeatureHead`) is a linear layer on the features; its weights start at 0 (MaxEnt
starts from λ = 0, the uniform distribution) and the gradient of the same L1 term is added
to the loss's at every step (a subgradient, :meth:`FeatureHead.forward`), the loss being the
method's (for one species, presence against background: MaxEnt as a logistic model, Fithian
& Hastie 2013).  So that one learning rate suits every feature, the layer sees each feature
standardised over the training rows (``(f − mean) / sd``: the same linear model,
reparameterised; the penalty is carried over exactly, ``β_j / sd_j`` on the standardised
weight, since λ_j = w_j / sd_j).

The state is plain floating-point tensors (saved with the head's weights; no pickle), each
with the member axis first (every member holds the same values, so a member's state is a
slice of the stack like every other head's): ``low`` / ``high`` ``(G, D)`` the training
range; ``active`` ``(G, F)`` 1 for the features in use (the classes above by the number of
records, indicator columns linear only); ``shift`` / ``scale`` ``(G, F)`` the features' mean
and standard deviation over the training rows; ``penalty`` ``(G, F)`` the L1 weight of each
standardised feature.  The head adds ``n_features`` ``(G,)``, the input width.  Before
:meth:`MaxEntFeatures.fit` every covariate's range is ``[-2, 2]`` (standard scores), every
class is in use and nothing is penalised — a model that is trained is always fitted first
(:meth:`FeatureHead.fit_inputs`, which the linear trainer calls with its training rows: the
refit's are training + validation).

The inputs are the standardised covariates the heads see (standardisation is monotone
per covariate, so ranges, knots at evenly spaced fractions of the range and clamping are
the same as on the raw covariates).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import torch
from torch import nn

from ..errors import ConfigError

#: hinge knots per covariate: evenly spaced inside the training range (forward and reverse
#: hinge at each: 2 × HINGE_KNOTS features); maxnet's default is 50 — fewer features for a
#: member trained by gradient steps on about a hundred records
HINGE_KNOTS = 10
#: Phillips & Dudík (2008)'s "auto features": the number of records from which each class is used
CLASS_FROM = {"linear": 0, "quadratic": 10, "hinge": 15, "product": 80}
#: MaxEnt's regularisation per class, ``β(n)`` interpolated linearly in the number of records ``n``
#: (constant beyond the ends): the defaults of Phillips et al. (2017, Ecography 40:887; the
#: maxnet package's ``maxnet.default.regularization``), which the Java MaxEnt also uses
#: (Phillips & Dudík 2008, Fig. 2).  Linear, quadratic and product features share one table,
#: the one of the richest class in use.
BETA = {"linear": ((0, 10, 30, 100), (1.0, 1.0, 0.2, 0.05)),
        "quadratic": ((0, 10, 17, 30, 100), (1.3, 0.8, 0.5, 0.25, 0.05)),
        "product": ((0, 10, 17, 30, 100), (2.6, 1.6, 0.9, 0.55, 0.05)),
        "hinge": ((0, 1), (0.5, 0.5)),
        "indicator": ((0, 10, 17), (0.65, 0.5, 0.25))}
#: input columns at most: the product class grows with D²; the expansion is for covariate tables
MAX_INPUTS = 100
#: records read for the penalties' standard deviations at most (evenly spaced beyond it)
MAX_RECORD_ROWS = 100_000
#: the range of an unfitted expansion (standard scores)
UNFITTED_RANGE = 2.0


def feature_classes(n_records: int) -> tuple[str, ...]:
    """The feature classes MaxEnt uses with ``n_records`` presence records (Phillips &
    Dudík 2008's defaults, :data:`CLASS_FROM`).

    >>> feature_classes(9), feature_classes(14), feature_classes(79)[-1], feature_classes(80)[-1]
    (('linear',), ('linear', 'quadratic'), 'hinge', 'product')
    """
    return tuple(c for c, low in CLASS_FROM.items() if n_records >= low)


class MaxEntFeatures(nn.Module):
    """``(..., D)`` covariates -> ``(..., F)`` MaxEnt features in [0, 1] (inactive ones 0),
    ``F = D (linear) + D (quadratic) + 2·K·D (hinge) + D(D−1)/2 (product)``, in that order
    (hinge: covariate-major, forward at knots 1..K, then reverse at knots 1..K)."""

    def __init__(self, n_inputs: int, n_members: int = 1, n_knots: int = HINGE_KNOTS):
        super().__init__()
        D, K = int(n_inputs), int(n_knots)
        if D > MAX_INPUTS:
            raise ConfigError(f"head 'maxent-features': {D} input columns; it expands each covariate and every pair "
                              f"of covariates, for covariate tables of at most {MAX_INPUTS} columns")
        self.n_inputs, self.n_knots = D, K
        i, j = torch.triu_indices(D, D, 1, device="cpu")
        self._pairs = (i, j)  # plain attributes (derived from D), not state
        self._knots = torch.arange(1, K + 1, dtype=torch.float32, device="cpu") / (K + 1)
        self.n_out = 2 * D + 2 * K * D + int(i.numel())
        G = int(n_members)
        self.register_buffer("low", torch.full((G, D), -UNFITTED_RANGE, device="cpu"))
        self.register_buffer("high", torch.full((G, D), UNFITTED_RANGE, device="cpu"))
        self.register_buffer("active", torch.ones((G, self.n_out), device="cpu"))
        self.register_buffer("penalty", torch.zeros((G, self.n_out), device="cpu"))
        self.register_buffer("shift", torch.zeros((G, self.n_out), device="cpu"))
        self.register_buffer("scale", torch.ones((G, self.n_out), device="cpu"))

    def layout(self) -> dict[str, slice]:
        """Where each class sits in the output: ``{"linear": slice, ...}``."""
        D, K = self.n_inputs, self.n_knots
        ends = np.cumsum([D, D, 2 * K * D, self.n_out - 2 * D - 2 * K * D])
        return {c: slice(int(a), int(b)) for c, a, b in zip(CLASS_FROM, [0, *ends[:-1]], ends)}

    @torch.no_grad()
    def fit(self, chunks, records: torch.Tensor, n_records: int) -> None:
        """The training range, the classes in use and the regularisation, from ``chunks()``
        (a callable giving the training rows in ``(n, D)`` blocks; called twice), the
        records' rows ``records`` ``(m, D)`` and the number of records ``n_records``."""
        low = high = None
        for x in chunks():
            x = x.detach().to("cpu", torch.float64)
            if len(x):
                lo, hi = x.min(0).values, x.max(0).values
                low = lo if low is None else torch.minimum(low, lo)
                high = hi if high is None else torch.maximum(high, hi)
        if low is None:
            raise ConfigError("head 'maxent-features': no training rows to fit the features' ranges on")
        between = torch.zeros(self.n_inputs, dtype=torch.bool, device="cpu")
        for x in chunks():  # a column is an indicator when every value is its min or its max
            x = x.detach().to("cpu", torch.float64)
            between |= ((x != low) & (x != high)).any(0)
        constant = high <= low
        indicator = ~between & ~constant
        continuous = between & ~constant
        classes = feature_classes(int(n_records))
        self.low.copy_(low.float().expand_as(self.low))
        self.high.copy_(torch.where(constant, low + 1.0, high).float().expand_as(self.high))
        self.active.copy_(self._mask(classes, continuous, indicator).expand_as(self.active))
        shift, sd, span = self._moments(chunks)  # (of the unit features: they do not read shift or scale)
        self.shift.copy_(shift.expand_as(self.shift))
        self.scale.copy_(torch.where(sd > 1e-6, sd, torch.ones_like(sd)).expand_as(self.scale))
        # plain attributes, read by a fit of the weights only: the classes, the features' ranges
        self._fitted_classes, self._fitted_span = (classes, indicator), span
        beta = self._beta(classes, indicator, int(n_records))
        unit = self.features_unit(records.detach().to("cpu", torch.float32))
        reg = regularisation(unit, beta, int(n_records), self.layout()["hinge"], span=span)
        self.penalty.copy_((reg / self.scale[0]).expand_as(self.penalty))  # λ_j = w_j / σ_j

    def class_beta(self, n_records: int) -> torch.Tensor:
        """``(F,)`` the class regularisation ``β(n)`` of every feature for a label with
        ``n_records`` records, with the classes this expansion was fitted with."""
        if not hasattr(self, "_fitted_classes"):
            raise ConfigError("head 'maxent-features': the expansion is not fitted on training rows yet")
        return self._beta(*self._fitted_classes, int(n_records))

    def span(self) -> torch.Tensor:
        """``(F,)`` each feature's range (max − min) over the training rows it was fitted on."""
        if not hasattr(self, "_fitted_span"):
            raise ConfigError("head 'maxent-features': the expansion is not fitted on training rows yet")
        return self._fitted_span

    def _moments(self, chunks) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mean, standard deviation and range (max − min) of the unit features over the
        training rows (float64 sums)."""
        s = ss = low = high = None
        n = 0
        for x in chunks():
            f = self.features_unit(x.detach().to("cpu", torch.float32)).double()
            if not len(f):
                continue
            s = f.sum(0) if s is None else s + f.sum(0)
            ss = (f * f).sum(0) if ss is None else ss + (f * f).sum(0)
            low = f.min(0).values if low is None else torch.minimum(low, f.min(0).values)
            high = f.max(0).values if high is None else torch.maximum(high, f.max(0).values)
            n += len(f)
        mean = s / n
        return mean.float(), (ss / n - mean * mean).clamp(min=0).sqrt().float(), (high - low).float()

    def _beta(self, classes, indicator: torch.Tensor, n: int) -> torch.Tensor:
        """``(F,)`` the class regularisation ``β(n)`` of every feature (:data:`BETA`)."""
        lqp = "product" if "product" in classes else "quadratic" if "quadratic" in classes else "linear"
        at = {c: float(np.interp(n, *BETA[c])) for c in BETA}
        out = torch.full((self.n_out,), at[lqp], device="cpu")
        out[self.layout()["hinge"]] = at["hinge"]
        out[:self.n_inputs][indicator] = at["indicator"]
        return out

    def _mask(self, classes, continuous: torch.Tensor, indicator: torch.Tensor) -> torch.Tensor:
        """``(F,)`` 1 for the features in use."""
        K, (i, j) = self.n_knots, self._pairs
        per_class = {"linear": (continuous | indicator), "quadratic": continuous,
                     "hinge": continuous.repeat_interleave(2 * K), "product": continuous[i] & continuous[j]}
        return torch.cat([per_class[c] & (c in classes) for c in CLASS_FROM]).float()

    def features_unit(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., F)`` the features in MaxEnt's [0, 1] scale (inactive ones 0)."""
        low, high, active = self.low[0], self.high[0], self.active[0]
        u = ((x - low) / (high - low)).clamp(0.0, 1.0)  # MaxEnt's clamping outside the training range
        t = self._knots.to(x.device)
        uk = u.unsqueeze(-1)
        forward = torch.relu(uk - t) / (1 - t)
        reverse = torch.relu(t - uk) / t
        hinge = torch.cat([forward, reverse], -1).flatten(-2)
        i, j = (p.to(x.device) for p in self._pairs)
        product = u[..., i] * u[..., j]
        return torch.cat([u, u * u, hinge, product], -1) * active

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., F)`` the features standardised over the training rows (inactive ones 0)."""
        return (self.features_unit(x) - self.shift[0]) / self.scale[0] * self.active[0]


def regularisation(features: torch.Tensor, beta: torch.Tensor, n: int, hinge: slice, *,
                   span: torch.Tensor) -> torch.Tensor:
    """``(F,)`` MaxEnt's L1 regularisation of each feature from its values at the records
    ``features`` ``(m, F)``: Phillips & Dudík 2008's ``β_j = β·s[f_j]/√m`` (``s`` the
    standard deviation of the feature over the ``m`` records), as Phillips et al. 2017's
    maxnet (``maxnet.default.regularization``) bounds it from below — the **largest** of

    * ``β·s_j/√m``;
    * for a hinge, ``½·max(s_j, 1/√m)/√m``, so that a hinge active at a few records is not
      nearly free;
    * ``0.001·span_j``, ``span`` ``(F,)`` the feature's range (max − min) over the training
      rows, so that a feature constant at the records keeps a finite weight.

    >>> f = torch.tensor([[0.0, 1.0], [1.0, 1.0]])           # sd 0.7071 and 0
    >>> [round(v, 4) for v in regularisation(f, torch.tensor([1.0, 0.5]), 4, slice(1, 2),
    ...                                      span=torch.ones(2)).tolist()]
    [0.3536, 0.125]
    """
    m = max(int(n), 1)
    sd = features.double().std(0) if len(features) > 1 else torch.zeros(features.shape[1], dtype=torch.float64)
    sd = torch.nan_to_num(sd)
    out = torch.maximum(beta.double() * sd / math.sqrt(m), 0.001 * span.double())
    out[hinge] = torch.maximum(out[hinge], 0.5 * sd[hinge].clamp(min=1.0 / math.sqrt(m)) / math.sqrt(m))
    return out.float()


class FeatureHead(nn.Module):
    """``G`` linear layers on the MaxEnt features of the inputs: ``(B, D)`` or ``(G, B, D)``
    -> ``(G, B, L)``.  ``linear`` is a stacked linear layer from the expansion's ``n_out``
    features (:class:`spmlkit.models.heads.StackedLinear`, built by the head's registration)."""

    def __init__(self, expansion: MaxEntFeatures, linear: nn.Module):
        super().__init__()
        self.features = expansion
        self.out = linear
        self._hooked = [None]
        with torch.no_grad():  # MaxEnt starts from λ = 0 (the uniform distribution)
            for p in linear.parameters():
                p.zero_()
        # the input width, as the tree head records it (a saved model reads it there)
        self.register_buffer("n_features", torch.full((linear.n_members,), float(expansion.n_inputs), device="cpu"))

    @property
    def n_members(self) -> int:
        return self.out.n_members

    def fit_inputs(self, store, observed) -> None:
        """Fit the expansion on the training rows (``store.chunks()``, standardised; the
        records' rows by ``store.gather``) with the classes and regularisation of the number
        of records: the fewest of any label that has records (``observed``: the training
        observations, sparse) — one species: its records."""
        counts = np.asarray(observed.col_counts(1))
        counts = counts[counts > 0]
        rows = np.flatnonzero(np.asarray(observed.row_counts(1)) > 0)
        if rows.size > MAX_RECORD_ROWS:  # the records' standard deviations from evenly spaced ones
            rows = rows[np.linspace(0, rows.size - 1, MAX_RECORD_ROWS).astype(np.int64)]
        records = store.gather(torch.as_tensor(rows, dtype=torch.long, device="cpu")) if rows.size else \
            torch.zeros((0, self.features.n_inputs))
        self.features.fit(store.chunks, records, int(counts.min()) if counts.size else 0)

    def _l1(self, w: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        """The gradient of ``Σ_j β_j |λ_j|`` added to the loss's (a subgradient: sign(0) = 0)."""
        return grad + self.features.penalty[0].to(grad)[None, :, None] * torch.sign(w.detach())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.out.weight
        if torch.is_grad_enabled() and w.requires_grad and self._hooked[0] is not w:
            # MaxEnt's L1 regularisation, on the same per-record scale as the loss (a mean over the
            # records of the batch): added to the weights' gradient once per backward pass (a leaf's
            # hook sees its whole gradient); hooked again when the member stack replaces the parameter
            w.register_hook(functools.partial(self._l1, w))
            self._hooked[0] = w  # (in a list: a Parameter attribute would be registered as one)
        return self.out(self.features(x))
