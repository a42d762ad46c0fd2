"""ROLE's label estimator (Cole et al. 2021, §5.4, §6.1) and its storages (issue 7 item 5)."""
import math
import warnings

import numpy as np
import pytest
import torch

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.methods import METHODS, Batch, build_method, get_method_spec
from spmlkit.methods.label_store import (LOGIT_OBSERVED_NEGATIVE, LOGIT_OBSERVED_POSITIVE, LOGIT_UNOBSERVED_BOUND,
                                         initial_logits, storage_bytes)
from spmlkit.methods.role import LabelEstimator
from spmlkit.training import train_linear
from tests.helpers.training_checks import assert_resume_equals_uninterrupted, members_and_separate_runs
from tests.helpers.factories import single_positive, train_context

STORAGES = ["float32", "float16", "memmap", "factorised"]


def test_registered_with_regime_and_defaults():
    get_method_spec("an")
    assert METHODS["role"].regime == "single_positive" and METHODS["role"].family == "cole2021"
    r = METHODS["role"].hyperparameters
    assert (r["k"], r["lam"], r["lr_mult"], r["storage"], r["rank"], r["adam"]) == (None, 1.0, 10.0, "float32", 64,
                                                                                    "dense")


def observed_matrix(N=30, L=6, seed=0):
    Z = single_positive(N, L, np.random.default_rng(seed))
    Z[:3, -1] = -1  # a few observed negatives
    Z[:3, 0] = np.where(Z[:3, -1] == -1, 1, Z[:3, 0])
    return Z


def make_estimator(Z, *, lrs=(1e-2,), seeds=None, **kw):
    kw.setdefault("adam", "rowwise")  # the row-wise semantics most tests below check; dense has its own tests
    G = len(lrs)
    est = LabelEstimator(**kw)
    est.setup(train_context(Z, G=G, base_lrs=tuple(lrs), seeds=tuple(seeds if seeds is not None else [0] * G)))
    return est


def step(est, index, grad):
    """One training step as the trainer does it: batch_inputs -> backward -> after_optimizer_step."""
    index = torch.as_tensor(index)
    G, B = index.shape
    batch = Batch(inputs=None, index=index, observed=torch.zeros(G, B, est.ctx.n_labels, dtype=torch.int8))
    rows = est.batch_inputs(batch, torch.zeros(G, B, est.ctx.n_labels))["estimator_logits"]
    assert rows.is_leaf and rows.requires_grad and rows.shape == (G, B, est.ctx.n_labels)
    (rows * grad).sum().backward()
    est.after_optimizer_step(batch)
    return rows.detach()


# --------------------------------------------------------------------- initialisation
def test_initialisation_follows_section_6_1():
    Z = observed_matrix(N=2000, L=10)
    phi = make_estimator(Z).table(0)
    assert np.allclose(phi[Z == 1], math.log(0.995 / 0.005), atol=1e-5)  # σ⁻¹(0.995) = 5.293
    assert np.allclose(phi[Z == -1], math.log(0.005 / 0.995), atol=1e-5)
    u = phi[Z == 0]
    b = math.log(0.6 / 0.4)  # σ⁻¹(0.6) = 0.405
    assert LOGIT_UNOBSERVED_BOUND == pytest.approx(b) and LOGIT_OBSERVED_POSITIVE == pytest.approx(5.293, abs=1e-3)
    assert LOGIT_OBSERVED_NEGATIVE == pytest.approx(-LOGIT_OBSERVED_POSITIVE)
    assert u.min() >= -b and u.max() <= b
    assert abs(u.mean()) < 0.01 and u.std() == pytest.approx(b / math.sqrt(3), rel=0.02)  # uniform in logit space
    assert abs(np.mean(u < 0) - 0.5) < 0.02


def test_seeded_per_member():
    Z = observed_matrix()
    grid = make_estimator(Z, lrs=(1e-2, 1e-3, 1e-2), seeds=(0, 0, 1))
    assert np.array_equal(grid.table(0), make_estimator(Z, seeds=(0,)).table(0))
    assert np.array_equal(grid.table(1), grid.table(0))
    assert np.array_equal(grid.table(2), make_estimator(Z, seeds=(1,)).table(0))
    assert not np.array_equal(grid.table(2), grid.table(0))
    assert np.array_equal(grid.table(2), initial_logits(Z, 1))


