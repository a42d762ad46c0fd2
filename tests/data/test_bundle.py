
from pathlib import Path

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
    ds = load_any(str(p), labels_last=2, observed=False)
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


# ------------------------------------------- issue 39: what the bundle's readers must catch
# (survivors of the mutation run of spmlkit/data/bundle.py: a reader check that no test
# exercised is a damaged file read as data)
import hashlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402

from spmlkit.data import bundle as bmod  # noqa: E402
from spmlkit.errors import CorruptFileError, DataFormatError  # noqa: E402
from spmlkit.sparse_labels import SparseLabels  # noqa: E402


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One small prepared bundle (copied by ``fresh`` before a test alters it)."""
    base = tmp_path_factory.mktemp("made")
    prepare_bundle(make_toy_dataset(n=60), base / "b", seed=5, log=lambda m: None)
    return base / "b"


@pytest.fixture
def fresh(made, tmp_path):
    shutil.copytree(made, tmp_path / "b")
    return tmp_path / "b"


def _replace(bundle_path, rel, arr, *, record=True):
    """Put ``arr`` at ``rel`` in the bundle, its checksum recorded in meta.json (a
    consistent but wrong file: what the shape/dtype checks must catch)."""
    p = bundle_path / rel
    np.save(p, arr, allow_pickle=True)
    meta = json.loads((bundle_path / "meta.json").read_text())
    if record:
        meta["checksums"][rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    (bundle_path / "meta.json").write_text(json.dumps(meta))
    bmod._VERIFIED.clear()


def _unrecord(bundle_path, rel):
    """Drop ``rel`` from meta.json's checksums (a bundle that never had that file)."""
    meta = json.loads((bundle_path / "meta.json").read_text())
    meta["checksums"].pop(rel, None)
    (bundle_path / "meta.json").write_text(json.dumps(meta))


def _edit_meta(bundle_path, **changes):
    meta = json.loads((bundle_path / "meta.json").read_text())
    for k, v in changes.items():
        if v is _DROP:
            meta.pop(k, None)
        else:
            meta[k] = v
    (bundle_path / "meta.json").write_text(json.dumps(meta))


_DROP = object()


def test_split_indices_hold_out_the_rounded_share_sorted_and_disjoint():
    keep, out = bmod.split_indices(10, 0.26, np.random.default_rng(0))
    assert len(out) == 3 and len(keep) == 7 and sorted(set(keep) | set(out)) == list(range(10))
    assert list(keep) == sorted(keep) and list(out) == sorted(out)
    again = bmod.split_indices(10, 0.26, np.random.default_rng(0))
    assert np.array_equal(again[0], keep) and np.array_equal(again[1], out)
    keep, out = bmod.split_indices(2, 0.5, np.random.default_rng(0))
    assert len(keep) == len(out) == 1


@pytest.mark.parametrize("n, fraction, message", [
    (10, 1.0, "data.csv: --val-fraction must be below 1 (0 holds nothing out), got 1"),
    (10, 1.5, "data.csv: --val-fraction must be below 1 (0 holds nothing out), got 1.5"),
    (10, 0.0, "data.csv: --val-fraction must be in (0, 1), got 0"),
    (10, -0.2, "data.csv: --val-fraction must be in (0, 1), got -0.2"),
    (1, 0.2, "data.csv: --val-fraction 0.2 cannot hold out 20% of 1 examples (none would be left out); choose "
             "another --val-fraction"),
    (2, 0.9, "data.csv: --val-fraction 0.9 cannot hold out 90% of 2 examples (all would be left to train on); "
             "choose another --val-fraction"),
])
def test_split_indices_refusals_name_the_source_and_option(n, fraction, message):
    with pytest.raises(ConfigError) as e:
        bmod.split_indices(n, fraction, np.random.default_rng(0), source="data.csv", option="--val-fraction")
    assert str(e.value) == message


def test_split_indices_default_wording():
    with pytest.raises(ConfigError) as e:
        bmod.split_indices(10, 0.0, np.random.default_rng(0))
    assert str(e.value) == "hold-out fraction must be in (0, 1), got 0"


def test_bundle_folders_are_recognised_by_their_meta(fresh, tmp_path):
    assert bmod.is_bundle_folder(fresh) and bmod.is_bundle_folder(str(fresh))
    assert not bmod.is_bundle_folder(tmp_path / "missing")
    for key in ("format", "spmlkit_version", "sizes"):
        other = tmp_path / f"no-{key}"
        other.mkdir()
        meta = json.loads((fresh / "meta.json").read_text())
        meta.pop(key)
        (other / "meta.json").write_text(json.dumps(meta))
        assert not bmod.is_bundle_folder(other)
    (tmp_path / "list").mkdir()
    (tmp_path / "list" / "meta.json").write_text("[1, 2]")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "meta.json").write_text("{")
    assert not bmod.is_bundle_folder(tmp_path / "list") and not bmod.is_bundle_folder(tmp_path / "bad")


def test_label_matrices_are_stored_sparse_with_values_only_when_needed(tmp_path):
    from spmlkit import ownership

    d = ownership.claim(tmp_path / "o", "run")
    Y = np.array([[True, False, True], [False, False, False]])
    files = bmod.save_labels(d, "Y", Y)
    assert [f.name for f in files] == ["Y.header.npy", "Y.indptr.npy", "Y.indices.npy"]
    assert np.load(d / "Y.header.npy").tolist() == [2, 3, 0, 0]
    assert np.load(d / "Y.indptr.npy").tolist() == [0, 2, 2] and np.load(d / "Y.indices.npy").tolist() == [0, 2]
    Z = np.array([[1, -1, 0], [0, 0, -1]], np.int8)
    files = bmod.save_labels(d, "Z", Z)
    assert [f.name for f in files][-1] == "Z.values.npy" and np.load(d / "Z.header.npy").tolist()[3] == 1
    assert np.load(d / "Z.values.npy").tolist() == [1, -1, -1]
    assert bmod.labels_stored(d, "Y") and bmod.labels_stored(d, "Z") and not bmod.labels_stored(d, "mask")
    np.save(d / "old.npy", Y)  # format 1: dense
    assert bmod.labels_stored(d, "old")


def test_bundle_descriptions_that_are_damaged_are_refused(fresh, tmp_path):
    with pytest.raises(SpmlError) as e:
        Bundle(tmp_path / "nowhere")
    assert str(e.value) == f"bundle {tmp_path / 'nowhere'} not found; create it with 'spml prepare'"
    meta = (fresh / "meta.json").read_text()
    (fresh / "meta.json").write_text("[]")
    with pytest.raises(CorruptFileError) as e:
        Bundle(fresh)
    assert str(e.value) == f"{fresh / 'meta.json'}: expected a JSON object describing the bundle"
    for key in ("name", "label_names", "kind", "has_full_labels", "regime", "sizes", "seed"):
        (fresh / "meta.json").write_text(meta)
        _edit_meta(fresh, **{key: _DROP})
        with pytest.raises(CorruptFileError) as e:
            Bundle(fresh)
        assert str(e.value) == (f"{fresh / 'meta.json'}: damaged bundle description (missing {key}); re-run "
                                "'spml prepare'")
    for key, value in (("sizes", [1, 2, 3]), ("sizes", {"train": 3, "val": 1}), ("sizes", {"train": 3, "val": 1,
                                                                                             "test": "1"}),
                       ("label_names", "abc"), ("label_names", []), ("label_names", ["a", "a"])):
        (fresh / "meta.json").write_text(meta)
        _edit_meta(fresh, **{key: value})
        with pytest.raises(CorruptFileError) as e:
            Bundle(fresh)
        assert str(e.value) == (f"{fresh / 'meta.json'}: damaged bundle description (sizes or label_names are not "
                                "valid); re-run 'spml prepare'")
    for checksums in (_DROP, {}, ["x"]):
        (fresh / "meta.json").write_text(meta)
        _edit_meta(fresh, checksums=checksums)
        with pytest.raises(CorruptFileError) as e:
            Bundle(fresh)
        assert str(e.value) == (f"{fresh / 'meta.json'}: records no checksums of the bundle's arrays (written by an "
                                "older spmlkit, or edited); spmlkit reads only arrays it can verify — re-run "
                                "'spml prepare'")
    (fresh / "meta.json").write_text(meta)
    _edit_meta(fresh, format=None)
    with pytest.raises(SpmlError, match="bundle format None is not supported"):
        Bundle(fresh)
    (fresh / "meta.json").write_text(meta)
    b = Bundle(fresh)
    assert (b.name, b.kind, b.regime, b.n_labels, b.label_names) == ("toy", "features", "single_positive", 5,
                                                                      [f"l{i}" for i in range(5)])
    assert b.has_full_labels is True and b.size("val") == 12 and isinstance(b.size("val"), int)


