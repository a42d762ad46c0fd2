"""DW: AN with down-weighted assumed negatives (Zhou Table 1)."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_dw_hand_computed_default_weight():
    s = torch.tensor([[2.0, -1.0, 0.5, 0.0, 1.0]])
    z = torch.tensor([[1, 0, -1, 0, 0]])
    got = get_loss("dw")(s, z)[0].tolist()
    w = 1 / 4  # default 1/(L-1) with L = 5
    want = [-math.log(sig(2.0)), -w * math.log(1 - sig(-1.0)), -math.log(1 - sig(0.5)),  # observed neg: weight 1
            -w * math.log(0.5), -w * math.log(1 - sig(1.0))]
    assert got == pytest.approx(want, rel=1e-6)


def test_dw_limits():
    s = torch.randn(2, 6, 4)
    z = torch.zeros(2, 6, 4, dtype=torch.int8)
    z[..., 1] = 1
    assert torch.allclose(get_loss("dw")(s, z, weight=1.0), get_loss("an")(s, z))
    assert torch.allclose(get_loss("dw")(s, z, weight=0.0), get_loss("bce")(s, z))
    with pytest.raises(ConfigError):
        get_loss("dw")(s, z, weight=2.0)


def test_default_weight_with_two_labels_and_one():
    """1/(L − 1): two labels give weight 1 (DW is AN), one label has no assumed negative to
    weigh and keeps weight 1 rather than dividing by zero."""
    from spmlkit.losses.down_weighted import resolve_weight

    assert resolve_weight(None, 2) == 1.0 and resolve_weight(None, 1) == 1.0 and resolve_weight(None, 5) == 0.25
    s, z = torch.tensor([[0.5, -1.0]]), torch.tensor([[1, 0]])
    assert torch.equal(get_loss("dw")(s, z), get_loss("an")(s, z))
