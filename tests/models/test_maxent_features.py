"""MaxEnt's feature classes (spmlkit.models.maxent_features): the expansion against
hand-computed values, the fit on training rows only, the L1 gradient, and a trained head
that saves, loads and predicts what it trained."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from spmlkit.errors import ConfigError
from spmlkit.models.heads import build_head
from spmlkit.models.maxent_features import MaxEntFeatures, feature_classes, regularisation
from spmlkit.sparse_labels import as_sparse
from tests.helpers.factories import one_species_bundle


class _Store:
    """The two methods of a feature store the head's fit reads."""

    def __init__(self, X):
        self.X = torch.as_tensor(X, dtype=torch.float32)

    def chunks(self, rows=None):
        rows = rows or 2  # several chunks: the range and moments are accumulated over them
        for a in range(0, len(self.X), rows):
            yield self.X[a:a + rows]

    def gather(self, idx):
        return self.X[idx]


def _fitted(X, n_records, n_knots=1, records=None):
    f = MaxEntFeatures(X.shape[1], n_members=2, n_knots=n_knots)
    store = _Store(X)
    f.fit(store.chunks, store.X if records is None else torch.as_tensor(records), n_records)
    return f


def test_feature_classes_follow_phillips_and_dudik_2008():
    assert feature_classes(0) == ("linear",)
    assert feature_classes(10) == ("linear", "quadratic")
    assert feature_classes(15) == ("linear", "quadratic", "hinge")
    assert feature_classes(79) == ("linear", "quadratic", "hinge")
    assert feature_classes(80) == ("linear", "quadratic", "hinge", "product")


def test_the_expansion_against_hand_computed_values():
    """One continuous covariate on [0, 4] (one knot, at the middle: 2), one 0/1 indicator, and
    enough records for every class: u = x/4; quadratic u²; forward hinge max(0, (u − ½)/½),
    reverse max(0, (½ − u)/½); the product of the two covariates is off (an indicator is
    linear only), as are the indicator's quadratic and hinges."""
    X = np.array([[0.0, 0], [1, 1], [2, 0], [3, 1], [4, 0]], dtype=np.float32)
    f = _fitted(X, n_records=100)
    lay = f.layout()
    assert [lay[c] for c in ("linear", "quadratic", "hinge", "product")] == \
        [slice(0, 2), slice(2, 4), slice(4, 8), slice(8, 9)]
    x = torch.tensor([[0.0, 0], [2, 1], [3, 0], [4, 1]])
    u = f.features_unit(x)
    expect = torch.tensor([
        # u0    u1   u0²     u1²  fwd0  rev0  fwd1 rev1  u0·u1
        [0.00, 0, 0.0000, 0, 0.0, 1.0, 0, 0, 0],
        [0.50, 1, 0.2500, 0, 0.0, 0.0, 0, 0, 0],   # at the knot: both hinges 0
        [0.75, 0, 0.5625, 0, 0.5, 0.0, 0, 0, 0],
        [1.00, 1, 1.0000, 0, 1.0, 0.0, 0, 0, 0]])
    assert torch.allclose(u, expect, atol=1e-6)
    assert f.active[0].tolist() == [1, 1, 1, 0, 1, 1, 0, 0, 0]
    assert torch.equal(f.active[0], f.active[1])  # every member holds the same state


def test_clamping_outside_the_training_range_and_unit_scale_of_several_knots():
    X = np.array([[-1.0], [0.0], [3.0]], dtype=np.float32)  # range [-1, 3]
    f = _fitted(X, n_records=20, n_knots=3)  # knots at u = 1/4, 1/2, 3/4: x = 0, 1, 2
    out = f.features_unit(torch.tensor([[-5.0], [1.0], [9.0]]))
    assert torch.allclose(out[0], f.features_unit(torch.tensor([[-1.0]]))[0])  # clamped to the minimum
    assert torch.allclose(out[2], f.features_unit(torch.tensor([[3.0]]))[0])  # and to the maximum
    hinge = out[1, f.layout()["hinge"]]  # x = 1 (u = ½): forward (½ − t)/(1 − t) at t = ¼, reverse (t − ½)/t at ¾
    assert hinge.tolist() == pytest.approx([(0.5 - 0.25) / 0.75, 0, 0, 0, 0, (0.75 - 0.5) / 0.75])
    assert f.active[0, f.layout()["product"]].numel() == 0  # one covariate: no pair


def test_a_constant_column_is_off_and_few_records_use_fewer_classes():
    X = np.array([[0.0, 5], [1, 5], [2, 5], [0.5, 5]], dtype=np.float32)
    f = _fitted(X, n_records=12)  # linear and quadratic only
    lay, a = f.layout(), f.active[0]
    assert a[lay["linear"]].tolist() == [1, 0] and a[lay["quadratic"]].tolist() == [1, 0]
    assert a[lay["hinge"]].sum() == 0 and a[lay["product"]].sum() == 0
    assert torch.isfinite(f(torch.tensor(X))).all()


