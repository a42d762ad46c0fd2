"""OPML methods (Li et al. 2023): high-rank regulariser, AP smoothing, AP label correction, registry,
members, resume and end-to-end training."""
import math

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.losses.opml import opml
from spmlkit.methods import Batch, build_method, get_method_spec
from spmlkit.methods.opml import (APLabelCorrection, APSmoothing, HighRankRegularizer, TrainingAP,
                                  top_n_per_column)
from spmlkit.training import train_linear
from tests.helpers.training_checks import assert_resume_equals_uninterrupted, members_and_separate_runs
from tests.helpers.factories import train_context

OPML_METHODS = ["zlpr", "opml", "opml-hr", "opml-soft", "opml-lc", "opml-sp"]


# ----------------------------------------------------------------- high rank
def test_high_rank_equals_singular_value_formula():
    torch.manual_seed(0)
    reg = HighRankRegularizer(lam=0.5, delta=1e-3)
    for B, L in [(4, 6), (6, 4), (5, 5)]:
        logits = torch.randn(2, B, L, dtype=torch.float64)
        F = torch.sigmoid(logits)
        sv = torch.linalg.svdvals(F)  # (2, min(B, L))
        want = -0.5 * torch.log(sv ** 2 + 1e-3).sum(-1)
        assert torch.allclose(reg(logits), want)


def test_property6_high_rank_term_decreases_as_columns_become_independent():
    """Property 6: mixing a rank-1 probability matrix towards a full-rank one lowers R monotonically,
    and a rank-deficient F has a larger R than a full-rank F."""
    reg = HighRankRegularizer(lam=1.0, delta=1e-3)
    rank1 = torch.full((6, 4), 0.5, dtype=torch.float64)  # every column identical
    full = torch.eye(6, 4, dtype=torch.float64) * 0.9 + 0.05  # independent columns
    values = [reg.log_det_term((1 - t) * rank1 + t * full) for t in np.linspace(0, 1, 6)]
    R = [-v.item() for v in values]
    assert all(a > b for a, b in zip(R, R[1:])), R
    assert torch.linalg.matrix_rank(rank1).item() == 1 and torch.linalg.matrix_rank(full).item() == 4
    logit = lambda p: torch.log(p / (1 - p))  # noqa: E731
    assert reg(logit(rank1)).item() > reg(logit(full)).item()


def test_high_rank_gradient_finite_on_rank_deficient_matrix():
    logits = torch.zeros(1, 5, 3, requires_grad=True)  # F = 0.5 everywhere: rank 1, two zero singular values
    R = HighRankRegularizer()(logits)
    assert torch.isfinite(R).all()
    R.sum().backward()
    assert torch.isfinite(logits.grad).all()
    assert logits.grad.abs().sum() > 0


