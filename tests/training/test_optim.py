"""The stacked Adam of spmlkit.training.optim against torch's Adam, member by member."""
import pytest
import torch

from spmlkit.training import StackedAdam
from spmlkit.training.optim import fused_available


@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_stacked_adam_matches_torch_adam(impl):
    if impl == "fused" and not fused_available():
        pytest.skip("no fused Adam kernel in this torch")
    torch.manual_seed(0)
    w0 = torch.randn(1, 5, 3)
    a = w0.clone().requires_grad_()
    b = w0[0].clone().requires_grad_()
    c = w0[0].clone().requires_grad_()
    opt_a = StackedAdam([a], [0.01], impl=impl)
    opt_b = torch.optim.Adam([b], lr=0.01)
    opt_c = torch.optim.Adam([c], lr=0.01, fused=True) if impl == "fused" else None
    for i in range(50):
        g = torch.randn(5, 3) * 10.0 ** (i % 7 - 5)  # gradients over several magnitudes
        a.grad, b.grad, c.grad = g.unsqueeze(0).clone(), g.clone(), g.clone()
        opt_a.step()
        opt_b.step()
        if opt_c is not None:
            opt_c.step()
    assert opt_a.impl == impl
    torch.testing.assert_close(a[0], b, rtol=0, atol=1e-6)  # torch's default (for-loop) Adam
    if opt_c is not None:
        assert torch.equal(a[0], c)  # the same kernel as torch.optim.Adam(fused=True): bit for bit


@pytest.mark.parametrize("impl", ["fused", "reference"])
def test_stacked_adam_members_equal_separate_optimizers(impl):
    if impl == "fused" and not fused_available():
        pytest.skip("no fused Adam kernel in this torch")
    torch.manual_seed(1)
    lrs = [1e-2, 1e-3, 1e-4, 1e-2, 1e-3, 1e-4]  # members sharing an lr share a fused call
    W = torch.randn(6, 32, 16).requires_grad_()
    bias = torch.randn(6, 1, 16).requires_grad_()
    alone = [(W[g:g + 1].detach().clone().requires_grad_(), bias[g:g + 1].detach().clone().requires_grad_())
             for g in range(6)]
    opt = StackedAdam([W, bias], lrs, impl=impl)
    opts = [StackedAdam(list(p), [lrs[g]], impl=impl) for g, p in enumerate(alone)]
    for _ in range(30):
        gw, gb = torch.randn_like(W), torch.randn_like(bias)
        W.grad, bias.grad = gw.clone(), gb.clone()
        opt.step()
        for g, (w1, b1) in enumerate(alone):
            w1.grad, b1.grad = gw[g:g + 1].clone(), gb[g:g + 1].clone()
            opts[g].step()
    for g, (w1, b1) in enumerate(alone):
        assert torch.equal(W[g], w1[0]) and torch.equal(bias[g], b1[0])
