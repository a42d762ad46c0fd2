"""MaxEnt fitted as MaxEnt (spmlkit.models.maxent_head): the solver against a hand-computed
optimum, the optimality (KKT) conditions and an independent solver (scipy's L-BFGS-B on the
split λ = λ⁺ − λ⁻), labels fitted together against one at a time, the head's output scale
(MaxEnt's cloglog), and weights that training steps leave unchanged."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from spmlkit.models.heads import build_head
from spmlkit.models.maxent_head import (MAX_BACKGROUND, cloglog_logit, evenly_spaced, fit_gibbs, gibbs_objective,
                                        label_blocks, soft_threshold)
from spmlkit.sparse_labels import as_sparse
from tests.helpers.factories import one_species_bundle

#: the solver's precision is tested at a tolerance far below the default's (which stops where
#: the ranking no longer moves); the default is tested by its objective against the tight fit's
TIGHT = 1e-14


def _problem(seed: int, B: int = 60, F: int = 4, L: int = 3, zero_penalty: bool = False, spread: float = 1.0):
    """Drawn problems; ``spread`` > 1 widens the features so that the step's backtracking
    must shrink the step below 1 (the Lipschitz bound of the smooth part grows as spread²)."""
    rng = np.random.default_rng(seed)
    bg = torch.as_tensor(rng.random((B, F))) * spread
    bg[:, 0] = torch.as_tensor(rng.integers(0, 2, B), dtype=torch.float64)  # a 0/1 feature: ties
    rec = torch.stack([bg[torch.as_tensor(rng.choice(B, size=int(rng.integers(1, 8)), replace=False))].mean(0)
                       for _ in range(L)])
    pen = torch.zeros((F, L), dtype=torch.float64) if zero_penalty else \
        torch.as_tensor(rng.uniform(0.0, 0.08, (F, L)))
    return rec, bg, pen


def _objective(lam, rec, bg, pen):
    return gibbs_objective(lam, rec, bg)[0] + (pen * lam.abs()).sum(0)


def test_one_binary_feature_matches_the_hand_computed_optimum():
    """Background: q = 1/4 of the rows have f = 1; the records' mean is r = 0.6.  Unpenalised,
    MaxEnt matches the moment: e^λ q / (e^λ q + 1 − q) = r, λ = log(r(1 − q) / (q(1 − r))).
    With penalty β the moment is matched within β: E_p[f] = r − β (λ > 0)."""
    bg = torch.tensor([[1.0], [0.0], [0.0], [0.0]])
    rec = torch.tensor([[0.6]])
    q, r = 0.25, 0.6
    lam = fit_gibbs(rec, bg, torch.zeros((1, 1)), tolerance=TIGHT)
    assert float(lam) == pytest.approx(math.log(r * (1 - q) / (q * (1 - r))), abs=1e-5)
    beta = 0.1
    lam = fit_gibbs(rec, bg, torch.full((1, 1), beta), tolerance=TIGHT)
    assert float(lam) == pytest.approx(math.log((r - beta) * (1 - q) / (q * (1 - r + beta))), abs=1e-5)
    lam = fit_gibbs(rec, bg, torch.full((1, 1), 0.5))  # |r − q| = 0.35 < β: λ = 0
    assert float(lam) == 0.0


@pytest.mark.parametrize("seed,spread", [(0, 1.0), (1, 1.0), (2, 1.0), (3, 4.0), (4, 4.0), (5, 8.0)])
def test_the_fit_meets_the_optimality_conditions(seed, spread):
    """KKT of the L1 problem: where λ_j ≠ 0 the smooth gradient is −β_j sign(λ_j); where λ_j = 0
    it lies within [−β_j, β_j]."""
    rec, bg, pen = _problem(seed, spread=spread)
    lam = fit_gibbs(rec, bg, pen, tolerance=TIGHT)
    g = gibbs_objective(lam, rec, bg)[1]
    on = lam != 0
    assert torch.allclose(g[on], -pen[on] * torch.sign(lam[on]), atol=2e-4)
    assert bool((g[~on].abs() <= pen[~on] + 2e-4).all())


@pytest.mark.parametrize("seed", range(4))
def test_the_fit_reaches_an_independent_solvers_minimum(seed):
    """scipy's L-BFGS-B on λ = λ⁺ − λ⁻ ≥ 0 (a smooth problem with bounds), one label at a time:
    the same minimum of the objective."""
    from scipy.optimize import minimize

    rec, bg, pen = _problem(seed, L=2)
    lam = fit_gibbs(rec, bg, pen, tolerance=TIGHT)
    ours = _objective(lam, rec, bg, pen)
    F = bg.shape[1]
    for label in range(rec.shape[0]):
        def f(v, label=label):
            x = torch.as_tensor(v[:F] - v[F:])[:, None]
            value, grad = gibbs_objective(x, rec[label:label + 1], bg)
            p = pen[:, label].numpy()
            g = grad[:, 0].numpy()
            return float(value[0]) + float(p @ (v[:F] + v[F:])), np.concatenate([g + p, -g + p])

        ref = minimize(f, np.zeros(2 * F), jac=True, method="L-BFGS-B", bounds=[(0, None)] * (2 * F),
                       options={"ftol": 1e-14, "gtol": 1e-10, "maxiter": 10_000})
        assert float(ours[label]) <= ref.fun + 1e-7
        assert float(ours[label]) == pytest.approx(ref.fun, abs=1e-6)


def test_the_default_tolerance_stops_near_the_minimum():
    rec, bg, pen = _problem(5)
    tight = _objective(fit_gibbs(rec, bg, pen, tolerance=TIGHT), rec, bg, pen)
    default = _objective(fit_gibbs(rec, bg, pen), rec, bg, pen)
    assert bool((default >= tight - 1e-9).all()) and bool((default - tight <= 1e-4 * tight.abs()).all())


def test_labels_fitted_together_equal_labels_fitted_one_at_a_time():
    """The batched fit (one step size per label) against the plain loop over labels, with a
    label whose penalty keeps every λ at 0 and one without any penalty."""
    rec, bg, pen = _problem(11, L=4, spread=4.0)
    rec[3] = bg[:5].mean(0) * 0.2  # a label whose steps must shrink more than the others' (far from the data)
    pen[:, 1] = 10.0
    pen[:, 2] = 0.0
    together = fit_gibbs(rec, bg, pen, tolerance=TIGHT)
    assert bool((together[:, 1] == 0).all())
    for label in range(4):
        alone = fit_gibbs(rec[label:label + 1], bg, pen[:, label:label + 1], tolerance=TIGHT)
        assert torch.allclose(together[:, label:label + 1], alone, atol=1e-5)


def test_soft_threshold_and_evenly_spaced_edges():
    assert soft_threshold(torch.tensor([0.0, 1.0, -1.0]), torch.tensor(1.0)).abs().sum() == 0
    assert evenly_spaced(0, 5).size == 0
    assert evenly_spaced(1, 1).tolist() == [0]
    rows = evenly_spaced(10_001, MAX_BACKGROUND)
    assert rows.size == MAX_BACKGROUND and rows[0] == 0 and rows[-1] == 10_000 and bool((np.diff(rows) > 0).all())


class _Store:
    def __init__(self, X):
        self.X = torch.as_tensor(X, dtype=torch.float32)

    def chunks(self, rows=None):
        for a in range(0, len(self.X), 7):
            yield self.X[a:a + 7]

    def gather(self, idx):
        return self.X[idx]


def _fitted_head(seed=0, G=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 2)).astype(np.float32)
    Z = np.zeros((120, 3), np.int8)
    Z[X[:, 0] > 0.8, 0] = 1            # a species of high x0
    Z[:25, 1] = 1                      # a species anywhere (rows 0..24)
    Z[Z[:, 0] == 1, 1] = 0             # one record per row
    head = build_head("maxent", 2, 3, [torch.Generator().manual_seed(i) for i in range(G)])
    head.fit_inputs(_Store(X), as_sparse(Z))  # label 2: no records
    return head, X, Z


def test_the_heads_probability_is_maxents_cloglog():
    """sigmoid(output) = 1 − exp(−e^{η + H}) (Phillips et al. 2017): from the probabilities,
    c = −log(1 − q) = p_λ(x)·e^H over the background (every training row here) recovers the
    raw distribution p = c / Σc, whose entropy H' gives Σc = e^{H'}; a label without records
    is nearly 0 everywhere; every member holds the same fit; the species of high x0 ranks its
    records high."""
    head, X, Z = _fitted_head()
    with torch.no_grad():
        out = head(torch.as_tensor(X)).double()
    assert torch.allclose(out[0], out[1], atol=1e-5)  # every member holds the same fit
    q = torch.sigmoid(out[0])
    c = -torch.log1p(-q)
    for label in (0, 1):
        raw = c[:, label] / c[:, label].sum()
        entropy = -(raw * torch.log(raw)).sum()
        assert float(c[:, label].sum()) == pytest.approx(float(torch.exp(entropy)), rel=1e-3)
    assert float(q[:, 2].max()) < 0.01
    s = out[0, :, 0].numpy()
    pos, neg = s[Z[:, 0] == 1], s[Z[:, 0] == 0]
    assert (pos[:, None] > neg[None, :]).mean() > 0.95  # the records above the other rows (AUC)


def test_cloglog_logit_at_the_edges():
    z = torch.tensor([-80.0, -5.0, 0.0, 3.0, 29.0, 200.0], dtype=torch.float64)
    q = torch.sigmoid(cloglog_logit(z))
    assert torch.allclose(q[:5], 1 - torch.exp(-torch.exp(z[:5])), rtol=1e-9, atol=1e-30)
    assert float(q[-1]) == 1.0 and bool(torch.isfinite(cloglog_logit(z)).all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cloglog_logit_stays_finite_however_low_the_suitability(dtype):
    """e^z underflows to 0 below z ≈ −104 (float32) or −745 (float64), where log(expm1(0))
    is −inf: a fitted head's validation scores then held −inf (refused as "scores contain
    NaN or inf") and the training pass's 0·out was NaN.  Below the switch the value is
    z + e^z/2 (the series of log(expm1(e^z))), above it the direct form, continuous at the
    switch; the gradient stays finite through both."""
    from spmlkit.models.maxent_head import CLOGLOG_BOTTOM

    z = torch.tensor([-1e6, -800.0, -150.0, -104.5, -30.0, CLOGLOG_BOTTOM - 1e-3, CLOGLOG_BOTTOM, -19.0, 0.0],
                     dtype=dtype, requires_grad=True)
    out = cloglog_logit(z)
    (0.0 * out).sum().backward()
    assert bool(torch.isfinite(out).all()) and bool(torch.isfinite(z.grad).all())
    z64 = z.detach().double()
    series = z64 + 0.5 * torch.exp(z64)  # log(expm1(e^z)) to O(e^{2z})
    low = z64 < CLOGLOG_BOTTOM
    assert torch.allclose(out.detach().double()[low], series[low], rtol=0, atol=1e-5 if dtype == torch.float32 else 1e-12)
    direct = torch.log(torch.expm1(torch.exp(z64[~low])))
    assert torch.allclose(out.detach().double()[~low], direct, rtol=1e-6, atol=1e-6)
    near = torch.tensor([CLOGLOG_BOTTOM - 1e-4, CLOGLOG_BOTTOM + 1e-4], dtype=torch.float64)
    assert abs(float(cloglog_logit(near).diff())) < 3e-4  # continuous at the switch


def test_training_steps_leave_the_fit_unchanged():
    """The method's loss reaches the weights with a zero gradient: an Adam step changes nothing."""
    from spmlkit.training.optim import StackedAdam

    head, X, Z = _fitted_head()
    before = {k: v.clone() for k, v in head.state_dict().items()}
    opt = StackedAdam(list(head.parameters()), [1e-1, 1e-2])
    for _ in range(3):
        out = head(torch.as_tensor(X))
        loss = torch.nn.functional.binary_cross_entropy_with_logits(out, torch.ones_like(out))
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = head.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_spml_train_with_the_maxent_head_saves_and_predicts_its_fit(tmp_path):
    """``spml train --head maxent`` on presence-only data: the saved model predicts what the
    head fitted (the records of the species of high x0 above the background)."""
    from spmlkit.cli import main
    from spmlkit.data import Bundle
    from spmlkit.practitioner.saved import load_model
    from spmlkit.practitioner.sdm_metrics import auc

    bundle = one_species_bundle(tmp_path / "b", n=300, d=3, n_records=40, shift=3.0)
    out = tmp_path / "run"
    assert main(["train", str(bundle.path), "-m", "full-weighted", "--head", "maxent", "--epochs", "2",
                 "--batch-size", "16", "--no-refit", "-o", str(out)]) == 0
    model = load_model(out)
    b = Bundle(bundle.path)
    s = model.decision_function(np.asarray(b.features("test")))[:, 0]
    z = b.observations("test").dense()[:, 0]
    assert auc(s[z == 1], s[z == 0]) > 0.9
    assert np.array_equal(s, load_model(out).decision_function(np.asarray(b.features("test")))[:, 0])


