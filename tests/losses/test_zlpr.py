"""ZLPR (Su et al. 2022): hand-computed values, the soft form, stability, shapes."""
import math

import pytest
import torch

from spmlkit.losses import get_loss, reduce_mean
from spmlkit.losses.zlpr import log_offset_sum_exp, pairwise_logsumexp_loss, zlpr, zlpr_soft

S = torch.tensor([[2.0, -1.0, 0.5]])


def test_hand_computed_single_positive():
    # observed (+1, 0, 0): Ω_pos = {2.0}, Ω_neg = {-1.0, 0.5} (unobserved assumed negative)
    got = zlpr(S, torch.tensor([[1, 0, 0]]))
    want = math.log(1 + math.exp(-1.0) + math.exp(0.5)) + math.log(1 + math.exp(-2.0))
    assert got.shape == (1, 1)
    assert got.item() == pytest.approx(want, rel=1e-6)  # = 1.231059


def test_hand_computed_full_labels():
    # observed (+1, +1, -1): Ω_pos = {2.0, -1.0}, Ω_neg = {0.5}
    got = zlpr(S, torch.tensor([[1, 1, -1]])).item()
    want = math.log(1 + math.exp(0.5)) + math.log(1 + math.exp(-2.0) + math.exp(1.0))
    assert got == pytest.approx(want, rel=1e-6)


def test_observed_negatives_and_unobserved_are_the_same_negatives():
    s = torch.randn(5, 6)
    Z = torch.zeros(5, 6, dtype=torch.int8)
    Z[:, 0] = 1
    Zn = Z.clone()
    Zn[Zn == 0] = -1
    assert torch.allclose(zlpr(s, Z), zlpr(s, Zn))


def test_no_positive_and_no_negative_sides():
    s = torch.tensor([[3.0, -2.0]])
    # all positive: log(1 + 0) + log(1 + e^-3 + e^2)
    assert zlpr(s, torch.tensor([[1, 1]])).item() == pytest.approx(math.log(1 + math.exp(-3) + math.exp(2)), rel=1e-6)


def test_stable_at_extreme_logits():
    s = torch.tensor([[100.0, -100.0, -100.0], [-1000.0, 1000.0, 50.0]], requires_grad=True)
    Z = torch.tensor([[1, 0, 0], [1, 0, -1]])
    out = zlpr(s, Z)
    assert torch.isfinite(out).all()
    # row 0: log(1 + 2e^-100) + log(1 + e^-100) ~ 0; row 1: log(1 + e^1000 + e^50) + log(1 + e^1000) ~ 2000
    assert out[0].item() == pytest.approx(0.0, abs=1e-30)
    assert out[1].item() == pytest.approx(2000.0, rel=1e-6)
    out.sum().backward()
    assert torch.isfinite(s.grad).all()
    # row 1: d/ds0 = -e^1000/(1+e^1000) = -1; d/ds1 = e^1000/(1+e^1000+e^50) = 1; d/ds2 ~ e^-950 = 0
    assert s.grad[1].tolist() == pytest.approx([-1.0, 1.0, 0.0], abs=1e-6)


def test_gradcheck_double():
    torch.manual_seed(0)
    s = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    Z = torch.tensor([[1, 0, 0, -1], [0, 1, 1, 0], [1, -1, -1, -1]])
    assert torch.autograd.gradcheck(lambda x: zlpr(x, Z), (s,))


def test_soft_form_hand_computed():
    # observed (+1, 0, 0) with soft targets 0.3, 0.6 on the unobserved labels
    t = torch.tensor([[0.9, 0.3, 0.6]])  # the first value is ignored: observed positive -> 1
    got = zlpr_soft(S, torch.tensor([[1, 0, 0]]), soft_targets=t).item()
    want = (math.log(1 + 0.7 * math.exp(-1.0) + 0.4 * math.exp(0.5))
            + math.log(1 + math.exp(-2.0) + 0.3 * math.exp(1.0) + 0.6 * math.exp(-0.5)))
    assert got == pytest.approx(want, rel=1e-6)


def test_soft_form_reduces_to_hard_form():
    torch.manual_seed(1)
    s = torch.randn(2, 7, 5)
    Z = torch.randint(-1, 2, (2, 7, 5)).to(torch.int8)
    assert torch.allclose(zlpr_soft(s, Z), zlpr(s, Z))
    assert torch.allclose(zlpr_soft(s, Z, soft_targets=torch.zeros_like(s)), zlpr(s, Z))
    # a target of 1 on an unobserved entry = that entry observed positive
    Zp = torch.where(Z == 0, torch.ones_like(Z), Z)
    assert torch.allclose(zlpr_soft(s, Z, soft_targets=torch.ones_like(s)), zlpr(s, Zp), atol=1e-6)


