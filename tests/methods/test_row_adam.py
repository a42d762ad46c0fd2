"""Adam on the estimator's rows (spmlkit.methods.row_adam): the dense mode follows
torch's Adam at any global step (moved from test_label_store.py with the class)."""

import pytest
import torch

from spmlkit.methods.row_adam import RowAdam


@pytest.mark.parametrize("t_start", [0, 3000, 1_000_000])
def test_dense_rows_follow_adam_at_any_global_step(t_start):
    """RowAdam in dense mode against a float64 simulation of torch's Adam on one row, from
    global step ``t_start`` (early: bias corrections large; 1e6: past the end of the
    bias table, constant coefficients): updates at irregular steps, reads in between
    (within and beyond the S-step tail)."""
    torch.manual_seed(5)
    lr, L = 0.02, 6
    opt = RowAdam("dense")
    opt.t = t_start
    phi, m, v = torch.randn(1, L), torch.zeros(1, L), torch.zeros(1, L)
    steps = torch.zeros(1, dtype=torch.int32)
    p_ref, m_ref, v_ref = phi.double().clone(), torch.zeros(1, L, dtype=torch.float64), torch.zeros(1, L, dtype=torch.float64)
    b1, b2, eps = 0.9, 0.999, 1e-8
    t_ref = t_start
    for gap in [1, 1, 7, 60, 300, 2, 175, 176, 177, 1000]:
        for _ in range(gap - 1):  # zero-gradient steps the row misses
            t_ref += 1
            m_ref, v_ref = b1 * m_ref, b2 * v_ref
            p_ref = p_ref - lr * (m_ref / (1 - b1 ** t_ref)) / ((v_ref / (1 - b2 ** t_ref)).sqrt() + eps)
        opt.t = t_ref
        now = phi.clone()
        opt.current(now, m, v, steps, lr)  # the row read just before its update
        assert torch.allclose(now.double(), p_ref, atol=2e-6), (gap, (now.double() - p_ref).abs().max())
        g = torch.randn(1, L) * 10.0 ** float(torch.randint(-7, 0, ()))
        t_ref += 1
        m_ref = b1 * m_ref + (1 - b1) * g.double()
        v_ref = b2 * v_ref + (1 - b2) * g.double() ** 2
        p_ref = p_ref - lr * (m_ref / (1 - b1 ** t_ref)) / ((v_ref / (1 - b2 ** t_ref)).sqrt() + eps)
        opt.t = t_ref
        phi, steps = opt.step(now, m, v, steps, g, lr)
