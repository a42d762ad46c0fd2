"""The method contract (src/spmlkit/methods/base.py), held against EVERY registered method
of the linear setting: one training step through the hooks, as the trainer runs it
(issue 17).  A new method gets these checks for free; the full training of every method
(and the device trap) is in tests/devices/test_device_path.py.

Nothing here is skipped: an error in any method's step is a failure (a ``KeyError``
planted in ROLE's per-batch code used to turn three of these into skips).  Methods that
take user files (pseudo-scores) train without them, with a warning."""
from __future__ import annotations

import pytest
import torch

from spmlkit.methods import METHODS, build_method, get_method_spec
from spmlkit.methods.base import Batch
from spmlkit.models.heads import build_head
from tests.helpers.factories import single_positive, train_context

get_method_spec("an")  # discovers every method module
LINEAR = sorted(n for n, s in METHODS.items() if s.setting != "finetune")
G, N, B, D, L = 2, 24, 6, 7, 5


def data(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, D, generator=g)
    return X, single_positive(N, L, g)


def setup(name: str, seed: int = 0):
    X, Z = data()
    spec = METHODS[name]
    params = {"k": 2.0} if "k" in spec.hyperparameters and spec.hyperparameters["k"] is None else {}
    if spec.regime == "full":  # full-label methods train on complete observations
        Z = torch.where(torch.rand(N, L, generator=torch.Generator().manual_seed(5)) < 0.4, 1, -1).to(torch.int8)
        Z[torch.arange(N), torch.arange(N) % L] = 1
    elif spec.regime == "single_positive_all_negatives":
        Z = torch.where(Z == 1, Z, torch.full_like(Z, -1))
    method = build_method(name, **params)
    method.setup(train_context(Z, G=G, expected_positives=2.0, base_lrs=(1e-3, 1e-2), seeds=(0, 1), epochs=3))
    gens = [torch.Generator().manual_seed(seed + i) for i in range(G)]
    model = build_head("linear", D, L, gens)
    return method, model, X, Z


def step(method, model, X, Z, rows: torch.Tensor, epoch: int = 2):
    index = rows.expand(G, -1)
    batch = Batch(inputs=X[index], index=index, observed=Z[index], distinct=True)
    if method.uses_background:  # one background row per example, as the trainer draws them (issue 24)
        batch.background = torch.randn(index.shape[0], index.shape[1], X.shape[1],
                                       generator=torch.Generator().manual_seed(epoch))
    method.on_epoch_start(epoch)
    logits = method.forward(model, batch)
    loss = method.compute_loss(logits, batch, model)
    return loss, logits, batch


@pytest.mark.parametrize("name", LINEAR)
def test_one_step_per_member_loss_finite_gradients(name):
    method, model, X, Z = setup(name)
    loss, logits, batch = step(method, model, X, Z, torch.arange(B))
    assert loss.shape == (G,) and torch.isfinite(loss).all()
    loss.sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    method.after_optimizer_step(batch)
    logs = method.on_epoch_end(2, lambda: torch.sigmoid(model(X.expand(G, -1, -1))).detach())
    assert isinstance(logs, dict)


@pytest.mark.parametrize("name", LINEAR)
def test_members_are_independent(name):
    """Member 0's loss does not move when member 1's weights do."""
    m1, model1, X, Z = setup(name)
    m2, model2, _, _ = setup(name)
    with torch.no_grad():
        model2.weight[1] += 0.5
    l1 = step(m1, model1, X, Z, torch.arange(B))[0]
    l2 = step(m2, model2, X, Z, torch.arange(B))[0]
    assert torch.allclose(l1[0], l2[0], rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", LINEAR)
def test_deterministic(name):
    a = step(*setup(name), torch.arange(B))[0]
    b = step(*setup(name), torch.arange(B))[0]
    assert torch.equal(a, b)


@pytest.mark.parametrize("name", LINEAR)
def test_sparse_observations_give_the_dense_loss(name):
    """Issue 32: the trainer keeps observations sparse and builds each batch's dense block on
    the device; every method's loss (and its components' state from the context) is the
    same as with the dense matrix indexed directly."""
    from spmlkit.sparse_labels import SparseLabels

    method, model, X, Z = setup(name)
    rows = torch.arange(B)
    index = rows.expand(G, -1)
    block = SparseLabels.from_dense(Z.numpy()).to("cpu").block(index)
    assert torch.equal(block, Z[index])
    dense = step(method, model, X, Z, rows)[0]
    m2, model2, _, _ = setup(name)
    batch = Batch(inputs=X[index], index=index, observed=block, distinct=True)
    if m2.uses_background:
        batch.background = torch.randn(G, B, X.shape[1], generator=torch.Generator().manual_seed(2))
    m2.on_epoch_start(2)
    sparse = m2.compute_loss(m2.forward(model2, batch), batch, model2)
    assert torch.equal(sparse, dense)
