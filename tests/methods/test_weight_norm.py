"""The weight-norm rows of Zhou et al.'s (2022) Table 1 (l1r, l2r): registration, defaults,
the regularisers by hand."""
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.methods import Batch, build_method
from spmlkit.methods.weight_norm import WeightNorm, classifier_weights
from spmlkit.models.heads import StackedLinear, StackedMLP
from spmlkit.training import train_linear
from tests.helpers.training_checks import assert_rows_registered

NAMES = ["l1r", "l2r"]


def test_all_rows_registered():
    assert_rows_registered(NAMES, family="zhou2022")


def test_defaults():
    for name, p in (("l1r", 1), ("l2r", 2)):
        m = build_method(name)
        assert m.loss.name == "an" and len(m.regularizers) == 1
        assert m.regularizers[0].lam == 1e-4 and m.regularizers[0].p == p


def _head():
    gens = [torch.Generator().manual_seed(s) for s in (0, 1)]
    head = StackedLinear(3, 2, gens)
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[[1.0, -2.0], [0.5, 0.0], [0.0, 3.0]],
                                        [[-1.0, 0.0], [0.0, 0.0], [0.0, 0.5]]]))
        head.bias.fill_(10.0)  # the bias is not regularised
    return head


def test_weight_norms_by_hand_per_member():
    head = _head()
    logits = torch.zeros(2, 4, 2)
    batch = Batch(inputs=None, index=torch.zeros(2, 4, dtype=torch.long), observed=torch.zeros(2, 4, 2))
    # member 0: |1|+|-2|+|0.5|+|3| = 6.5; squares 1+4+0.25+9 = 14.25. member 1: 1.5; 1+0.25 = 1.25
    assert WeightNorm(0.1, 1)(logits, batch, head).tolist() == pytest.approx([0.65, 0.15])
    assert WeightNorm(0.1, 2)(logits, batch, head).tolist() == pytest.approx([1.425, 0.125])


def test_regulariser_gradient_reaches_only_weights_and_own_member():
    head = _head()
    logits = head(torch.zeros(2, 4, 3))
    batch = Batch(inputs=None, index=torch.zeros(2, 4, dtype=torch.long), observed=torch.zeros(2, 4, 2))
    WeightNorm(1.0, 2)(logits, batch, head)[1].backward()
    assert head.bias.grad is None or not head.bias.grad.any()
    assert not head.weight.grad[0].any() and torch.allclose(head.weight.grad[1], 2 * head.weight[1].detach())


def test_classifier_weights_of_other_models():
    gens = [torch.Generator().manual_seed(0)]
    mlp = StackedMLP(3, 2, gens, hidden=4)
    assert len(classifier_weights(mlp)) == 2  # both stacked layers, no biases

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.BatchNorm1d(3))
            self.fc = torch.nn.Linear(3, 2)

    net = Net()
    ws = classifier_weights(net)
    assert len(ws) == 1 and ws[0][0] is net.fc.weight and ws[0][1] is False
    batch = Batch(inputs=None, index=torch.zeros(1, 1, dtype=torch.long), observed=torch.zeros(1, 1, 2))
    got = WeightNorm(1.0, 1)(torch.zeros(1, 1, 2), batch, net)
    assert got.shape == (1,) and got.item() == pytest.approx(net.fc.weight.abs().sum().item())
    with pytest.raises(ConfigError):
        classifier_weights(torch.nn.Sequential(torch.nn.ReLU()))


def test_l2r_with_zero_lambda_is_an(toy_bundle):
    cfg = TrainConfig(method="an", epochs=3, lr=1e-2)
    an = train_linear(toy_bundle, cfg)[0]
    l2 = train_linear(toy_bundle, cfg.replace(method="l2r", params={"lam": 0.0}))[0]
    assert l2.val_history == an.val_history
    strong = train_linear(toy_bundle, cfg.replace(method="l2r", params={"lam": 1.0}))[0]
    assert strong.val_history != an.val_history

