"""Twins of the training side's chunked reads: the per-feature statistics accumulated
chunk by chunk (:func:`spmlkit.training.linear.feature_statistics`) against numpy's mean
and standard deviation of the whole matrix, and a memory-mapped feature store's row
chunks against the in-memory tensor; chunks of 1..N rows, constant features, one row."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from spmlkit.training.linear import FeatureStore, feature_statistics
from tests.helpers.factories import make_presence_only_dataset, one_species_bundle
from tests.twins.strategies import TWIN

_names = itertools.count()


@st.composite
def features(draw):
    n, d = draw(st.integers(1, 30)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    X = (rng.normal(size=(n, d)) * draw(st.sampled_from([1e-3, 1.0, 300.0])) + draw(st.sampled_from([0, 0.1, 1e4])))
    const = rng.random(d) < 0.4  # constant features: any value, never exactly representable sums
    X[:, const] = rng.choice([0.1, -7.77, 123.456, 0.0], size=int(const.sum()))
    return X.astype(np.float32)


@TWIN
@given(X=features(), data=st.data())
@example(X=np.full((1000, 2), 0.1, np.float32), data=None)  # sums of 0.1 that do not cancel exactly
def test_feature_statistics_in_chunks_equal_numpy_on_the_whole_matrix(X, data):
    n, d = X.shape
    rows = 1 if data is None else data.draw(st.integers(1, n))
    mean, std = feature_statistics(X, chunk_bytes=8 * d * rows)
    X64 = X.astype(np.float64)
    want_std = X64.std(0)
    const = (X64 == X64[:1]).all(0)
    assert (np.abs(mean - X64.mean(0)) <= 1e-6 * np.abs(X64).max(0)).all()
    assert (std[const] == 1).all()  # constant features map to 0, whatever their value
    np.testing.assert_allclose(std[~const], want_std[~const], rtol=1e-4)


@TWIN
@given(X=features(), data=st.data())
def test_feature_store_chunks_from_disk_equal_the_in_memory_tensor(tmp_path, X, data):
    n, d = X.shape
    path = tmp_path / f"X{next(_names)}.npy"
    np.save(path, X)
    mean, std = feature_statistics(X)
    mem = FeatureStore(X, mean=mean, std=std)
    disk = FeatureStore(np.load(path, mmap_mode="r"), mean=mean, std=std, max_bytes=0)
    assert not disk.in_memory
    rows = data.draw(st.integers(1, n))
    start = data.draw(st.integers(0, n))
    stop = data.draw(st.integers(start, n))
    got = list(disk.chunks(rows, start=start, stop=stop))
    assert all(len(c) <= rows for c in got)
    assert torch.equal(torch.cat(got) if got else mem.tensor[:0], mem.tensor[start:stop])


@st.composite
def apl_selection(draw):
    """A key (probabilities with ties, or every key equal), a candidate mask (empty,
    partial or every entry) and per-column counts from 0 to beyond the candidates."""
    n, L = draw(st.integers(1, 25)), draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    values = draw(st.sampled_from(["continuous", "few", "equal"]))
    key = {"continuous": rng.random((n, L)), "few": rng.choice([0.1, 0.5, 0.9], size=(n, L)),
           "equal": np.full((n, L), 0.25)}[values].astype(np.float32)
    share = draw(st.sampled_from([0.0, 0.5, 0.9, 1.0]))
    candidates = rng.random((n, L)) < share
    counts = rng.integers(0, n + 3, size=L)
    return torch.from_numpy(key), torch.from_numpy(candidates), counts


@TWIN
@given(case=apl_selection(), negate=st.booleans())
def test_apl_lowest_by_threshold_equals_the_stable_sort(case, negate):
    """em-apl's selection of each column's lowest candidates (methods/apl.py): by threshold
    (O(N·L), the CPU path) and by one stable column sort (its plain twin) pick the same
    entries, ties broken by row index, with counts from 0 to beyond the candidates."""
    from spmlkit.methods.apl import lowest_by_sort, lowest_by_threshold

    key, candidates, counts = case
    key = -key if negate else key  # (positive pseudo-labels select on -p)
    fast = lowest_by_threshold(key, candidates, counts)
    assert torch.equal(fast, lowest_by_sort(key, candidates, counts))
    assert fast.sum(0).tolist() == np.minimum(counts, candidates.sum(0).numpy()).tolist()


@pytest.mark.parametrize("method, n_species, head", [("full-weighted", 1, "maxent"), ("full-weighted", 2, "maxent-x2"),
                                                     ("an-full", 2, "maxent"), ("an", 1, "maxent-x4")])
def test_a_fitted_head_trained_one_epoch_equals_it_trained_every_epoch(tmp_path, monkeypatch, method, n_species,
                                                                       head):
    """A head fitted before the first epoch (``MaxEntHead.fitted``) trains one epoch
    (:func:`spmlkit.training.loop.fitted_epochs`); its twin trains every epoch (the flag
    off): the same best epoch (1), validation score and kept weights, every method's loss
    and state reaching it alike."""
    from spmlkit.config import TrainConfig
    from spmlkit.data import prepare_bundle
    from spmlkit.models.maxent_head import MaxEntHead
    from spmlkit.training.run import train

    bundle = one_species_bundle(tmp_path / "b", n=300, d=3, n_records=40, shift=2.0) if n_species == 1 else \
        prepare_bundle(make_presence_only_dataset(n=120, n_background=200, d=3, L=n_species), tmp_path / "b",
                       log=lambda m: None)
    cfg = TrainConfig(method=method, head=head, epochs=4, batch_size=32, threads=1)
    one = train(bundle, cfg, lrs=[1e-2, 1e-3], seeds=[0, 1], keep_state=True)
    monkeypatch.setattr(MaxEntHead, "fitted", False)
    every = train(bundle, cfg, lrs=[1e-2, 1e-3], seeds=[0, 1], keep_state=True)
    assert [r.epochs_run for r in one] == [1, 1] and [r.epochs_run for r in every] == [4, 4]
    for a, b in zip(one, every):
        assert a.best_epoch == b.best_epoch == 1
        assert a.val_score == b.val_score and a.val_history == b.val_history[:1]
        assert set(b.val_history) == {b.val_score}  # (the epochs after the first scored the same)
        for k, v in a.state["head"].items():
            assert torch.equal(v, b.state["head"][k]), k