def test_label_blocks_cover_every_label_once_in_order():
    for B, L, entries in [(1, 1, 1), (7, 13, 20), (10_000, 3, 1 << 22), (5, 9, 1), (3, 0, 10), (4, 5, 4 * 5)]:
        blocks = label_blocks(B, L, entries)
        covered = [i for b in blocks for i in range(L)[b]]
        assert covered == list(range(L))
        assert all(0 < (b.stop - b.start) and (b.stop - b.start) * B <= max(entries, B) for b in blocks)


def test_a_labels_fit_does_not_depend_on_the_other_labels_in_the_head():
    """Each label is its own MaxEnt problem: its penalties from its own records and their
    number (β(m) of the label's m, not of every label's records together), so a label fitted
    beside another equals the label fitted alone on the same rows (both labels have 15–79
    records, so the expansion's classes are the same either way)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 2)).astype(np.float32)
    Z = np.zeros((150, 2), np.int8)
    Z[np.flatnonzero(X[:, 0] > 0.5)[:40], 0] = 1       # 40 records of a species of high x0
    Z[np.flatnonzero((X[:, 1] < 0) & (Z[:, 0] == 0))[:16], 1] = 1   # 16 of one of low x1
    both = build_head("maxent", 2, 2, [torch.Generator().manual_seed(0)])
    both.fit_inputs(_Store(X), as_sparse(Z))
    for label in range(2):
        alone = build_head("maxent", 2, 1, [torch.Generator().manual_seed(0)])
        alone.fit_inputs(_Store(X), as_sparse(Z[:, [label]]))
        assert torch.allclose(both.out.weight[..., label], alone.out.weight[..., 0], rtol=1e-4, atol=1e-6)
        assert torch.allclose(both.out.bias[..., label], alone.out.bias[..., 0], rtol=1e-4, atol=1e-6)


def _fit_on(kind, X, Z):
    head = build_head(kind, X.shape[1], Z.shape[1], [torch.Generator().manual_seed(0)])
    head.fit_inputs(_Store(X), as_sparse(Z))
    return head


@pytest.mark.parametrize("kind, mult", [("maxent-x2", 2.0), ("maxent-x4", 4.0)])
def test_regmult_multiplies_every_penalty_as_maxnet_does(monkeypatch, kind, mult):
    """maxnet's ``reg <- regfun(p, mm) * regmult``: the head registered with a multiplier
    fits exactly what the default head fits when every penalty is multiplied by it (the
    hinge bound and the range floor included)."""
    import spmlkit.models.maxent_head as mh

    _, X, Z = _fitted_head()
    multiplied = _fit_on(kind, X, Z)
    assert multiplied.regmult == mult
    plain = mh.regularisation
    monkeypatch.setattr(mh, "regularisation", lambda *a, **k: plain(*a, **k) * mult)
    by_hand = _fit_on("maxent", X, Z)
    for k, v in by_hand.state_dict().items():
        assert torch.equal(multiplied.state_dict()[k], v), k


def test_a_larger_regmult_shrinks_the_fit_towards_uniform():
    """The L1 penalty grows with the multiplier: the weights' L1 norm falls, and far enough
    up every weight is 0 (every background row equally likely: the raw output uniform)."""
    from spmlkit.models.heads import _maxent_head

    _, X, Z = _fitted_head(seed=3)
    norms = []
    for mult in (1.0, 2.0, 4.0, 1e4):
        head = _maxent_head(2, 1, [torch.Generator().manual_seed(0)], hidden=8, regmult=mult)
        head.fit_inputs(_Store(X), as_sparse(Z[:, :1]))
        norms.append(float(head.out.weight.detach().abs().sum()))
    assert norms[0] > norms[1] > norms[2] > 0 and norms[3] == 0.0


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_a_regmult_that_is_not_positive_and_finite_is_refused(bad):
    from spmlkit.models.heads import _maxent_head

    with pytest.raises(ValueError, match="regmult"):
        _maxent_head(2, 1, [torch.Generator()], hidden=8, regmult=bad)
