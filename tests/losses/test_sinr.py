"""SINR's presence-only losses (Cole et al. 2023) and Zbinden et al.'s full-weighted loss:
hand-computed values, limits and gradient signs."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from spmlkit.losses import get_loss
from spmlkit.losses.entropy import binary_entropy_with_logits as H

S = torch.tensor([[1.5, -0.5, 0.25]])
R = torch.tensor([[-1.0, 2.0, 0.5]])
Z = torch.tensor([[1, 0, 0]], dtype=torch.int8)


def nlog(p):
    return -math.log(p)


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_an_ssdl_hand_value():
    out = get_loss("an-ssdl")(S, Z, background_logits=R)
    assert out.sum().item() == pytest.approx(nlog(sig(1.5)) + nlog(1 - sig(-1.0)), rel=1e-6)
    assert out[0, 1:].abs().sum() == 0  # other labels: no term


def test_an_slds_hand_value_and_random_label_never_the_positive():
    out = get_loss("an-slds")(S, Z, label_draw=torch.tensor([[0.99, 0.2, 0.7]]))
    assert out.sum().item() == pytest.approx(nlog(sig(1.5)) + nlog(1 - sig(0.25)), rel=1e-6)
    assert out[0, 1] == 0


def test_an_full_hand_value_and_lambda():
    lam = 7.0
    out = get_loss("an-full")(S, Z, background_logits=R, pos_weight=lam)
    want = (lam * nlog(sig(1.5)) + nlog(1 - sig(-0.5)) + nlog(1 - sig(0.25))
            + sum(nlog(1 - sig(r)) for r in (-1.0, 2.0, 0.5)))
    assert out.sum().item() == pytest.approx(want, rel=1e-6)
    assert get_loss("an-full").hyperparameters["pos_weight"] == 2048


@pytest.mark.parametrize("name", ["an-ssdl-me", "an-full-me"])
def test_me_variants_replace_assume_negative_by_negative_entropy(name):
    an = get_loss(name.replace("-me", ""))(S, Z, background_logits=R).sum()
    me = get_loss(name)(S, Z, background_logits=R).sum()
    if name == "an-ssdl-me":
        diff = F.softplus(R[0, 0]) + H(R[0, 0])
    else:
        diff = F.softplus(S[0, 1:]).sum() + H(S[0, 1:]).sum() + F.softplus(R).sum() + H(R).sum()
    assert (an - me).item() == pytest.approx(diff.item(), rel=1e-6)
    # the ME term is minimal (−log 2) at f = ½: its gradient vanishes at logit 0
    x = torch.zeros(1, 3, requires_grad=True)
    get_loss(name)(S, Z, background_logits=x).sum().backward()
    assert torch.allclose(x.grad, torch.zeros(1, 3), atol=1e-7)


def test_an_slds_me():
    draw = torch.tensor([[0.0, 0.9, 0.1]])
    out = get_loss("an-slds-me")(S, Z, label_draw=draw)
    assert out[0, 1].item() == pytest.approx(-H(S[0, 1]).item(), rel=1e-6)


@pytest.mark.parametrize("name", ["an-ssdl", "an-full", "full-weighted"])
def test_gradients_raise_positive_lower_background(name):
    x = S.clone().requires_grad_(True)
    r = R.clone().requires_grad_(True)
    kw = {"label_frequency": torch.tensor([0.2, 0.5, 0.3])} if name == "full-weighted" else {}
    get_loss(name)(x, Z, background_logits=r, **kw).sum().backward()
    assert x.grad[0, 0] < 0  # descending raises the observed positive
    assert (r.grad[:, 0] > 0).all()  # and lowers the background


def test_large_logits_stay_finite():
    big = torch.tensor([[100.0, -100.0, 100.0]], requires_grad=True)
    for name in ("an-ssdl", "an-full", "an-full-me"):
        out = get_loss(name)(big, Z, background_logits=big)
        assert torch.isfinite(out).all()


# An example with an observed positive, an observed negative (a real absence) and an
# unobserved label, and a second example with only an absence.
ZN = torch.tensor([[1, -1, 0], [0, -1, 0]], dtype=torch.int8)
SN = torch.tensor([[1.5, -0.5, 0.25], [0.3, 1.1, -0.8]], dtype=torch.float64)
RN = torch.tensor([[-1.0, 2.0, 0.5], [0.4, -0.2, 1.3]], dtype=torch.float64)


def h(x):
    p = sig(x)
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


@pytest.mark.parametrize("me", [False, True])
def test_an_full_observed_negatives_are_known_absences(me):
    """SINR (module docstring): an observed negative gets −log(1 − f) once — never the
    assumed-negative term on top, and never the ME variants' entropy."""
    name, lam = ("an-full-me" if me else "an-full"), 3.0
    out = get_loss(name)(SN, ZN, background_logits=RN, pos_weight=lam)
    assumed = (lambda x: -h(x)) if me else (lambda x: nlog(1 - sig(x)))
    bg = [[assumed(r) for r in row] for row in RN.tolist()]
    want = [[lam * nlog(sig(1.5)) + bg[0][0], nlog(1 - sig(-0.5)) + bg[0][1], assumed(0.25) + bg[0][2]],
            [assumed(0.3) + bg[1][0], nlog(1 - sig(1.1)) + bg[1][1], assumed(-0.8) + bg[1][2]]]
    assert out.flatten().tolist() == pytest.approx(sum(want, []), rel=1e-6)


@pytest.mark.parametrize("name", ["an-ssdl", "an-ssdl-me"])
def test_an_ssdl_observed_negatives(name):
    out = get_loss(name)(SN, ZN, background_logits=RN)
    bg = -h(-1.0) if name.endswith("-me") else nlog(1 - sig(-1.0))
    want = [[nlog(sig(1.5)) + bg, nlog(1 - sig(-0.5)), 0.0], [0.0, nlog(1 - sig(1.1)), 0.0]]
    assert out.flatten().tolist() == pytest.approx(sum(want, []), rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("name", ["an-slds", "an-slds-me"])
def test_an_slds_observed_negatives_are_never_doubled(name):
    """The random other label z′ that lands on an observed negative adds nothing: the
    negative already has its −log(1 − f)."""
    draw = torch.tensor([[0.1, 0.9, 0.5], [0.2, 0.9, 0.3]])  # z′ = the observed negative in both rows
    out = get_loss(name)(SN, ZN, label_draw=draw)
    want = [[nlog(sig(1.5)), nlog(1 - sig(-0.5)), 0.0], [0.0, nlog(1 - sig(1.1)), 0.0]]
    assert out.flatten().tolist() == pytest.approx(sum(want, []), rel=1e-6, abs=1e-7)
