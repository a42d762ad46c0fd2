"""spml predict --labels / --proba, the threshold rules from the command line, and
prediction from image files through the images extension's feature extractor."""
import contextlib
import csv
import io
import json

import numpy as np
import pytest

import spmlkit
from spmlkit.cli import main
from spmlkit.practitioner.labelsets import label_sets
from tests.helpers.cli import one_line_error, run_cli as run
from tests.helpers.factories import RULE_NAMES, single_positive_data

NAMES = ["cat", "dog", "sofa"]


def read_rows(path):
    return list(csv.reader(open(path, newline="")))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A features model trained on observed data with a fully labelled validation file."""
    import contextlib
    import io

    d = tmp_path_factory.mktemp("pred")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(260, 5))
    Y = (X[:, :3] + rng.normal(scale=0.3, size=(260, 3))) > 0
    Y[~Y.any(1), 0] = True
    with open(d / "own.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["f1", "f2", "f3", "f4", "f5", "label"])
        for i in range(200):
            w.writerow([*X[i], NAMES[rng.choice(np.flatnonzero(Y[i]))]])
    with open(d / "val.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["f1", "f2", "f3", "f4", "f5", "label"])
        for i in range(200, 240):
            w.writerow([*X[i], ";".join(NAMES[j] for j in np.flatnonzero(Y[i]))])
    with open(d / "new.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "f1", "f2", "f3", "f4", "f5"])
        for i in range(240, 260):
            w.writerow([f"n{i}", *X[i]])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["prepare", str(d / "own.csv"), "--observed", "--label-column", "label", "--val-file",
                     str(d / "val.csv"), "-o", str(d / "b")]) == 0
        assert main(["train", str(d / "b"), "-m", "an", "--epochs", "4", "--lr", "0.01", "-o", str(d / "r")]) == 0
    return d, X[240:260]


def test_proba_is_the_default_and_labels_writes_sets(capsys, trained, tmp_path):
    d, Xnew = trained
    model = spmlkit.load(d / "r")
    code, out, err = run(capsys, "predict", d / "r", d / "new.csv", "-o", tmp_path / "p.csv")
    assert code == 0
    rows = read_rows(tmp_path / "p.csv")
    assert rows[0] == ["id", *NAMES] and [r[0] for r in rows[1:]] == [f"n{i}" for i in range(240, 260)]
    P = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    assert np.allclose(P, model.predict_proba(Xnew), atol=1e-5)
    code, out, err = run(capsys, "predict", d / "r", d / "new.csv", "--labels", "-o", tmp_path / "s.csv")
    assert code == 0 and "rule:" in out  # the model's default rule (chosen on the val file)
    rows = read_rows(tmp_path / "s.csv")
    assert rows[0] == ["id", "labels"] and len(rows) == 21
    spec = {k: v for k, v in model.label_sets.items() if k in ("rule", "threshold", "k", "thresholds", "min_labels")}
    expected = label_sets(model.predict_proba(Xnew), **spec)
    assert [r[1] for r in rows[1:]] == [";".join(n for n, s in zip(NAMES, row) if s) for row in expected]
    assert [r[1].split(";") if r[1] else [] for r in rows[1:]] == model.predict_label_sets(Xnew)


@pytest.mark.parametrize("args,check", [
    (["--threshold-rule", "top_k", "--k", "2"], lambda sets: all(len(s) == 2 for s in sets)),
    (["--threshold-rule", "threshold", "--threshold", "0"], lambda sets: all(len(s) == 3 for s in sets)),
    (["--threshold-rule", "threshold", "--threshold", "1.01", "--min-labels", "1"],
     lambda sets: all(len(s) == 1 for s in sets)),
    (["--threshold-rule", "expected_k"], lambda sets: len({len(s) for s in sets}) == 1),
])
def test_rules_from_the_command_line(capsys, trained, tmp_path, args, check):
    d, _ = trained
    code, out, err = run(capsys, "predict", d / "r", d / "new.csv", "--labels", *args, "-o", tmp_path / "s.csv")
    assert code == 0, err
    sets = [r[1].split(";") if r[1] else [] for r in read_rows(tmp_path / "s.csv")[1:]]
    assert check(sets)


def test_rule_that_the_model_cannot_apply(capsys, trained, tmp_path):
    d, _ = trained
    m = json.loads((d / "r" / "model" / "model.json").read_text())
    m["label_sets"] = {"rule": "threshold", "threshold": 0.5}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.json").write_text(json.dumps(m))
    for f in ("weights.pt", "weights.pt.sha256"):
        (tmp_path / "m" / f).write_bytes((d / "r" / "model" / f).read_bytes())
    code, out, err = run(capsys, "predict", tmp_path / "m", d / "new.csv", "--labels", "--threshold-rule",
                         "per_label", "-o", tmp_path / "s.csv")
    assert code == 2 and "per-label thresholds" in err and not (tmp_path / "s.csv").exists()


# ---------------------------------------------------------------- image inputs
def fake_extract(paths, *, backbone, image_size, **options):
    """Stand-in for spmlkit.features.extract_image_features: mean colour of each image."""
    from PIL import Image

    assert backbone == "fake-net" and image_size == 8
    return np.stack([np.asarray(Image.open(p).convert("RGB"), dtype=np.float32).mean((0, 1)) for p in paths])


@pytest.fixture
def image_model(tmp_path, capsys):
    """An image bundle with a cached feature set (as 'spml features' writes it) and a model on it."""
    from PIL import Image

    rng = np.random.default_rng(0)
    (tmp_path / "imgs").mkdir()
    rows = []
    for i in range(60):
        c = i % 3
        colour = np.zeros(3)
        colour[c] = 200
        img = np.clip(colour + rng.normal(scale=30, size=(8, 8, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(tmp_path / "imgs" / f"{i}.png")
        rows.append((f"imgs/{i}.png", NAMES[c]))
    with open(tmp_path / "own.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([("path", "label"), *rows[:50]])
    with open(tmp_path / "new.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([("path",), *[(p,) for p, _ in rows[50:]]])
    assert run(capsys, "prepare", tmp_path / "own.csv", "--observed", "--path-column", "path", "--label-column",
               "label", "-o", tmp_path / "b")[0] == 0
    from spmlkit.data import Bundle
    from spmlkit.io import save_npy, write_json

    b = Bundle(tmp_path / "b")
    fs = b.path / "features" / "fake-8"
    for split in ("train", "val", "test"):
        save_npy(fs / f"{split}.npy", fake_extract(b.paths(split), backbone="fake-net", image_size=8))
    write_json(fs / "meta.json", {"backbone": "fake-net", "image_size": 8, "dim": 3})
    from tests.helpers.owned import seal_feature_cache

    seal_feature_cache(fs)  # (the checksums spml features records)
    code, out, err = run(capsys, "train", b.path, "-m", "an", "--feature-set", "fake-8", "--epochs", 10, "--lr", "0.05",
                         "-o", tmp_path / "r")
    assert code == 0, err
    return tmp_path


def test_predict_new_images_through_the_extractor(capsys, image_model, monkeypatch):
    d = image_model
    model = spmlkit.load(d / "r")
    assert model.input == {"kind": "images", "feature_set": "fake-8", "backbone": "fake-net", "image_size": 8,
                           "dim": 3}
    monkeypatch.setattr("spmlkit.features.extract_image_features", fake_extract)
    code, out, err = run(capsys, "predict", d / "r", d / "new.csv", "--labels", "--threshold-rule", "top_k",
                         "--k", 1, "-o", d / "s.csv")
    assert code == 0, err
    rows = read_rows(d / "s.csv")[1:]
    assert [r[0] for r in rows] == [f"imgs/{i}.png" for i in range(50, 60)]
    assert [r[1] for r in rows] == [NAMES[i % 3] for i in range(50, 60)]  # the colour gives the label
    # a folder and a .txt list work too; probabilities equal the head on the extracted features
    (d / "list.txt").write_text("".join(f"imgs/{i}.png\n" for i in range(50, 60)))
    assert run(capsys, "predict", d / "r", d / "list.txt", "-o", d / "p.csv")[0] == 0
    P = np.array([[float(v) for v in r[1:]] for r in read_rows(d / "p.csv")[1:]])
    X = fake_extract([str(d / f"imgs/{i}.png") for i in range(50, 60)], backbone="fake-net", image_size=8)
    assert np.allclose(P, model.predict_proba(X), atol=1e-5)
    assert run(capsys, "predict", d / "r", d / "imgs", "-o", d / "f.csv")[0] == 0
    assert len(read_rows(d / "f.csv")) == 61


def test_clear_errors_for_image_inputs(capsys, image_model, monkeypatch):
    d = image_model
    import spmlkit.features

    monkeypatch.delattr(spmlkit.features, "extract_image_features")  # as if the images extension were absent
    code, out, err = run(capsys, "predict", d / "r", d / "new.csv", "-o", d / "s.csv")
    assert code == 2 and "needs spmlkit.features.extract_image_features" in err and not (d / "s.csv").exists()
    monkeypatch.setattr(spmlkit.features, "extract_image_features", fake_extract, raising=False)
    (d / "bad.csv").write_text("path\nimgs/1.png\nimgs/missing.png\n")
    code, out, err = run(capsys, "predict", d / "r", d / "bad.csv", "-o", d / "s.csv")
    assert code == 2 and "bad.csv, line 3: image file 'imgs/missing.png' not found" in err


def test_id_column_names_the_identifier_column_of_a_features_csv(capsys, trained, tmp_path):
    """`--id-column` works in predict as in prepare: its values are the output's ids and it
    is not read as a feature (before: "column 'song' has value 'n240'; expected a number");
    a named id column that is not there is one line naming the file and the column."""
    d, _ = trained
    rows = read_rows(d / "new.csv")
    with open(tmp_path / "songs.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["song", *rows[0][1:]])
        w.writerows(rows[1:])
    code, out, err = run(capsys, "predict", d / "r", tmp_path / "songs.csv", "--id-column", "song",
                         "-o", tmp_path / "p.csv")
    assert code == 0, err
    got = read_rows(tmp_path / "p.csv")
    assert [r[0] for r in got[1:]] == [r[0] for r in rows[1:]]
    code, out, err = run(capsys, "predict", d / "r", tmp_path / "songs.csv", "--id-column", "track",
                         "-o", tmp_path / "q.csv")
    assert code == 2 and err.count("\n") == 1
    assert "songs.csv" in err and "'track'" in err and not (tmp_path / "q.csv").exists()


def test_predict_replaces_only_its_own_output(capsys, trained, tmp_path):
    """`-o` may replace a prediction file spmlkit wrote (re-running a prediction), but never a
    file of the user's without --overwrite, and never the input file, even with it."""
    d, _ = trained
    out = tmp_path / "p.csv"
    assert run(capsys, "predict", d / "r", d / "new.csv", "-o", out)[0] == 0
    assert run(capsys, "predict", d / "r", d / "new.csv", "--labels", "-o", out)[0] == 0  # ours: replaced
    assert read_rows(out)[0] == ["id", "labels"]
    assert run(capsys, "predict", d / "r", d / "new.csv", "-o", out)[0] == 0
    assert read_rows(out)[0] == ["id", *NAMES]

    mine = tmp_path / "notes.csv"
    mine.write_text("species,count\nkiwi,3\n")
    code, _, err = run(capsys, "predict", d / "r", d / "new.csv", "-o", mine)
    assert code == 2 and "refusing to replace" in err and "--overwrite" in err
    assert mine.read_text() == "species,count\nkiwi,3\n"
    assert err.count("\n") == 1  # one line, no traceback
    assert run(capsys, "predict", d / "r", d / "new.csv", "-o", mine, "--overwrite")[0] == 0
    assert read_rows(mine)[0] == ["id", *NAMES]

    data = tmp_path / "new.csv"
    data.write_bytes((d / "new.csv").read_bytes())
    for extra in ((), ("--overwrite",)):
        code, _, err = run(capsys, "predict", d / "r", data, "-o", data, *extra)
        assert code == 2 and "is an input of this command" in err
        assert data.read_bytes() == (d / "new.csv").read_bytes()


