"""Hill loss and the focal margin loss (Zhang et al. 2021, arXiv:2112.07368)."""
import math

import pytest
import torch
import torch.nn.functional as F

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss

HILL = get_loss("hill")
FM = get_loss("focal-margin")


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_hand_computed_values():
    s = torch.tensor([[2.0, -1.0, 0.5]])
    z = torch.tensor([[1, 0, -1]])
    pm = sig(2.0 - 1.0)
    want_pos = -(1 - pm) ** 2 * math.log(pm)
    got = HILL(s, z)[0].tolist()
    assert got[0] == pytest.approx(want_pos, rel=1e-6)
    for i, x in ((1, -1.0), (2, 0.5)):
        p = sig(x)
        assert got[i] == pytest.approx((1.5 - p) * p * p, rel=1e-6)
    got = FM(s, z)[0].tolist()
    assert got[0] == pytest.approx(want_pos, rel=1e-6)
    for i, x in ((1, -1.0), (2, 0.5)):
        p = sig(x)
        assert got[i] == pytest.approx(-(p ** 2) * math.log(1 - p), rel=1e-6)


def test_hill_is_bounded_where_bce_is_not():
    """Zhang §3.3: the Hill term stays below λ − 1 = 0.5 however confident the model is that
    the "negative" is present; BCE grows without bound."""
    s = torch.linspace(-30, 30, 601).view(1, -1)
    z = torch.zeros_like(s, dtype=torch.int8)
    h = HILL(s, z)
    assert float(h.max()) <= 0.5 + 1e-6 and float(h.min()) >= 0
    assert float(h[0, -1]) == pytest.approx(0.5, abs=1e-6)
    assert float(F.softplus(s).max()) > 29  # BCE on the same entries
    assert torch.all(h[0, 1:] >= h[0, :-1] - 1e-7)  # still increasing in p (a proper negative loss)


def test_hill_gradient_is_hill_shaped():
    """dL/dp = 2λp − 3p² = 3p(1 − p) at λ = 1.5: not monotone, peaks at p = 0.5, vanishes at p = 1,
    so confident (likely missing-positive) negatives get almost no push — unlike BCE's 1/(1 − p)."""
    p = torch.linspace(0.0, 1.0, 101, dtype=torch.float64, requires_grad=True)
    logits = torch.log(p.clamp(1e-12, 1 - 1e-12)) - torch.log1p(-p.clamp(1e-12, 1 - 1e-12))
    HILL(logits.view(1, -1), torch.zeros(1, 101, dtype=torch.int8)).sum().backward()
    g = p.grad
    peak = int(torch.argmax(g))
    assert peak == 50
    assert g[:peak].diff().min() > 0 and g[peak:].diff().max() < 0  # rises, then falls
    assert float(g[-1]) == pytest.approx(0.0, abs=1e-3)
    assert torch.allclose(g[1:-1], 3 * p[1:-1] * (1 - p[1:-1]), atol=1e-4)


def test_gradient_wrt_logit_of_confident_negative_is_smaller_than_bce():
    s = torch.tensor([[4.0]], requires_grad=True)
    HILL(s, torch.zeros(1, 1, dtype=torch.int8)).sum().backward()
    assert 0 < float(s.grad) < sig(4.0) / 10  # BCE's gradient is p = 0.98


def test_margin_and_gamma_limits():
    torch.manual_seed(0)
    s = torch.randn(3, 4, 6)
    z = torch.randint(-1, 2, (3, 4, 6))
    # focal margin with m = 0 is the focal loss on AN targets; with γ = 0 as well it is AN
    assert torch.allclose(FM(s, z, margin=0.0), get_loss("focal")(s, z, gamma=2.0), atol=1e-6)
    assert torch.allclose(FM(s, z, margin=0.0, gamma=0.0), get_loss("an")(s, z), atol=1e-6)
    # the margin raises the positive's loss at every logit
    pos = z == 1
    assert torch.all(FM(s, z)[pos] > FM(s, z, margin=0.0)[pos])


def test_stable_for_extreme_logits():
    s = torch.tensor([[-1e4, 1e4, -1e4, 1e4]])
    z = torch.tensor([[1, 1, 0, 0]])
    for fn in (HILL, FM):
        out = fn(s, z)
        assert torch.isfinite(out).all()


def test_bad_parameters():
    s, z = torch.zeros(1, 2), torch.tensor([[1, 0]])
    with pytest.raises(ConfigError):
        HILL(s, z, lam=0.5)
    with pytest.raises(ConfigError):
        FM(s, z, gamma=-1.0)


def test_helpers_default_to_the_papers_values():
    """The building blocks default to Zhang et al.'s m = 1, γ = 2, λ = 1.5 as the losses do."""
    from spmlkit.losses.robust_mlml import focal_margin_positive, focal_negative, hill_negative

    s = torch.tensor([0.3, -1.2, 2.0])
    assert torch.equal(focal_margin_positive(s), focal_margin_positive(s, margin=1.0, gamma=2.0))
    assert torch.equal(focal_negative(s), focal_negative(s, gamma=2.0))
    assert torch.equal(hill_negative(s), hill_negative(s, lam=1.5))
    assert not torch.equal(focal_margin_positive(s), focal_margin_positive(s, margin=2.0))
