"""Twins of the ``maxent`` head's fit in blocks of labels (:mod:`spmlkit.models.maxent_head`):
the λ fitted block by block (:func:`fit_gibbs` with a small entry bound) against every label
fitted at once (:func:`fit_gibbs_labels`, the plain twin), and the cloglog offsets computed
block by block against the whole (B, L) computation; blocks of 1..L labels, one label, a
label held at λ = 0 by its penalty, an unpenalised one, labels without records."""
from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from spmlkit.models.maxent_head import cloglog_offsets, fit_gibbs, fit_gibbs_labels, label_blocks
from tests.twins.strategies import TWIN, TWIN_FEW


@st.composite
def gibbs_problem(draw):
    """(records' means (L, F), background (B, F), penalty (F, L)): a 0/1 feature (ties), a
    label whose penalty keeps λ at 0, an unpenalised label, labels far from the data."""
    B, F, L = draw(st.integers(1, 25)), draw(st.integers(1, 4)), draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    bg = torch.as_tensor(rng.random((B, F))) * draw(st.sampled_from([0.5, 1.0, 4.0]))
    bg[:, 0] = torch.as_tensor(rng.integers(0, 2, B), dtype=torch.float64)
    rec = torch.stack([bg[torch.as_tensor(rng.choice(B, size=int(rng.integers(1, B + 1)), replace=False))].mean(0)
                       for _ in range(L)])
    pen = torch.as_tensor(rng.uniform(0.0, 0.1, (F, L)))
    pen[:, rng.random(L) < 0.3] = 10.0
    pen[:, rng.random(L) < 0.3] = 0.0
    return rec, bg, pen


@TWIN_FEW
@given(problem=gibbs_problem(), data=st.data())
def test_lambda_fitted_in_blocks_of_labels_equals_every_label_at_once(problem, data):
    rec, bg, pen = problem
    B, L = len(bg), pen.shape[1]
    width = data.draw(st.integers(1, L))
    whole = fit_gibbs_labels(rec, bg, pen, tolerance=1e-10, max_iterations=1000)
    blocks = fit_gibbs(rec, bg, pen, tolerance=1e-10, max_iterations=1000, entries=B * width)
    assert len(label_blocks(B, L, B * width)) == math.ceil(L / width)
    assert blocks.shape == whole.shape and blocks.dtype == torch.float64
    assert torch.allclose(blocks, whole, rtol=1e-6, atol=1e-8)
    assert bool((blocks[:, (pen >= 10.0).all(0)] == 0).all())  # a penalty of 10 keeps every λ at 0


@TWIN
@given(problem=gibbs_problem(), data=st.data())
def test_cloglog_offsets_in_blocks_equal_the_whole_computation(problem, data):
    _, bg, pen = problem
    B, F, L = len(bg), *pen.shape
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    lam = torch.as_tensor(rng.normal(size=(F, L)) * data.draw(st.sampled_from([0.0, 1.0, 30.0])))
    has = torch.as_tensor(rng.random(L) < data.draw(st.sampled_from([0.0, 0.5, 1.0])))
    width = data.draw(st.integers(1, L))
    got = cloglog_offsets(bg, lam, has, entries=B * width)
    # the plain computation, every label at once (the module docstring's formulas)
    scores = bg @ lam
    lse = torch.logsumexp(scores, 0)
    p = torch.softmax(scores, 0)
    entropy = -(p * torch.log_softmax(scores, 0)).sum(0)
    want = torch.where(has, entropy, torch.full_like(entropy, math.log(0.5 / B))) - lse
    assert torch.allclose(got, want, rtol=1e-9, atol=1e-9)

