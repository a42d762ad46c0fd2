"""Focal loss (Lin et al. 2017) and ASL (Ridnik et al. 2021) on AN targets."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss

S = torch.tensor([[2.0, -1.0, 0.5, 0.1]])
Z = torch.tensor([[1, 0, -1, 0]])


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_focal_hand_computed():
    got = get_loss("focal")(S, Z, gamma=2.0)[0].tolist()
    p = [sig(v) for v in (2.0, -1.0, 0.5, 0.1)]
    want = [-(1 - p[0]) ** 2 * math.log(p[0]),  # positive: p_t = p
            -(p[1]) ** 2 * math.log(1 - p[1]),  # negatives: p_t = 1 - p, (1 - p_t)^γ = p^γ
            -(p[2]) ** 2 * math.log(1 - p[2]),
            -(p[3]) ** 2 * math.log(1 - p[3])]
    assert got == pytest.approx(want, rel=1e-6)


def test_focal_alpha_balancing():
    got = get_loss("focal")(S, Z, gamma=0.0, alpha=0.25)[0].tolist()
    want = [-0.25 * math.log(sig(2.0)), -0.75 * math.log(1 - sig(-1.0)), -0.75 * math.log(1 - sig(0.5)),
            -0.75 * math.log(1 - sig(0.1))]
    assert got == pytest.approx(want, rel=1e-6)
    assert get_loss("focal").hyperparameters == {"gamma": 2.0, "alpha": None}


def test_focal_gamma0_is_an():
    s = torch.randn(3, 7, 5) * 4
    z = torch.randint(-1, 2, (3, 7, 5)).to(torch.int8)
    assert torch.allclose(get_loss("focal")(s, z, gamma=0.0), get_loss("an")(s, z), atol=1e-6)


def test_asl_hand_computed_defaults():
    got = get_loss("asl")(S, Z)[0].tolist()
    p = [sig(v) for v in (2.0, -1.0, 0.5, 0.1)]
    m = 0.05

    def neg(pv):
        pm = max(pv - m, 0.0)
        return -(pm ** 4) * math.log(1 - pm)

    want = [-math.log(p[0]), neg(p[1]), neg(p[2]), neg(p[3])]  # γ+ = 0: plain -log p on the positive
    assert got == pytest.approx(want, rel=1e-6)
    assert get_loss("asl").hyperparameters == {"gamma_pos": 0.0, "gamma_neg": 4.0, "margin": 0.05}


def test_asl_margin_discards_easy_negatives():
    s = torch.tensor([[-4.0, -3.0]], requires_grad=True)  # σ = 0.018, 0.047 < m = 0.05
    out = get_loss("asl")(s, torch.zeros(1, 2, dtype=torch.int8), gamma_neg=0.0)
    out.sum().backward()
    assert out.tolist() == [[0.0, 0.0]] and s.grad.tolist() == [[0.0, 0.0]]
    # just above the margin with γ− = 0: -log(1 - (p - m))
    s2 = torch.tensor([[0.0]])
    got = get_loss("asl")(s2, torch.zeros(1, 1, dtype=torch.int8), gamma_neg=0.0).item()
    assert got == pytest.approx(-math.log(1 - 0.45), rel=1e-6)


def test_asl_reduces_to_an():
    s = torch.randn(3, 7, 5) * 4
    z = torch.randint(-1, 2, (3, 7, 5)).to(torch.int8)
    got = get_loss("asl")(s, z, gamma_pos=0.0, gamma_neg=0.0, margin=0.0)
    assert torch.allclose(got, get_loss("an")(s, z), atol=1e-6)


def test_asl_focal_part_with_gamma_pos():
    got = get_loss("asl")(torch.tensor([[1.0]]), torch.tensor([[1]]), gamma_pos=1.0).item()
    assert got == pytest.approx(-(1 - sig(1.0)) * math.log(sig(1.0)), rel=1e-6)


@pytest.mark.parametrize("name,kw", [("focal", {}), ("asl", {}), ("asl", {"margin": 0.0}), ("asl", {"gamma_neg": 0.5})])
def test_stable_for_extreme_logits_and_finite_gradients(name, kw):
    s = torch.tensor([[100.0, -100.0, 100.0, -100.0, 0.0]], requires_grad=True)
    out = get_loss(name)(s, torch.tensor([[1, 1, 0, 0, 0]]), **kw)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(s.grad).all()
    assert out[0, 1].item() == pytest.approx(100.0, rel=1e-3)  # confident wrong positive: ~ -log σ(-100)


def test_bad_parameters():
    with pytest.raises(ConfigError):
        get_loss("focal")(S, Z, gamma=-1.0)
    with pytest.raises(ConfigError):
        get_loss("asl")(S, Z, margin=1.5)
