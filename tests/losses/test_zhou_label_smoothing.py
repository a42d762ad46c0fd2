"""LS and N-LS rows of Zhou Table 1 (label smoothing on all / only assumed-negative labels)."""
import math

import pytest
import torch

from spmlkit.losses import get_loss


def sig(x):
    return 1 / (1 + math.exp(-x))


def bce(p, t):
    return -(t * math.log(p) + (1 - t) * math.log(1 - p))


S = torch.tensor([[2.0, -1.0, 0.5]])
Z = torch.tensor([[1, 0, -1]])


def test_ls_hand_computed():
    got = get_loss("ls")(S, Z)[0].tolist()  # ε = 0.2: targets 0.9 (positive) and 0.1 (all others)
    want = [bce(sig(2.0), 0.9), bce(sig(-1.0), 0.1), bce(sig(0.5), 0.1)]
    assert got == pytest.approx(want, rel=1e-6)


def test_n_ls_hand_computed():
    got = get_loss("n-ls")(S, Z, epsilon=0.1)[0].tolist()  # unobserved target 0.05; observed labels hard
    want = [bce(sig(2.0), 1.0), bce(sig(-1.0), 0.05), bce(sig(0.5), 0.0)]
    assert got == pytest.approx(want, rel=1e-6)


def test_epsilon_zero_is_an_and_single_positive_relation():
    s = torch.randn(3, 6, 4)
    z = torch.zeros(3, 6, 4, dtype=torch.int8)
    z[..., 0] = 1
    for name in ("ls", "n-ls"):
        assert torch.allclose(get_loss(name)(s, z, epsilon=0.0), get_loss("an")(s, z), atol=1e-6)
    # on single-positive data the two differ exactly by the positive's smoothing
    ls, nls = get_loss("ls")(s, z), get_loss("n-ls")(s, z)
    assert torch.allclose(ls[..., 1:], nls[..., 1:]) and not torch.allclose(ls[..., 0], nls[..., 0])


def test_minimiser_of_unobserved_entry_is_smoothed_target():
    s = torch.linspace(-6, 6, 1201).view(1, -1)
    z = torch.zeros(s.shape, dtype=torch.int8)
    best = s[0, get_loss("n-ls")(s, z, epsilon=0.2)[0].argmin()].item()
    assert sig(best) == pytest.approx(0.1, abs=1e-3)
