"""A bench's data (spmlkit.experiments.bench.data): bundles prepared once from names,
fingerprints, nested training subsets."""
import numpy as np

from spmlkit.experiments import bench as B

SMALL = dict(lrs=(1e-2, 1e-3), batch_sizes=(8, 16), seeds=(0, 1), epochs=2)
SMALL_DRAWS = dict(methods=["an"], lrs=(1e-2,), batch_sizes=(16,), seeds=(0, 1), epochs=1)


def spec(bundle, **kw):
    args = {**SMALL, **kw}
    return B.BenchSpec(datasets=[str(bundle.path)], **args)


def test_subsample_is_nested_and_subset_keeps_observations(toy_bundle):
    a, b = B.subsample_rows(100, 0.3, 999), B.subsample_rows(100, 0.6, 999)
    assert len(a) == 30 and len(b) == 60 and set(a) <= set(b)
    view = B.TrainSubset(toy_bundle, a[a < toy_bundle.size("train")])
    np.testing.assert_array_equal(view.observations("train"), toy_bundle.observations("train")[view.rows])
    np.testing.assert_array_equal(view.features("train"), np.asarray(toy_bundle.features("train"))[view.rows])
    assert view.size("train") == len(view.rows) and view.size("test") == toy_bundle.size("test")
    assert view.n_labels == toy_bundle.n_labels


def test_datasets_by_name_are_prepared_once(tmp_path, monkeypatch):
    from spmlkit.data import registry

    calls = []
    real = registry.DATASETS["yeast"].loader

    def loader(data_root=None):
        calls.append(1)
        return real(data_root)

    monkeypatch.setitem(registry.DATASETS, "yeast", registry.DatasetSpec("yeast", loader, "features", True, ""))
    s = B.validate_spec(B.BenchSpec(datasets=["yeast"], methods=["an"]))
    (d,) = B.resolve_datasets(s, tmp_path)
    assert d.label == "yeast" and d.bundle.path == tmp_path / "bundles" / "yeast-s0"
    assert d.bundle.size("test") == 917  # the official Mulan test split
    (d2,) = B.resolve_datasets(s, tmp_path)
    assert len(calls) == 1 and d2.fingerprint == d.fingerprint


def test_prepare_npz_with_official_test_split(tmp_path):
    """The route of docs/bench.md for the authors' feature files: X/Y train and test in one .npz."""
    from spmlkit.data import load_any, prepare_bundle

    rng = np.random.default_rng(0)
    Ytr, Yte = rng.random((50, 4)) < 0.4, rng.random((20, 4)) < 0.4
    Ytr[:, 0] = True
    np.savez(tmp_path / "feats.npz", X_train=rng.normal(size=(50, 3)).astype(np.float32), Y_train=Ytr,
             X_test=rng.normal(size=(20, 3)).astype(np.float32), Y_test=Yte)
    b = prepare_bundle(load_any(str(tmp_path / "feats.npz")), tmp_path / "b", log=lambda m: None)
    assert (b.size("train"), b.size("val"), b.size("test")) == (40, 10, 20)
    np.testing.assert_array_equal(b.labels("test"), Yte)
