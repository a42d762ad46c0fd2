"""AN-LS (Cole et al. 2021, Eq. 9): hand-computed values, limits, the ε notation."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import LOSSES, get_loss, reduce_mean

S = torch.tensor([[2.0, -1.0, 0.5]])
Z = torch.tensor([[1, 0, -1]])


def sig(x):
    return 1 / (1 + math.exp(-x))


def bce(s, t):
    return -(t * math.log(sig(s)) + (1 - t) * math.log(1 - sig(s)))


def test_hand_computed_default_is_targets_09_01():
    # default ε = 0.2 (paper notation) -> targets 1 − 0.1 = 0.9 on the positive, 0.1 elsewhere
    got = get_loss("an-ls")(S, Z)[0].tolist()
    want = [
        -(0.9 * math.log(sig(2.0)) + 0.1 * math.log(1 - sig(2.0))),  # positive, logit 2
        -(0.1 * math.log(sig(-1.0)) + 0.9 * math.log(1 - sig(-1.0))),  # unobserved -> assumed negative
        -(0.1 * math.log(sig(0.5)) + 0.9 * math.log(1 - sig(0.5))),  # observed negative
    ]
    assert got == pytest.approx(want, rel=1e-6)
    # numbers: 0.9·0.126928 + 0.1·2.126928 = 0.326928
    assert got[0] == pytest.approx(0.326928, abs=1e-6)
    assert reduce_mean(get_loss("an-ls")(S, Z)).item() == pytest.approx(sum(want) / 3, rel=1e-6)


def test_paper_notation_epsilon_halved():
    got = get_loss("an-ls")(S, Z, epsilon=0.1)[0].tolist()  # targets 0.95 / 0.05
    assert got == pytest.approx([bce(2.0, 0.95), bce(-1.0, 0.05), bce(0.5, 0.05)], rel=1e-6)


def test_default_reproduces_code_coefficient():
    assert LOSSES["an-ls"].hyperparameters == {"epsilon": 0.2}
    # the loss of a positive is minimal where σ(s) = 0.9 (the code's target), i.e. s = logit(0.9)
    s = torch.tensor([[math.log(9.0)]], requires_grad=True)
    get_loss("an-ls")(s, torch.tensor([[1]])).sum().backward()
    assert abs(s.grad.item()) < 1e-6


def test_epsilon_zero_is_an():
    torch.manual_seed(0)
    s = torch.randn(4, 6) * 3
    z = torch.randint(-1, 2, (4, 6))
    assert torch.allclose(get_loss("an-ls")(s, z, epsilon=0.0), get_loss("an")(s, z), atol=1e-6)


def test_member_axis_and_stability():
    torch.manual_seed(0)
    s = torch.randn(3, 4, 5)
    z = torch.zeros(3, 4, 5, dtype=torch.int8)
    z[..., 1] = 1
    assert torch.allclose(get_loss("an-ls")(s, z)[2], get_loss("an-ls")(s[2], z[2]))
    out = get_loss("an-ls")(torch.tensor([[100.0, -100.0]]), torch.tensor([[0, 1]]))
    assert torch.isfinite(out).all()
    # assumed negative at logit 100, target 0.1: 0.9·100 + (softplus(-100) ≈ 0)
    assert out[0, 0].item() == pytest.approx(90.0, rel=1e-5)


@pytest.mark.parametrize("eps", [-0.1, 1.5])
def test_bad_epsilon(eps):
    with pytest.raises(ConfigError, match="epsilon"):
        get_loss("an-ls")(S, Z, epsilon=eps)


# Asymmetric AN-LS(ε_p, ε_n) (Cole et al. 2021, appendix A).


def test_hand_computed():
    # ε_p = 0.1, ε_n = 0.3: with 1^{α,β}_[Q] = (1−α)1[Q] + β1[¬Q]
    #   positive: log f weight 1 − 0.05 = 0.95, log(1−f) weight β = ε_p/2 = 0.05
    #   others:   log f weight ε_n/2 = 0.15, log(1−f) weight 1 − 0.15 = 0.85
    got = get_loss("an-ls-asym")(S, Z, epsilon_p=0.1, epsilon_n=0.3)[0].tolist()
    want = [-(0.95 * math.log(sig(2.0)) + 0.05 * math.log(1 - sig(2.0))),
            -(0.15 * math.log(sig(-1.0)) + 0.85 * math.log(1 - sig(-1.0))),
            -(0.15 * math.log(sig(0.5)) + 0.85 * math.log(1 - sig(0.5)))]
    assert got == pytest.approx(want, rel=1e-6)


def test_table_a1_default_leaves_positives_untouched():
    assert LOSSES["an-ls-asym"].hyperparameters == {"epsilon_p": 0.0, "epsilon_n": 0.2}
    got = get_loss("an-ls-asym")(S, Z)[0].tolist()
    assert got[0] == pytest.approx(-math.log(sig(2.0)), rel=1e-6)  # plain −log f on the positive
    assert got[1] == pytest.approx(-(0.1 * math.log(sig(-1.0)) + 0.9 * math.log(1 - sig(-1.0))), rel=1e-6)


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.2, 0.7])
def test_equal_epsilons_are_symmetric(eps):
    torch.manual_seed(1)
    s = torch.randn(2, 5, 7)
    z = torch.randint(-1, 2, (2, 5, 7))
    assert torch.allclose(get_loss("an-ls-asym")(s, z, epsilon_p=eps, epsilon_n=eps),
                          get_loss("an-ls")(s, z, epsilon=eps), atol=1e-6)


def test_zero_zero_is_an():
    torch.manual_seed(2)
    s = torch.randn(5, 4)
    z = torch.randint(-1, 2, (5, 4))
    assert torch.allclose(get_loss("an-ls-asym")(s, z, epsilon_p=0, epsilon_n=0), get_loss("an")(s, z), atol=1e-6)


# BCE-LS: full-label BCE with label smoothing (Cole et al. 2021, Table 1).


def test_hand_computed_full_labels():
    s = torch.tensor([[1.0, -2.0, 0.0]])
    z = torch.tensor([[1, -1, 0]])  # the last entry unobserved: no loss term (as bce)
    got = get_loss("bce-ls")(s, z)[0].tolist()
    want = [-(0.9 * math.log(sig(1.0)) + 0.1 * math.log(1 - sig(1.0))),
            -(0.1 * math.log(sig(-2.0)) + 0.9 * math.log(1 - sig(-2.0))), 0.0]
    assert got == pytest.approx(want, rel=1e-6, abs=1e-9)
    # numbers: 0.9·0.313262 + 0.1·1.313262 = 0.413262
    assert got[0] == pytest.approx(0.413262, abs=1e-6)


def test_epsilon_zero_is_bce_and_equals_an_ls_on_full_labels():
    torch.manual_seed(0)
    s = torch.randn(4, 5)
    z = torch.where(torch.rand(4, 5) > 0.6, 1, -1)
    assert torch.allclose(get_loss("bce-ls")(s, z, epsilon=0.0), get_loss("bce")(s, z), atol=1e-6)
    # with every label observed, BCE-LS and AN-LS are the same formula
    assert torch.allclose(get_loss("bce-ls")(s, z), get_loss("an-ls")(s, z), atol=1e-6)