def test_the_standardised_features_and_the_penalty_on_their_scale():
    """The output is each feature standardised over the training rows; the L1 penalty of a
    standardised weight w is β/σ (λ = w/σ, β|λ| = (β/σ)|w|)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    f = _fitted(X, n_records=200, n_knots=2, records=X[:40])
    out = f(torch.as_tensor(X)).double()
    on = f.active[0].bool()
    assert torch.allclose(out[:, on].mean(0), torch.zeros(int(on.sum()), dtype=torch.float64), atol=1e-5)
    assert torch.allclose(out[:, on].std(0, unbiased=False), torch.ones(int(on.sum()), dtype=torch.float64),
                          atol=1e-4)
    unit = f.features_unit(torch.as_tensor(X[:40]))
    beta = f._beta(feature_classes(200), torch.zeros(3, dtype=torch.bool), 200)
    every = f.features_unit(torch.as_tensor(X))
    assert torch.allclose(f.span(), every.max(0).values - every.min(0).values)  # the range over the training rows
    reg = regularisation(unit, beta, 200, f.layout()["hinge"], span=f.span())
    assert torch.allclose(f.penalty[0], reg / f.scale[0])
    # the class table at 200 records: 0.05 for linear/quadratic/product (the product table), 0.5 for hinges
    assert beta[0].item() == pytest.approx(0.05) and beta[f.layout()["hinge"]][0].item() == pytest.approx(0.5)


def test_regularisation_by_hand():
    """maxnet's ``maxnet.default.regularization``: the largest of β·sd/√m, for a hinge
    ½·max(sd, 1/√m)/√m, and 0.001 of the feature's range over the training rows — a
    maximum, not a sum."""
    f = torch.tensor([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0]])
    sd = math.sqrt(1 / 3)  # (unbiased) of columns 0 and 3; columns 1 and 2 are constant at the records
    span = torch.tensor([1.0, 1.0, 0.5, 1.0])
    r = regularisation(f, torch.tensor([0.5, 0.5, 0.5, 0.5]), 4, slice(1, 2), span=span)
    assert r.tolist() == pytest.approx([0.5 * sd / 2,       # linear: β·sd/√m
                                        0.5 * 0.5 / 2,      # a hinge with sd 0 < 1/√m: ½·(1/√m)/√m
                                        0.001 * 0.5,        # constant at the records: the range's floor
                                        0.5 * sd / 2])      # column 3, not a hinge here
    hinge = regularisation(f, torch.tensor([0.5, 0.5, 0.5, 0.5]), 4, slice(3, 4), span=span)
    assert hinge[3].item() == pytest.approx(0.5 * sd / 2)   # sd > 1/√m: ½·sd/√m, once (not added to β·sd/√m)
    big = regularisation(f, torch.tensor([0.5, 0.5, 0.5, 0.5]), 4, slice(3, 4), span=torch.full((4,), 1e4))
    assert big.tolist() == pytest.approx([10.0] * 4)        # the floor wins where the range is wide


def test_the_fit_reads_the_training_rows_only():
    """The range is the training rows': rows scored later (validation, a raster) do not move it."""
    train = np.array([[0.0], [1.0], [2.0]], dtype=np.float32)
    f = _fitted(train, n_records=20)
    assert f.low[:, 0].tolist() == [0.0, 0.0] and f.high[:, 0].tolist() == [2.0, 2.0]
    before = f.state_dict()
    f(torch.tensor([[50.0], [-50.0]]))
    assert all(torch.equal(before[k], v) for k, v in f.state_dict().items())


def test_too_many_columns_is_one_clear_error():
    with pytest.raises(ConfigError, match="at most 100 columns"):
        MaxEntFeatures(101)


def _head(X, Z, G=2):
    gens = [torch.Generator().manual_seed(s) for s in range(G)]
    head = build_head("maxent-features", X.shape[1], Z.shape[1], gens, hidden=4)
    head.fit_inputs(_Store(X), as_sparse(Z, dtype=np.int8))
    return head