def test_arrays_of_the_wrong_shape_or_type_are_refused_naming_the_file(fresh):
    b = Bundle(fresh)
    n = b.size("train")
    X = np.asarray(b.features("train"))
    cases = [
        ("train/X.npy", X[:-1], f"feature matrix has {n - 1} rows but the bundle's meta.json says {n}"),
        ("train/X.npy", X[:, :-1], "feature matrix has 5 columns, expected 6"),
        ("train/X.npy", X.astype(np.float64), "feature matrix must be float32 (as spmlkit writes it), found float64"),
        ("train/X.npy", X[:, 0], "expected a 2-D numeric feature matrix, found 1-D float32"),
        ("train/X.npy", X.astype(np.complex64), "expected a 2-D numeric feature matrix, found 2-D complex64"),
        ("train/X.npy", np.array([[{"a": 1}]], dtype=object), "not a readable numeric array (holds Python objects "
                                                               "(an object array); spmlkit never unpickles bundle "
                                                               "files)"),
        ("train/index.npy", np.array([{"a": 1}], dtype=object), "not a readable numeric array (holds Python "
                                                                 "objects (an object array); spmlkit never "
                                                                 "unpickles bundle files)"),
        ("train/index.npy", np.arange(n, dtype=np.float64), "row numbers must be whole numbers, found float64"),
        ("train/index.npy", np.r_[-1, np.arange(n - 1)], "row numbers are negative or repeated"),
        ("train/index.npy", np.r_[0, np.arange(n - 1)], "row numbers are negative or repeated"),
        ("train/xy.npy", np.ones((n, 3)), "place (x, y) array has 3 columns, expected 2"),
        ("train/areas.npy", np.ones((n, 5), np.float32), "instance-area matrix must be float64"),
    ]
    read = {"train/X.npy": lambda: Bundle(fresh).features("train"), "train/index.npy": lambda: Bundle(fresh).index("train"),
            "train/xy.npy": lambda: Bundle(fresh).xy("train"), "train/areas.npy": lambda: Bundle(fresh).areas("train")}
    orig = {rel: (fresh / rel).read_bytes() if (fresh / rel).exists() else None for rel in read}
    for rel, arr, message in cases:
        _replace(fresh, rel, arr)
        with pytest.raises(CorruptFileError) as e:
            read[rel]()
        assert str(e.value).startswith(f"{fresh / rel}: ") and message in str(e.value), str(e.value)
        assert str(e.value).endswith("re-run 'spml prepare'") and "\n" not in str(e.value)
        if orig[rel] is not None:
            (fresh / rel).write_bytes(orig[rel])
    (fresh / "train" / "X.npy").write_bytes(orig["train/X.npy"][:100])
    _edit_meta(fresh, checksums={**b.meta["checksums"], "train/X.npy": hashlib.sha256(
        (fresh / "train" / "X.npy").read_bytes()).hexdigest()})
    b = Bundle(fresh)
    with pytest.raises(CorruptFileError, match="train/X.npy: (not a readable numeric array|cannot be read)"):
        b.features("train")
    (fresh / "train" / "index.npy").unlink()
    with pytest.raises(SpmlError) as e:
        b.index("train")
    assert str(e.value) == f"{fresh / 'train' / 'index.npy'} is missing from the bundle"


def test_a_readable_array_loads_whole_or_mapped(fresh):
    b = Bundle(fresh)
    assert isinstance(b.features("val"), np.memmap) and not isinstance(b.features("val", mmap=False), np.memmap)
    assert np.array_equal(b.features("val"), b.features("val", mmap=False))
    idx = b.index("test")
    assert idx.dtype == np.int64 and idx.tolist() == list(range(b.size("test")))  # the official test split, whole
    assert b.xy("train") is None and b.areas("train") is None and b.ids("train") is None
    assert b.label_mask("test") is None


def test_sparse_label_files_are_checked(fresh):
    b = Bundle(fresh)
    n = b.size("val")
    head = np.load(fresh / "val" / "Y.header.npy")
    for bad, why in ((head[:3], "damaged label matrix header"), (head.astype(np.float64), "damaged label matrix "
                                                                                            "header"),
                     (np.r_[head[:3], 7], "damaged label matrix header"),
                     (np.r_[n + 1, head[1:]], f"the label matrix is {n + 1} x 5 (bool) where the bundle says {n} x 5 "
                                              "(bool)"),
                     (np.r_[n, 4, head[2:]], f"the label matrix is {n} x 4 (bool) where the bundle says {n} x 5"),
                     (np.r_[head[:3], 1], f"the label matrix is {n} x 5 (int8) where the bundle says {n} x 5 (bool)")):
        _replace(fresh, "val/Y.header.npy", bad)
        with pytest.raises(CorruptFileError) as e:
            Bundle(fresh).labels("val")
        assert str(e.value).startswith(f"{fresh / 'val' / 'Y.*.npy'}: {why}"), str(e.value)
        assert str(e.value).endswith("re-run 'spml prepare'")
    _replace(fresh, "val/Y.header.npy", head)
    indptr = np.load(fresh / "val" / "Y.indptr.npy")
    _replace(fresh, "val/Y.indptr.npy", indptr[:-1])
    with pytest.raises(CorruptFileError, match="label matrix row pointers has"):
        Bundle(fresh).labels("val")
    bad = indptr.copy()
    bad[-1] += 1  # points past the indices
    _replace(fresh, "val/Y.indptr.npy", bad)
    with pytest.raises(CorruptFileError, match=r"Y\.\*\.npy.*re-run 'spml prepare'$"):
        Bundle(fresh).labels("val")
    _replace(fresh, "val/Y.indptr.npy", indptr)
    # observations: values present, as many as the indices
    Zh = fresh / "observed" / "single_positive_all_negatives.header.npy"
    assert not Zh.exists()
    obs = Bundle(fresh).observations("train", "single_positive_all_negatives")
    rel = "observed/single_positive_all_negatives.values.npy"
    vals = np.load(fresh / rel)
    np.save(fresh / rel, vals[:-1])
    (fresh / (rel + ".sha256")).write_text(hashlib.sha256((fresh / rel).read_bytes()).hexdigest() + "\n")
    bmod._VERIFIED.clear()
    with pytest.raises(CorruptFileError, match="observation matrix values has"):
        Bundle(fresh).observations("train", "single_positive_all_negatives")
    assert obs.shape == (Bundle(fresh).size("train"), 5)


def test_dense_matrices_of_format_1_must_have_their_dtype(fresh):
    b = Bundle(fresh)
    Y = np.asarray(b.labels("test"))
    meta = json.loads((fresh / "meta.json").read_text())
    for part in ("header", "indptr", "indices", "values"):  # (a format-1 bundle: no sparse files, none recorded)
        (fresh / "test" / f"Y.{part}.npy").unlink(missing_ok=True)
        meta["checksums"].pop(f"test/Y.{part}.npy", None)
    (fresh / "meta.json").write_text(json.dumps(meta))
    _replace(fresh, "test/Y.npy", Y.astype(np.int8))
    with pytest.raises(CorruptFileError) as e:
        Bundle(fresh).labels("test")
    assert str(e.value) == (f"{fresh / 'test' / 'Y.npy'}: a label matrix must be a bool matrix (as 'spml prepare' "
                            "writes it), found int8; re-run 'spml prepare'")
    _replace(fresh, "test/Y.npy", Y)
    assert np.array_equal(np.asarray(Bundle(fresh).labels("test")), Y)
    Z = np.asarray(b.observations("train"))
    meta = json.loads((fresh / "meta.json").read_text())
    for part in ("header", "indptr", "indices", "values"):
        (fresh / "observed" / f"single_positive.{part}.npy").unlink(missing_ok=True)
        meta["checksums"].pop(f"observed/single_positive.{part}.npy", None)
    (fresh / "meta.json").write_text(json.dumps(meta))
    _replace(fresh, "observed/single_positive.npy", Z.astype(np.int16))
    with pytest.raises(CorruptFileError) as e:
        Bundle(fresh).observations("train")
    assert str(e.value) == (f"{fresh / 'observed' / 'single_positive.npy'}: observations must be int8 (+1 / 0 / -1), "
                            "found int16")
    _replace(fresh, "observed/single_positive.npy", Z)
    assert np.array_equal(np.asarray(Bundle(fresh).observations("train")), Z)


