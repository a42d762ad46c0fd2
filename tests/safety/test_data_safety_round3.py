"""Data safety, round three (issue 33): readers check what docs/files.md promises, the
two tracebacks and the cosmetic items.  Every test here fails on 75e1ce7 (the file-system
cases of the issue are in test_fs_fuzzer.py, the ownership rule in tests/ownership/)."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spmlkit.cli import main


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return code == 2 and len(lines) == 1 and lines[0].startswith("spml: error:") and "Traceback" not in err


def write_csv(path: Path, names: list[str], X: np.ndarray, Y: np.ndarray) -> Path:
    rows = [",".join(names + [f"label_{j}" for j in range(Y.shape[1])])]
    rows += [",".join(f"{v:.4f}" for v in x) + "," + ",".join(str(int(v)) for v in y) for x, y in zip(X, Y)]
    path.write_text("\n".join(rows) + "\n")
    return path


def table(seed=0, n=60):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    Y = rng.random((n, 4)) < 0.4
    Y[np.arange(n), rng.integers(0, 4, n)] = True
    return X, Y


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A bundle of a small table (features f0, f1, f2) and a model trained on it."""
    root = tmp_path_factory.mktemp("round3")
    X, Y = table()
    write_csv(root / "t.csv", ["f0", "f1", "f2"], X, Y)
    assert main(["prepare", str(root / "t.csv"), "--label-columns", "label_*", "--full-labels", "-o", str(root / "B")]) == 0
    assert main(["train", str(root / "B"), "-m", "an", "--epochs", "1", "-o", str(root / "R")]) == 0
    return root


def copy_bundle(tiny, tmp_path) -> Path:
    b = tmp_path / "B"
    shutil.copytree(tiny / "B", b)
    return b


def reseal(b: Path, rel: str) -> None:
    """What a careful tamperer does: the array changed and its checksum recorded again."""
    meta = json.loads((b / "meta.json").read_text())
    meta["checksums"][rel] = hashlib.sha256((b / rel).read_bytes()).hexdigest()
    (b / "meta.json").write_text(json.dumps(meta))


# ------------------------------------------------------------------- names, by name
def test_a_test_file_meets_the_training_table_by_name(tiny, tmp_path, capsys):
    X, Y = table(1)
    write_csv(tmp_path / "renamed.csv", ["f0", "f1", "fX"], X, Y)  # fX for f2: was taken by position
    code, _, err = run(capsys, "prepare", tiny / "t.csv", "--test", tmp_path / "renamed.csv", "--full-labels", "--label-columns",
                       "label_*", "-o", tmp_path / "B1")
    assert one_line_error(code, err) and "missing 'f2'" in err and "unexpected 'fX'" in err, err
    assert not (tmp_path / "B1").exists()
    write_csv(tmp_path / "reordered.csv", ["f2", "f0", "f1"], X[:, [2, 0, 1]], Y)  # same columns, other order
    code, _, err = run(capsys, "prepare", tiny / "t.csv", "--test", tmp_path / "reordered.csv", "--full-labels", "--label-columns",
                       "label_*", "-o", tmp_path / "B2")
    assert code == 0, err
    from spmlkit.data import Bundle

    got = np.asarray(Bundle(tmp_path / "B2").features("test"))
    assert np.allclose(got, X.astype(np.float32), atol=1e-4)  # put back in the training table's order


def test_evaluate_matches_a_bundles_features_to_the_model_by_name(tiny, tmp_path, capsys):
    X, Y = table(2)
    write_csv(tmp_path / "other.csv", ["f0", "f1", "fX"], X, Y)
    assert run(capsys, "prepare", tmp_path / "other.csv", "--label-columns", "label_*", "--full-labels", "-o", tmp_path / "O")[0] == 0
    code, out, err = run(capsys, "evaluate", tiny / "R", tmp_path / "O")
    assert one_line_error(code, err) and "feature columns differ" in err and "'fX'" in err and "mAP" not in out, err


def test_duplicate_and_empty_column_names_are_refused(tmp_path, capsys):
    X, Y = table()
    for names, why in ((["f0", "f0", "f2"], "'f0' appears 2 times"), (["f0", "", "f2"], "column 2 of the header has "
                                                                                         "no name"),
                       (["1.5", "2", "3"], None)):
        p = write_csv(tmp_path / "d.csv", names, X, Y)
        if why is None:  # a header of numbers (and label names): a data line taken for the header
            p.write_text("\n".join(p.read_text().splitlines()[1:]) + "\n")
            why = "not column names: add a header line"
        code, _, err = run(capsys, "prepare", p, "--labels-last", "4", "--full-labels", "-o", tmp_path / "B")
        assert one_line_error(code, err) and why in err, err


