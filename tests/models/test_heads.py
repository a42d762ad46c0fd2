"""Classifier heads stacked over G independent members (spmlkit.models.heads, issue 7):
member g starts where a separate run with seed g starts and never sees the others."""
import pytest
import torch

from spmlkit.errors import UnknownNameError
from spmlkit.models.heads import HEADS, StackedLinear, build_head, select_members


def gens(*seeds):
    return [torch.Generator().manual_seed(s) for s in seeds]


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_members_start_like_separate_runs_and_stay_independent(kind):
    grid = build_head(kind, 5, 3, gens(0, 1, 2), hidden=8)
    alone = build_head(kind, 5, 3, gens(1), hidden=8)
    x = torch.randn(3, 4, 5)
    out = grid(x)
    assert out.shape == (3, 4, 3) and grid.n_members == 3
    assert torch.allclose(out[1], alone(x[1:2])[0])
    out[0].sum().backward()  # member 0's loss reaches member 0's parameters only
    for p in grid.parameters():
        assert p.grad[0].abs().sum() > 0 and p.grad[1:].abs().sum() == 0


def test_linear_initialisation_bound_and_shared_inputs():
    head = StackedLinear(16, 2, gens(0, 1))
    assert head.weight.abs().max() <= 1 / 16 ** 0.5 and head.bias.abs().max() <= 1 / 16 ** 0.5  # nn.Linear's bound
    x = torch.randn(5, 16)
    stacked = head(x.expand(2, 5, 16))
    assert torch.allclose(head(x), stacked, atol=1e-6)  # (B, D) inputs: one GEMM for every member


def test_select_members_keeps_those_positions_in_order():
    head = build_head("mlp", 4, 2, gens(0, 1, 2), hidden=6)
    x = torch.randn(3, 5, 4)
    before = head(x)
    select_members(head, [2, 0])
    assert head.n_members == 2 and all(p.shape[0] == 2 for p in head.parameters())
    assert torch.allclose(head(x[[2, 0]]), before[[2, 0]])


def test_registered_heads_and_unknown_names():
    assert {"linear", "mlp"} <= set(HEADS)
    with pytest.raises(UnknownNameError, match="unknown head 'transformer'"):
        build_head("transformer", 4, 2, gens(0))
