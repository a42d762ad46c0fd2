"""The tree head's objective (spmlkit.training.tree_objective): gradient and curvature
against finite differences for every loss the head accepts, the separable fast path
against its per-label twin, rows that do not interact, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.methods.base import TrainContext, build_method, describe_methods
from spmlkit.training.tree_objective import H_MIN, SEPARABLE, TreeObjective, check_tree_method


def _accepted() -> list[str]:
    out = []
    for d in describe_methods():
        try:
            m = build_method(d["name"])
            check_tree_method(m)
        except (ConfigError, TypeError):
            continue
        out.append(d["name"])
    return out


ACCEPTED = _accepted()
#: components that draw afresh at each loss evaluation (AN-SLDS's random other label):
#: finite differences need the same draw on both sides
DRAWS_PER_CALL = {"an-slds", "an-slds-me"}


def _problem(name: str, seed: int = 0, n: int = 7, L: int = 3):
    """A method set up on drawn observations (one positive per labelled row, some
    background rows for the losses that take them, one label unobserved everywhere)."""
    rng = np.random.default_rng(seed)
    Z = np.zeros((n, L), dtype=np.int8)
    labelled = n - 3
    Z[np.arange(labelled), rng.integers(0, L - 1, labelled)] = 1
    m = build_method(name)
    if m.regime == "full":
        Z = np.where(Z == 1, 1, -1).astype(np.int8)
        Z[labelled:] = -1
    elif m.regime == "single_positive_all_negatives":
        Z = np.where(Z == 1, 1, -1).astype(np.int8)
        Z[labelled:] = 0
    elif m.regime == "single_positive_one_negative":
        Z[np.arange(labelled), L - 1] = -1
    ctx = TrainContext(n_train=n, n_labels=L, observed=Z, expected_positives=1.5)
    m.setup(ctx)
    torch.manual_seed(0)
    return TreeObjective(m, ctx, Z, seed=seed), rng.normal(size=(n, L)) * 2


def test_the_head_accepts_the_static_losses_and_refuses_the_others():
    assert {"an", "wan", "full-weighted", "an-full", "zlpr", "em", "bce"} <= set(ACCEPTED)
    for name in ("role", "em-apl", "ll-r", "gr", "l1r", "epr", "splc", "opml-lc"):
        assert name not in ACCEPTED


@pytest.mark.parametrize("name", [n for n in ACCEPTED if n not in DRAWS_PER_CALL])
def test_gradient_and_curvature_match_finite_differences(name):
    obj, z = _problem(name)
    g, h = obj.grad_hess(z)
    eps = 1e-5

    def total(x):
        return obj.total(torch.as_tensor(x, dtype=torch.float64)).item()

    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            e = np.zeros_like(z)
            e[i, j] = eps
            fd = (total(z + e) - total(z - e)) / (2 * eps)
            assert g[i, j] == pytest.approx(fd, rel=1e-4, abs=1e-5), (i, j)
            step = 1e-4
            gp, gm = obj.gradient(z + step * (e / eps)), obj.gradient(z - step * (e / eps))
            fd2 = (gp[i, j] - gm[i, j]) / (2 * step)
            assert h[i, j] == pytest.approx(max(fd2, H_MIN), rel=2e-3, abs=1e-5), (i, j)


@pytest.mark.parametrize("name", [n for n in ACCEPTED if n in SEPARABLE and n not in DRAWS_PER_CALL])
def test_the_separable_fast_path_equals_the_per_label_path(name):
    obj, z = _problem(name, seed=1)
    g1, h1 = obj.grad_hess(z, separable=True)
    g2, h2 = obj.grad_hess(z, separable=False)
    np.testing.assert_allclose(g1, g2, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h1, h2, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", [n for n in ACCEPTED if n not in DRAWS_PER_CALL])
def test_rows_do_not_interact(name):
    """Per-row curvature needs rows that do not interact: moving one row's margins leaves
    the other rows' gradients as they were (background rows are paired, not mixed)."""
    obj, z = _problem(name, seed=2)
    g = obj.gradient(z)
    z2 = z.copy()
    z2[0] += 1.5
    g2 = obj.gradient(z2)
    np.testing.assert_allclose(g[1:], g2[1:], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in ACCEPTED if n not in DRAWS_PER_CALL])
def test_float32_evaluation_matches_float64(name):
    """The trainer evaluates the loss in float32: its twin in float64 (the finite differences')."""
    obj, z = _problem(name, seed=3)
    g64, h64 = obj.grad_hess(z)
    obj.dtype = torch.float32
    g32, h32 = obj.grad_hess(z)
    np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(h32, h64, rtol=2e-2, atol=1e-3)  # (central differences in float32 for ZLPR/OPML)
