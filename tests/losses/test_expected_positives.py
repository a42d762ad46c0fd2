"""EPR (Cole et al. 2021, §5.3, Eq. 10)."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss, reduce_mean
from spmlkit.losses.expected_positives import expected_positive_penalty


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_hand_computed():
    s = torch.tensor([[2.0, -1.0, 0.0], [0.0, 1.0, -2.0]])
    z = torch.tensor([[1, 0, 0], [0, 1, 0]])
    k = 1.0
    out = get_loss("epr")(s, z, k=k)
    # k̂ = mean over the batch of Σ_i f_i
    k_hat = ((sig(2) + sig(-1) + 0.5) + (0.5 + sig(1) + sig(-2))) / 2  # = 1.5
    assert k_hat == pytest.approx(1.5, abs=1e-12)
    R = ((k_hat - k) / 3) ** 2  # (0.5 / 3)^2 = 0.027778
    assert R == pytest.approx(0.0277778, abs=1e-7)
    pos = -math.log(sig(2)) - math.log(sig(1))  # 0.126928 + 0.313262
    assert reduce_mean(out).item() == pytest.approx(pos / 6 + R, rel=1e-6)  # code scaling: / (B·L)
    # per entry: −log f on positives, plus λR_k on every entry
    assert out[0, 0].item() == pytest.approx(-math.log(sig(2)) + R, rel=1e-6)
    assert out[0, 1].item() == pytest.approx(R, rel=1e-6)
    # λ scales only the penalty
    assert reduce_mean(get_loss("epr")(s, z, k=k, lam=3.0)).item() == pytest.approx(pos / 6 + 3 * R, rel=1e-6)


@pytest.mark.parametrize("direction", [-1, +1])
def test_gradient_moves_k_hat_toward_k(direction):
    """If k̂ > k gradient descent lowers the sum of probabilities, and raises it if k̂ < k."""
    torch.manual_seed(0)
    s = (torch.randn(4, 5) * 0.1).requires_grad_()
    z = torch.zeros(4, 5, dtype=torch.int8)
    z[:, 0] = 1
    k_hat = torch.sigmoid(s).sum(-1).mean().item()  # ≈ 2.5
    k = k_hat + direction * 1.0
    reduce_mean(get_loss("epr")(s, z, k=k)).backward()
    # on unobserved entries only the penalty acts: d/ds = 2(k̂ − k)/L² · σ'(s)/B, sign of (k̂ − k)
    assert (torch.sign(s.grad[:, 1:]) == -direction).all()
    # with no observed positive the loss is the penalty alone: a small step brings k̂ closer to k
    s2 = s.detach().clone().requires_grad_()
    zero = torch.zeros_like(z)
    reduce_mean(get_loss("epr")(s2, zero, k=k)).backward()
    stepped = s2.detach() - 10.0 * s2.grad
    assert abs(torch.sigmoid(stepped).sum(-1).mean().item() - k) < abs(k_hat - k)
    assert (torch.sigmoid(stepped).sum() - torch.sigmoid(s2).sum()).item() * direction > 0


def test_penalty_is_per_member():
    s = torch.zeros(2, 3, 4)
    s[1] = 5.0
    R = expected_positive_penalty(s, k=1.0)
    assert R.shape == (2, 1, 1)
    assert R[0].item() == pytest.approx(((2.0 - 1.0) / 4) ** 2)
    assert R[1].item() == pytest.approx(((4 * sig(5.0) - 1.0) / 4) ** 2, rel=1e-6)
    z = torch.zeros(2, 3, 4, dtype=torch.int8)
    assert torch.allclose(get_loss("epr")(s, z, k=1.0)[0], get_loss("epr")(s[0], z[0], k=1.0))


def test_needs_valid_k():
    s, z = torch.zeros(1, 3), torch.tensor([[1, 0, 0]])
    with pytest.raises(ConfigError, match="needs k"):
        get_loss("epr")(s, z)
    with pytest.raises(ConfigError, match=r"\(0, L=3\]"):
        get_loss("epr")(s, z, k=4.0)