def test_general_soft_form_matches_naive_formula():
    torch.manual_seed(2)
    s = torch.randn(4, 6, dtype=torch.float64)
    t = torch.rand(4, 6, dtype=torch.float64)
    naive = torch.log(2.0 + ((1 - t) * s.exp()).sum(-1)) + torch.log(0.5 + (t * (-s).exp()).sum(-1))
    got = pairwise_logsumexp_loss(s, t, a=2.0, b=0.5).squeeze(-1)
    assert torch.allclose(got, naive)


def test_log_offset_sum_exp_zero_weights_drop_out():
    x = torch.tensor([[1.0, 500.0]], requires_grad=True)
    out = log_offset_sum_exp(x, torch.tensor([[1.0, 0.0]]), 1.0)
    assert out.item() == pytest.approx(math.log(1 + math.e), rel=1e-6)
    out.backward()
    assert x.grad[0].tolist() == pytest.approx([math.e / (1 + math.e), 0.0])


def test_members_are_independent_and_shape():
    torch.manual_seed(3)
    s = torch.randn(3, 4, 5)
    Z = torch.zeros(3, 4, 5, dtype=torch.int8)
    Z[..., 2] = 1
    out = get_loss("zlpr")(s, Z)
    assert out.shape == (3, 4, 1)
    for g in range(3):
        assert torch.allclose(out[g], zlpr(s[g], Z[g]))
    assert reduce_mean(out).shape == (3,)


def test_fused_form_equals_two_log_offset_sum_exps_with_gradients():
    """The one-node pairwise loss equals log_offset_sum_exp(s, 1−t, a) + log_offset_sum_exp(−s, t, b)
    under autograd — values and gradients — for soft targets and a, b ≠ 1, and passes gradcheck."""
    torch.manual_seed(6)
    s = torch.randn(2, 5, 7, dtype=torch.float64, requires_grad=True)
    t = torch.rand(2, 5, 7, dtype=torch.float64)
    t[0, 0] = 0.0  # a side with no weight left but its offset
    w = torch.rand(2, 5, 1, dtype=torch.float64)
    (pairwise_logsumexp_loss(s, t, a=2.0, b=0.5) * w).sum().backward()
    ours = s.grad.clone()
    s.grad = None
    ref = log_offset_sum_exp(s, 1.0 - t, 2.0) + log_offset_sum_exp(-s, t, 0.5)
    assert torch.allclose(pairwise_logsumexp_loss(s, t, a=2.0, b=0.5), ref)
    (ref * w).sum().backward()
    assert torch.allclose(ours, s.grad, atol=1e-12)
    assert torch.autograd.gradcheck(lambda x: pairwise_logsumexp_loss(x, t, a=2.0, b=0.5), (s.detach().requires_grad_(),))


def test_constants_inside_the_logarithms_must_be_positive():
    from spmlkit.errors import ConfigError

    x, w = torch.zeros(1, 2), torch.ones(1, 2)
    for off in (0.0, -1.0):
        with pytest.raises(ConfigError) as e:
            log_offset_sum_exp(x, w, off)
        assert str(e.value) == f"the constant inside the logarithm must be > 0, got {off}"
    for a, b in ((0.0, 1.0), (1.0, 0.0), (-1.0, -1.0)):
        with pytest.raises(ConfigError) as e:
            pairwise_logsumexp_loss(x, w, a=a, b=b)
        assert str(e.value) == f"the constants inside the logarithms must be > 0, got a={a}, b={b}"


def test_log_offset_sum_exp_keeps_float64_digits_with_float32_weights():
    x = torch.tensor([[0.3, -1.7, 2.2]], dtype=torch.float64)
    w = torch.tensor([[0.3, 0.0, 0.7]], dtype=torch.float32)
    want = math.log(3.0 + float(w[0, 0]) * math.exp(0.3) + float(w[0, 2]) * math.exp(2.2))
    from tests.helpers.device_trap import device_trap

    with device_trap():  # nothing made on the default device
        out = log_offset_sum_exp(x, w, 3.0)
        assert out.dtype == torch.float64 and out.item() == pytest.approx(want, rel=1e-14)