# ------------------------------------------------------------------------ updates
@pytest.mark.parametrize("storage", ["float32", "float16", "memmap"])
def test_only_batch_rows_change(storage):
    Z = observed_matrix()
    est = make_estimator(Z, lrs=(1e-2, 1e-3), seeds=(0, 1), storage=storage)
    before = [est.table(g).copy() for g in range(2)]
    index = torch.tensor([[3, 7, 11], [0, 7, 29]])
    step(est, index, torch.randn(2, 3, Z.shape[1]))
    for g in range(2):
        after = est.table(g)
        changed = np.flatnonzero((after != before[g]).any(axis=1))
        assert set(changed) == set(index[g].tolist())
        others = np.setdiff1d(np.arange(Z.shape[0]), index[g].numpy())
        assert np.array_equal(after[others], before[g][others])  # bit-identical


def test_factorised_updates_only_batch_codes():
    Z = observed_matrix()
    est = make_estimator(Z, storage="factorised", rank=3)
    U0, V0 = est.store.U.clone(), est.store.V.clone()
    index = torch.tensor([[2, 5]])
    step(est, index, torch.randn(1, 2, Z.shape[1]))
    changed = torch.nonzero((est.store.U != U0).any(1)).flatten().tolist()
    assert changed == [2, 5]
    assert not torch.equal(est.store.V, V0)  # the per-label matrix moves every step


def test_estimator_learning_rate_is_applied():
    """First row-wise Adam step: Δ = −lr_mult·lr·g/(|g| + ε), i.e. each entry moves by ≈ 10·lr."""
    Z = observed_matrix()
    lrs = (1e-2, 1e-3)
    est = make_estimator(Z, lrs=lrs, seeds=(0, 0))
    before = est.table(0), est.table(1)
    index = torch.tensor([[4, 9], [4, 9]])
    grad = torch.randn(2, 2, Z.shape[1])
    step(est, index, grad)
    for g, lr in enumerate(lrs):
        delta = est.table(g)[[4, 9]] - before[g][[4, 9]]
        assert np.allclose(delta, -10 * lr * np.sign(grad[g].numpy()), rtol=1e-4, atol=0)
    # lr_mult is a parameter; a later visit of the same row uses the row's own step count
    est2 = make_estimator(Z, lrs=(1e-2,), lr_mult=3.0)
    b2 = est2.table(0)
    step(est2, torch.tensor([[1]]), torch.ones(1, 1, Z.shape[1]))
    assert np.allclose(est2.table(0)[1] - b2[1], -0.03, rtol=1e-4)
    step(est2, torch.tensor([[2]]), torch.ones(1, 1, Z.shape[1]))  # row 2's first update: also ≈ lr
    assert np.allclose(est2.table(0)[2] - b2[2], -0.03, rtol=1e-4)


def test_duplicate_rows_in_a_batch_sum_their_gradients():
    Z = observed_matrix()
    a, b = make_estimator(Z), make_estimator(Z)
    g = torch.randn(1, 2, Z.shape[1])
    step(a, torch.tensor([[5, 5]]), g)
    step(b, torch.tensor([[5]]), g.sum(1, keepdim=True))
    assert np.allclose(a.table(0), b.table(0))


@pytest.mark.parametrize("storage,distinct", [("float32", False), ("float32", True), ("memmap", False),
                                              ("memmap", True), ("float16", True)])
