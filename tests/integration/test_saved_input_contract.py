"""A saved model keeps its input contract: every way back to a fitted model (the
estimator in memory, ``SPMLClassifier.load``, ``spmlkit.load``, a pickle round trip of
the estimator object in memory, ``spml predict``) reads a table's columns by name, in
any order, and refuses a table missing a column in one line."""
from __future__ import annotations

import csv
import pickle

import numpy as np
import pytest

import spmlkit
from spmlkit import SPMLClassifier
from spmlkit.cli import main
from spmlkit.errors import DataFormatError

pd = pytest.importorskip("pandas")

COLUMNS = ["temp", "rain", "alt", "ph"]
SHUFFLED = ["ph", "alt", "temp", "rain"]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4)) * np.array([1.0, 5.0, 20.0, 0.5]) + np.array([0, 10, 100, 7])
    df = pd.DataFrame(X, columns=COLUMNS)
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] / X[:, :3].std(0), axis=1)]
    clf = SPMLClassifier("an", epochs=3, lr=0.01).fit(df, y)
    folder = tmp_path_factory.mktemp("contract") / "m"
    clf.save(folder)
    return clf, df, folder


def _readers(clf, folder):
    loaded = SPMLClassifier.load(folder)
    return {"in memory": clf, "SPMLClassifier.load": loaded, "spmlkit.load": spmlkit.load(folder),
            "pickle of the loaded estimator": pickle.loads(pickle.dumps(loaded)),
            "pickle of the fitted estimator": pickle.loads(pickle.dumps(clf))}


def test_every_reader_takes_columns_by_name(fitted):
    clf, df, folder = fitted
    P = clf.predict_proba(df)
    shuffled = df[SHUFFLED]
    assert not np.allclose(shuffled.to_numpy(), df.to_numpy())  # the test can fail: the order matters
    for name, reader in _readers(clf, folder).items():
        assert np.allclose(reader.predict_proba(shuffled), P, atol=1e-6), name
        assert np.array_equal(reader.predict(shuffled), reader.predict(df)), name
    loaded = SPMLClassifier.load(folder)
    assert list(loaded.feature_names_in_) == COLUMNS and loaded.n_features_in_ == 4


def test_every_reader_refuses_a_missing_column_in_one_line(fitted):
    clf, df, folder = fitted
    short = df[["ph", "temp", "rain"]]
    for name, reader in _readers(clf, folder).items():
        with pytest.raises((ValueError, DataFormatError)) as info:
            reader.predict_proba(short)
        msg = str(info.value)
        assert "alt" in msg and "\n" not in msg, name


def _write(path, frame, ids=True):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow((["id"] if ids else []) + list(frame.columns))
        for i, row in enumerate(frame.itertuples(index=False)):
            w.writerow(([f"r{i}"] if ids else []) + [repr(float(v)) for v in row])


def test_spml_predict_reorders_a_csv_by_name_and_refuses_a_missing_column(fitted, tmp_path, capsys):
    clf, df, folder = fitted
    _write(tmp_path / "new.csv", df[SHUFFLED])
    assert main(["predict", str(folder), str(tmp_path / "new.csv"), "-o", str(tmp_path / "p.csv")]) == 0
    rows = list(csv.reader(open(tmp_path / "p.csv", newline="")))
    P = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    assert rows[0][1:] == clf.classes_.tolist()
    assert np.allclose(P, clf.predict_proba(df), atol=1e-5)
    capsys.readouterr()
    _write(tmp_path / "short.csv", df[["ph", "temp", "rain"]])
    assert main(["predict", str(folder), str(tmp_path / "short.csv"), "-o", str(tmp_path / "q.csv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "alt" in err[0] and not (tmp_path / "q.csv").exists()