def test_stored_observations_are_checked_against_the_regime(fresh):
    b = Bundle(fresh)
    Z = np.asarray(b.observations("train")).copy()
    Z[0, :] = 0  # a row without its single positive
    for part in ("header", "indptr", "indices", "values"):
        (fresh / "observed" / f"single_positive.{part}.npy").unlink(missing_ok=True)
        b.meta["checksums"].pop(f"observed/single_positive.{part}.npy", None)
    (fresh / "meta.json").write_text(json.dumps(b.meta))
    from spmlkit import ownership

    ownership.folder(fresh, "bundle")
    for f in bmod.save_labels(fresh / "observed", "single_positive", Z):
        (f.parent / (f.name + ".sha256")).write_text(hashlib.sha256(f.read_bytes()).hexdigest())
    bmod._VERIFIED.clear()
    with pytest.raises(CorruptFileError) as e:
        Bundle(fresh).observations("train")
    assert str(e.value).startswith(f"{fresh / 'observed' / 'single_positive.*.npy'}: row 1 has 0 observed positives")


def test_other_regimes_are_drawn_once_cached_with_sidecar_checksums_and_nested(fresh):
    b = Bundle(fresh)
    with pytest.raises(ConfigError) as e:
        b.observations("train", "single_positive", hide_prob=0.3)
    assert str(e.value) == "hide_prob applies to the 'partial' regime only, not 'single_positive'"
    for bad in (-0.1, 1.5):
        with pytest.raises(ConfigError) as e:
            b.observations("train", "partial", hide_prob=bad)
        assert str(e.value) == f"hide_prob must be in [0, 1], got {bad}"
    low = np.asarray(b.observations("train", "partial", hide_prob=0.3))
    high = np.asarray(b.observations("train", "partial", hide_prob=0.7))
    for p in ("0.3", "0.7"):
        for part in ("header", "indptr", "indices"):
            f = fresh / "observed" / f"partial-p{p}.{part}.npy"
            assert (f.parent / (f.name + ".sha256")).read_text() == hashlib.sha256(f.read_bytes()).hexdigest() + "\n"
    assert ((low == 0) <= (high == 0)).all() and (high == 0).sum() > (low == 0).sum()  # nested hiding
    Y = np.asarray(b.labels("train"))
    assert ((low == 1) <= Y).all() and ((low == -1) <= ~Y).all()
    default = np.asarray(b.observations("train", "partial"))  # the bundle's hide_prob (0.5)
    assert (fresh / "observed" / "partial.header.npy").exists()
    assert ((low == 0) <= (default == 0)).all() and ((default == 0) <= (high == 0)).all()
    again = Bundle(fresh)
    assert np.array_equal(np.asarray(again.observations("train", "partial", hide_prob=0.3)), low)
    with pytest.raises(ConfigError, match="unknown split 'dev'; expected one of train, val, test"):
        b.observations("dev")


