
import numpy as np
import pytest

from spmlkit.data import Bundle, MultiLabelDataset, Split, load_any, prepare_bundle
from spmlkit.errors import ConfigError, SpmlError
from tests.helpers.factories import make_toy_dataset, single_positive


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
    assert ((Za == 1) == (Z == 1)).all() and (b.path / "observed/single_positive_all_negatives.header.npy").exists()
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
    Z = single_positive(50, 4, rng)
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


# Biased ("realistic") single positives: the kept positive is the most frequent, the least
# frequent or the largest-object label of each example (spmlkit.labels), and COCO's
# largest-instance areas that feed the last one (data/formats/coco.py).


def test_bundle_keeps_areas_for_the_largest_regime(tmp_path):
    """The areas travel with the prepared bundle (subset with the split), so the regime works
    from ``spml prepare --regime`` and from a training override (``spml bench --regime``)."""
    from spmlkit.data import MultiLabelDataset, Split, prepare_bundle

    rng = np.random.default_rng(1)
    Y = rng.random((40, 4)) < 0.5
    Y[~Y.any(1), 0] = True
    A = np.where(Y, rng.random((40, 4)) * 100, 0.0)
    ds = MultiLabelDataset("toy", list("abcd"), {"train": Split(X=rng.normal(size=(40, 3)), Y=Y, areas=A)})
    b = prepare_bundle(ds, tmp_path / "b", regime="single_positive_largest", seed=0, log=lambda m: None)
    rows = np.asarray(np.load(b.path / "train" / "index.npy"))
    assert np.allclose(b.areas("train"), A[rows])
    Z = b.observations("train")
    assert b.regime == "single_positive_largest"
    assert (np.argmax(Z == 1, axis=1) == np.argmax(A[rows], axis=1)).all()
    b2 = prepare_bundle(ds, tmp_path / "b2", seed=0, log=lambda m: None)  # uniform regime first
    assert np.array_equal(b2.observations("train", "single_positive_largest"), Z)  # generated on demand


# Input readers refuse bad input in one line (issue 14 §3-4) and the new-user traps of
# issue 15: one label per row read as full labels, Mulan folders not found by name,
# dataset statistics that disagree with what the loader keeps.


# ------------------------------------------------------------------- small datasets
def test_cannot_hold_out_names_the_dataset(tmp_path):
    p = tmp_path / "one.csv"
    p.write_text("f1,a,b\n1,1,1\n")
    ds = load_any(str(p), labels_last=2)
    with pytest.raises(ConfigError) as exc:
        prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    assert str(p) in str(exc.value) and "cannot hold out 20% of 1 examples" in str(exc.value)


# ------------------------------------------------ bundle format 2: sparse label files (issue 32)
def _as_format_1(path):
    """Rewrite a bundle as spmlkit wrote it before issue 32: dense ``M.npy`` matrices, format 1."""
    import hashlib
    import json

    from spmlkit.data.bundle import Bundle as B

    b = B(path)
    meta = json.loads((path / "meta.json").read_text())
    for head in sorted(path.rglob("*.header.npy")):
        stem = head.name[: -len(".header.npy")]
        rel = str(head.parent.relative_to(path) / stem)
        kind = {"Y": "label matrix", "mask": "label mask"}.get(stem, "observation matrix")
        dtype = bool if stem in ("Y", "mask") else np.int8
        M = b._matrix(rel, rows=b.size(head.parent.name if head.parent.name in ("train", "val", "test") else "train"),
                      what=kind, dtype=dtype)
        np.save(path / f"{rel}.npy", M.dense())
        for part in ("header", "indptr", "indices", "values"):
            f = path / f"{rel}.{part}.npy"
            if f.exists():
                f.unlink()
                meta["checksums"].pop(f"{rel}.{part}.npy", None)
        meta["checksums"][f"{rel}.npy"] = hashlib.sha256((path / f"{rel}.npy").read_bytes()).hexdigest()
    meta["format"] = 1
    (path / "meta.json").write_text(json.dumps(meta))


