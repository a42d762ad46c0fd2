import numpy as np
import pytest

from tests.helpers.factories import make_toy_dataset
from spmlkit.data import Bundle, MultiLabelDataset, Split, prepare_bundle
from spmlkit.errors import ConfigError, SpmlError


def test_split_rules_and_stored_observations(tmp_path):
    ds = make_toy_dataset(n=100)
    ds.splits["train"].Y[:5] = False  # five training examples without a positive
    b = prepare_bundle(ds, tmp_path / "b", seed=3, log=lambda m: None)
    # official test split kept whole; 20% of the training file held out for validation
    assert b.size("test") == 50 and b.size("val") == 20
    n_dropped = b.meta["dropped_train_without_positive"]
    assert b.size("train") == 80 - n_dropped and 0 < n_dropped <= 5
    assert b.labels("val").shape == (20, 5) and b.labels("test").shape == (50, 5)  # full labels kept
    Z = b.observations("train")
    Y = b.labels("train")
    assert ((Z == 1).sum(1) == 1).all() and ((Z == 1) <= Y).all()
    # train / val rows are disjoint and come from the training file
    tr, va = np.load(b.path / "train/index.npy"), np.load(b.path / "val/index.npy")
    assert not set(tr) & set(va)
    # another regime shares the positive, is cached, and is reproducible from the seed
    Za = b.observations("train", regime="single_positive_all_negatives")
    assert ((Za == 1) == (Z == 1)).all() and (b.path / "observed/single_positive_all_negatives.npy").exists()
    assert (Bundle(b.path).observations("train", "single_positive_all_negatives") == Za).all()


def test_no_official_test_split_holds_out_test(tmp_path):
    ds = make_toy_dataset(n=100, with_test=False)
    b = prepare_bundle(ds, tmp_path / "b", test_fraction=0.25, log=lambda m: None)
    assert b.size("test") == 25 and b.size("val") == 15
    assert any("no official test split" in n for n in b.meta["notes"])


def test_seeded_split(tmp_path):
    ds = make_toy_dataset()
    a = prepare_bundle(ds, tmp_path / "a", seed=1, log=lambda m: None)
    b = prepare_bundle(ds, tmp_path / "b", seed=1, log=lambda m: None)
    c = prepare_bundle(ds, tmp_path / "c", seed=2, log=lambda m: None)
    ia, ib, ic = (np.load(x.path / "val/index.npy") for x in (a, b, c))
    assert (ia == ib).all() and not (ia == ic).all()


def test_observed_only_bundle(tmp_path):
    rng = np.random.default_rng(0)
    Z = np.zeros((50, 4), dtype=np.int8)
    Z[np.arange(50), rng.integers(0, 4, 50)] = 1
    ds = MultiLabelDataset("own", list("abcd"), {"train": Split(X=rng.normal(size=(50, 3)), Z=Z)})
    b = prepare_bundle(ds, tmp_path / "o", log=lambda m: None)
    assert not b.has_full_labels and b.regime == "observed" and b.labels("train") is None
    assert b.observations("val").shape == (8, 4) and b.observations("test").shape == (10, 4)
    with pytest.raises(SpmlError, match="cannot be simulated"):
        b.observations("train", regime="full")


def test_existing_and_incomplete_bundles(tmp_path):
    ds = make_toy_dataset()
    prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    with pytest.raises(ConfigError, match="already exists"):
        prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    (tmp_path / "half").mkdir()
    with pytest.raises(SpmlError, match="not a complete bundle"):
        Bundle(tmp_path / "half")


def test_failed_prepare_leaves_nothing(tmp_path, monkeypatch):
    import spmlkit.data.bundle as bmod

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(bmod, "write_json", boom)
    with pytest.raises(RuntimeError):
        prepare_bundle(make_toy_dataset(), tmp_path / "b", log=lambda m: None)
    assert list(tmp_path.iterdir()) == []  # no bundle and no temporary folder left behind
