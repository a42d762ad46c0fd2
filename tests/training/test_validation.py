"""The validation policy (spmlkit.training.validation): every row up to a size, above it
a seeded fixed subsample that early stopping and the best epoch read, said and recorded,
overridable, and the same after a resume."""
import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError
from spmlkit.training import train_linear
from spmlkit.training import validation as V
from tests.helpers.training_checks import assert_resume_equals_uninterrupted


def test_every_row_up_to_the_size_then_a_seeded_fixed_subsample():
    cfg = TrainConfig()
    small = V.validation_rows(V.VAL_ENTRIES // 10, 10, cfg)  # exactly at the limit: every row
    assert not small.subsampled and small.n_scored == V.VAL_ENTRIES // 10 and small.note() is None
    big = V.validation_rows(200_000, 10_000, cfg)
    assert big.subsampled and big.n_scored == V.VAL_ENTRIES // 10_000 == 13_421
    assert np.all(np.diff(big.rows) > 0) and big.rows[0] >= 0 and big.rows[-1] < 200_000
    np.testing.assert_array_equal(big.rows, V.validation_rows(200_000, 10_000, cfg).rows)  # the same every call
    assert not np.array_equal(big.rows, V.validation_rows(200_000, 10_000, cfg.replace(seed=1)).rows)
    assert V.validation_rows(200_000, 100_000, cfg).n_scored == V.MIN_VAL_ROWS  # never fewer rows than that
    assert "13,421 of the 200,000" in big.note() and "--val-rows all" in big.note()
    assert big.record() == {"rows_scored": 13_421, "rows": 200_000, "labels": 10_000, "rule": "auto", "seed": 0,
                            "subsampled": True}


def test_the_user_sets_the_rows_and_fine_tuning_scores_every_row():
    assert not V.validation_rows(200_000, 10_000, TrainConfig(val_rows="all")).subsampled
    mine = V.validation_rows(500, 3, TrainConfig(val_rows=40))
    assert mine.n_scored == 40 and mine.rule == "val_rows" and "--val-rows" in mine.note()
    assert not V.validation_rows(500, 3, TrainConfig(val_rows=500)).subsampled
    assert not V.validation_rows(200_000, 10_000, TrainConfig(setting="finetune")).subsampled
    for bad in ("some", 0, -3):
        with pytest.raises(ConfigError, match="val_rows"):
            TrainConfig(val_rows=bad)


def _bundles(rows=None, full_labels=False):
    """A small in-memory bundle, and the same with only validation ``rows``."""
    from spmlkit.data.memory import ArrayBundle

    rng = np.random.default_rng(3)
    n, L, D = 150, 5, 6
    X = rng.normal(size=(n, D)).astype(np.float32)
    Y = (X[:, :L] + 0.5 * rng.normal(size=(n, L))) > 0.3
    Y[np.arange(n), rng.integers(0, L, n)] = True
    Z = np.zeros((n, L), np.int8)
    for i in range(n):
        Z[i, rng.choice(np.flatnonzero(Y[i]))] = 1
    tr, va, te = slice(0, 70), np.arange(70, 130), slice(130, 150)
    sub = va if rows is None else va[rows]

    def make(v):
        return ArrayBundle(X[tr], Z[tr], X_val=X[v], Z_val=Z[v], Y_val=Y[v] if full_labels else None,
                           X_test=X[te], Y_test=Y[te])
    return make(va), make(sub)


@pytest.mark.parametrize("full_labels", [False, True])
def test_a_subsample_selects_as_a_validation_split_of_those_rows_alone(full_labels):
    """Early stopping and the best epoch read the subsample: a run scoring 25 of 60
    validation rows is the run whose validation split is those 25 rows; the run records it."""
    cfg = TrainConfig(method="an", epochs=6, lr=5e-2, batch_size=16, patience=1, val_rows=25)
    rows = V.validation_rows(60, 5, cfg).rows
    whole, alone = _bundles(rows, full_labels)
    a = train_linear(whole, cfg, keep_state=True)[0]
    b = train_linear(alone, cfg.replace(val_rows="all"))[0]
    assert a.val_history == b.val_history and (a.best_epoch, a.epochs_run) == (b.best_epoch, b.epochs_run)
    assert a.test_map == b.test_map
    assert a.notes == {"validation": {"rows_scored": 25, "rows": 60, "labels": 5, "rule": "val_rows", "seed": 0,
                                      "subsampled": True}}
    assert b.notes is None  # every row scored: nothing new recorded (as every run before)
    assert a.state["val_logits"].shape == (60, 5)  # the label-set step still reads every validation row
    c = train_linear(whole, cfg.replace(val_rows="all"))[0]
    assert c.notes is None and c.val_history != a.val_history


def test_the_size_rule_subsamples_above_its_limit(monkeypatch):
    monkeypatch.setattr(V, "VAL_ENTRIES", 100)
    monkeypatch.setattr(V, "MIN_VAL_ROWS", 30)
    whole, _ = _bundles()
    r = train_linear(whole, TrainConfig(method="an", epochs=2))[0]
    assert r.notes["validation"]["rows_scored"] == 30 and r.notes["validation"]["rule"] == "auto"


def test_a_killed_run_resumes_to_the_same_end_with_the_subsample(tmp_path):
    whole, _ = _bundles()
    cfg = TrainConfig(method="an", epochs=5, lr=5e-2, batch_size=16, val_rows=20)
    assert_resume_equals_uninterrupted(whole, cfg, tmp_path, killed_after=2)