def test_an_id_column_is_never_also_a_label(tiny, tmp_path, capsys):
    code, _, err = run(capsys, "prepare", tiny / "t.csv", "--label-columns", "label_*", "--full-labels", "--id-column", "label_0",
                       "-o", tmp_path / "B")
    assert one_line_error(code, err) and "both the id column and a label column" in err, err


def test_contradictory_observations_are_refused_with_the_row(tmp_path, capsys):
    p = tmp_path / "obs.csv"
    p.write_text("f0,f1,labels\n0.1,0.2,a;b\n0.3,0.1,a;-a\n0.5,0.9,b\n0.2,0.2,a\n")
    code, _, err = run(capsys, "prepare", p, "--observed", "--label-set-column", "labels", "-o", tmp_path / "B")
    assert one_line_error(code, err) and "line 3" in err and "'a'" in err and "positive on one line and negative" in err, \
        err


def test_evaluating_a_missing_split_is_refused(tiny, tmp_path, capsys):
    assert run(capsys, "prepare", tiny / "t.csv", "--label-columns", "label_*", "--full-labels", "--test-fraction", "0", "-o",
               tmp_path / "NT")[0] == 0
    code, out, err = run(capsys, "evaluate", tiny / "R", tmp_path / "NT", "--split", "test")
    assert one_line_error(code, err) and "no test split" in err and "nan" not in out, err


def test_labels_that_differ_say_how(tiny, tmp_path, capsys):
    X, Y = table(3)
    p = write_csv(tmp_path / "l.csv", ["f0", "f1", "f2"], X, Y)
    p.write_text(p.read_text().replace("label_3", "label_9", 1))
    assert run(capsys, "prepare", p, "--label-columns", "label_*", "--full-labels", "-o", tmp_path / "L")[0] == 0
    code, _, err = run(capsys, "evaluate", tiny / "R", tmp_path / "L")
    assert one_line_error(code, err) and "missing 'label_3'" in err and "unexpected 'label_9'" in err, err


# ---------------------------------------------------------------- checksums, dtypes
def test_a_meta_json_without_checksums_is_refused(tiny, tmp_path, capsys):
    b = copy_bundle(tiny, tmp_path)
    meta = json.loads((b / "meta.json").read_text())
    meta.pop("checksums")  # verification turned off, then a flipped byte trained on 75e1ce7
    (b / "meta.json").write_text(json.dumps(meta))
    x = b / "train" / "X.npy"
    data = bytearray(x.read_bytes())
    data[-3] ^= 0x40
    x.write_bytes(bytes(data))
    code, _, err = run(capsys, "train", b, "-m", "an", "--epochs", "1", "-o", tmp_path / "R")
    assert one_line_error(code, err) and "no checksums" in err and "re-run 'spml prepare'" in err, err
    assert not (tmp_path / "R").exists()


def test_an_array_without_its_checksum_is_refused(tiny, tmp_path, capsys):
    b = copy_bundle(tiny, tmp_path)
    meta = json.loads((b / "meta.json").read_text())
    del meta["checksums"]["train/X.npy"]
    (b / "meta.json").write_text(json.dumps(meta))
    code, _, err = run(capsys, "train", b, "-m", "an", "--epochs", "1", "-o", tmp_path / "R")
    assert one_line_error(code, err) and "X.npy: no checksum is recorded" in err, err


def test_features_of_another_dtype_are_refused(tiny, tmp_path, capsys):
    b = copy_bundle(tiny, tmp_path)
    x = b / "train" / "X.npy"
    np.save(x, np.rint(np.load(x) * 100).astype(np.int64))  # an int64 X.npy, resealed
    reseal(b, "train/X.npy")
    code, _, err = run(capsys, "train", b, "-m", "an", "--epochs", "1", "-o", tmp_path / "R")
    assert one_line_error(code, err) and "must be float32" in err and "int64" in err, err


@pytest.mark.parametrize("what", ["all-zero", "all-positive"])
def test_observations_that_break_their_regime_are_refused(tiny, tmp_path, capsys, what):
    b = copy_bundle(tiny, tmp_path)
    n, L = (int(v) for v in np.load(b / "observed" / "single_positive.header.npy")[:2])  # (stored sparse: CSR)
    if what == "all-zero":
        indptr, indices = np.zeros(n + 1, np.int64), np.zeros(0, np.int32)
    else:
        indptr, indices = np.arange(0, n * L + 1, L, dtype=np.int64), np.tile(np.arange(L, dtype=np.int32), n)
    for part, arr in (("indptr", indptr), ("indices", indices)):
        np.save(b / "observed" / f"single_positive.{part}.npy", arr)
        reseal(b, f"observed/single_positive.{part}.npy")
    code, _, err = run(capsys, "train", b, "-m", "an", "--epochs", "1", "-o", tmp_path / "R")
    why = "no observed positive" if what == "all-zero" else "observes exactly one per example"
    assert one_line_error(code, err) and why in err and "single_positive." in err, err


