"""The VLPL loss (Xing et al. 2023)."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss

VLPL = get_loss("vlpl")


def test_hand_computed_every_case():
    s = torch.tensor([[0.5, -1.0, 2.0, 0.3, -0.2]])
    z = torch.tensor([[1, 0, 0, 0, -1]])
    pl = torch.tensor([[1, 1, -1, 0, 1]])  # pseudo-labels on observed entries are ignored
    out = VLPL(s, z, pseudo_labels=pl, alpha=0.1, beta_pos=0.7, beta_neg=0.4, epsilon=0.1)[0].tolist()
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert out[0] == pytest.approx(-math.log(sig(0.5)), rel=1e-6)
    p = sig(-1.0)
    assert out[1] == pytest.approx(0.7 * (-0.9 * math.log(p) - 0.1 * math.log(1 - p)), rel=1e-6)
    assert out[2] == pytest.approx(0.4 * -math.log(1 - sig(2.0)), rel=1e-6)
    p = sig(0.3)
    assert out[3] == pytest.approx(0.1 * (p * math.log(p) + (1 - p) * math.log(1 - p)), rel=1e-6)
    assert out[4] == pytest.approx(-math.log(1 - sig(-0.2)), rel=1e-6)


def test_without_pseudo_labels_is_em():
    torch.manual_seed(0)
    s = torch.randn(2, 4, 6)
    z = torch.zeros(2, 4, 6, dtype=torch.int8)
    z[..., 2] = 1
    out = VLPL(s, z, pseudo_labels=torch.zeros_like(z), alpha=0.2)
    assert torch.allclose(out, get_loss("em")(s, z, alpha=0.2), atol=1e-6)


def test_pseudo_positive_pulls_up_pseudo_negative_pushes_down():
    s = torch.zeros(1, 3, requires_grad=True)
    z = torch.tensor([[1, 0, 0]])
    VLPL(s, z, pseudo_labels=torch.tensor([[0, 1, -1]]), beta_neg=1.0).sum().backward()
    assert s.grad[0, 1] < 0 < s.grad[0, 2]
    # at p = 0.5 the entropy term has zero gradient: an unknown label is left alone
    s2 = torch.zeros(1, 2, requires_grad=True)
    VLPL(s2, torch.tensor([[1, 0]]), pseudo_labels=torch.zeros(1, 2)).sum().backward()
    assert s2.grad[0, 1].abs() < 1e-7


def test_bad_epsilon():
    with pytest.raises(ConfigError):
        VLPL(torch.zeros(1, 2), torch.tensor([[1, 0]]), pseudo_labels=torch.zeros(1, 2), epsilon=2.0)
