"""ROLE's label-estimator storage (spmlkit.methods.label_store, issue 7 item 5): float16
stochastic rounding and factorised memory (row-wise Adam: test_row_adam.py)."""

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