@pytest.mark.parametrize("value", [5.0, -3.0])
def test_pseudo_scores_must_be_probabilities(tiny, tmp_path, capsys, value):
    from spmlkit.data import Bundle

    b = Bundle(tiny / "B")
    np.save(tmp_path / "s.npy", np.full((b.size("train"), b.n_labels), value))
    code, _, err = run(capsys, "train", tiny / "B", "-m", "vlpl", "--pseudo-scores", tmp_path / "s.npy", "--epochs",
                       "1", "-o", tmp_path / "R")
    assert one_line_error(code, err) and "must lie in [0, 1]" in err, err


def test_a_corrupt_feature_cache_advises_spml_features(tiny, tmp_path, capsys):
    from spmlkit.data import Bundle
    from spmlkit.errors import CorruptFileError

    b = copy_bundle(tiny, tmp_path)
    cache = b / "features" / "fake"
    cache.mkdir(parents=True)
    for split in ("train", "val", "test"):
        np.save(cache / f"{split}.npy", np.zeros((Bundle(b).size(split), 4), np.float64))  # not float32
        (cache / f"{split}.npy.sha256").write_text(hashlib.sha256((cache / f"{split}.npy").read_bytes())
                                                   .hexdigest() + "\n")
    with pytest.raises(CorruptFileError, match="run 'spml features") as exc:
        Bundle(b).features("train", "fake")
    assert "spml prepare" not in str(exc.value)


# ------------------------------------------------------------------------ tracebacks
def test_categorical_on_a_plain_table_is_one_line(tiny, tmp_path, capsys):
    code, _, err = run(capsys, "prepare", tiny / "t.csv", "--label-columns", "label_*", "--full-labels", "--categorical", "f0",
                       "-o", tmp_path / "B")
    assert one_line_error(code, err) and "--categorical applies to presence-only data" in err, err


def test_params_that_are_not_a_mapping_is_one_line(tiny, tmp_path, capsys):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("method: an\nparams: gamma\n")
    code, _, err = run(capsys, "train", tiny / "B", "--config", cfg, "-o", tmp_path / "R")
    assert one_line_error(code, err) and "c.yaml: params must map hyper-parameter names to values" in err, err


# ------------------------------------------------------------------------- cosmetic
def test_torchs_own_pickle_warning_is_not_printed(tiny, tmp_path, capsys):
    class Payload:
        def __reduce__(self):
            return (os.system, ("true",))

    r = tmp_path / "R"
    shutil.copytree(tiny / "R", r)
    w = r / "model" / "weights.pt"
    w.write_bytes(pickle.dumps({"state": Payload()}, protocol=4))  # a plain pickle: torch warns about it
    (r / "model" / "weights.pt.sha256").write_text(hashlib.sha256(w.read_bytes()).hexdigest() + "\n")
    # (a process of its own: pytest would catch the warning that the spml command prints)
    p = subprocess.run([sys.executable, "-m", "spmlkit.cli", "predict", str(r), str(tiny / "B"), "-o",
                        str(tmp_path / "p.csv")], capture_output=True, text=True, timeout=300)
    assert one_line_error(p.returncode, p.stderr) and "refused to load" in p.stderr, p.stderr


def test_a_library_warning_is_one_spml_line(tiny, tmp_path, capsys):
    code, _, err = run(capsys, "train", tiny / "B", "-m", "vlpl", "--epochs", "1", "-o", tmp_path / "R")
    assert code == 0, err
    warn = [ln for ln in err.splitlines() if "pseudo-scores" in ln]
    assert warn == ["spml: warning: no pseudo-scores given (--pseudo-scores FILE): training without pseudo-labels"]
    assert "UserWarning" not in err and "warnings.warn" not in err


def test_estimator_names_a_row_without_a_label(tmp_path):
    from spmlkit import SPMLClassifier

    X = np.random.default_rng(0).normal(size=(24, 3))
    with pytest.raises(ValueError, match="y has no label in row 3"):
        SPMLClassifier(epochs=1).fit(X, ["a", "b", None, "c"] * 6)


def test_label_and_feature_names_are_text(tmp_path):
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.errors import DataFormatError

    s = Split(X=np.zeros((4, 2), np.float32), Y=np.eye(4, 2, dtype=bool))
    for labels, feats, why in ((["a", 3], None, "label name 3 is a int"), (["a", " "], None, "empty name"),
                               (["a", "b"], ["x", "x"], "duplicate feature names")):
        with pytest.raises(DataFormatError, match=why):
            MultiLabelDataset(name="t", label_names=labels, splits={"train": s}, feature_names=feats)