# Issue 15 §3: the default label-set rule without full labels is expected-k with k
# known or estimated from the observations (1 / observed recall@1), not a fixed 0.5;
# implausible sets (mean size > 2x away from k, > 50% empty) are warned about in the
# Python API (LabelSetWarning), in `spml predict --labels` (one stderr line) and in the
# run report.  Explicit `--threshold-rule threshold --threshold 0.5` stays available and
# saved models keep their stored rule.




# ------------------------------------------------------------------- command line
@pytest.fixture(scope="module")
def observed_run(tmp_path_factory):
    """An assume-negative model trained on a single-positive CSV (no full labels anywhere)."""
    d = tmp_path_factory.mktemp("rule")
    X, _, obs = single_positive_data(500)
    Xn, _, _ = single_positive_data(60, seed=2)
    with open(d / "own.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([f"f{j}" for j in range(X.shape[1])] + ["label"])
        for x, o in zip(X, obs):
            w.writerow([*x, RULE_NAMES[o]])
    with open(d / "new.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id"] + [f"f{j}" for j in range(X.shape[1])])
        for i, x in enumerate(Xn):
            w.writerow([f"n{i}", *x])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["prepare", str(d / "own.csv"), "--observed", "--label-column", "label", "-o",
                     str(d / "b")]) == 0
        assert main(["train", str(d / "b"), "-m", "an", "--lr", "0.01", "--epochs", "10", "--threads", "1",
                     "-o", str(d / "r")]) == 0
    return d, Xn


