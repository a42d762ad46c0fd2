"""WAN (Cole et al. 2021, §5.1)."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss

S = torch.tensor([[2.0, -1.0, 0.5, 0.0, 1.0]])
Z = torch.tensor([[1, 0, -1, 0, 0]])


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_hand_computed_default_gamma_is_one_over_L_minus_1():
    got = get_loss("wan")(S, Z)[0].tolist()  # L = 5 -> γ = 1/4
    want = [-math.log(sig(2.0)), -0.25 * math.log(1 - sig(-1.0)), -0.25 * math.log(1 - sig(0.5)),
            -0.25 * math.log(0.5), -0.25 * math.log(1 - sig(1.0))]
    assert got == pytest.approx(want, rel=1e-6)
    assert got[3] == pytest.approx(0.25 * 0.693147, abs=1e-6)


def test_explicit_gamma():
    got = get_loss("wan")(S, Z, gamma=0.5)[0].tolist()
    assert got[1] == pytest.approx(-0.5 * math.log(1 - sig(-1.0)), rel=1e-6)
    assert got[0] == pytest.approx(-math.log(sig(2.0)), rel=1e-6)


def test_gamma_one_is_an():
    torch.manual_seed(0)
    s = torch.randn(3, 6, 8)
    z = torch.randint(-1, 2, (3, 6, 8))
    assert torch.allclose(get_loss("wan")(s, z, gamma=1.0), get_loss("an")(s, z), atol=1e-6)


def test_single_positive_weighs_like_all_negatives_at_zero_logits():
    # the paper's rationale for 1/(L−1): at f = 0.5 the positive's term equals the negatives' sum
    L = 7
    z = torch.zeros(1, L, dtype=torch.int8)
    z[0, 3] = 1
    out = get_loss("wan")(torch.zeros(1, L), z)[0]
    assert out[3].item() == pytest.approx(out.sum().item() - out[3].item(), rel=1e-6)


def test_bad_gamma():
    with pytest.raises(ConfigError):
        get_loss("wan")(S, Z, gamma=2.0)
    with pytest.raises(ConfigError, match="at least 2 labels"):
        get_loss("wan")(torch.zeros(1, 1), torch.ones(1, 1, dtype=torch.int8))