def test_val_and_test_observations_of_full_labels_are_full(fresh):
    b = Bundle(fresh)
    Y = np.asarray(b.labels("val"))
    Z = np.asarray(b.observations("val"))
    assert np.array_equal(Z, np.where(Y, 1, -1))
    sel = np.asarray(b.selection_observations("val", "full"))
    assert np.array_equal(sel, Z)
    sp = np.asarray(b.selection_observations("test", "single_positive"))
    Yt = np.asarray(b.labels("test"))
    assert ((sp == 1).sum(1) == 1).all() and ((sp == 1) <= Yt).all() and (sp[Yt == 0] == 0).all()
    assert np.array_equal(np.asarray(b.selection_observations("train", "single_positive")),
                          np.asarray(b.observations("train")))
    meta = json.loads((fresh / "meta.json").read_text())
    for part in ("header", "indptr", "indices", "values"):
        (fresh / "val" / f"Y.{part}.npy").unlink(missing_ok=True)
    with pytest.raises(SpmlError) as e:  # deleted files the bundle records: refused at opening
        Bundle(fresh).observations("val")
    assert str(e.value).startswith(f"{fresh}: files the bundle records are missing: val/Y.header.npy")
    for part in ("header", "indptr", "indices", "values"):  # (a bundle that never had them)
        meta["checksums"].pop(f"val/Y.{part}.npy", None)
    (fresh / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(SpmlError) as e:
        Bundle(fresh).observations("val")
    assert str(e.value) == f"{fresh}: split 'val' has neither labels nor observations"


def test_own_observations_are_used_for_selection(tmp_path):
    from tests.helpers.factories import make_presence_only_dataset

    b = prepare_bundle(make_presence_only_dataset(n=40, n_background=20), tmp_path / "po", log=lambda m: None)
    assert b.meta["background_rows"] > 0 and b.regime == "observed"
    Z = np.asarray(b.observations("train"))
    assert ((Z != 0).sum(1) == 0).sum() == b.meta["background_rows"]
    assert np.array_equal(np.asarray(b.selection_observations("val", "single_positive")),
                          np.asarray(b.observations("val")))
    assert np.array_equal(np.asarray(b.selection_observations("train", "observed")), Z)
    mask = b.label_mask("test")
    assert mask is not None and not np.asarray(mask).all()
    s = b.summary()
    assert "observed labels only (no full labels); full labels in: test" in s


def test_summary_says_what_the_bundle_holds(fresh):
    b = Bundle(fresh)
    _edit_meta(fresh, dropped_train_without_positive=3, notes=["n1", "n2"])
    b = Bundle(fresh)
    s = b.size
    assert b.summary().splitlines() == [
        f"bundle {fresh}: toy (features), 5 labels, train {s('train')} / val {s('val')} / test {s('test')}, "
        "regime single_positive, seed 5",
        "  dropped 3 training example(s) without a positive", "  note: n1", "  note: n2"]
    _edit_meta(fresh, has_full_labels=False, full_label_splits=[], dropped_train_without_positive=0, notes=[])
    assert Bundle(fresh).summary().splitlines()[1:] == [
        "  observed labels only (no full labels); validation and test use observed labels only"]


def test_final_model_and_no_validation_bundles(tmp_path):
    ds = make_toy_dataset(n=50, with_test=False)
    b = prepare_bundle(ds, tmp_path / "final", test_fraction=0, seed=1, log=lambda m: None)
    assert b.size("test") == 0 and b.size("val") == 10 and b.meta["test_fraction"] == 0
    assert any(n.startswith("no test split (--test-fraction 0)") for n in b.meta["notes"])
    assert b.index("test").size == 0 and np.asarray(b.labels("test")).shape == (0, 5)
    c = prepare_bundle(ds, tmp_path / "noval", val_fraction=0, seed=1, log=lambda m: None)
    assert c.size("val") == 0 and c.size("test") == 10 and c.size("train") + c.meta[
        "dropped_train_without_positive"] == 40
    assert any(n.startswith("no validation split (--val-fraction 0)") for n in c.meta["notes"])
    assert sorted(set(c.index("train")) | set(c.index("test"))) <= list(range(50))
    assert not set(c.index("train")) & set(c.index("test"))
    d = prepare_bundle(make_toy_dataset(n=50), tmp_path / "official", log=lambda m: None)
    assert d.meta["test_fraction"] is None and d.meta["val_fraction"] == 0.2 and d.meta["hide_prob"] == 0.5
    assert d.meta["format"] == bmod.BUNDLE_FORMAT == 2 and d.meta["has_full_labels"] is True
    assert d.meta["full_label_splits"] == ["train", "val", "test"] and d.meta["n_features"] == 6
    assert d.meta["seed"] == 0 and d.meta["source"] == "toy" and d.meta["regime"] == "single_positive"
    assert sorted(d.meta["checksums"]) == sorted(str(f.relative_to(d.path)) for f in d.path.rglob("*.npy"))


def test_a_relative_bundle_path_stays_relative_and_dropped_rows_are_logged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ds = make_toy_dataset(n=60)
    ds.splits["train"].Y[:6] = False
    said = []
    b = prepare_bundle(ds, "rel", seed=2, log=said.append)
    assert str(b.path) == "rel" and (tmp_path / "rel" / "meta.json").exists()
    n = b.meta["dropped_train_without_positive"]
    assert n > 0 and said == [f"dropped {n} training example(s) with no true positive (they cannot carry a single "
                              "positive)"]
    assert not (tmp_path / ".rel.spml.lock").exists()  # the lock beside the bundle is removed after


def test_no_training_example_left_is_one_line(tmp_path):
    ds = make_toy_dataset(n=40)
    ds.splits["train"].Y[:] = False
    with pytest.raises(DataFormatError) as e:
        prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    assert str(e.value) == "toy: no training examples left after dropping those without positives"
    assert not (tmp_path / "b").exists()


def test_observed_only_training_rows_without_an_observation_are_dropped(tmp_path):
    rng = np.random.default_rng(0)
    Z = single_positive(50, 4, rng)
    Z[:5] = 0
    ds = MultiLabelDataset("own", list("abcd"), {"train": Split(X=rng.normal(size=(50, 3)), Z=Z)})
    said = []
    b = prepare_bundle(ds, tmp_path / "o", log=said.append)
    n = b.meta["dropped_train_without_positive"]
    assert 0 < n <= 5 and said[0].startswith(f"dropped {n} training example(s) with no observed label")
    assert (np.asarray(b.observations("train")) != 0).any(1).all()


def test_image_bundles_choose_their_feature_cache(tmp_path):
    rng = np.random.default_rng(0)
    paths = [f"/img/{i}.jpg" for i in range(40)]
    Y = rng.random((40, 3)) < 0.5
    Y[~Y.any(1), 0] = True
    ds = MultiLabelDataset("imgs", list("abc"), {"train": Split(paths=paths, Y=Y)})
    b = prepare_bundle(ds, tmp_path / "i", log=lambda m: None)
    assert b.kind == "images" and b.meta["n_features"] is None
    assert b.paths("train") == [paths[i] for i in b.index("train")]
    assert b.feature_sets() == []
    with pytest.raises(SpmlError) as e:
        b.features("train")
    assert str(e.value) == f"{b.path} holds images and no cached features; run 'spml features {b.path}'"
    from spmlkit import ownership

    ownership.folder(b.path, "bundle")

    def cache(name, nan=False):
        for split in ("train", "val", "test"):
            X = np.ones((b.size(split), 4), np.float32)
            if nan and split == "val":
                X[1, 2] = np.inf
            f = b.path / "features" / name / f"{split}.npy"
            ownership.save_npy(f, X)
            ownership.write_text(f.with_name(f.name + ".sha256"), hashlib.sha256(f.read_bytes()).hexdigest() + "\n")

    cache("r50")
    assert b.feature_sets() == ["r50"] and b.features("val").shape == (b.size("val"), 4)
    cache("clip", nan=True)
    assert b.feature_sets() == ["clip", "r50"]
    with pytest.raises(SpmlError) as e:
        b.features("train")
    assert str(e.value) == f"{b.path} has several feature caches ['clip', 'r50']; choose one with --feature-set"
    with pytest.raises(SpmlError) as e:
        b.features("train", "vit")
    assert str(e.value) == f"feature set 'vit' not in {b.path}; available: ['clip', 'r50']"
    assert b.features("train", "clip").shape == (b.size("train"), 4)
    with pytest.raises(CorruptFileError) as e:
        b.features("val", "clip")
    assert str(e.value).startswith(f"{b.path / 'features' / 'clip' / 'val.npy'}: row 2, column 3 is inf")
    (b.path / "features" / "half").mkdir()  # no test.npy: not a feature set
    assert b.feature_sets() == ["clip", "r50"]
    feat = prepare_bundle(make_toy_dataset(n=40), tmp_path / "f", log=lambda m: None)
    with pytest.raises(SpmlError) as e:
        feat.paths("train")
    assert str(e.value) == f"{feat.path} holds feature vectors, not images"


def test_a_feature_cache_rewritten_with_a_nan_is_checked_again(tmp_path):
    import os

    p = tmp_path / "x.npy"
    good = np.ones((4, 2), np.float32)
    np.save(p, good)
    bmod._check_finite(p, good)
    bad = good.copy()
    bad[3, 1] = np.nan
    np.save(p, np.vstack([bad, good]))  # another size
    with pytest.raises(CorruptFileError, match="row 4, column 2 is nan"):
        bmod._check_finite(p, np.vstack([bad, good]))
    np.save(p, good)
    bmod._check_finite(p, good)
    st = p.stat()
    np.save(p, bad)  # the same size, another time
    os.utime(p, ns=(st.st_mtime_ns + 10**9, st.st_mtime_ns + 10**9))
    with pytest.raises(CorruptFileError, match="row 4, column 2 is nan"):
        bmod._check_finite(p, bad)


def test_identifiers_are_checked_like_every_array(tmp_path):
    rng = np.random.default_rng(0)
    Z = single_positive(40, 2, rng)
    ds = MultiLabelDataset("ided", ["a", "b"], {"train": Split(X=rng.normal(size=(40, 3)), Z=Z,
                                                              ids=[f"s{i}" for i in range(40)])})
    b = prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    n = b.size("test")
    for arr, why in ((np.arange(n), f"expected {n} identifiers (text), found 1-D int64 of {n}"),
                     (np.array(["x"] * (n + 1)), f"expected {n} identifiers (text), found 1-D <U1 of {n + 1}"),
                     (np.array([["x"]] * n), f"expected {n} identifiers (text), found 2-D <U1 of {n}"),
                     (np.array([{"a": 1}] * n, dtype=object), "not a readable array of identifiers (")):
        _replace(b.path, "test/ids.npy", arr)
        with pytest.raises(CorruptFileError) as e:
            Bundle(b.path).ids("test")
        assert str(e.value).startswith(f"{b.path / 'test' / 'ids.npy'}: {why}") and "\n" not in str(e.value)
        assert str(e.value).endswith("re-run 'spml prepare'")


def test_the_bundle_meta_records_what_was_prepared(tmp_path):
    import datetime

    from spmlkit import __version__
    from spmlkit.labels import label_stats, observation_stats

    ds = make_toy_dataset(n=60)
    ds.splits["train"].X = ds.splits["train"].X.astype(np.float64)  # stored float32 whatever it came as
    ds.feature_names = [f"f{i}" for i in range(6)]
    b = prepare_bundle(ds, tmp_path / "b", hide_prob=0.3, seed=4, val_fraction=0.25, log=lambda m: None)
    m = b.meta
    assert m["spmlkit_version"] == __version__ and m["name"] == "toy" and m["kind"] == "features"
    created = datetime.datetime.fromisoformat(m["created"])
    assert created.utcoffset() == datetime.timedelta(0) and created.microsecond == 0
    assert m["feature_names"] == [f"f{i}" for i in range(6)] and m["label_names"] == [f"l{i}" for i in range(5)]
    assert m["hide_prob"] == 0.3 and m["val_fraction"] == 0.25 and m["seed"] == 4
    assert m["sizes"] == {"train": b.size("train"), "val": 15, "test": 30}
    assert m["train_label_stats"] == json.loads(json.dumps(label_stats(b.labels("train"))))
    assert m["train_observation_stats"] == json.loads(json.dumps(observation_stats(b.observations("train"))))
    assert b.features("train").dtype == np.float32 and "background_rows" not in m
    assert m["notes"] == [] and m["dropped_train_without_positive"] == 0
    # the 'partial' regime drawn later hides with the bundle's own probability
    assert np.array_equal(np.asarray(b.observations("train", "partial")),
                          np.asarray(Bundle(b.path).observations("train", "partial", hide_prob=0.3)))


def test_hold_out_notes_say_what_was_done(tmp_path):
    ds = make_toy_dataset(n=50, with_test=False)
    b = prepare_bundle(ds, tmp_path / "held", test_fraction=0.2, seed=7, log=lambda m: None)
    assert b.meta["notes"] == ["no official test split: held out 20% of the training file as test (seed 7)"]
    assert b.meta["test_fraction"] == 0.2
    c = prepare_bundle(ds, tmp_path / "final", test_fraction=0, val_fraction=0, log=lambda m: None)
    assert c.meta["notes"] == [
        "no test split (--test-fraction 0): every row trains or validates; test scores are not available (evaluate "
        "with a hold-out first, then prepare again with --test-fraction 0 for the model you deploy)",
        "no validation split (--val-fraction 0): training keeps the last epoch (--selection last); auto needs a "
        "validation split"]
    assert c.size("train") + c.meta["dropped_train_without_positive"] == 50


def test_selection_observations_come_from_a_stream_of_their_own(fresh):
    from spmlkit.labels import observe

    b = Bundle(fresh)
    want = observe(b.labels("val"), "single_positive", seed=np.random.SeedSequence(5).spawn(4)[3], hide_prob=0.5)
    assert np.array_equal(np.asarray(b.selection_observations("val")), np.asarray(want))
    assert np.array_equal(np.asarray(b.selection_observations("val", "single_positive_all_negatives") == 1),
                          np.asarray(want) == 1)  # the same kept positive in every single-positive regime


def test_prepare_refuses_files_inputs_and_held_locks(tmp_path):
    from spmlkit.io import FolderLock

    (tmp_path / "file").write_text("mine")
    with pytest.raises(ConfigError, match="is a file; expected a folder"):
        prepare_bundle(make_toy_dataset(n=40), tmp_path / "file", log=lambda m: None)
    data = tmp_path / "data"
    data.mkdir()
    ds = make_toy_dataset(n=40)
    ds.source = str(data)
    with pytest.raises(ConfigError, match="lies inside"):
        prepare_bundle(ds, data / "b", log=lambda m: None)
    with FolderLock(tmp_path, lock_file=tmp_path / ".b.spml.lock"):
        with pytest.raises(ConfigError, match="in use by another spml process"):
            prepare_bundle(make_toy_dataset(n=40), tmp_path / "b", log=lambda m: None)
    assert not (tmp_path / "b").exists()
    b = prepare_bundle(make_toy_dataset(n=40), tmp_path / "b", seed=1, log=lambda m: None)
    with FolderLock(b.path):  # the bundle is in use (training): not replaced under it
        with pytest.raises(ConfigError, match="in use by another spml process"):
            prepare_bundle(make_toy_dataset(n=40), tmp_path / "b", seed=2, overwrite=True, log=lambda m: None)
    assert Bundle(tmp_path / "b").meta["seed"] == 1
    c = prepare_bundle(make_toy_dataset(n=40), tmp_path / "b", seed=2, overwrite=True, log=lambda m: None)
    assert c.meta["seed"] == 2 and sorted(p.name for p in tmp_path.iterdir()) == ["b", "data", "file"]
    (tmp_path / "b" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="notes.txt was not written by spmlkit"):
        prepare_bundle(make_toy_dataset(n=40), tmp_path / "b", seed=3, overwrite=True, log=lambda m: None)
    assert Bundle(tmp_path / "b").meta["seed"] == 2 and (tmp_path / "b" / "notes.txt").read_text() == "mine"


def test_an_array_numpy_cannot_parse_names_its_error(fresh, monkeypatch):
    b = Bundle(fresh)
    monkeypatch.setattr(np, "load", lambda *a, **k: (_ for _ in ()).throw(ValueError("")))
    with pytest.raises(CorruptFileError) as e:
        b.features("train")
    assert str(e.value) == f"{fresh / 'train' / 'X.npy'}: not a readable numeric array (ValueError); re-run 'spml prepare'"
    monkeypatch.setattr(np, "load", lambda *a, **k: (_ for _ in ()).throw(OSError(5, "Input/output error")))
    with pytest.raises(CorruptFileError) as e:
        b.features("train")
    assert str(e.value) == f"{fresh / 'train' / 'X.npy'}: cannot be read (Input/output error); re-run 'spml prepare'"


@pytest.mark.parametrize("msg", ["Object arrays cannot be loaded when allow_pickle=False",
                                 "allow_pickle=False refused it", "Array can't be memory-mapped: Python objects in dtype."])
def test_every_numpy_wording_of_an_object_array_is_one_message(fresh, monkeypatch, msg):
    b = Bundle(fresh)
    monkeypatch.setattr(np, "load", lambda *a, **k: (_ for _ in ()).throw(ValueError(msg)))
    with pytest.raises(CorruptFileError) as e:
        b.features("train")
    assert str(e.value) == (f"{fresh / 'train' / 'X.npy'}: not a readable numeric array (holds Python objects (an "
                            "object array); spmlkit never unpickles bundle files); re-run 'spml prepare'")


def _image_bundle_with_cache(tmp_path, dtype):
    """An image bundle (30 rows) with a feature cache ``r50`` of ``dtype`` written beside it,
    each array with its checksum sidecar; returns the bundle, the cache and the rng."""
    from spmlkit import ownership

    rng = np.random.default_rng(0)
    Y = rng.random((30, 3)) < 0.5
    Y[~Y.any(1), 0] = True
    b = prepare_bundle(MultiLabelDataset("imgs", list("abc"), {"train": Split(paths=[f"/i/{i}" for i in range(30)],
                                                                              Y=Y)}), tmp_path / "i", log=lambda m: None)
    ownership.folder(b.path, "bundle")
    cache = b.path / "features" / "r50"
    for split in ("train", "val", "test"):
        f = cache / f"{split}.npy"
        ownership.save_npy(f, np.ones((b.size(split), 2), dtype))
        ownership.write_text(f.with_name(f.name + ".sha256"), hashlib.sha256(f.read_bytes()).hexdigest() + "\n")
    return b, cache, rng


def test_feature_cache_and_observation_refusals_say_what_to_do(tmp_path):
    b, cache, rng = _image_bundle_with_cache(tmp_path, np.float64)
    with pytest.raises(CorruptFileError) as e:
        b.features("val")
    assert str(e.value) == (f"{cache / 'val.npy'}: feature matrix must be float32 (as spmlkit writes it), found float64; "
                            f"run 'spml features {b.path}' again with the options that made it (a cache an older "
                            f"spmlkit wrote gets its checksums recorded; a damaged one: delete {cache} first)")
    own = prepare_bundle(MultiLabelDataset("own", list("ab"), {"train": Split(X=np.ones((30, 2)), Z=single_positive(
        30, 2, rng))}), tmp_path / "o", log=lambda m: None)
    with pytest.raises(SpmlError) as e:
        own.observations("train", "single_positive")
    assert str(e.value) == (f"{own.path} holds the user's own observations only; regime 'single_positive' cannot be "
                            "simulated without full labels")
    n = own.size("train")
    _replace(own.path, "train/index.npy", np.arange(n - 1))
    with pytest.raises(CorruptFileError) as e:
        Bundle(own.path).index("train")
    assert str(e.value) == (f"{own.path / 'train' / 'index.npy'}: row index has {n - 1} rows but the bundle's "
                            f"meta.json says {n}; re-run 'spml prepare'")


# ---------------------------------------- issue 39: survivors of bundle.py's second mutation run
def _mapped(a) -> bool:
    """True when ``a`` (or an array it views) is memory-mapped."""
    import mmap

    while a is not None:
        if isinstance(a, (np.memmap, mmap.mmap)):
            return True
        a = getattr(a, "base", None)
    return False


def test_big_matrices_are_memory_mapped_and_small_arrays_read_whole(tmp_path):
    """Labels, observations, masks and features are memory-mapped (``mmap=False``: read
    whole); the per-row arrays (index, places, areas) are read whole: a mapped file stays
    open, and on Windows an open file cannot be replaced (``--overwrite``)."""
    from tests.helpers.factories import make_presence_only_dataset

    rng = np.random.default_rng(3)
    Y = rng.random((40, 4)) < 0.5
    Y[~Y.any(1), 0] = True
    A = np.where(Y, rng.random((40, 4)), 0.0)
    b = prepare_bundle(MultiLabelDataset("a", list("abcd"), {"train": Split(X=rng.normal(size=(40, 3)), Y=Y, areas=A,
                                                                           xy=rng.normal(size=(40, 2)))}),
                       tmp_path / "b", log=lambda m: None)
    po = prepare_bundle(make_presence_only_dataset(n=30, n_background=10), tmp_path / "po", log=lambda m: None)
    b.observations("train", "single_positive_all_negatives")  # drawn and cached: read from its files next
    b.observations("train", "partial")  # (+1 and -1 listed: a values file)
    mapped = {"labels": b.labels("val"), "obs": b.observations("train"), "mask": po.label_mask("test"),
              "own": po.observations("val"), "other": b.observations("train", "single_positive_all_negatives")}
    for name, M in mapped.items():
        assert _mapped(M.indptr) and _mapped(M.indices), name
    assert _mapped(b.observations("train", "partial").values)
    whole = {"labels": b.labels("val", mmap=False), "obs": b.observations("train", mmap=False),
             "mask": po.label_mask("test", mmap=False), "own": po.observations("val", mmap=False),
             "other": b.observations("train", "single_positive_all_negatives", mmap=False)}
    for name, M in whole.items():
        assert not _mapped(M.indptr) and not _mapped(M.indices), name
        assert np.array_equal(np.asarray(M), np.asarray(mapped[name])), name
    assert not _mapped(b.observations("train", "partial", mmap=False).values)
    for arr in (b.index("train"), b.xy("train"), b.areas("train")):
        assert type(arr) is np.ndarray and not _mapped(arr)
    assert not isinstance(b.features("train", mmap=False), np.memmap)


def test_damaged_matrix_files_name_what_they_are(tmp_path):
    from tests.helpers.factories import make_presence_only_dataset

    po = prepare_bundle(make_presence_only_dataset(n=30, n_background=10), tmp_path / "po", log=lambda m: None)
    full = prepare_bundle(make_toy_dataset(n=40), tmp_path / "full", log=lambda m: None)
    cases = [(po, "test/mask.header.npy", np.ones((2, 4), np.int64), lambda b: b.label_mask("test"),
              "expected a 1-D numeric label mask header"),
             (po, "val/Z.indices.npy", np.ones((2, 2), np.int32), lambda b: b.observations("val"),
              "expected a 1-D numeric observation matrix label indices"),
             (po, "observed/observed.header.npy", np.ones((2, 4), np.int64), lambda b: b.observations("train"),
              "expected a 1-D numeric observation matrix header"),
             (full, "val/Y.indices.npy", np.ones((2, 2), np.int32), lambda b: b.labels("val"),
              "expected a 1-D numeric label matrix label indices")]
    for b, rel, arr, read, said in cases:
        keep = (b.path / rel).read_bytes()
        _replace(b.path, rel, arr)
        with pytest.raises(CorruptFileError) as e:
            read(Bundle(b.path))
        assert str(e.value).startswith(f"{b.path / rel}: {said}"), str(e.value)
        (b.path / rel).write_bytes(keep)
        _replace(b.path, rel, np.load(b.path / rel))


def test_dense_matrices_of_format_1_are_checked_for_shape_and_values(fresh):
    b = Bundle(fresh)
    n = b.size("test")
    Y = np.asarray(b.labels("test"))
    for part in ("header", "indptr", "indices", "values"):
        (fresh / "test" / f"Y.{part}.npy").unlink(missing_ok=True)
        _unrecord(fresh, f"test/Y.{part}.npy")
    for arr, said in ((Y[:-1], f"label matrix has {n - 1} rows but the bundle's meta.json says {n}"),
                      (Y[:, :-1], "label matrix has 4 columns, expected 5")):
        _replace(fresh, "test/Y.npy", arr)
        with pytest.raises(CorruptFileError) as e:
            Bundle(fresh).labels("test")
        assert str(e.value).startswith(f"{fresh / 'test' / 'Y.npy'}: {said}")
    Z = np.asarray(b.observations("train")).copy()
    for part in ("header", "indptr", "indices", "values"):
        (fresh / "observed" / f"single_positive.{part}.npy").unlink(missing_ok=True)
        _unrecord(fresh, f"observed/single_positive.{part}.npy")
    Z[2, 1] = 3
    _replace(fresh, "observed/single_positive.npy", Z)
    with pytest.raises(SpmlError) as e:
        Bundle(fresh).observations("train")
    assert str(fresh / "observed" / "single_positive.npy") in str(e.value) and "\n" not in str(e.value)


def test_reader_checks_of_per_row_arrays_and_caches(fresh):
    b = Bundle(fresh)
    n = b.size("train")
    for rel, arr, read, said in (
            ("train/xy.npy", np.ones((n - 1, 2)), lambda b: b.xy("train"), f"has {n - 1} rows but"),
            ("train/areas.npy", np.ones((n - 1, 5)), lambda b: b.areas("train"), f"has {n - 1} rows but"),
            ("train/areas.npy", np.ones((n, 4)), lambda b: b.areas("train"), "instance-area matrix has 4 columns, "
                                                                             "expected 5")):
        _replace(fresh, rel, arr)
        with pytest.raises(CorruptFileError) as e:
            read(Bundle(fresh))
        assert str(e.value).startswith(f"{fresh / rel}: ") and said in str(e.value), str(e.value)


def test_feature_caches_of_the_wrong_length_and_missing_sets(tmp_path):
    from spmlkit import ownership

    rng = np.random.default_rng(0)
    Y = rng.random((30, 3)) < 0.5
    Y[~Y.any(1), 0] = True
    b = prepare_bundle(MultiLabelDataset("imgs", list("abc"), {"train": Split(paths=[f"/i/{i}" for i in range(30)],
                                                                              Y=Y)}), tmp_path / "i", log=lambda m: None)
    with pytest.raises(SpmlError) as e:
        b.features("train", "vit")
    assert str(e.value) == f"feature set 'vit' not in {b.path}; available: none"
    ownership.folder(b.path, "bundle")
    for split in ("train", "val", "test"):
        f = b.path / "features" / "r50" / f"{split}.npy"
        ownership.save_npy(f, np.ones((b.size(split) + (split == "val"), 2), np.float32))
        ownership.write_text(f.with_name(f.name + ".sha256"), hashlib.sha256(f.read_bytes()).hexdigest() + "\n")
    with pytest.raises(CorruptFileError, match=f"feature matrix has {b.size('val') + 1} rows but"):
        b.features("val")
    assert isinstance(b.features("train"), np.memmap) and not isinstance(b.features("train", mmap=False), np.memmap)


def test_regime_aliases_read_the_stored_observations(fresh):
    b = Bundle(fresh)
    assert np.array_equal(np.asarray(b.observations("train", "1p")), np.asarray(b.observations("train")))
    assert not list((fresh / "observed").glob("1p.*"))  # the stored draw, not a new cache under the alias
    assert np.array_equal(np.asarray(b.selection_observations("val", "1p")),
                          np.asarray(b.selection_observations("val", "single_positive")))
    assert np.array_equal(np.asarray(b.observations()), np.asarray(b.observations("train")))  # the defaults
    assert np.array_equal(np.asarray(b.selection_observations()), np.asarray(b.selection_observations("val")))
    full = np.asarray(b.selection_observations("val", "observed"))  # a full bundle: val observed in full
    assert np.array_equal(full, np.asarray(b.observations("val")))
    assert np.array_equal(np.asarray(b.selection_observations("train", "single_positive_all_negatives")),
                          np.asarray(b.observations("train", "single_positive_all_negatives")))


def test_hiding_probabilities_at_their_limits_and_from_older_bundles(fresh):
    b = Bundle(fresh)
    Y = np.asarray(b.labels("train"))
    none_hidden = np.asarray(b.observations("train", "partial", hide_prob=0.0))
    assert np.array_equal(none_hidden, np.where(Y, 1, -1))
    all_hidden = np.asarray(b.observations("train", "partial", hide_prob=1.0))
    assert (all_hidden == 0).all()  # accepted: every label hidden
    _edit_meta(fresh, hide_prob=_DROP)  # an older bundle: the documented default, 0.5
    old = Bundle(fresh)
    assert np.array_equal(np.asarray(old.observations("train", "partial")),
                          np.asarray(old.observations("train", "partial", hide_prob=0.5)))
    from spmlkit.labels import observe

    want = observe(old.labels("val"), "partial", seed=np.random.SeedSequence(5).spawn(4)[3], hide_prob=0.5)
    assert np.array_equal(np.asarray(old.selection_observations("val", "partial")), np.asarray(want))


def test_selection_observations_use_the_bundles_hiding_probability_and_areas(tmp_path):
    from spmlkit.labels import observe

    rng = np.random.default_rng(2)
    Y = rng.random((60, 4)) < 0.5
    Y[~Y.any(1), 0] = True
    A = np.where(Y, rng.random((60, 4)) * 100, 0.0)
    b = prepare_bundle(MultiLabelDataset("a", list("abcd"), {"train": Split(X=rng.normal(size=(60, 3)), Y=Y, areas=A)}),
                       tmp_path / "b", hide_prob=0.3, seed=9, log=lambda m: None)
    stream = lambda: np.random.SeedSequence(9).spawn(4)[3]  # noqa: E731
    want = observe(b.labels("val"), "partial", seed=stream(), hide_prob=0.3)
    assert np.array_equal(np.asarray(b.selection_observations("val", "partial")), np.asarray(want))
    largest = np.asarray(b.selection_observations("val", "single_positive_largest"))
    assert (np.argmax(largest == 1, axis=1) == np.argmax(b.areas("val"), axis=1)).all()


def test_summary_lists_every_split_with_full_labels_and_copes_without_notes(fresh):
    _edit_meta(fresh, has_full_labels=False, full_label_splits=["val", "test"], notes=_DROP)
    assert Bundle(fresh).summary().splitlines()[1:] == ["  observed labels only (no full labels); full labels in: "
                                                        "val, test"]


def test_own_observations_may_not_gain_an_empty_row(tmp_path):
    rng = np.random.default_rng(0)
    ds = MultiLabelDataset("own", list("abcd"), {"train": Split(X=rng.normal(size=(50, 3)),
                                                               Z=single_positive(50, 4, rng))})
    b = prepare_bundle(ds, tmp_path / "o", log=lambda m: None)
    assert "background_rows" not in b.meta
    Z = np.asarray(b.observations("train")).copy()
    Z[3] = 0
    from spmlkit.sparse_labels import as_sparse

    S = as_sparse(Z)
    parts = {"header": np.array([len(S), S.n_labels, S.fill, 1], np.int64), "indptr": S.indptr, "indices": S.indices}
    if S.values is not None:
        parts["values"] = S.values
    for part in ("header", "indptr", "indices", "values"):
        (b.path / "observed" / f"observed.{part}.npy").unlink(missing_ok=True)
        b.meta["checksums"].pop(f"observed/observed.{part}.npy", None)
    (b.path / "meta.json").write_text(json.dumps(b.meta))
    for part, arr in parts.items():
        _replace(b.path, f"observed/observed.{part}.npy", arr)
    with pytest.raises(CorruptFileError, match="1 example\\(s\\) without any observation \\(first: row 4\\) but the "
                                               "bundle declares 0 background"):
        Bundle(b.path).observations("train")


def test_image_paths_are_read_as_utf_8_whatever_the_locale(tmp_path):
    import os
    import subprocess
    import sys

    rng = np.random.default_rng(0)
    Y = rng.random((20, 2)) < 0.5
    Y[~Y.any(1), 0] = True
    paths = [f"/photos/pōhutukawa-{i}.jpg" for i in range(20)]
    b = prepare_bundle(MultiLabelDataset("imgs", ["a", "b"], {"train": Split(paths=paths, Y=Y)}), tmp_path / "i",
                       log=lambda m: None)
    code = "import sys; from spmlkit.data import Bundle; print(ascii(Bundle(sys.argv[1]).paths('train')[0]))"
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "ascii"}
    r = subprocess.run([sys.executable, "-c", code, str(b.path)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ascii(b.paths("train")[0]) and "\\u014d" in r.stdout


def test_cached_observations_never_show_a_part_without_its_checksum(toy_bundle, monkeypatch):
    """A regime generated on first use is cached part by part; a reader that finds its
    header (what ``labels_stored`` looks for) must find every part and every sidecar:
    checked at each rename while the cache is written."""
    import spmlkit.data.bundle as B
    from spmlkit import ownership

    seen = []
    real = ownership.rename

    def spy(src, dst):
        real(src, dst)
        folder, stem = Path(dst).parent, "partial-p0.3"
        if B.labels_stored(folder, stem):
            parts = sorted(folder.glob(f"{stem}.*.npy"))
            seen.append(all(p.with_name(p.name + ".sha256").exists() for p in parts) and
                        any(p.name.endswith(".indptr.npy") for p in parts))
        else:
            seen.append(None)

    monkeypatch.setattr(ownership, "rename", spy)
    Z = toy_bundle.observations("train", "partial", hide_prob=0.3)
    assert seen and seen[-1] is True and set(seen[:-1]) == {None}  # the header is renamed last
    assert np.array_equal(np.asarray(toy_bundle.observations("train", "partial", hide_prob=0.3)), np.asarray(Z))
    assert not list((toy_bundle.path / "observed").glob("*.pending*"))


# ------------------------------- issue 39: survivors of the second measurement of bundle.py
# (what prepare reads and writes, and which files the readers verify)
def _one_row(**kw):
    return Split(X=np.ones((1, 3)), Y=np.array([[True, False]]), **kw)


def test_an_official_validation_split_is_kept_whole_and_hold_outs_name_their_setting(tmp_path):
    ds = make_toy_dataset(n=40)
    rng = np.random.default_rng(9)
    Xv = rng.normal(size=(13, 6)).astype(np.float32)
    Yv = rng.random((13, 5)) < 0.5
    ds.splits["val"] = Split(X=Xv, Y=Yv)
    b = prepare_bundle(ds, tmp_path / "b", seed=3, log=lambda m: None)
    # the source's own validation rows, in order; no training row is held out for it
    assert b.size("val") == 13 and np.array_equal(b.index("val"), np.arange(13))
    assert np.array_equal(b.features("val"), Xv) and np.array_equal(np.asarray(b.labels("val")), Yv)
    assert b.size("train") + b.meta["dropped_train_without_positive"] == 40
    assert sorted(b.index("train")) == list(b.index("train")) and b.meta["notes"] == []
    # a hold-out that cannot be made names the data (its file, else its name), the split and the setting
    one = MultiLabelDataset("toy", ["a", "b"], {"train": _one_row()}, source="data.csv")
    with pytest.raises(ConfigError) as e:
        prepare_bundle(one, tmp_path / "t", log=lambda m: None)
    assert str(e.value) == ("data.csv (test split): --test-fraction 0.2 cannot hold out 20% of 1 examples (none "
                            "would be left out); choose another --test-fraction")
    one = MultiLabelDataset("toy", ["a", "b"], {"train": _one_row(), "test": _one_row()}, source="data.csv")
    with pytest.raises(ConfigError) as e:
        prepare_bundle(one, tmp_path / "v", log=lambda m: None)
    assert str(e.value) == ("data.csv (validation split): --val-fraction 0.2 cannot hold out 20% of 1 examples "
                            "(none would be left out); choose another --val-fraction")
    one.source = ""
    with pytest.raises(ConfigError) as e:
        prepare_bundle(one, tmp_path / "v", log=lambda m: None)
    assert str(e.value).startswith("toy (validation split): --val-fraction 0.2 cannot hold out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]


def test_a_partial_bundle_hides_with_the_probability_asked(tmp_path):
    ds = make_toy_dataset(n=80)
    b = prepare_bundle(ds, tmp_path / "b", regime="partial", hide_prob=0.2, seed=1, log=lambda m: None)
    Z = np.asarray(b.observations("train"))
    assert np.array_equal(Z, np.asarray(b.observations("train", "partial", hide_prob=0.2)))  # drawn again at 0.2
    assert not np.array_equal(Z, np.asarray(b.observations("train", "partial", hide_prob=0.5)))
    assert 0.1 < (Z == 0).mean() < 0.3


def test_identifiers_of_an_empty_split_and_no_places(tmp_path):
    rng = np.random.default_rng(0)
    Y = rng.random((30, 2)) < 0.5
    Y[~Y.any(1), 0] = True
    ids = [f"s{i}" for i in range(30)]
    ds = MultiLabelDataset("sites", ["a", "b"], {"train": Split(X=rng.normal(size=(30, 3)), Y=Y, ids=ids)})
    b = prepare_bundle(ds, tmp_path / "b", test_fraction=0, log=lambda m: None)
    assert b.ids("test") == [] and b.ids("val") == [ids[i] for i in b.index("val")]
    assert "places" not in b.meta and "encoding" not in b.meta and "feature_source" not in b.meta


def test_every_input_of_a_dataset_is_protected(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    ds = make_toy_dataset(n=40)
    ds.source = ""
    ds.inputs = [None, str(data)]  # what a reader read besides its source
    with pytest.raises(ConfigError, match="lies inside"):
        prepare_bundle(ds, data / "b", log=lambda m: None)
    assert list(data.iterdir()) == []


def test_overwrite_over_an_empty_folder_and_of_a_dataset_without_a_file(tmp_path):
    ds = make_toy_dataset(n=40)
    ds.source = ""  # made in memory: nothing to protect
    (tmp_path / "empty").mkdir()
    b = prepare_bundle(ds, tmp_path / "empty", overwrite=True, seed=1, log=lambda m: None)
    assert b.meta["seed"] == 1 and not (b.path / ".spml.lock").exists()
    c = prepare_bundle(ds, tmp_path / "empty", overwrite=True, seed=2, log=lambda m: None)
    assert c.meta["seed"] == 2 and Bundle(tmp_path / "empty").meta["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]


def test_a_description_missing_several_keys_lists_them(fresh):
    _edit_meta(fresh, name=_DROP, kind=_DROP)
    with pytest.raises(CorruptFileError) as e:
        Bundle(fresh)
    assert str(e.value) == f"{fresh / 'meta.json'}: damaged bundle description (missing name, kind); re-run 'spml prepare'"


def test_an_altered_feature_cache_says_how_to_remake_it(tmp_path):
    b, cache, _ = _image_bundle_with_cache(tmp_path, np.float32)
    assert b.features("val").shape == (b.size("val"), 2)
    np.save(cache / "val.npy", np.zeros((b.size("val"), 2), np.float32))  # altered, its record kept
    with pytest.raises(CorruptFileError) as e:
        b.features("val")
    assert str(e.value) == (f"{cache / 'val.npy'}: checksum mismatch with the bundle's record; the file was altered "
                            f"or truncated — run 'spml features {b.path}' again with the options that made it (a "
                            f"cache an older spmlkit wrote gets its checksums recorded; a damaged one: delete {cache} "
                            "first)")


@pytest.mark.parametrize("msg", ["Object arrays are not supported", "No data left in file"])
def test_an_array_that_ends_early_or_holds_objects_in_any_wording(fresh, monkeypatch, msg):
    b = Bundle(fresh)
    err = EOFError(msg) if msg.startswith("No data") else ValueError(msg)
    monkeypatch.setattr(np, "load", lambda *a, **k: (_ for _ in ()).throw(err))
    with pytest.raises(CorruptFileError) as e:
        b.features("train")
    said = ("cannot be read (No data left in file)" if isinstance(err, EOFError) else "not a readable numeric array "
            "(holds Python objects (an object array); spmlkit never unpickles bundle files)")
    assert str(e.value) == f"{fresh / 'train' / 'X.npy'}: {said}; re-run 'spml prepare'"


def test_image_paths_are_read_as_utf_8_in_process_under_an_ascii_locale(tmp_path, monkeypatch):
    """The same as the subprocess test above, in this process (where a mutation run sees
    it): pathlib asks ``io.text_encoding`` for the locale's encoding when none is given."""
    import io

    Y = np.eye(2, dtype=bool)[np.arange(20) % 2]
    paths = [f"/photos/pōhutukawa-{i}.jpg" for i in range(20)]
    b = prepare_bundle(MultiLabelDataset("imgs", ["a", "b"], {"train": Split(paths=paths, Y=Y)}), tmp_path / "i",
                       log=lambda m: None)
    real = io.text_encoding
    monkeypatch.setattr(io, "text_encoding", lambda enc, stacklevel=2: "ascii" if enc is None else real(enc))
    assert b.paths("train") == [paths[i] for i in b.index("train")]


def test_every_file_the_bundle_records_must_be_there(fresh):
    """Deleting a recorded array (``observed/*.values.npy``, ``val/Z.values.npy``: observed
    negatives would read as positives; ``ids.npy``/``xy.npy``: ids and places dropped from
    predictions) is refused when the bundle is opened, naming the file."""
    meta = json.loads((fresh / "meta.json").read_text())
    recorded = sorted(meta["checksums"])
    assert len(recorded) > 5 and any(r.startswith("observed/") for r in recorded)
    for rel in recorded:
        data = (fresh / rel).read_bytes()
        (fresh / rel).unlink()
        with pytest.raises(CorruptFileError) as e:
            Bundle(fresh)
        assert str(e.value) == (f"{fresh}: files the bundle records are missing: {rel}; the bundle was altered — "
                                "re-run 'spml prepare'")
        (fresh / rel).write_bytes(data)
    Bundle(fresh)


def test_observed_data_without_any_positive_is_refused_at_prepare(tmp_path):
    from spmlkit.data import load_any, prepare_bundle

    Z = np.zeros((20, 4), dtype=np.int8)
    Z[::3, 1] = -1
    np.savez(tmp_path / "z.npz", X=np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32), Z=Z)
    ds = load_any(str(tmp_path / "z.npz"), observed=True)
    with pytest.raises(DataFormatError) as e:
        prepare_bundle(ds, tmp_path / "b")
    assert ds.source and str(e.value) == (f"{ds.source}: no observed positive in the training data (every observation "
                                          "is negative or unobserved); single-positive training needs positives")
    assert not (tmp_path / "b").exists()


def test_the_source_of_the_features_is_recorded_in_the_bundle(tmp_path):
    """``feature_source`` (features extracted by a backbone) is kept in meta.json, where the
    recipes read it (training/recipe.py), and left out when the data has its own features."""
    rng = np.random.default_rng(0)
    Y = rng.random((20, 2)) < 0.5
    Y[~Y.any(1), 0] = True
    ds = MultiLabelDataset("sites", ["a", "b"], {"train": Split(X=rng.normal(size=(20, 3)), Y=Y)},
                           feature_source="resnet50", label_reading="presence-only")
    b = prepare_bundle(ds, tmp_path / "b", log=lambda m: None)
    assert (b.meta["feature_source"], b.meta["label_reading"]) == ("resnet50", "presence-only")
    plain = prepare_bundle(MultiLabelDataset("sites", ["a", "b"], {"train": Split(X=rng.normal(size=(20, 3)), Y=Y)}),
                           tmp_path / "c", log=lambda m: None)
    assert "feature_source" not in plain.meta and "label_reading" not in plain.meta
    assert json.loads((tmp_path / "b" / "meta.json").read_text())["feature_source"] == "resnet50"


def test_missing_recorded_files_are_named_three_at_most_with_a_count_of_the_others(fresh):
    recorded = list(json.loads((fresh / "meta.json").read_text())["checksums"])
    for n, more in ((3, ""), (4, " (and 1 more)")):
        kept = {rel: (fresh / rel).read_bytes() for rel in recorded[:n]}
        for rel in kept:
            (fresh / rel).unlink()
        with pytest.raises(CorruptFileError) as e:
            Bundle(fresh)
        assert str(e.value) == (f"{fresh}: files the bundle records are missing: {', '.join(recorded[:3])}{more}; "
                                "the bundle was altered — re-run 'spml prepare'")
        for rel, data in kept.items():
            (fresh / rel).write_bytes(data)