def test_train_stores_expected_k_and_report_explains_it(observed_run):
    d, _ = observed_run
    meta = json.loads((d / "r" / "model" / "model.json").read_text())
    assert meta["label_sets"]["rule"] == "expected_k"
    assert "observed recall@1 on" in meta["label_sets"]["k_source"]
    report = (d / "r" / "report.md").read_text()
    assert "Default rule stored with the model: **expected-k (k=" in report
    assert "Expected labels per example k =" in report and "Warning" not in report


def test_predict_default_rule_and_warning_line_on_stderr(observed_run, tmp_path, capsys):
    d, Xn = observed_run
    model = spmlkit.load(d / "r")
    assert main(["predict", str(d / "r"), str(d / "new.csv"), "--labels", "-o", str(tmp_path / "a.csv")]) == 0
    out, err = capsys.readouterr()
    assert "rule: expected-k" in out and err == ""
    # the fixed threshold stays available explicitly; for assume-negative scores it gives empty sets
    assert main(["predict", str(d / "r"), str(d / "new.csv"), "--labels", "--threshold-rule", "threshold",
                 "--threshold", "0.5", "-o", str(tmp_path / "b.csv")]) == 0
    out, err = capsys.readouterr()
    with open(tmp_path / "b.csv", newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    S = label_sets(model.predict_proba(Xn), rule="threshold", threshold=0.5)
    assert [r[1] for r in rows] == [";".join(model.label_names[j] for j in np.flatnonzero(s)) for s in S]
    assert err.count("\n") == 1 and err.startswith("spml: warning: label sets look implausible")
    assert "empty" in err


def test_saved_model_keeps_its_stored_rule(observed_run, tmp_path):
    import shutil

    d, Xn = observed_run
    shutil.copytree(d / "r" / "model", tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "model.json").read_text())
    meta["label_sets"] = {"rule": "threshold", "threshold": 0.5}  # as written before issue 15
    (tmp_path / "m" / "model.json").write_text(json.dumps(meta))
    model = spmlkit.load(tmp_path / "m")
    assert (model.predict(Xn) == (model.predict_proba(Xn) >= 0.5)).all()
    del meta["label_sets"]  # older still: no stored rule at all -> threshold 0.5 as before
    (tmp_path / "m" / "model.json").write_text(json.dumps(meta))
    assert spmlkit.load(tmp_path / "m").label_sets == {"rule": "threshold", "threshold": 0.5}


