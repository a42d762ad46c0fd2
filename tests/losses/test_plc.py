import math

import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.losses import get_loss
from spmlkit.losses.plc import pseudo_label_consistency as plc


def test_hand_computed():
    # weak p^w = σ(w) = 0.8808 (≥ δ=0.6 -> positive), 0.1192 (≤ 0.4 -> negative), 0.5 (neither), 0.8808 observed
    w = torch.tensor([[2.0, -2.0, 0.0, 2.0]])
    s = torch.tensor([[1.0, 1.0, 1.0, 1.0]])  # strong view logits
    z = torch.tensor([[0, 0, 0, 1]])
    out = plc(s, z, threshold=0.6, weak_logits=w)
    # positive target: -log σ(1) = log(1 + e^-1) = 0.31326; negative: -log(1-σ(1)) = log(1 + e) = 1.31326
    assert out.tolist()[0] == pytest.approx([math.log1p(math.exp(-1)), math.log1p(math.e), 0.0, 0.0], abs=1e-6)


def test_masks_only_unobserved_entries():
    torch.manual_seed(0)
    w = torch.randn(3, 5, 6) * 4  # (G, B, L)
    s = torch.randn(3, 5, 6)
    z = torch.randint(-1, 2, (3, 5, 6))
    out = plc(s, z, threshold=0.7, weak_logits=w)
    assert out.shape == s.shape
    assert (out[z != 0] == 0).all()  # observed positives and negatives never get a PLC term
    p = torch.sigmoid(w)
    between = (z == 0) & (p < 0.7) & (p > 0.3)
    assert (out[between] == 0).all()
    active = (z == 0) & ~between
    assert (out[active] > 0).all()


def test_threshold_one_half_labels_every_unobserved_entry_and_pseudo_labels_are_not_differentiated():
    w = torch.tensor([[0.3, -0.3]], requires_grad=True)
    s = torch.tensor([[0.0, 0.0]], requires_grad=True)
    out = plc(s, torch.tensor([[0, 0]]), threshold=0.5, weak_logits=w)
    assert out.tolist()[0] == pytest.approx([math.log(2)] * 2)
    out.sum().backward()
    assert w.grad is None or (w.grad == 0).all()
    assert s.grad.tolist()[0] == pytest.approx([-0.5, 0.5])  # d/ds softplus(∓s) at 0


def test_registered_and_validated():
    spec = get_loss("plc")
    assert spec.hyperparameters == {"threshold": 0.6} and spec.inputs == ("weak_logits",)
    with pytest.raises(ConfigError):
        plc(torch.zeros(1, 2), torch.zeros(1, 2), threshold=0.3, weak_logits=torch.zeros(1, 2))