def test_the_l1_penalty_is_added_to_the_weights_gradient_once_per_backward():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2)).astype(np.float32)
    Z = np.zeros((60, 1), np.int8)
    Z[:30, 0] = 1
    head = _head(X, Z)
    assert head.features.active[0].sum() > 0 and bool((head.out.weight == 0).all())  # MaxEnt starts from λ = 0
    with torch.no_grad():
        head.out.weight.copy_(torch.randn(head.out.weight.shape, generator=torch.Generator().manual_seed(0)))
    x = torch.as_tensor(X[:5])

    def grad(hooked: bool):
        head.out.weight.grad = None
        y = head(x) if hooked else head.out(head.features(x))
        (y.sum() + head(x).sum() * 0 if hooked else y.sum()).backward()  # the head called twice in one step
        return head.out.weight.grad.clone()

    plain, with_l1 = grad(False), grad(True)
    expect = plain + head.features.penalty[0][None, :, None] * torch.sign(head.out.weight.detach())
    assert torch.allclose(with_l1, expect, atol=1e-6)
    assert not torch.allclose(with_l1, plain)


def test_a_trained_head_saves_loads_and_predicts_what_it_trained(tmp_path):
    """spml train with ``--head maxent-features`` on presence-only data: the saved model holds
    the expansion's state (plain float tensors: ranges, classes, penalty) and predicts the
    run's test scores; its ranges are the training rows'."""
    from spmlkit.cli import main
    from spmlkit.data import Bundle
    from spmlkit.practitioner.saved import load_model

    bundle = one_species_bundle(tmp_path / "b", n=300, d=3, n_records=40, shift=1.5)
    out = tmp_path / "run"
    assert main(["train", str(bundle.path), "-m", "full-weighted", "--head", "maxent-features", "--epochs", "3",
                 "--batch-size", "8", "--no-refit", "-o", str(out)]) == 0
    model = load_model(out)
    assert model.n_features == 3
    b = Bundle(bundle.path)
    Xtr = np.asarray(b.features("train"), dtype=np.float64)
    std_tr = (Xtr - np.asarray(model.mean)) / np.asarray(model.std)
    low = model.state["features.low"].reshape(-1, 3)[0].numpy()
    assert low == pytest.approx(std_tr.min(0), abs=1e-5)  # the range of the training rows, standardised
    weights = torch.load(out / "model" / "weights.pt", weights_only=True)
    assert all(v.is_floating_point() for v in weights["state"].values())
    X_test = np.asarray(b.features("test"))
    again = load_model(out).decision_function(X_test)
    assert np.array_equal(model.decision_function(X_test), again)
    p = model.predict_proba(np.array([[3.0, 0, 0], [-3.0, 0, 0]], dtype=np.float32))[:, 0]
    assert p[0] > p[1]


def test_auto_with_the_maxent_features_head_predicts_from_disk_what_the_run_scored(tmp_path):
    """auto's one-species members with mixed heads (MaxEnt features + linear, equal weights):
    the saved model (loaded from disk) gives the validation and test AUC the run stored."""
    import json

    from spmlkit.cli import main
    from spmlkit.data import Bundle
    from spmlkit.practitioner.evaluation import model_features
    from spmlkit.practitioner.saved import load_model
    from spmlkit.practitioner.sdm_metrics import auc

    b = one_species_bundle(tmp_path / "b", n=500, d=3, n_records=80, shift=-1.0, column=1, seed=3)
    out = tmp_path / "run"
    assert main(["train", str(b.path), "--param", "presence_single=full-weighted:maxent-features,full-weighted:linear",
                 "--param", "combine=mean_probability", "--param", "lrs=1e-2", "--epochs", "3", "--batch-size", "8",
                 "-o", str(out)]) == 0
    stored = json.loads((out / "sdm_metrics.json").read_text())["species"]["Aus alpha"]
    b = Bundle(b.path)
    for split, folder in (("val", out / "selected_model"), ("test", out)):
        model = load_model(folder)
        assert model.member_heads == ["maxent-features", "linear"]
        s = model.decision_function(model_features(model, b, split))[:, 0]
        z = b.observations(split).dense()[:, 0]
        assert auc(s[z == 1], s[z == 0]) == pytest.approx(stored[split]["auc"], abs=1e-9)


def test_the_penalty_follows_the_weights_when_members_are_dropped():
    """Early-stopping compaction replaces the weight Parameter (select_members): the L1 hook is
    registered again on the new one, and the member's state stays a slice of the stack."""
    from spmlkit.models.heads import select_members

    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2)).astype(np.float32)
    Z = np.zeros((60, 1), np.int8)
    Z[:30, 0] = 1
    head = _head(X, Z, G=3)
    head(torch.as_tensor(X[:4])).sum().backward()  # hooked on the stack of 3
    select_members(head, [2])
    with torch.no_grad():
        head.out.weight.fill_(0.5)
    head.out.weight.grad = None
    x = torch.as_tensor(X[:4])
    head(x).sum().backward()
    plain = head.features(x).sum(0)[None, :, None].expand_as(head.out.weight)
    assert torch.allclose(head.out.weight.grad, plain + head.features.penalty[0][None, :, None], atol=1e-5)
