import pytest
import torch
from torch import nn

from spmlkit.training.ema import ModelEMA


def test_update_formula_on_parameters_and_buffers():
    m = nn.BatchNorm1d(2)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([1.0, 2.0]))
        m.running_mean.copy_(torch.tensor([0.0, 4.0]))
    ema = ModelEMA(m, decay=0.9)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([3.0, 0.0]))
        m.running_mean.copy_(torch.tensor([10.0, 0.0]))
        m.num_batches_tracked.fill_(7)
    ema.update(m)
    # θ_ema ← d·θ_ema + (1−d)·θ : 0.9*1 + 0.1*3 = 1.2, 0.9*2 + 0.1*0 = 1.8
    assert ema.model.weight.tolist() == pytest.approx([1.2, 1.8])
    assert ema.model.running_mean.tolist() == pytest.approx([1.0, 3.6])  # buffers too (as the authors' ModelEma)
    assert int(ema.model.num_batches_tracked) == 7  # integer buffers are copied
    ema.update(m)  # second step: 0.9*1.2 + 0.1*3 = 1.38
    assert ema.model.weight.tolist() == pytest.approx([1.38, 1.62])
    assert m.weight.tolist() == [3.0, 0.0]  # the trained model is untouched


def test_state_round_trip_and_no_gradients():
    m = nn.Linear(3, 2)
    ema = ModelEMA(m, 0.5)
    assert not any(p.requires_grad for p in ema.model.parameters())
    other = ModelEMA(nn.Linear(3, 2), 0.1)
    other.load_state_dict(ema.state_dict())
    assert other.decay == 0.5 and torch.equal(other.model.weight, m.weight)
