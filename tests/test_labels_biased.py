"""Biased ("realistic") single positives: the kept positive is the most frequent, the least
frequent or the largest-object label of each example (spmlkit.labels), and COCO's
largest-instance areas that feed the last one (data/formats/coco.py)."""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from spmlkit.errors import ConfigError
from spmlkit.labels import get_regime, label_frequencies, observe

BIASED = ("single_positive_most_frequent", "single_positive_least_frequent", "single_positive_largest")

biased_label_matrices = st.integers(1, 30).flatmap(
    lambda n: st.integers(1, 8).flatmap(lambda L: arrays(np.bool_, (n, L))))


def areas_for(Y, seed):
    rng = np.random.default_rng(seed)
    A = rng.integers(1, 6, size=Y.shape).astype(float)  # small integers: ties happen
    return np.where(Y, A, 0.0)


def score_of(regime, Y, A):
    freq = label_frequencies(Y).astype(float)
    if regime == "single_positive_most_frequent":
        return np.broadcast_to(freq, Y.shape)
    if regime == "single_positive_least_frequent":
        return np.broadcast_to(-freq, Y.shape)
    return A


@settings(max_examples=60, deadline=None)
@given(Y=biased_label_matrices, seed=st.integers(0, 2 ** 16))
def test_one_true_positive_with_the_extreme_score(Y, seed):
    A = areas_for(Y, seed)
    for regime in BIASED:
        Z = observe(Y, regime, seed=seed, areas=A)
        has = Y.any(axis=1)
        assert ((Z == 1).sum(axis=1) == has.astype(int)).all()  # exactly one observed positive per row with one
        assert not (Z == -1).any()  # nothing else observed
        assert (Y[Z == 1]).all()  # always a true positive
        S = score_of(regime, Y, A)
        for n in np.flatnonzero(has):
            kept = int(np.flatnonzero(Z[n] == 1)[0])
            assert S[n, kept] == S[n][Y[n]].max()  # the most / least frequent, or the largest, of its positives
        assert np.array_equal(Z, observe(Y, regime, seed=seed, areas=A))  # seeded


def test_ties_are_broken_at_random_by_the_seed():
    Y = np.ones((200, 3), dtype=bool)  # every label equally frequent: every row is a three-way tie
    kept = {tuple(np.argmax(observe(Y, "single_positive_most_frequent", seed=s) == 1, axis=1)) for s in range(3)}
    assert len(kept) == 3
    cols = np.argmax(observe(Y, "single_positive_most_frequent", seed=0) == 1, axis=1)
    assert set(np.bincount(cols, minlength=3).tolist()) != {0} and np.bincount(cols).min() > 40  # roughly uniform


def test_biased_choices_differ_from_uniform_as_intended():
    Y = np.zeros((4, 3), dtype=bool)
    Y[:, 0] = True  # label 0 is on every example
    Y[0, 1] = Y[1, 1] = Y[2, 2] = True
    most = observe(Y, "single_positive_most_frequent", seed=0)
    least = observe(Y, "single_positive_least_frequent", seed=0)
    assert (most[:, 0] == 1).all()
    assert least[0, 1] == least[1, 1] == least[2, 2] == least[3, 0] == 1
    A = np.where(Y, [[1.0, 9.0, 0.0]] * 4, 0.0)
    assert observe(Y, "single_positive_largest", seed=0, areas=A)[:, 1].tolist() == [1, 1, 0, 0]


def test_largest_needs_areas_and_aliases():
    Y = np.array([[1, 1]], dtype=bool)
    with pytest.raises(ConfigError, match="instance"):
        observe(Y, "single_positive_largest", seed=0)
    with pytest.raises(ConfigError, match="shape"):
        observe(Y, "single_positive_largest", seed=0, areas=np.ones((2, 2)))
    assert get_regime("1p-frequent").name == "single_positive_most_frequent"
    assert get_regime("1p-rare").name == "single_positive_least_frequent"
    assert get_regime("1p-largest").name == "single_positive_largest"


def test_uniform_regime_unchanged_by_the_new_argument():
    rng = np.random.default_rng(0)
    Y = rng.random((50, 6)) < 0.4
    assert np.array_equal(observe(Y, "single_positive", seed=3), observe(Y, "single_positive", seed=3, areas=None))


def _coco_with_areas(tmp_path):
    data = {"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.jpg"}, {"id": 3, "file_name": "c.jpg"}],
            "categories": [{"id": 5, "name": "cat"}, {"id": 7, "name": "dog"}],
            "annotations": [{"image_id": 1, "category_id": 5, "area": 10.0},
                            {"image_id": 1, "category_id": 5, "area": 30.0},  # the largest cat instance counts
                            {"image_id": 1, "category_id": 7, "area": 20.0},
                            {"image_id": 2, "category_id": 7, "bbox": [0, 0, 4, 5]},  # no area: bbox w*h
                            {"image_id": 2, "category_id": 5, "area": 3.0},
                            {"image_id": 3, "category_id": 5, "area": 1.0}]}
    p = tmp_path / "instances.json"
    p.write_text(json.dumps(data))
    return p


def test_coco_records_the_largest_instance_area(tmp_path):
    from spmlkit.data.formats.coco import read_coco_instances

    split, names, _ = read_coco_instances(_coco_with_areas(tmp_path), tmp_path)
    assert names == ["cat", "dog"]
    assert split.areas.tolist() == [[30.0, 20.0], [3.0, 20.0], [1.0, 0.0]]
    Z = observe(split.Y, "single_positive_largest", seed=0, areas=split.areas)
    assert Z.tolist() == [[1, 0], [0, 1], [1, 0]]
    bad = json.loads(_coco_with_areas(tmp_path).read_text())
    bad["annotations"][0]["area"] = -1
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    from spmlkit.errors import DataFormatError

    with pytest.raises(DataFormatError, match="annotation #0"):
        read_coco_instances(tmp_path / "bad.json", tmp_path)


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


def test_prepare_accepts_the_short_names_of_biased_regimes(tmp_path, capsys):
    import json

    from spmlkit.cli import main

    assert main(["prepare", "yeast", "-o", str(tmp_path / "b"), "--regime", "1p-rare"]) == 0
    assert json.loads((tmp_path / "b" / "meta.json").read_text())["regime"] == "single_positive_least_frequent"
    with pytest.raises(SystemExit) as e:
        main(["prepare", "yeast", "-o", str(tmp_path / "c"), "--regime", "1p-nope"])
    assert e.value.code == 2 and "unknown observation regime '1p-nope'" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
