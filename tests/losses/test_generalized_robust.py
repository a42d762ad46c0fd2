"""GR-Loss (Chen et al. 2024) and GPR-Loss (Tran et al. 2025)."""
import math

import pytest
import torch
import torch.nn.functional as F

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss
from spmlkit.losses.expected_positives import expected_positive_penalty
from spmlkit.losses.generalized_robust import box_cox, generalized_robust

GR = get_loss("gr")
GPR = get_loss("gpr")


def sig(x):
    return 1 / (1 + math.exp(-x))


def rand(seed=0, shape=(2, 5, 7)):
    torch.manual_seed(seed)
    s = torch.randn(*shape) * 2
    z = torch.zeros(shape, dtype=torch.int8)
    z[..., 0] = 1
    return s, z


def test_hand_computed():
    s = torch.tensor([[1.0, -0.5, 0.3]])
    z = torch.tensor([[1, 0, 0]])
    k = torch.tensor([[0.0, 0.25, 0.6]])
    v = torch.tensor([[1.0, 0.8, 0.5]])
    got = GR(s, z, soft_targets=k, weights=v, q2=0.5, q3=1.0)[0].tolist()
    assert got[0] == pytest.approx(-math.log(sig(1.0)), rel=1e-6)
    for i, x in ((1, -0.5), (2, 0.3)):
        p = sig(x)
        l2 = (1 - p ** 0.5) / 0.5
        l3 = 1 - (1 - p)
        assert got[i] == pytest.approx(v[0, i].item() * (k[0, i].item() * l2 + (1 - k[0, i].item()) * l3), rel=1e-5)


def test_reduces_to_an_and_wan():
    """Chen §3.2: AN is k̂ = 0, v = 1, L₃ = −log(1 − p) (q₃ → 0); WAN is the same with v = γ."""
    s, z = rand()
    zero, one = torch.zeros_like(s), torch.ones_like(s)
    an = GR(s, z, soft_targets=zero, weights=one, q3=0.0)
    assert torch.allclose(an, get_loss("an")(s, z), atol=1e-6)
    assert torch.allclose(GR(s, z, soft_targets=zero, weights=one, q3=1e-7), an, atol=1e-4)  # the limit q → 0
    g = 1 / 6
    assert torch.allclose(GR(s, z, soft_targets=zero, weights=one * g, q3=0.0), get_loss("wan")(s, z, gamma=g), atol=1e-6)


def test_other_special_cases():
    s, z = rand(1)
    zero, one = torch.zeros_like(s), torch.ones_like(s)
    # v = 0: only the observed positives ("ignore unobserved")
    out = GR(s, z, soft_targets=one * 0.3, weights=zero)
    assert torch.allclose(out, F.softplus(-s) * (z == 1), atol=1e-6)
    # k̂ = 1, q₂ → 0: every unobserved label trained as a positive with BCE
    assert torch.allclose(GR(s, z, soft_targets=one, weights=one, q2=0.0), F.softplus(-s), atol=1e-6)
    # q₃ = 1: mean absolute error towards 0, bounded by 1 per entry
    out = GR(s * 50, z, soft_targets=zero, weights=one, q3=1.0)
    assert torch.allclose(out[z == 0], torch.sigmoid(s * 50)[z == 0], atol=1e-6)
    assert float(out[z == 0].max()) <= 1.0


def test_soft_targets_and_weights_carry_no_gradient():
    s, z = rand(2)
    s.requires_grad_(True)
    k = torch.sigmoid(s) * 0.5  # depends on s, as the schedule's k̂ does
    GR(s, z, soft_targets=k, weights=torch.ones_like(s)).sum().backward()
    g1 = s.grad.clone()
    s.grad = None
    GR(s, z, soft_targets=k.detach(), weights=torch.ones_like(s)).sum().backward()
    assert torch.allclose(g1, s.grad)


def test_gpr_terms():
    s = torch.tensor([[0.4, -0.3, 1.2, -2.0]])
    z = torch.tensor([[1, 0, 0, 0]])
    pl = torch.tensor([[0, 1, -1, 0]])
    k = torch.full((1, 4), 0.2)
    v = torch.tensor([[1.0, 0.9, 0.6, 0.7]])
    out = GPR(s, z, soft_targets=k, weights=v, pseudo_labels=pl, reg=0.0)[0]
    p = [sig(x) for x in s[0].tolist()]
    assert out[0].item() == pytest.approx(-math.log(p[0]), rel=1e-6)
    w_pos = 1 - min(max(0.9, 1 - 0.7), 1 - 0.5)  # v clipped into [1 − λ₁, 1 − λ₂] = [0.3, 0.5] -> 0.5
    assert out[1].item() == pytest.approx(w_pos * (-0.9 * math.log(p[1]) - 0.1 * math.log(1 - p[1])), rel=1e-5)
    assert out[2].item() == pytest.approx(0.6 * -math.log(1 - p[2]), rel=1e-5)
    gr = GR(s, z, soft_targets=k, weights=v)[0]
    assert out[3].item() == pytest.approx(gr[3].item(), rel=1e-6)


