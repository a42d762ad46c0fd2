"""The ROLE loss (Cole et al. 2021, §5.4, Eq. 11), as the authors' code arranges it."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import LOSSES, get_loss, reduce_mean


def sig(x):
    return 1 / (1 + math.exp(-x))


def bce(s, t):
    return -(t * math.log(sig(s)) + (1 - t) * math.log(1 - sig(s)))


def test_registered_with_estimator_input():
    spec = LOSSES["role"]
    assert spec.inputs == ("estimator_logits",)
    assert spec.hyperparameters == {"k": None, "lam": 1.0}


def test_hand_computed():
    # one example, L = 2: entry 0 observed positive, entry 1 unobserved; k = 1
    sf = torch.tensor([[1.0, -1.0]])
    sg = torch.tensor([[2.0, 0.0]])
    z = torch.tensor([[1, 0]])
    out = get_loss("role")(sf, z, k=1.0, estimator_logits=sg)[0].tolist()
    # positives: 0.5(−log σ(1) − log σ(2)) = 0.5(0.313262 + 0.126928) = 0.220095
    pos0 = 0.5 * (-math.log(sig(1.0)) - math.log(sig(2.0)))
    assert pos0 == pytest.approx(0.220095, abs=1e-6)
    # cross terms: 0.5(BCE(s_f, σ(s_g)) + BCE(s_g, σ(s_f)))
    cross0 = 0.5 * (bce(1.0, sig(2.0)) + bce(2.0, sig(1.0)))
    cross1 = 0.5 * (bce(-1.0, 0.5) + bce(0.0, sig(-1.0)))
    # R_k(f) = ((σ(1) + σ(−1) − 1)/2)² = 0 ; R_k(g) = ((σ(2) + 0.5 − 1)/2)² = (0.380797/2)²
    Rf = ((sig(1.0) + sig(-1.0) - 1) / 2) ** 2
    Rg = ((sig(2.0) + 0.5 - 1) / 2) ** 2
    assert Rf == pytest.approx(0.0, abs=1e-12) and Rg == pytest.approx(0.036251, abs=1e-6)
    reg = 0.5 * (Rf + Rg)
    assert out == pytest.approx([pos0 + cross0 + reg, cross1 + reg], rel=1e-6)


def test_stop_gradient_on_targets():
    """d/ds_f = 0.5[−σ(−s_f)·𝟙[z=1] + (σ(s_f) − σ(s_g))] (+ the EPR part): the target σ(s_g)
    passes no gradient to s_g through the f-side BCE, and vice versa."""
    sf = torch.tensor([[0.3, -0.7, 1.1]], requires_grad=True)
    sg = torch.tensor([[1.5, 0.2, -0.4]], requires_grad=True)
    z = torch.tensor([[1, 0, 0]])
    get_loss("role")(sf, z, k=1.0, lam=0.0, estimator_logits=sg).sum().backward()
    f, g = torch.sigmoid(sf.detach()), torch.sigmoid(sg.detach())
    pos = (z == 1).float()
    assert torch.allclose(sf.grad, 0.5 * (-(1 - f) * pos + (f - g)), atol=1e-6)
    assert torch.allclose(sg.grad, 0.5 * (-(1 - g) * pos + (g - f)), atol=1e-6)


def test_is_the_mean_of_the_two_directions():
    """L_ROLE = (L'(F|Ŷ) + L'(Ŷ|F))/2 with L' = BCE(·, sg(other)) + EPR (Eq. 11), code scaling."""
    torch.manual_seed(0)
    sf, sg = torch.randn(2, 5, 6), torch.randn(2, 5, 6)
    z = torch.zeros(2, 5, 6, dtype=torch.int8)
    z[:, :, 0] = 1
    k = 1.7
    epr, bce_t = get_loss("epr"), torch.nn.functional.binary_cross_entropy_with_logits
    l_f = bce_t(sf, torch.sigmoid(sg), reduction="none") + epr(sf, z, k=k)
    l_g = bce_t(sg, torch.sigmoid(sf), reduction="none") + epr(sg, z, k=k)
    got = get_loss("role")(sf, z, k=k, estimator_logits=sg)
    assert torch.allclose(got, (l_f + l_g) / 2, atol=1e-6)
    assert torch.allclose(reduce_mean(got), reduce_mean((l_f + l_g) / 2), atol=1e-6)
    assert torch.allclose(got[1], get_loss("role")(sf[1], z[1], k=k, estimator_logits=sg[1]))  # members apart