def test_dense_adam_mode_follows_torch_adam_on_the_whole_table(storage, distinct):
    """adam='dense' reproduces the authors' dense Adam (every row moves every step through
    momentum), computed lazily on the batch rows (rows settled at their update, the tail
    still to come added back when a row is read again within S steps — 25 rows, batches
    of 4: nearly every read).  ``distinct`` batches skip the de-duplication."""
    torch.manual_seed(0)
    Z = observed_matrix(N=25, L=4)
    lrs = (0.05, 0.01)
    est = make_estimator(Z, lrs=lrs, seeds=(0, 1), storage=storage, adam="dense")
    ref = [torch.nn.Parameter(torch.from_numpy(est.table(g).copy())) for g in range(2)]
    opts = [torch.optim.Adam([p], lr=10 * lr) for p, lr in zip(ref, lrs)]
    tol = 0.1 if storage == "float16" else 1e-5  # float16: bf16 moments and rounding drift slowly
    for _ in range(80):
        index = torch.stack([torch.randperm(25)[:4] for _ in range(2)])
        target = torch.randn(2, 4, 4)
        rows = est.batch_inputs(Batch(None, index, torch.zeros(2, 4, 4, dtype=torch.int8), distinct=distinct),
                                 torch.zeros(2, 4, 4))["estimator_logits"]
        for g in range(2):
            assert torch.allclose(rows[g].detach(), ref[g].detach()[index[g]], atol=tol)
            full = torch.zeros(25, 4)
            full[index[g]] = 0.01 * (rows[g].detach() - target[g])
            ref[g].grad = full
            opts[g].step()
        ((rows - target) ** 2 * 0.005).sum().backward()
        est.after_optimizer_step(None)
    for g in range(2):
        assert np.allclose(est.table(g), ref[g].detach().numpy(), atol=tol)


# ------------------------------------------------------------------------- storages
def test_storage_first_step_matches_float32():
    Z = observed_matrix()
    index = torch.tensor([[1, 4, 8]])
    grad = torch.randn(1, 3, Z.shape[1])
    ref = make_estimator(Z)
    step(ref, index, grad)
    mm = make_estimator(Z, storage="memmap")
    step(mm, index, grad)
    assert np.array_equal(mm.table(0), ref.table(0))
    half = make_estimator(Z, storage="float16")
    step(half, index, grad)
    assert np.allclose(half.table(0), ref.table(0), atol=5e-3)  # float16 spacing at |φ| ≈ 5.3 is 0.004
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fac = make_estimator(Z, storage="factorised", rank=Z.shape[1])  # rank L: exact factorisation
    assert np.allclose(fac.table(0), make_estimator(Z).table(0), atol=1e-5)


@pytest.mark.parametrize("storage", STORAGES)
def test_bytes_formula_matches_allocation(storage):
    N, L = 40, 12
    Z = observed_matrix(N, L)
    est = make_estimator(Z, lrs=(1e-2, 1e-3), seeds=(0, 1), storage=storage, rank=4)
    assert sum(est.nbytes().values()) == storage_bytes(storage, N, L, rank=4, n_members=2)


def test_bad_options():
    with pytest.raises(ConfigError, match="storage"):
        LabelEstimator(storage="float8")
    with pytest.raises(ConfigError, match="adam"):
        LabelEstimator(adam="sgd")
    with pytest.raises(ConfigError, match="init_logits"):
        make_estimator(observed_matrix(), init_logits=np.zeros((3, 3)))


# ------------------------------------------------------- state, resume, init_logits
@pytest.mark.parametrize("storage", STORAGES)
def test_state_dict_round_trip(storage, tmp_path):
    Z = observed_matrix()
    kw = dict(storage=storage, rank=3, directory=tmp_path / "est")
    a = make_estimator(Z, **kw)
    step(a, torch.tensor([[1, 2]]), torch.randn(1, 2, Z.shape[1]))
    state = a.state_dict()
    grad = torch.randn(1, 2, Z.shape[1])
    step(a, torch.tensor([[2, 3]]), grad)
    b = make_estimator(Z, **kw)
    b.load_state_dict(state)
    step(b, torch.tensor([[2, 3]]), grad)
    assert np.array_equal(a.table(0), b.table(0))


def test_dense_checkpoint_from_before_settled_rows_is_refused():
    """Dense-Adam rows are stored settled; a checkpoint without that marker (an older
    format, rows stored unsettled) would resume on wrong values, so it is refused."""
    Z = observed_matrix()
    a = make_estimator(Z, adam="dense")
    step(a, torch.tensor([[1, 2]]), torch.randn(1, 2, Z.shape[1]))
    state = a.state_dict()
    b = make_estimator(Z, adam="dense")
    b.load_state_dict(state)  # the current format loads
    old = {**state, "store": {k: v for k, v in state["store"].items() if k != "dense_rows"}}
    with pytest.raises(ConfigError, match="older spmlkit"):
        make_estimator(Z, adam="dense").load_state_dict(old)


