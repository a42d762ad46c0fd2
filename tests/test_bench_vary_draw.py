"""``spml bench --vary-draw``: seed s trains on the bundle prepared with prepare seed s, and the
table says the spread is over draws.  Without the option nothing changes."""
import numpy as np
import pytest

from spmlkit.errors import ConfigError
from spmlkit.experiments import bench as B

SMALL_DRAWS = dict(methods=["an"], lrs=(1e-2,), batch_sizes=(16,), seeds=(0, 1), epochs=1)


def test_vary_draw_trains_each_seed_on_its_own_draw(tmp_path):
    out = tmp_path / "b"
    summary = B.run_bench(B.BenchSpec(datasets=["yeast"], vary_draw=True, **SMALL_DRAWS), out, progress=False,
                          figures=False, log=lambda m: None)
    runner_groups = sorted((out / "groups").glob("*.json"))
    assert len(runner_groups) == 2  # one group per draw (a draw's seeds cannot share a stacked model)
    from spmlkit.data import Bundle

    b0, b1 = Bundle(out / "bundles" / "yeast-s0"), Bundle(out / "bundles" / "yeast-s1")
    assert b0.meta["seed"] == 0 and b1.meta["seed"] == 1
    assert not np.array_equal(np.load(b0.path / "val" / "index.npy"), np.load(b1.path / "val" / "index.npy"))
    import json

    runs = json.loads((out / "runs.json").read_text())["runs"]
    assert sorted((r["seed"], r["prepare_seed"]) for r in runs) == [(0, 0), (1, 1)]
    table = (out / "table.md").read_text()
    assert "mean ± std over draws" in table and "--vary-draw" in table
    assert summary["written"]["table"].exists()
    # rerunning resumes: nothing is trained again
    runner = B.BenchRunner(B.BenchSpec(datasets=["yeast"], vary_draw=True, **SMALL_DRAWS), out, progress=False,
                           figures=False, log=lambda m: None)
    runner.run()
    assert runner.n_trained == 0


def test_default_keeps_one_draw_and_group_keys(tmp_path):
    spec = B.validate_spec(B.BenchSpec(datasets=["yeast"], **SMALL_DRAWS))
    datasets = B.resolve_datasets(spec, tmp_path)
    groups = B.plan_groups(spec, datasets)
    assert len(groups) == 1 and groups[0].draw is None and "draw" not in groups[0].key
    assert [m[1] for m in groups[0].members] == [0, 1]
    assert [p.name for p in (tmp_path / "bundles").iterdir()] == ["yeast-s0"]


def test_vary_draw_needs_dataset_names(toy_bundle, tmp_path):
    with pytest.raises(ConfigError, match="--vary-draw"):
        B.validate_spec(B.BenchSpec(datasets=[str(toy_bundle.path)], vary_draw=True, **SMALL_DRAWS))


def test_vary_draw_refuses_pseudo_scores_aligned_with_one_draw(tmp_path):
    with pytest.raises(ConfigError, match="cannot be combined"):
        B.validate_spec(B.BenchSpec(datasets=["yeast"], vary_draw=True, **{**SMALL_DRAWS, "methods": ["vlpl"]},
                                    params={"vlpl": {"pseudo_scores": str(tmp_path / "s.npy")}}))


def test_vary_draw_on_image_datasets_caches_features_of_every_draw(tmp_path, monkeypatch):
    """With --vary-draw an image dataset has one bundle per draw; the linear setting caches
    backbone features for each of them (it used to refuse: 'mixes image and feature
    datasets', because it compared bundles with datasets)."""
    from tests.helpers.image_fixtures import tiny_digits_bundle

    import spmlkit.features as F

    draws = {s: (tiny_digits_bundle(tmp_path / f"d{s}", seed=s), f"fp{s}") for s in (0, 1)}
    ds = B.BenchDataset("digits", draws[0][0], "fp0", draws)
    seen = []
    monkeypatch.setattr(F, "ensure_features", lambda b, **kw: seen.append(b.path) or "efficientnet-lite0-32")
    runner = B.BenchRunner(B.BenchSpec(datasets=["digits"], vary_draw=True, **SMALL_DRAWS), tmp_path / "out",
                           progress=False, figures=False, log=lambda m: None)
    runner._cache_image_features([ds])
    assert sorted(seen) == sorted(b.path for b, _ in draws.values())
    assert runner.spec.config["feature_set"] == "efficientnet-lite0-32"
    tab = B.BenchDataset("yeast-like", object(), "fp", {})
    tab.bundle = type("FeatureBundle", (), {"kind": "features"})()
    fresh = B.BenchRunner(B.BenchSpec(datasets=["digits"], vary_draw=True, **SMALL_DRAWS), tmp_path / "out2",
                          progress=False, figures=False, log=lambda m: None)
    with pytest.raises(ConfigError, match="mixes image and feature"):
        fresh._cache_image_features([ds, tab])
