"""The label-wise embedding decoder (spmlkit.models.decoder, Xie et al. 2022 §3): one query
per label attends over the feature map; group-wise linear logits and L2-normalised
projections."""
import math

import pytest
import torch

from spmlkit.models.decoder import GroupWiseLinear, LabelDecoder, sine_position_encoding


def test_sine_position_encoding():
    pe = sine_position_encoding(2, 3, 8)
    assert pe.shape == (6, 8) and pe.abs().max() <= 1
    # token (row 0, column 0): the row half first, then the column half; channels 0/1 at frequency 1
    y, x = 1 / 2 * 2 * math.pi, 1 / 3 * 2 * math.pi
    assert pe[0, :2].tolist() == pytest.approx([math.sin(y), math.cos(y)], abs=1e-6)
    assert pe[0, 4:6].tolist() == pytest.approx([math.sin(x), math.cos(x)], abs=1e-6)
    assert not torch.equal(pe[0], pe[1]) and not torch.equal(pe[0], pe[3])  # every token differs
    with pytest.raises(ValueError, match="divisible by 4"):
        sine_position_encoding(2, 2, 6)


def test_group_wise_linear_is_one_classifier_per_label():
    g = GroupWiseLinear(3, 4)
    h = torch.randn(2, 3, 4)
    want = torch.stack([h[:, j] @ g.weight[j] + g.bias[j] for j in range(3)], dim=1)
    assert torch.allclose(g(h), want, atol=1e-6)


def test_decoder_shapes_projection_and_configuration():
    torch.manual_seed(0)
    dec = LabelDecoder(in_dim=6, n_labels=5, d_model=16, nhead=4, proj_dim=8).eval()
    logits, emb = dec(torch.randn(2, 6, 3, 3))
    assert logits.shape == (2, 5) and emb.shape == (2, 5, 16) and torch.isfinite(logits).all()
    z = dec.project(emb)
    assert z.shape == (2, 5, 8) and torch.allclose(z.norm(dim=-1), torch.ones(2, 5), atol=1e-5)
    assert dec.config == dict(d_model=16, nhead=4, n_encoder=1, n_decoder=2, dim_ff=64, dropout=0.1, proj_dim=8)
    one, _ = dec(torch.randn(1, 6, 3, 3))
    assert one.shape == (1, 5)
    with pytest.raises(ValueError, match=r"d_model \(18\) must be divisible by nhead \(4\)"):
        LabelDecoder(6, 5, d_model=18)
