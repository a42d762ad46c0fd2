"""Pairwise ranking PR (Cole et al. 2021, appendix A)."""
import math

import pytest
import torch

from spmlkit.losses import get_loss


def sig(x):
    return 1 / (1 + math.exp(-x))


def pairwise_literal(s, z):
    """Σ_{i: z=1} Σ_{j: z≠1} max(0, 1 − f_i + f_j), placed on the positive i (double loop)."""
    f = torch.sigmoid(s)
    out = torch.zeros_like(s)
    for b in range(s.shape[0]):
        for i in range(s.shape[1]):
            if z[b, i] != 1:
                continue
            for j in range(s.shape[1]):
                if z[b, j] != 1:
                    out[b, i] += torch.clamp(1 - f[b, i] + f[b, j], min=0)
    return out


def test_hand_computed():
    s = torch.tensor([[2.0, -1.0, 0.0, 1.0]])
    z = torch.tensor([[1, 0, -1, 1]])  # positives 0 and 3; assumed negatives 1 and 2
    got = get_loss("pr")(s, z)[0].tolist()
    f = [sig(2.0), sig(-1.0), 0.5, sig(1.0)]
    want0 = (1 - f[0] + f[1]) + (1 - f[0] + f[2])  # = 2 − 2·0.880797 + 0.268941 + 0.5 = 1.007347
    want3 = (1 - f[3] + f[1]) + (1 - f[3] + f[2])
    assert want0 == pytest.approx(1.007347, abs=1e-6)
    assert got == pytest.approx([want0, 0.0, 0.0, want3], rel=1e-6)


def test_equals_literal_double_loop():
    torch.manual_seed(0)
    s = torch.randn(6, 9) * 4
    z = torch.randint(-1, 2, (6, 9))
    assert torch.allclose(get_loss("pr")(s, z), pairwise_literal(s, z), atol=1e-5)


def test_gradient_ranks_positive_up_and_negatives_down():
    s = torch.zeros(1, 4, requires_grad=True)
    get_loss("pr")(s, torch.tensor([[0, 1, 0, 0]])).sum().backward()
    # d/ds_pos = −3·σ'(0) = −0.75, d/ds_neg = +1·σ'(0) = 0.25
    assert s.grad[0].tolist() == pytest.approx([0.25, -0.75, 0.25, 0.25])


def test_member_axis():
    torch.manual_seed(1)
    s = torch.randn(3, 4, 5)
    z = torch.randint(-1, 2, (3, 4, 5))
    assert torch.allclose(get_loss("pr")(s, z)[1], get_loss("pr")(s[1], z[1]))
