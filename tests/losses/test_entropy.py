"""EM (Zhou Eq. 3-5), EM+APL (Eq. 7-8) and EntMin (Grandvalet & Bengio) losses."""
import math

import pytest
import torch

from spmlkit.losses import get_loss, reduce_mean
from spmlkit.losses.entropy import binary_entropy_with_logits


def sig(x):
    return 1 / (1 + math.exp(-x))


def H(p):
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


S = torch.tensor([[2.0, -1.0, 0.5]])
Z = torch.tensor([[1, 0, -1]])


def test_entropy_hand_values_and_extremes():
    got = binary_entropy_with_logits(torch.tensor([0.0, 1.0, -3.0], dtype=torch.float64)).tolist()
    assert got == pytest.approx([math.log(2), H(sig(1.0)), H(sig(-3.0))], rel=1e-12)
    big = binary_entropy_with_logits(torch.tensor([-1e4, 1e4, 50.0]))
    assert torch.isfinite(big).all() and big.max() < 1e-15


def test_em_hand_computed():
    got = get_loss("em")(S, Z, alpha=0.1)[0].tolist()
    # observed positive: -log σ(2); unobserved: -0.1·H(σ(-1)); observed negative (partial labels): -log(1-σ(0.5))
    want = [-math.log(sig(2.0)), -0.1 * H(sig(-1.0)), -math.log(1 - sig(0.5))]
    assert got == pytest.approx(want, rel=1e-6)
    assert reduce_mean(get_loss("em")(S, Z, alpha=0.1)).item() == pytest.approx(sum(want) / 3, rel=1e-6)


def test_em_default_alpha_and_minimum():
    assert get_loss("em").hyperparameters == {"alpha": 0.1}
    g = torch.linspace(-6, 6, 121)
    loss = get_loss("em")(g.view(1, -1), torch.zeros(1, 121, dtype=torch.int8), alpha=0.3)[0]
    assert loss.argmin().item() == 60 and loss.min().item() == pytest.approx(-0.3 * math.log(2), rel=1e-6)


def test_em_gradient_on_unobserved_logit_is_eq5():
    """Zhou Eq. 5: dL∅/dg = -α e^{-g} log(e^{-g}) / (1 + e^{-g})², on a grid of logits."""
    alpha = 0.37
    g = torch.linspace(-30, 30, 241, dtype=torch.float64).view(1, -1).requires_grad_()
    Zu = torch.zeros(g.shape, dtype=torch.int8)
    get_loss("em")(g, Zu, alpha=alpha).sum().backward()
    x = g.detach()
    eq5 = -alpha * torch.exp(-x) * torch.log(torch.exp(-x)) / (1 + torch.exp(-x)) ** 2
    assert torch.allclose(g.grad, eq5, rtol=1e-9, atol=1e-15)
    # the regime the paper describes: 0 at g = 0, small near 0, vanishing for confident logits
    assert g.grad[0, 120].item() == 0.0 and abs(g.grad[0, 0].item()) < 1e-10


def test_em_gradient_on_positive_is_eq5():
    g = torch.linspace(-20, 20, 81, dtype=torch.float64).view(1, -1).requires_grad_()
    get_loss("em")(g, torch.ones(g.shape, dtype=torch.int8)).sum().backward()
    x = g.detach()
    assert torch.allclose(g.grad, -torch.exp(-x) / (1 + torch.exp(-x)), rtol=1e-9)


def test_em_on_full_labels_is_bce():
    s = torch.randn(4, 5)
    Zf = torch.where(torch.rand(4, 5) < 0.4, 1, -1).to(torch.int8)
    assert torch.allclose(get_loss("em")(s, Zf), get_loss("bce")(s, Zf))


def test_em_stable_for_extreme_logits():
    s = torch.tensor([[90.0, -90.0, 90.0]], requires_grad=True)
    out = get_loss("em")(s, torch.tensor([[0, 0, 1]]))
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(s.grad).all()


# --------------------------------------------------------------------------- EM+APL
def test_em_apl_hand_computed():
    s = torch.tensor([[2.0, -1.0, 0.5, 1.0]])
    z = torch.tensor([[1, 0, -1, 0]])
    t = torch.tensor([[float("nan"), float("nan"), float("nan"), 0.3]])
    got = get_loss("em-apl")(s, z, pseudo_targets=t, alpha=0.1, beta=0.2)[0].tolist()
    # pseudo-labelled unobserved entry: 0.2 · -[0.3 log σ(1) + 0.7 log(1-σ(1))]   (Eq. 7-8)
    want = [-math.log(sig(2.0)), -0.1 * H(sig(-1.0)), -math.log(1 - sig(0.5)),
            -0.2 * (0.3 * math.log(sig(1.0)) + 0.7 * math.log(1 - sig(1.0)))]
    assert got == pytest.approx(want, rel=1e-6)


def test_em_apl_without_pseudo_labels_is_em_and_ignores_targets_on_observed():
    s = torch.randn(3, 6)
    z = torch.zeros(3, 6, dtype=torch.int8)
    z[:, 0] = 1
    z[:, 1] = -1
    none = torch.full((3, 6), float("nan"))
    assert torch.allclose(get_loss("em-apl")(s, z, pseudo_targets=none), get_loss("em")(s, z))
    on_observed = none.clone()
    on_observed[:, :2] = 0.5
    assert torch.allclose(get_loss("em-apl")(s, z, pseudo_targets=on_observed), get_loss("em")(s, z))


def test_em_apl_gradient_is_finite_with_nan_targets_and_pulls_towards_target():
    s = torch.tensor([[0.0, 0.0]], requires_grad=True)
    t = torch.tensor([[float("nan"), 0.2]])
    get_loss("em-apl")(s, torch.zeros(1, 2, dtype=torch.int8), pseudo_targets=t, beta=0.5).sum().backward()
    assert torch.isfinite(s.grad).all()
    assert s.grad[0, 0].item() == 0.0  # EM gradient at g = 0
    assert s.grad[0, 1].item() == pytest.approx(0.5 * (0.5 - 0.2))  # β(σ(s) − t)


# --------------------------------------------------------------------------- EntMin
def test_entmin_hand_computed_and_limits():
    got = get_loss("entmin")(S, Z, weight=0.5)[0].tolist()
    want = [-math.log(sig(2.0)), -math.log(1 - sig(-1.0)) + 0.5 * H(sig(-1.0)), -math.log(1 - sig(0.5))]
    assert got == pytest.approx(want, rel=1e-6)
    s = torch.randn(4, 5)
    z = torch.zeros(4, 5, dtype=torch.int8)
    z[:, 2] = 1
    assert torch.allclose(get_loss("entmin")(s, z, weight=0.0), get_loss("an")(s, z))
    # without the AN term it is the EM loss with the sign flipped
    assert torch.allclose(get_loss("entmin")(s, z, weight=0.3, assume_negative=False),
                          -get_loss("em")(s, z, alpha=0.3) + 2 * get_loss("bce")(s, z))


@pytest.mark.parametrize("name,kw", [("em", {}), ("entmin", {}),
                                     ("em-apl", {"pseudo_targets": torch.rand(3, 4, 5)})])
def test_member_axis_is_never_mixed(name, kw):
    torch.manual_seed(0)
    s = torch.randn(3, 4, 5)
    z = torch.zeros(3, 4, 5, dtype=torch.int8)
    z[..., 0] = 1
    full = get_loss(name)(s, z, **kw)
    one = get_loss(name)(s[1], z[1], **{k: v[1] for k, v in kw.items()})
    assert full.shape == s.shape and torch.allclose(full[1], one)
