"""Zbinden et al.'s full-weighted presence-only loss (spmlkit.losses.full_weighted):
hand-computed value and limits."""
from __future__ import annotations

import math

import pytest
import torch

from spmlkit.losses import get_loss

S = torch.tensor([[1.5, -0.5, 0.25]])
R = torch.tensor([[-1.0, 2.0, 0.5]])
Z = torch.tensor([[1, 0, 0]], dtype=torch.int8)


def nlog(p):
    return -math.log(p)


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_full_weighted_hand_value_and_limits():
    q = torch.tensor([0.2, 0.5, 0.25])
    out = get_loss("full-weighted")(S, Z, background_logits=R, label_frequency=q)  # λ1 = 1, λ2 = 0.8
    want = (5 * nlog(sig(1.5)) + 0.8 * 2 * nlog(1 - sig(-0.5)) + 0.8 * (4 / 3) * nlog(1 - sig(0.25))
            + 0.2 * sum(nlog(1 - sig(r)) for r in (-1.0, 2.0, 0.5)))
    assert out.sum().item() == pytest.approx(want, rel=1e-6)
    # λ2 = 1: no background term at all; λ2 = 0: background only besides the presences
    r_free = get_loss("full-weighted")(S, Z, background_logits=R + 50, label_frequency=q, lambda2=1.0)
    assert torch.allclose(r_free, get_loss("full-weighted")(S, Z, background_logits=R, label_frequency=q, lambda2=1.0))
    only_bg = get_loss("full-weighted")(S, Z, background_logits=R, label_frequency=q, lambda2=0.0)
    assert only_bg[0, 1].item() == pytest.approx(nlog(1 - sig(2.0)), rel=1e-6)


@pytest.mark.parametrize("q", [1.0, 0.0])
def test_frequencies_at_their_limits_stay_finite(q):
    """One species (n_s = n: frequency 1, so n/(n − n_s) is infinite) and a label never
    observed (frequency 0, w_s infinite): the weights are clamped, so the loss and its
    gradient stay finite, on presence rows and on a row with no observed label."""
    x = torch.tensor([[1.5], [-0.5], [0.3]], requires_grad=True)
    r = torch.tensor([[-1.0], [2.0], [0.5]], requires_grad=True)
    z = torch.tensor([[1], [1], [0]] if q else [[0], [0], [0]], dtype=torch.int8)
    out = get_loss("full-weighted")(x, z, background_logits=r, label_frequency=torch.tensor([q]))
    assert torch.isfinite(out).all()
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(r.grad).all()
    if q:  # presences weigh λ1/q = 1 (up to the clamp), the background of a label alone 1 (not 1 − λ2)
        assert out[0, 0].item() == pytest.approx(nlog(sig(1.5)) + nlog(1 - sig(-1.0)), rel=1e-5)


def test_one_species_in_bfloat16_stays_finite():
    """In bfloat16, 1 − 1e-6 rounds to 1: the frequency is clamped in float32 at least, so a
    frequency of 1 still gives finite weights under autocast."""
    x = torch.tensor([[1.5], [0.3]], dtype=torch.bfloat16)
    z = torch.tensor([[1], [0]], dtype=torch.int8)
    out = get_loss("full-weighted")(x, z, background_logits=x, label_frequency=torch.ones(1, dtype=torch.bfloat16))
    assert out.dtype == torch.bfloat16 and torch.isfinite(out).all()


def test_a_label_alone_weighs_its_background_fully():
    """One species (n_s = n): no other species' presences take λ₂'s share, so the
    background term weighs 1, not 1 − λ₂: presence-versus-background logistic loss."""
    s, r = torch.tensor([[0.7], [-0.3]]), torch.tensor([[0.4], [-2.0]])
    z = torch.tensor([[1], [1]], dtype=torch.int8)
    out = get_loss("full-weighted")(s, z, background_logits=r, label_frequency=torch.tensor([1.0]))
    want = sum(nlog(sig(a)) + nlog(1 - sig(b)) for a, b in ((0.7, 0.4), (-0.3, -2.0)))
    assert out.sum().item() == pytest.approx(want, rel=1e-6)
    # a label shared with others keeps Zbinden's 1 − λ₂ on the background
    two = get_loss("full-weighted")(torch.zeros(1, 2), torch.tensor([[1, 0]]), background_logits=torch.zeros(1, 2),
                                    label_frequency=torch.tensor([0.5, 0.5]))
    assert two[0, 1].item() == pytest.approx((0.8 * 2 + 0.2) * math.log(2), rel=1e-6)


def test_a_label_whose_frequency_reaches_one_minus_eps_in_the_weights_precision_has_no_target_group():
    """``alone`` (background weight 1, not 1 − λ₂) from 1 − 1e-6 on, compared in the weights'
    precision (float32 here): a float64 frequency just below it that float32 rounds onto it
    counts as alone too."""
    z = torch.zeros(1, 1)
    just_below = torch.tensor([1 - 1e-6 - 1e-9], dtype=torch.float64)  # float32: exactly float32(1 - 1e-6)
    for q in (torch.tensor([1 - 1e-6]), just_below):
        out = get_loss("full-weighted")(z, torch.tensor([[1]]), background_logits=z, label_frequency=q,
                                        lambda1=1.0, lambda2=0.5)
        q32 = float(torch.tensor([1 - 1e-6]).item())
        assert out.item() == pytest.approx(math.log(2) * (1 / q32 + 1.0), rel=1e-6)  # not 1 / q + 0.5
