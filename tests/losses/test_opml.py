"""OPML loss (Li et al. 2023, reconstructed Eq. 3/6/11): the properties the paper states in words."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss
from spmlkit.losses.opml import odds, opml, opml_soft
from spmlkit.losses.zlpr import zlpr
from tests.helpers.factories import single_positive


def single_positive_Z(B=6, L=5, seed=0):
    return single_positive(B, L, torch.Generator().manual_seed(seed))


def test_hand_computed():
    # alpha = 0.2 -> a = 0.25; beta = 0.8 -> b = 4; observed (+1, 0, 0)
    s = torch.tensor([[2.0, -1.0, 0.5]])
    got = opml(s, torch.tensor([[1, 0, 0]]), alpha=0.2, beta=0.8).item()
    want = math.log(0.25 + math.exp(-1.0) + math.exp(0.5)) + math.log(4 + math.exp(-2.0))
    assert got == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_property1_half_half_is_zlpr(seed):
    """Property 1: alpha = beta = 0.5 (a = b = 1) equals ZLPR on any input."""
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(3, 8, 6, generator=g) * 5
    Z = (torch.randint(0, 3, (3, 8, 6), generator=g) - 1).to(torch.int8)
    assert torch.allclose(opml(s, Z, alpha=0.5, beta=0.5), zlpr(s, Z))
    assert torch.allclose(opml(s, Z), zlpr(s, Z))  # the defaults are the ZLPR point


@pytest.mark.parametrize("alpha", [0.1, 0.5, 0.9])
def test_property2_positive_gradient_equals_bce_when_b_is_1(alpha):
    """Property 2: with b = 1 the gradient on the observed positive is BCE's, -(1 - sigmoid(s_p))."""
    torch.manual_seed(0)
    s = (torch.randn(6, 5) * 3).requires_grad_()
    Z = single_positive_Z()
    opml(s, Z, alpha=alpha, beta=0.5).sum().backward()
    pos = Z == 1
    want = -(1 - torch.sigmoid(s.detach()))[pos]
    assert torch.allclose(s.grad[pos], want, atol=1e-6)
    s2 = s.detach().clone().requires_grad_()
    torch.nn.functional.binary_cross_entropy_with_logits(s2, torch.ones_like(s2), reduction="none")[pos].sum().backward()
    assert torch.allclose(s.grad[pos], s2.grad[pos], atol=1e-6)


@pytest.mark.parametrize("scale", [0.5, 3.0, 8.0])
def test_property3_negative_gradients_bounded_and_share_one_unit(scale):
    """Property 3: with a = 1 each assumed-negative gradient is <= sigmoid(s_j) (BCE's) and they sum to < 1
    (exactly: sum_U e^s / (1 + sum_U e^s); float64 so that 1 - e^-|s| is representable)."""
    torch.manual_seed(1)
    s = (torch.randn(6, 5, dtype=torch.float64) * scale).requires_grad_()
    Z = single_positive_Z()
    opml(s, Z, alpha=0.5, beta=0.3).sum().backward()
    unobs = Z == 0
    g = s.grad
    assert (g[unobs] >= 0).all()
    assert (g[unobs] <= torch.sigmoid(s.detach())[unobs] + 1e-12).all()
    assert (torch.where(unobs, g, torch.zeros_like(g)).sum(-1) < 1).all()


def test_property4_full_label_form_with_one_positive_is_eq3():
    """Property 4: Eq. 6 with a single observed positive is Eq. 3: log(a + sum_U e^s) + log(b + e^-s_p)."""
    torch.manual_seed(2)
    s = torch.randn(6, 5, dtype=torch.float64)
    Z = single_positive_Z()
    a, b = odds(0.3, "alpha"), odds(0.7, "beta")
    sp = s[Z == 1]
    eq3 = torch.log(a + torch.where(Z == 0, s.exp(), torch.zeros_like(s)).sum(-1)) + torch.log(b + (-sp).exp())
    full = Z.clone()
    full[full == 0] = -1  # the same labels, the others observed negative (full-label form)
    assert torch.allclose(opml(s, Z, alpha=0.3, beta=0.7).squeeze(-1), eq3)
    assert torch.allclose(opml(s, full, alpha=0.3, beta=0.7).squeeze(-1), eq3)


def test_property5_soft_with_zero_targets_is_opml():
    """Property 5: soft OPML with every soft target 0 equals OPML."""
    torch.manual_seed(3)
    s = torch.randn(2, 6, 5)
    Z = torch.stack([single_positive_Z(), single_positive_Z(seed=1)])
    hard = opml(s, Z, alpha=0.2, beta=0.6)
    assert torch.allclose(opml_soft(s, Z, alpha=0.2, beta=0.6, soft_targets=torch.zeros_like(s)), hard)
    assert torch.allclose(opml_soft(s, Z, alpha=0.2, beta=0.6), hard)


def test_soft_hand_computed_follows_eq11():
    # L = log(a + sum_U (1-y) e^s) + log(b + e^-s_p + sum_U y e^-s), a = 1/4, b = 1
    s = torch.tensor([[2.0, -1.0, 0.5]])
    y = torch.tensor([[0.0, 0.3, 0.6]])
    got = opml_soft(s, torch.tensor([[1, 0, 0]]), alpha=0.2, soft_targets=y).item()
    want = (math.log(0.25 + 0.7 * math.exp(-1.0) + 0.4 * math.exp(0.5))
            + math.log(1 + math.exp(-2.0) + 0.3 * math.exp(1.0) + 0.6 * math.exp(-0.5)))
    assert got == pytest.approx(want, rel=1e-6)


def test_alpha_beta_must_be_in_open_unit_interval():
    s, Z = torch.zeros(1, 2), torch.tensor([[1, 0]])
    for bad in (0.0, 1.0, -0.1, 1.5, float("nan"), "x"):
        with pytest.raises(ConfigError, match="alpha"):
            opml(s, Z, alpha=bad)
        with pytest.raises(ConfigError, match="beta"):
            opml_soft(s, Z, beta=bad)


def test_stable_at_extreme_logits_and_constants():
    s = torch.tensor([[120.0, -120.0, 90.0]], requires_grad=True)
    out = opml(s, torch.tensor([[0, 1, 0]]), alpha=1e-6, beta=1 - 1e-6)
    assert torch.isfinite(out).all()
    assert out.item() == pytest.approx(120.0 + 120.0, rel=1e-4)
    out.backward()
    assert torch.isfinite(s.grad).all()


def test_registered_with_hyperparameters():
    spec = get_loss("opml")
    assert spec.hyperparameters == {"alpha": 0.5, "beta": 0.5}
    soft = get_loss("opml-soft")
    assert soft.inputs == ("soft_targets",) and soft.hyperparameters == {"alpha": 0.5, "beta": 0.5}


def test_members_are_independent():
    torch.manual_seed(4)
    s = torch.randn(3, 6, 5)
    Z = torch.stack([single_positive_Z(seed=i) for i in range(3)])
    y = torch.rand(3, 6, 5)
    out = opml_soft(s, Z, alpha=0.3, soft_targets=y)
    assert out.shape == (3, 6, 1)
    for g in range(3):
        assert torch.allclose(out[g], opml_soft(s[g], Z[g], alpha=0.3, soft_targets=y[g]))
