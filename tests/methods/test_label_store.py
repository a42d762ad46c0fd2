"""ROLE's label-estimator storage (spmlkit.methods.label_store, issue 7 item 5): float16
stochastic rounding, factorised memory, row-wise Adam at any global step."""

import pytest
import torch

from spmlkit.methods.label_store import (storage_bytes, stochastic_round_half)


def test_float16_stochastic_rounding_keeps_small_updates():
    x = torch.full((200_000,), 5.0) + 1e-3  # 1e-3 is a quarter of float16's spacing (2^-8) at 5
    assert torch.all(x.half().float() == 5.0)  # round-to-nearest loses the update
    out = stochastic_round_half(x, torch.rand(x.shape, generator=torch.Generator().manual_seed(0))).float()
    assert set(out.unique().tolist()) == {5.0, 5.00390625}
    assert out.mean().item() == pytest.approx(5.001, abs=2e-5)


def test_factorised_memory_grows_as_n_plus_l_times_r():
    N, L, r = 65_665, 80, 64
    full = storage_bytes("float32", N, L)
    assert full == 12 * N * L + 4 * N
    fac = storage_bytes("factorised", N, L, rank=r)
    assert fac == 12 * (N + L) * r + 12 * L + 4 * N + 4
    assert storage_bytes("factorised", N, L, rank=8) < 0.15 * full
    assert fac / full > 0.7  # r = 64 of L = 80: not the 10% (that needs r ≲ L/10)
    assert storage_bytes("float16", N, L) < 0.51 * full


@pytest.mark.parametrize("t_start", [0, 3000, 1_000_000])
def test_dense_rows_follow_adam_at_any_global_step(t_start):
    """RowAdam in dense mode against a float64 simulation of torch's Adam on one row, from
    global step ``t_start`` (early: bias corrections large; 1e6: past the end of the
    bias table, constant coefficients): updates at irregular steps, reads in between
    (within and beyond the S-step tail)."""
    from spmlkit.methods.label_store import RowAdam

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