def test_bundles_of_format_1_read_as_before(tmp_path):
    """A bundle written before the sparse format (dense matrices, format 1) reads to the same
    labels and observations and trains to the same result."""
    import shutil

    from spmlkit.config import TrainConfig
    from spmlkit.training.linear import train_linear

    new = prepare_bundle(make_toy_dataset(), tmp_path / "new", log=lambda m: None)
    shutil.copytree(new.path, tmp_path / "old")
    _as_format_1(tmp_path / "old")
    old = Bundle(tmp_path / "old")
    assert old.meta["format"] == 1 and not list((tmp_path / "old").rglob("*.header.npy"))
    for split in ("train", "val", "test"):
        assert np.array_equal(np.asarray(old.labels(split)), np.asarray(new.labels(split)))
    assert np.array_equal(np.asarray(old.observations("train")), np.asarray(new.observations("train")))
    cfg = TrainConfig(method="an", epochs=2, batch_size=8)
    (a,), (b,) = train_linear(new, cfg), train_linear(old, cfg)
    assert a.val_history == b.val_history and a.test_map == b.test_map
    # a regime drawn later is cached in the new sparse form, beside the dense files
    Za = old.observations("train", regime="single_positive_all_negatives")
    assert (tmp_path / "old" / "observed" / "single_positive_all_negatives.header.npy").exists()
    assert np.array_equal(np.asarray(Za), np.asarray(new.observations("train", regime="single_positive_all_negatives")))


def test_a_bundle_of_a_newer_format_is_refused_in_one_line(tmp_path):
    import json

    b = prepare_bundle(make_toy_dataset(), tmp_path / "b", log=lambda m: None)
    meta = json.loads((b.path / "meta.json").read_text())
    meta["format"] = 3
    (b.path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(SpmlError, match="format 3 is not supported.*re-run 'spml prepare'"):
        Bundle(b.path)


def test_single_positive_bundle_files_grow_with_n_not_n_times_l(tmp_path):
    """Observations of single positives take one int32 label index per row on disk (plus
    the row pointers), whatever the number of labels."""
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.sparse_labels import SparseLabels

    rng = np.random.default_rng(0)
    n, L = 2000, 50_000
    ds = MultiLabelDataset("wide", [f"l{j}" for j in range(L)],
                           {"train": Split(X=rng.normal(size=(n, 3)).astype(np.float32),
                                           Z=SparseLabels.single(rng.integers(0, L, n), L))})
    b = prepare_bundle(ds, tmp_path / "w", log=lambda m: None)
    size = sum(f.stat().st_size for f in (tmp_path / "w").rglob("*.npy") if "X.npy" not in f.name
               and "index.npy" not in f.name)
    assert size < 16 * n + 4096, size  # dense int8 would be n x L = 100 MB


def test_bundle_keeps_ids_places_and_the_encoding(tmp_path):
    """Issue 36: a source's ids and places (x, y) are stored per split (small per-row
    arrays) and read back checked; the covariate encoding and places go to meta.json."""
    from spmlkit.data import prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.errors import CorruptFileError

    rng = np.random.default_rng(0)
    Z = np.zeros((40, 2), np.int8)
    Z[np.arange(40), rng.integers(0, 2, 40)] = 1
    xy = rng.normal(size=(40, 2))
    ids = [f"site-{i}" for i in range(40)]
    ds = MultiLabelDataset("located", ["a", "b"], {"train": Split(X=rng.normal(size=(40, 3)), Z=Z, ids=ids, xy=xy)},
                           encoding={"covariates": ["u", "v", "w"], "categorical": {}}, places={"crs": "EPSG:4326"})
    b = prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    assert b.meta["encoding"]["covariates"] == ["u", "v", "w"] and b.meta["places"] == {"crs": "EPSG:4326"}
    for split in ("train", "val", "test"):
        rows = b.index(split)
        assert b.ids(split) == [ids[i] for i in rows] and np.array_equal(b.xy(split), xy[rows])
    np.save(tmp_path / "b" / "test" / "ids.npy", np.array(["x"] * b.size("test")))
    with pytest.raises(CorruptFileError, match="ids.npy"):
        b.ids("test")
    plain = prepare_bundle(MultiLabelDataset("plain", ["a", "b"], {"train": Split(X=np.ones((40, 3)), Z=Z)}),
                           tmp_path / "p", log=lambda m: None)
    assert plain.ids("train") is None and plain.xy("train") is None and "encoding" not in plain.meta
