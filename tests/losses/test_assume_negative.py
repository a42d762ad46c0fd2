import math

import pytest
import torch

from spmlkit.losses import LOSSES, get_loss, reduce_mean

S = torch.tensor([[2.0, -1.0, 0.5]])


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_an_hand_computed():
    Z = torch.tensor([[1, 0, -1]])
    got = get_loss("an")(S, Z)
    want = [-math.log(sig(2.0)), -math.log(1 - sig(-1.0)), -math.log(1 - sig(0.5))]
    assert got[0].tolist() == pytest.approx(want, rel=1e-6)
    assert reduce_mean(got).item() == pytest.approx(sum(want) / 3, rel=1e-6)  # mean over B*L


@pytest.mark.parametrize("name", ["bce", "iu", "iun"])
def test_ignore_unobserved_family(name):
    Z = torch.tensor([[1, 0, -1]])
    got = get_loss(name)(S, Z)[0].tolist()
    assert got == pytest.approx([-math.log(sig(2.0)), 0.0, -math.log(1 - sig(0.5))], rel=1e-6)


def test_an_on_full_labels_is_bce():
    Z = torch.tensor([[1, -1, -1], [-1, 1, 1]])
    s = torch.randn(2, 3)
    assert torch.allclose(get_loss("an")(s, Z), get_loss("bce")(s, Z))


def test_stable_for_extreme_logits():
    s = torch.tensor([[80.0, -80.0]])
    out = get_loss("an")(s, torch.tensor([[0, 1]]))
    assert torch.isfinite(out).all() and out[0].tolist() == pytest.approx([80.0, 80.0])


def test_every_loss_keeps_member_axis():
    """Losses take (..., B, L) and never mix leading (member) dimensions."""
    torch.manual_seed(0)
    s = torch.randn(3, 4, 5)
    Z = torch.zeros(3, 4, 5, dtype=torch.int8)
    Z[..., 0] = 1
    for name in ("an", "bce", "iu", "iun"):
        full = get_loss(name)(s, Z)
        assert torch.allclose(full[1], get_loss(name)(s[1], Z[1]))
    assert set(LOSSES) >= {"an", "bce", "iu", "iun"}