# The CLI end to end on tiny data, and every bad-input path ending in one clear line.


def test_shape_mismatch_on_predict(tmp_path, capsys, toy_csv):
    run(capsys, "prepare", toy_csv, "-o", tmp_path / "b", "--labels-last", 3, "--full-labels")
    run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 1, "-o", tmp_path / "r")
    np.save(tmp_path / "wrong.npy", np.zeros((2, 7), dtype=np.float32))
    code, _, err = run(capsys, "predict", tmp_path / "r", tmp_path / "wrong.npy", "-o", tmp_path / "o.csv")
    assert code == 2 and "this model expects (N, 4)" in err and not (tmp_path / "o.csv").exists()


# ---------------------------------------------- covariates, rasters and ids (issue 36)
@pytest.fixture(scope="module")
def raster_run(tmp_path_factory):
    pytest.importorskip("rasterio")
    from tests.helpers.rasters import located_records, make_stack, write_records

    d = tmp_path_factory.mktemp("geo")
    env = make_stack(d / "env")
    rec = write_records(d / "r.csv", located_records(20))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["prepare", str(rec), "--rasters", str(env), "--background-points", "60", "-o", str(d / "b")]) == 0
        assert main(["train", str(d / "b"), "-m", "an", "--epochs", "2", "-o", str(d / "run")]) == 0
    return d


def _raw_table(d, path, edit=None):
    """The bundle's test rows as a raw covariate table (the training layout: covariates by
    name, soil as its level), with siteid, x, y."""
    from spmlkit.data import Bundle

    b = Bundle(d / "b")
    X, xy = np.asarray(b.features("test")), b.xy("test")
    soil = 1 + X[:, 1:4].argmax(1)
    rows = [["siteid", "x", "y", "temp", "soil", "rain"]]
    rows += [[f"s{i}", *xy[i], X[i, 4], float(soil[i]), X[i, 0]] for i in range(len(X))]
    if edit:
        edit(rows)
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return path