def test_high_rank_closed_form_gradient_matches_autograd_and_gradcheck():
    """The closed-form gradient −λ·2(FFᵀ+δI)⁻¹F·σ'(s) (both Gram orientations) equals autograd
    through ``sigmoid`` and ``logdet`` and passes torch's numerical gradcheck."""
    torch.manual_seed(1)
    reg = HighRankRegularizer(lam=0.7, delta=1e-3)
    for B, L in [(4, 6), (6, 4), (5, 5)]:
        s = torch.randn(3, B, L, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(reg, (s,))
        w = torch.randn(3, dtype=torch.float64)
        (reg(s) * w).sum().backward()
        ours = s.grad.clone()
        s.grad = None
        F = torch.sigmoid(s)
        G = F @ F.transpose(-1, -2) if B <= L else F.transpose(-1, -2) @ F
        (-0.7 * torch.logdet(G + 1e-3 * torch.eye(G.shape[-1], dtype=G.dtype)) * w).sum().backward()
        assert torch.allclose(ours, s.grad, atol=1e-10)
        # float32 logits: float64 inside, the same gradient to float32 precision
        s32 = s.detach().float().requires_grad_()
        (reg(s32) * w.float()).sum().backward()
        assert s32.grad.dtype == torch.float32 and torch.allclose(s32.grad.double(), s.grad, atol=1e-6)


def test_high_rank_is_per_member():
    torch.manual_seed(1)
    logits = torch.randn(3, 8, 5)
    reg = HighRankRegularizer()
    out = reg(logits)
    assert out.shape == (3,)
    for g in range(3):
        assert torch.allclose(out[g], reg(logits[g:g + 1])[0])


def test_high_rank_bad_parameters():
    with pytest.raises(ConfigError):
        HighRankRegularizer(delta=0)
    with pytest.raises(ConfigError):
        HighRankRegularizer(lam=-1)


# ------------------------------------------------------------------ training AP
def test_training_ap_uses_observed_positives_like_sklearn():
    rng = np.random.default_rng(0)
    Z = np.zeros((40, 3), dtype=np.int8)
    Z[rng.choice(40, 10, replace=False), 0] = 1
    Z[rng.choice(40, 5, replace=False), 1] = 1  # label 2 has no observed positive -> AP 0
    probs = torch.from_numpy(rng.random((2, 40, 3))).float()
    ap = TrainingAP()
    ap.setup(train_context(Z, G=2))
    got = ap.update(1, lambda: probs)
    for g in range(2):
        for j in range(2):
            assert got[g, j].item() == pytest.approx(average_precision_score(Z[:, j] == 1, probs[g, :, j]), rel=1e-5)
        assert got[g, 2].item() == 0.0
    assert ap.update(1, lambda: 1 / 0) is got  # memoised within an epoch


# ------------------------------------------------------------------ smoothing
def test_smoothing_epoch1_is_plain_opml_then_ap_times_probability():
    Z = torch.tensor([[1, 0], [0, 1], [1, 0], [0, 0]], dtype=torch.int8)
    sm = APSmoothing(rho=2.0)
    sm.setup(train_context(Z))
    logits = torch.tensor([[[1.0, -2.0], [0.5, 0.3]]])
    batch = Batch(inputs=None, index=torch.tensor([[0, 1]]), observed=Z[[0, 1]].unsqueeze(0))
    assert torch.equal(sm.batch_inputs(batch, logits)["soft_targets"], torch.zeros_like(logits))
    # label 0: observed positives at rows 0, 2 ranked first and second -> AP 1;
    # label 1: positive at row 1 ranked third of four -> precision 1/3 -> AP 1/3
    probs = torch.tensor([[[0.9, 0.2], [0.1, 0.3], [0.8, 0.5], [0.2, 0.4]]])
    sm.on_epoch_end(1, lambda: probs)
    y = sm.batch_inputs(batch, logits)["soft_targets"]
    want = torch.tensor([1.0, (1 / 3) ** 2]) * torch.sigmoid(logits)
    assert torch.allclose(y, want)


def test_soft_method_loss_equals_opml_in_epoch_1():
    Z = torch.tensor([[1, 0, 0], [0, 1, 0]], dtype=torch.int8)
    m = build_method("opml-soft", alpha=0.3)
    m.setup(train_context(Z))
    m.on_epoch_start(1)
    logits = torch.randn(1, 2, 3)
    batch = Batch(inputs=None, index=torch.tensor([[0, 1]]), observed=Z.unsqueeze(0))
    assert torch.allclose(m.loss_matrix(logits, batch), opml(logits, Z.unsqueeze(0), alpha=0.3))


# ------------------------------------------------------------------ correction
def test_correction_budget_hand_computed():
    Z = np.zeros((100, 2), dtype=np.int8)
    Z[:10, 0] = 1
    Z[:3, 1] = 1
    c = APLabelCorrection(r=0.1, kappa=2.0)
    c.setup(train_context(Z))
    # label 0: min(floor(0.1*100*(1-0.75)) = 2, 2*10 = 20) = 2; label 1: min(floor(10*0.9) = 9, 2*3 = 6) = 6
    assert c.budget(torch.tensor([[0.75, 0.1]])).tolist() == [[2, 6]]


def test_property7_low_ap_label_gets_more_corrections():
    """Property 7: at equal N_obs, a low-AP label is corrected more than a high-AP label."""
    N = 200
    Z = np.zeros((N, 2), dtype=np.int8)
    Z[:20, 0] = 1
    Z[:20, 1] = 1
    rng = np.random.default_rng(0)
    probs = torch.from_numpy(rng.random((1, N, 2))).float()
    probs[0, :20, 0] += 1.0  # label 0: observed positives ranked on top -> AP 1
    probs[0, :20, 1] -= 1.0  # label 1: observed positives ranked last -> low AP
    probs = probs.clamp(0, 1)
    c = APLabelCorrection(r=0.05, kappa=1.0)
    c.setup(train_context(Z))
    c.on_epoch_end(1, lambda: probs)
    ap = c.ap.ap[0]
    assert ap[0] > 0.99 and ap[1] < 0.2
    n = c.corrected[0].sum(0)
    assert n[1] > n[0]
    assert n[0].item() == 0 and n[1].item() == min(math.floor(0.05 * N * (1 - ap[1].item())), 20)
    # the flipped entries are the highest-scoring unobserved ones, never observed entries
    flipped = c.corrected[0, :, 1]
    assert not (flipped & torch.from_numpy(Z[:, 1] != 0)).any()
    unobs_scores = probs[0, 20:, 1]
    assert probs[0, flipped, 1].min() >= unobs_scores.sort(descending=True).values[n[1] - 1]


def test_correction_fed_to_loss_and_start_epoch():
    Z = np.zeros((50, 2), dtype=np.int8)
    Z[:5, 0] = 1
    Z[5:10, 1] = 1
    probs = torch.rand(1, 50, 2)
    m = build_method("opml-lc", r=0.5, kappa=1.0, start_epoch=2)
    m.setup(train_context(Z))
    comp = m.components[0]
    m.on_epoch_end(1, lambda: probs)
    assert not comp.corrected.any()  # before start_epoch
    m.on_epoch_end(2, lambda: probs)
    corrected = comp.corrected[0]
    assert corrected.any() and (corrected.sum(0) <= 5).all()  # cap kappa * N_obs = 5
    idx = torch.arange(50)[None]
    batch = Batch(inputs=None, index=idx, observed=torch.from_numpy(Z)[None])
    logits = torch.randn(1, 50, 2)
    Zc = torch.from_numpy(Z)[None].clone()
    Zc[0][corrected] = 1
    assert torch.allclose(m.loss_matrix(logits, batch), opml(logits, Zc))
    assert batch.observed.eq(torch.from_numpy(Z)[None]).all()  # observations never mutated


def test_correction_recomputed_or_cumulative():
    Z = np.zeros((30, 1), dtype=np.int8)
    Z[:3, 0] = 1
    p1 = torch.linspace(0, 1, 30).view(1, 30, 1)
    p2 = p1.clone()
    p2[0, 3:] = p1[0, 3:].flip(0)  # observed positives still ranked last; other unobserved entries on top
    for cumulative in (False, True):
        c = APLabelCorrection(r=1.0, kappa=1.0, cumulative=cumulative)
        c.setup(train_context(Z))
        c.on_epoch_end(1, lambda: p1)
        first = c.corrected.clone()
        assert first.sum() == 3  # capped at kappa * N_obs
        c.on_epoch_end(2, lambda: p2)
        if cumulative:
            assert (c.corrected & first).sum() == 3 and c.corrected.sum() == 6
        else:
            assert c.corrected.sum() == 3 and not (c.corrected & first).any()  # recomputed: first flips undone


def test_top_n_per_column():
    scores = torch.tensor([[[0.9, 0.1], [0.8, 0.7], [0.1, 0.9], [0.5, 0.4]]])
    cand = torch.tensor([[[False, True], [True, True], [True, True], [True, False]]])
    mask = top_n_per_column(scores, cand, torch.tensor([[2, 1]]))
    assert mask[0].tolist() == [[False, False], [True, False], [False, True], [True, False]]


# ------------------------------------------------------------------ registry and validation
def test_registry_and_defaults():
    for name in OPML_METHODS:
        assert get_method_spec(name).reference
    sp = build_method("opml-sp")
    assert sp.loss.name == "opml-soft" and len(sp.regularizers) == 1
    assert [type(c).__name__ for c in sp.components] == ["APSmoothing", "APLabelCorrection"]
    assert sp.components[0].ap is sp.components[1].ap  # AP computed once per epoch
    assert build_method("opml").loss_params == {"alpha": 0.5, "beta": 0.5}
    with pytest.raises(ConfigError, match="alpha"):
        build_method("opml", alpha=1.0)
    with pytest.raises(ConfigError, match="beta"):
        build_method("opml-sp", beta=0.0)


# ------------------------------------------------------------------ training
@pytest.mark.parametrize("name", OPML_METHODS)
def test_end_to_end_learns(toy_bundle, name):
    r = train_linear(toy_bundle, TrainConfig(method=name, epochs=6, lr=1e-2))[0]
    assert r.test_map > 70  # random scores give about the label frequency (~25)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["opml-hr", "opml-sp"])
def test_members_equal_separate_runs(toy_bundle, name):
    cfg = TrainConfig(method=name, epochs=4, batch_size=8)
    for r, alone in members_and_separate_runs(toy_bundle, cfg, [1e-2, 1e-3, 1e-2], [0, 0, 1]):
        assert alone.best_epoch == r.best_epoch
        assert alone.val_history == pytest.approx(r.val_history, abs=1e-4)
        assert alone.test_map == pytest.approx(r.test_map, abs=1e-4)


def test_resume_gives_the_same_result(toy_bundle, tmp_path):
    cfg = TrainConfig(method="opml-sp", epochs=5, lr=1e-2, params={"r": 0.2})
    assert_resume_equals_uninterrupted(toy_bundle, cfg, tmp_path, killed_after=3)