def test_stable_and_checked():
    s = torch.tensor([[60.0, -60.0]])
    out = get_loss("role")(s, torch.tensor([[1, 0]]), k=1.0, estimator_logits=-s)
    assert torch.isfinite(out).all()
    with pytest.raises(ConfigError, match="estimator_logits"):
        get_loss("role")(s, torch.tensor([[1, 0]]), k=1.0, estimator_logits=torch.zeros(1, 3))
    with pytest.raises(ConfigError, match="needs k"):
        get_loss("role")(s, torch.tensor([[1, 0]]), estimator_logits=s)


def test_closed_form_gradient_equals_autograd_of_eq_11():
    """The loss's hand-written backward equals autograd through Eq. 11 written out (BCE with
    detached targets + EPR on both sides), for members, uneven upstream weights and λ ≠ 0.
    (No numerical gradcheck: the stop-gradient makes the gradient differ from the
    derivative of the loss's value on purpose.)"""
    torch.manual_seed(4)
    sf = torch.randn(3, 5, 6, dtype=torch.float64, requires_grad=True)
    sg = torch.randn(3, 5, 6, dtype=torch.float64, requires_grad=True)
    z = torch.randint(-1, 2, (3, 5, 6)).to(torch.int8)
    w = torch.rand(3, 5, 6, dtype=torch.float64)  # upstream gradient, not uniform
    k, lam = 1.7, 0.8
    (get_loss("role")(sf, z, k=k, lam=lam, estimator_logits=sg) * w).sum().backward()
    ours = sf.grad.clone(), sg.grad.clone()
    sf.grad = sg.grad = None
    pos = (z == 1).double()
    bce_t = torch.nn.functional.binary_cross_entropy_with_logits

    def side(s, other):
        k_hat = torch.sigmoid(s).sum(-1, keepdim=True).mean(-2, keepdim=True)
        return (bce_t(s, torch.sigmoid(other).detach(), reduction="none") - pos * torch.nn.functional.logsigmoid(s)
                + lam * ((k_hat - k) / 6) ** 2)

    ((side(sf, sg) + side(sg, sf)) / 2 * w).sum().backward()
    assert torch.allclose(ours[0], sf.grad, atol=1e-12) and torch.allclose(ours[1], sg.grad, atol=1e-12)
    # a float32 estimator beside float64 logits gets a float32 gradient
    s32 = sg.detach().float().requires_grad_()
    get_loss("role")(sf.detach(), z, k=k, estimator_logits=s32).sum().backward()
    assert s32.grad.dtype == torch.float32


def test_missing_estimator_is_one_line_and_a_float32_estimator_gets_a_float32_gradient():
    s = torch.tensor([[0.4, -0.3, 1.1]], dtype=torch.float64, requires_grad=True)
    z = torch.tensor([[1, 0, -1]])
    with pytest.raises(ConfigError) as e:
        get_loss("role")(s, z, k=1.0, estimator_logits=None)
    assert str(e.value) == "ROLE needs estimator_logits shaped like the logits (1, 3), got None"
    g = torch.tensor([[0.2, 0.9, -0.5]], dtype=torch.float32, requires_grad=True)
    out = get_loss("role")(s, z, k=1.0, estimator_logits=g)
    reduce_mean(out).sum().backward()
    assert out.dtype == torch.float64 and g.grad.dtype == torch.float32 and s.grad.dtype == torch.float64
    g64 = g.detach().double().requires_grad_(True)
    s2 = s.detach().clone().requires_grad_(True)
    want = get_loss("role")(s2, z, k=1.0, estimator_logits=g64)
    reduce_mean(want).sum().backward()
    assert torch.allclose(out, want) and torch.allclose(g.grad.double(), g64.grad, atol=1e-7)