def test_predict_from_the_raw_training_layout_equals_the_encoded(capsys, raster_run, tmp_path):
    d = raster_run
    code, out, err = run(capsys, "predict", d / "run", d / "b", "-o", tmp_path / "bundle.csv")
    assert code == 0, err
    code, out, err = run(capsys, "predict", d / "run", _raw_table(d, tmp_path / "raw.csv"), "-o", tmp_path / "raw.csv.p")
    assert code == 0, err
    a, b = read_rows(tmp_path / "bundle.csv"), read_rows(tmp_path / "raw.csv.p")
    assert a[0] == b[0] == ["id", "x", "y", "Aus alpha", "Bus beta"]
    assert [r[1:] for r in a[1:]] == [r[1:] for r in b[1:]]  # same places, same probabilities
    from spmlkit.data import Bundle

    assert [r[0] for r in a[1:]] == Bundle(d / "b").ids("test")  # the bundle's ids pass through
    assert [r[0] for r in b[1:]] == [f"s{i}" for i in range(len(b) - 1)]  # the table's siteid


@pytest.mark.parametrize("edit, msg", [
    (lambda rows: rows[3].__setitem__(4, 9.0), "raw.csv, line 4: covariate 'soil' has level 9, which the model never "
                                              "saw in training (its levels: 1, 2, 3)"),
    (lambda rows: [r.pop(5) for r in rows], "raw.csv, line 1: missing covariate column 'rain'"),
])
def test_raw_table_errors_name_the_column(capsys, raster_run, tmp_path, edit, msg):
    code, out, err = run(capsys, "predict", raster_run / "run", _raw_table(raster_run, tmp_path / "raw.csv", edit),
                         "-o", tmp_path / "p.csv")
    assert code == 2 and msg in one_line_error(err) and not (tmp_path / "p.csv").exists()


def test_predict_on_rasters_writes_the_input_grid(capsys, raster_run, tmp_path):
    import rasterio

    d = raster_run
    code, out, err = run(capsys, "predict", d / "run", "--rasters", d / "env", "-o", tmp_path / "p.tif", "--maps", "all")
    assert code == 0, err
    assert "predicted 2 species on 189 valid cells of a 12 x 16 grid (3 nodata)" in out
    with rasterio.open(d / "env" / "rain.tif") as src, rasterio.open(tmp_path / "p.tif") as o:  # the first layer
        assert (o.crs, o.transform, o.width, o.height, o.nodata) == (src.crs, src.transform, src.width, src.height,
                                                                      src.nodata)
    assert (tmp_path / "p_Aus_alpha.png").exists() and (tmp_path / "p_Bus_beta.png").exists()


@pytest.mark.parametrize("case, msg", [
    ("missing", "no raster for covariate 'soil'; the rasters here are rain, temp"),
    ("not-gdal", "soil.tif: not a raster GDAL can read"),
    ("level", "layer 'soil' has level 7"),
    ("input", "--rasters predicts on the raster cells: give no other input"),
])
def test_predict_on_rasters_bad_inputs(capsys, raster_run, tmp_path, case, msg):
    import shutil

    from tests.helpers.rasters import layers, write_raster

    env = tmp_path / "env"
    shutil.copytree(raster_run / "env", env)
    extra = []
    if case == "missing":
        (env / "soil.tif").unlink()
    elif case == "not-gdal":
        (env / "soil.tif").write_text("junk")
    elif case == "level":
        soil, nodata = layers()["soil"]
        soil = soil.copy()
        soil[5, 5] = 7
        write_raster(env / "soil.tif", soil, nodata=nodata)
    elif case == "input":
        extra = [raster_run / "b"]
    code, out, err = run(capsys, "predict", raster_run / "run", *extra, "--rasters", env, "-o", tmp_path / "p.tif")
    assert code == 2 and msg in one_line_error(err)
    assert [p.name for p in tmp_path.iterdir()] == ["env"]  # nothing written, not even a temporary file


def test_predict_streams_to_npy_and_top_k(capsys, raster_run, tmp_path):
    d = raster_run
    code, out, err = run(capsys, "predict", d / "run", d / "b", "-o", tmp_path / "p.npy")
    assert code == 0 and "float32 .npy" in out
    P = np.load(tmp_path / "p.npy")
    code, out, err = run(capsys, "predict", d / "run", d / "b", "--top-k", "1", "-o", tmp_path / "t.csv")
    rows = read_rows(tmp_path / "t.csv")
    assert rows[0] == ["id", "x", "y", "labels", "probabilities"]
    assert [r[3] for r in rows[1:]] == [["Aus alpha", "Bus beta"][j] for j in P.argmax(1)]
    code, out, err = run(capsys, "predict", d / "run", d / "b", "--labels", "-o", tmp_path / "t.npy")
    assert code == 2 and "written as CSV" in one_line_error(err)