def test_gpr_pseudo_positive_weight_stays_in_lambda_range():
    s, z = rand(3)
    pl = torch.where(z == 0, torch.ones_like(z), torch.zeros_like(z))
    for v in (0.0, 0.35, 1.0):
        w = torch.full_like(s, v)
        out = GPR(s, z, soft_targets=torch.zeros_like(s), weights=w, pseudo_labels=pl, reg=0.0)
        smooth = 0.9 * F.softplus(-s) + 0.1 * F.softplus(s)
        ratio = (out / smooth)[z == 0]
        assert float(ratio.min()) >= 0.5 - 1e-6 and float(ratio.max()) <= 0.7 + 1e-6


def test_gpr_without_pseudo_labels_is_gr_plus_epr_penalty():
    s, z = rand(4)
    k, v = torch.full_like(s, 0.3), torch.full_like(s, 0.9)
    none = torch.zeros_like(z)
    gr = GR(s, z, soft_targets=k, weights=v)
    assert torch.allclose(GPR(s, z, soft_targets=k, weights=v, pseudo_labels=none, reg=0.0), gr, atol=1e-6)
    out = GPR(s, z, soft_targets=k, weights=v, pseudo_labels=none, reg=0.5, k=2.0)
    assert torch.allclose(out, gr + 0.5 * expected_positive_penalty(s, 2.0), atol=1e-6)
    with pytest.raises(ConfigError, match="needs k"):
        GPR(s, z, soft_targets=k, weights=v, pseudo_labels=none, reg=0.5)


def test_observed_negatives_and_stability():
    s = torch.tensor([[1e4, -1e4, 1e4, -1e4]])
    z = torch.tensor([[1, 0, -1, 0]])
    out = GR(s, z, soft_targets=torch.full_like(s, 0.5), weights=torch.ones_like(s))
    assert torch.isfinite(out).all()
    assert out[0, 2].item() == pytest.approx(1e4)  # −log(1 − p) on an observed negative
    with pytest.raises(ConfigError):
        GR(s, z, soft_targets=s, weights=s, q2=-1.0)


def _gr_term_by_term(logits, observed, soft_targets, weights, q2, q3):
    """GR-Loss written term by term (Chen §3), each log-sigmoid and softplus computed
    where it is used: the plain twin of the loss's one-pass form."""
    l2 = box_cox(F.logsigmoid(logits), q2)
    l3 = box_cox(F.logsigmoid(-logits), q3)
    unobs = weights * (soft_targets * l2 + (1.0 - soft_targets) * l3)
    out = torch.where(observed == 1, -F.logsigmoid(logits), unobs)
    return torch.where(observed == -1, F.softplus(logits), out)


@pytest.mark.parametrize("seed", range(6))
def test_the_one_pass_form_equals_the_term_by_term_loss_bit_for_bit(seed):
    """Values and gradients identical (not close: equal) to the term-by-term form, with and
    without observed negatives, on members x batch x labels, logits reaching ±30."""
    g = torch.Generator().manual_seed(seed)
    shape = (2, 7, 5) if seed % 2 else (9, 4)
    logits = (torch.randn(shape, generator=g) * (10 if seed > 3 else 2)).clamp(-30, 30)
    low = -1 if seed % 3 == 0 else 0  # every third draw has observed negatives
    observed = torch.randint(low, 2, shape, generator=g)
    k, v = torch.rand(shape, generator=g), torch.rand(shape, generator=g)
    q2, q3 = (0.01, 1.0) if seed < 3 else (0.5, 0.0)
    a, b = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    fast = generalized_robust(a, observed, soft_targets=k, weights=v, q2=q2, q3=q3)
    plain = _gr_term_by_term(b, observed, k, v, q2, q3)
    assert torch.equal(fast, plain)
    w = torch.rand(shape, generator=g)
    (fast * w).sum().backward()
    (plain * w).sum().backward()
    assert torch.equal(a.grad, b.grad)


def test_the_unobserved_term_computes_log_p_itself_when_not_given():
    from spmlkit.losses.generalized_robust import gr_unobserved

    g = torch.Generator().manual_seed(0)
    s, k, v = torch.randn(3, 4, generator=g), torch.rand(3, 4, generator=g), torch.rand(3, 4, generator=g)
    given = gr_unobserved(s, k, v, q2=0.01, q3=1.0, log_p=torch.nn.functional.logsigmoid(s))
    assert torch.allclose(gr_unobserved(s, k, v, q2=0.01, q3=1.0), given)