@pytest.mark.parametrize("storage", STORAGES)
def test_member_state_and_init_logits(storage, tmp_path):
    Z = observed_matrix()
    a = make_estimator(Z, storage=storage, rank=3, directory=tmp_path)
    for _ in range(3):
        step(a, torch.tensor([[0, 5, 6]]), torch.randn(1, 3, Z.shape[1]))
    table = a.table(0)
    s = a.member_state(0)
    assert np.allclose(LabelEstimator.logits_from_state(s), table, atol=1e-6)
    # a new estimator started from that table (LinearInit), in float32
    b = make_estimator(Z, init_logits=LabelEstimator.logits_from_state(s))
    assert np.allclose(b.table(0), table, atol=1e-6)
    c = make_estimator(Z, lrs=(1e-2, 1e-3), seeds=(0, 0))
    c.load_member_state(1, s)
    assert np.allclose(c.table(1), table, atol=1e-6) and np.array_equal(c.table(0), make_estimator(Z).table(0))


# ----------------------------------------------------------------- method and k
def test_method_needs_k():
    Z = torch.from_numpy(observed_matrix())
    ctx = train_context(Z, expected_positives=None)
    for name in ("role", "epr"):
        with pytest.raises(ConfigError, match="needs k"):
            build_method(name).setup(ctx)
    m = build_method("role", k=2.0)
    m.setup(train_context(Z, expected_positives=1.3))
    assert m.loss_params["k"] == 2.0 and m.params["k"] == 2.0  # the factory argument wins
    m = build_method("role")
    m.setup(train_context(Z, expected_positives=1.3))
    assert m.loss_params["k"] == 1.3 and m.params["k"] == 1.3
    assert m.component(LabelEstimator).lrs.tolist() == [pytest.approx(1e-2)]  # 10 × the default 1e-3


@pytest.mark.slow
def test_role_trains_end_to_end(toy_bundle):
    an = train_linear(toy_bundle, TrainConfig(method="an", epochs=15, lr=1e-2))[0]
    (r,) = train_linear(toy_bundle, TrainConfig(method="role", epochs=15, lr=1e-2))
    assert r.test_map > 75 and r.test_map > an.test_map - 5  # chance level is ~25
    assert r.params["k"] == pytest.approx(float(toy_bundle.labels("train").sum(1).mean()))
    assert len(r.val_history) == 15


def test_stacked_members_equal_separate_runs(toy_bundle):
    cfg = TrainConfig(method="role", epochs=4)
    for r, alone in members_and_separate_runs(toy_bundle, cfg, [1e-2, 1e-3, 1e-2], [0, 0, 1], keep_state=True):
        assert alone.val_history == pytest.approx(r.val_history, abs=1e-4)
        assert alone.test_map == pytest.approx(r.test_map, abs=1e-4)
        a = alone.state["method"]["LabelEstimator"]["logits"]
        b = r.state["method"]["LabelEstimator"]["logits"]
        assert torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("params", [{}, {"storage": "memmap"}, {"adam": "dense"}, {"storage": "factorised", "rank": 2}])
def test_resume_gives_the_same_result(toy_bundle, tmp_path, params):
    if params.get("storage") == "memmap":
        params = {**params, "directory": str(tmp_path / "estimator")}
    cfg = TrainConfig(method="role", epochs=5, lr=1e-2, params=params)
    assert_resume_equals_uninterrupted(toy_bundle, cfg, tmp_path, killed_after=2)


@pytest.mark.parametrize("params", [{"storage": "float16"}, {"storage": "memmap"}, {"storage": "factorised", "rank": 3}])
def test_every_storage_trains(toy_bundle, params):
    (r,) = train_linear(toy_bundle, TrainConfig(method="role", epochs=10, lr=1e-2, params=params))
    assert r.test_map > 70


def test_epoch_log_reports_estimated_positives(toy_bundle, tmp_path):
    from spmlkit.io import read_jsonl

    train_linear(toy_bundle, TrainConfig(method="role", epochs=2, lr=1e-2), run_dir=tmp_path / "run")
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    L = toy_bundle.n_labels
    assert all(0 < r["estimator_mean_positives"] < L for r in rows)


def test_default_is_the_papers_dense_adam_trajectory():
    from spmlkit.methods import build_method

    m = build_method("role")
    assert m.params["adam"] == "dense" and m.components[0].adam == "dense"
