"""Observed-only input: a CSV of image paths with one label each, a fully labelled
validation file, and the errors a practitioner's file can produce (one line each)."""
import csv
from pathlib import Path

import numpy as np
import pytest

from spmlkit.cli import main
from spmlkit.data import Bundle
from tests.helpers.factories import single_positive

LABELS = ["cat", "dog", "sofa"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def make_images(folder, n):
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(folder / f"im{i}.png")


def write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


@pytest.fixture
def own(tmp_path):
    """data/own.csv: 40 images (relative paths), one label each."""
    data = tmp_path / "data"
    make_images(data / "imgs", 50)
    write_csv(data / "own.csv", ["path", "label"], [(f"imgs/im{i}.png", LABELS[i % 3]) for i in range(40)])
    return data


def test_prepare_csv_of_paths_with_one_label_each(tmp_path, capsys, own, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative paths are read from the CSV's folder, not the working directory
    code, out, err = run(capsys, "prepare", "data/own.csv", "--observed", "--path-column", "path",
                         "--label-column", "label", "-o", "b")
    assert code == 0, err
    assert "observed labels only" in out
    b = Bundle(tmp_path / "b")
    assert not b.has_full_labels and b.regime == "observed" and b.kind == "images"
    assert b.label_names == LABELS and b.meta["full_label_splits"] == []
    assert not list(b.path.rglob("Y.npy"))  # no full labels anywhere
    Z = b.observations("train")
    assert ((Z == 1).sum(1) == 1).all() and not (Z == -1).any()
    paths = b.paths("train") + b.paths("val") + b.paths("test")
    assert len(paths) == 40 and all(p.startswith(str(own / "imgs")) for p in paths)
    # the stored observation is the CSV's label of that image
    for split in ("train", "val", "test"):
        for p, z in zip(b.paths(split), b.observations(split)):
            i = int(p.rsplit("im", 1)[1].split(".")[0])
            assert LABELS[int(np.argmax(z))] == LABELS[i % 3]


def test_a_label_set_column_with_single_names_works_too(tmp_path, capsys, own):
    code, out, err = run(capsys, "prepare", own / "own.csv", "--observed", "--path-column", "path",
                         "--label-set-column", "label", "-o", tmp_path / "b")
    assert code == 0, err
    assert Bundle(tmp_path / "b").label_names == LABELS


def test_rows_naming_the_same_image_are_merged(tmp_path, capsys, own):
    rows = [(f"imgs/im{i}.png", LABELS[i % 3]) for i in range(40)] + [("imgs/im0.png", "sofa"), ("imgs/im3.png", "dog")]
    write_csv(own / "rep.csv", ["path", "label"], rows)
    code, out, err = run(capsys, "prepare", own / "rep.csv", "--observed", "--path-column", "path",
                         "--label-column", "label", "-o", tmp_path / "b", "--val-fraction", "0.1")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    sizes = sum(b.size(s) for s in ("train", "val", "test"))
    assert sizes == 40
    for split in ("train", "val", "test"):
        for p, z in zip(b.paths(split), b.observations(split)):
            if p.endswith("/im0.png"):
                assert z.tolist() == [1, 0, 1]  # cat + sofa
            if p.endswith("/im3.png"):
                assert z.tolist() == [1, 1, 0]  # cat + dog


@pytest.mark.parametrize("rows,extra,msg", [
    ([("imgs/im0.png", "cat"), ("imgs/im1.png", "bird")], ["--label-names", "cat,dog,sofa"],
     "own.csv, line 3: unknown label 'bird' in column 'label'; known labels: cat, dog, sofa"),
    ([("imgs/im0.png", "cat"), ("", "dog")], [], "own.csv, line 3: empty image path in column 'path'"),
    ([("imgs/im0.png", "cat"), ("imgs/nope.png", "dog")], [], "own.csv, line 3: image file 'imgs/nope.png' not found"),
    ([("imgs/im0.png", "cat"), ("imgs/im1.png", "")], [], "own.csv, line 3: empty label in column 'label'"),
    ([("imgs/im0.png", "cat"), ("imgs/im0.png", "-cat")], [],
     "own.csv, line 3: label 'cat' of"),
])
def test_errors_name_the_line(tmp_path, capsys, own, rows, extra, msg):
    write_csv(own / "own.csv", ["path", "label"], rows)
    code, out, err = run(capsys, "prepare", own / "own.csv", "--observed", "--path-column", "path",
                         "--label-column", "label", "-o", tmp_path / "b", *extra)
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "b").exists()


def test_label_names_file_fixes_vocabulary_and_order(tmp_path, capsys, own):
    (tmp_path / "names.txt").write_text("sofa\ncat\ndog\nbird\n")
    code, out, err = run(capsys, "prepare", own / "own.csv", "--observed", "--path-column", "path",
                         "--label-column", "label", "--label-names", tmp_path / "names.txt", "-o", tmp_path / "b")
    assert code == 0, err
    assert Bundle(tmp_path / "b").label_names == ["sofa", "cat", "dog", "bird"]


def test_fully_labelled_validation_file(tmp_path, capsys, own):
    # same format as the training file; an image listed once per label has all those labels
    write_csv(own / "val.csv", ["path", "label"],
              [("imgs/im40.png", "cat"), ("imgs/im40.png", "dog"), ("imgs/im41.png", "sofa"),
               ("imgs/im42.png", "cat;sofa"), ("imgs/im43.png", "dog")])
    code, out, err = run(capsys, "prepare", own / "own.csv", "--observed", "--path-column", "path",
                         "--label-column", "label", "--val-file", own / "val.csv", "-o", tmp_path / "b")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    assert not b.has_full_labels and b.meta["full_label_splits"] == ["val"]
    assert b.labels("val").astype(int).tolist() == [[1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 0]]
    assert b.labels("train") is None and b.labels("test") is None
    assert b.size("train") + b.size("test") == 40  # nothing of the training file held out for validation
    assert "full labels in: val" in out


def test_validation_file_with_an_unknown_label(tmp_path, capsys, own):
    write_csv(own / "val.csv", ["path", "label"], [("imgs/im40.png", "cat"), ("imgs/im41.png", "zebra")])
    code, out, err = run(capsys, "prepare", own / "own.csv", "--observed", "--path-column", "path",
                         "--label-column", "label", "--val-file", own / "val.csv", "-o", tmp_path / "b")
    assert code == 2 and "val.csv, line 3: unknown label 'zebra'" in err


def test_observed_npz_and_wide_csv(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    Z = single_positive(60, 4, rng)
    Z[::5, 3] = -1  # some observed negatives
    Z[::5, :3] = np.where(Z[::5, :3] == 1, 1, 0)
    np.savez(tmp_path / "own.npz", X=X, Y=Z)
    code, out, err = run(capsys, "prepare", tmp_path / "own.npz", "--observed", "-o", tmp_path / "b")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    assert not b.has_full_labels and b.observations("train").min() == -1
    write_csv(tmp_path / "w.csv", ["f1", "f2", "a", "b"],
              [(float(x[0]), float(x[1]), "1" if i % 2 else "", "-1" if i % 2 else "1") for i, x in enumerate(X)])
    code, out, err = run(capsys, "prepare", tmp_path / "w.csv", "--observed", "--labels-last", 2, "-o", tmp_path / "c")
    assert code == 0, err
    assert not Bundle(tmp_path / "c").has_full_labels


# Biased ("realistic") single positives: the kept positive is the most frequent, the least
# frequent or the largest-object label of each example (spmlkit.labels), and COCO's
# largest-instance areas that feed the last one (data/formats/coco.py).


def test_prepare_accepts_the_short_names_of_biased_regimes(tmp_path, capsys):
    import json

    from spmlkit.cli import main

    assert main(["prepare", "yeast", "-o", str(tmp_path / "b"), "--regime", "1p-rare"]) == 0
    assert json.loads((tmp_path / "b" / "meta.json").read_text())["regime"] == "single_positive_least_frequent"
    with pytest.raises(SystemExit) as e:
        main(["prepare", "yeast", "-o", str(tmp_path / "c"), "--regime", "1p-nope"])
    assert e.value.code == 2 and "unknown observation regime '1p-nope'" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


# The CLI end to end on tiny data, and every bad-input path ending in one clear line.


@pytest.mark.parametrize("content,msg", [
    ("f1,a\n1,2\n", "bad.csv, line 2: label column 'a' has value '2'; expected 0 or 1"),
    ("f1,a\nnan,1\n", "bad.csv, line 2: feature column 'f1' has non-finite value"),
    ("f1,a\n1\n", "bad.csv, line 2: row has 1 fields; the header has 2"),
])
def test_bad_files_give_one_line_errors(tmp_path, capsys, content, msg):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    code, out, err = run(capsys, "prepare", p, "-o", tmp_path / "b", "--labels-last", 1)
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("bad, msg", [
    (dict(Z_indptr=[0, 1, 2], Z_indices=[3, 3], Z_shape=[3, 5]), "Z_indptr"),
    (dict(Z_indptr=[0, 2, 2, 2], Z_indices=[1, 1], Z_shape=[3, 5]), "twice"),
    (dict(Z_indptr=[0, 1, 2, 3], Z_indices=[1, 9, 0], Z_shape=[3, 5]), "outside"),
    (dict(Z_indptr=[0, 1, 2, 3], Z_indices=[1, 2, 0], Z_shape=[3, 5], Z_data=[1, 2, 1]), "Z_data"),
    (dict(Z_indptr=[0, 1, 2, 3], Z_indices=[1, 2, 0]), "Z_shape"),
])
def test_bad_sparse_labels_in_npz_are_one_line_and_write_nothing(tmp_path, capsys, bad, msg):
    """Issue 32: CSR labels in an .npz are checked as they are read; every fault is one line
    (exit 2) naming the file and the key, and no bundle is left behind."""
    src = tmp_path / "d.npz"
    np.savez(src, X=np.zeros((3, 2), np.float32), **{k: np.asarray(v) for k, v in bad.items()})
    code, out, err = run(capsys, "prepare", src, "--observed", "-o", tmp_path / "b", "--val-fraction", "0",
                         "--test-fraction", "0")
    assert code == 2 and len(err.strip().splitlines()) == 1 and msg in err and "d.npz" in err, err
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_a_million_single_positives_prepare_without_the_dense_matrix(tmp_path, capsys, monkeypatch):
    """The 1,000,000 x 50,000 single positives of the issue: with N x L densification refused
    above 64 MB, prepare still succeeds (a dense int8 matrix would be 50 GB)."""
    monkeypatch.setenv("SPML_DENSE_LIMIT_MB", "64")
    rng = np.random.default_rng(0)
    n, L = 1_000_000, 50_000
    src = tmp_path / "big.npz"
    np.savez(src, X=rng.normal(size=(n, 2)).astype(np.float32), Z_indptr=np.arange(n + 1),
             Z_indices=rng.integers(0, L, n).astype(np.int32), Z_shape=np.array([n, L]))
    code, out, err = run(capsys, "prepare", src, "-o", tmp_path / "b")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    assert b.size("train") + b.size("val") + b.size("test") == n and b.n_labels == L
    assert b.observations("train").single_index() is not None


# ------------------------------------------------------------ records on rasters (issue 36)
def _bad_raster_case(tmp_path, case):
    from tests.helpers.rasters import located_records, make_stack, write_raster, write_records

    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "r.csv", located_records(5))
    extra = []
    if case == "crs":
        extra = ["--crs", "EPSG:3857"]
    elif case == "off":
        rec = write_records(tmp_path / "r.csv", located_records(5) + [["Aus alpha", 100.0, 0.0]])
        extra = ["--off-raster", "error"]
    elif case == "all-off":
        rec = write_records(tmp_path / "r.csv", [["Aus alpha", 45.0, 12.0]])
    elif case == "not-gdal":
        (env / "junk.tif").write_text("not a raster")
    elif case == "missing-covariate":
        extra = ["--covariates", "temp,bio1"]
    elif case == "grid":
        write_raster(env / "small.tif", np.ones((3, 3), np.float32))
    return ["prepare", rec, "--rasters", env, *extra, "-o", tmp_path / "b"]


@pytest.mark.parametrize("case, msg", [
    ("crs", "are in EPSG:3857 but the rasters (rain.tif, ...) are in EPSG:4326"),
    ("off", "(Aus alpha, x 100, y 0) is outside the rasters"),
    ("all-off", "no record falls on a valid raster cell"),
    ("not-gdal", "junk.tif: not a raster GDAL can read"),
    ("missing-covariate", "no raster for covariate 'bio1'"),
    ("grid", "small.tif: its grid (3 rows x 3 columns"),
])
def test_raster_inputs_bad_one_line_nothing_written(tmp_path, capsys, case, msg):
    pytest.importorskip("rasterio")
    from tests.helpers.cli import one_line_error, run_cli

    code, out, err = run_cli(capsys, *_bad_raster_case(tmp_path, case))
    assert code == 2 and msg in one_line_error(err)
    assert not (tmp_path / "b").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".b")]


def test_raster_options_need_rasters(tmp_path, capsys, toy_csv):
    from tests.helpers.cli import one_line_error, run_cli

    code, out, err = run_cli(capsys, "prepare", toy_csv, "--label-columns", "a,b,c", "--crs", "EPSG:4326", "-o",
                             tmp_path / "b")
    assert code == 2 and "--crs goes with --rasters" in one_line_error(err)


# ------------------------------------------- issue 37: no silent full labels
def _readme_own_table_line() -> list[str]:
    """The README's own-table line (the CLI tour's '# your own table: spml prepare ...')."""
    import re
    import shlex
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    line = re.search(r"# your own table: (spml prepare [^\n]*)", text).group(1)
    return shlex.split(line)[2:]


def _wide_csv(path, Y):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(len(Y), 3)) + Y[:, :3] * 1.5
    write_csv(path, ["f1", "f2", "f3"] + [f"label_{j}" for j in range(Y.shape[1])],
              [[*map(float, x), *map(int, y)] for x, y in zip(X, Y)])


def test_readme_own_table_line_on_single_positive_data_reports_observed_scores_only(tmp_path, capsys, monkeypatch):
    """One positive per row: the README line, as written, gives an observed-only bundle,
    and spml train then prints no full-label 'test mAP' (the data has none)."""
    monkeypatch.chdir(tmp_path)
    argv = _readme_own_table_line()
    assert argv[:3] == ["my.csv", "--label-columns", "label_*"]
    rng = np.random.default_rng(0)
    _wide_csv(tmp_path / "my.csv", np.eye(4, dtype=bool)[rng.integers(0, 4, 120)])
    code, out, err = run(capsys, "prepare", *argv)
    assert code == 0, err
    note = [line for line in err.splitlines() if "exactly one positive" in line]
    assert len(note) == 1 and "--observed" in note[0] and "--full-labels" in note[0]
    bundle = Bundle(argv[argv.index("-o") + 1])
    assert not bundle.has_full_labels and "observed labels only" in out
    code, out, err = run(capsys, "train", bundle.path, "-m", "an", "--epochs", 2, "-o", "runs/mine")
    assert code == 0, err
    test_lines = [line for line in out.splitlines() if "test" in line and "mAP" in line]
    assert test_lines and all("observed" in line for line in test_lines), test_lines
    assert "test mAP " not in out


def test_readme_own_table_line_on_multi_label_data_asks_then_full_labels_keeps_them(tmp_path, capsys, monkeypatch):
    """Rows that may be complete label sets: the README line asks (one line, nothing
    written); with --full-labels, as the README's comment says, they are full labels."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    Y = rng.random((120, 4)) < 0.4
    Y[:, 0] |= ~Y.any(1)
    Y[0] = [True, True, False, False]  # (at least one row with two positives)
    _wide_csv(tmp_path / "my.csv", Y)
    code, out, err = run(capsys, "prepare", *_readme_own_table_line())
    assert code == 2 and len(err.strip().splitlines()) == 1 and not Path("bundles/mine").exists()
    assert "--label-columns 'label_*' complete label sets" in err and "--full-labels" in err
    code, out, err = run(capsys, "prepare", *_readme_own_table_line(), "--full-labels")
    assert code == 0 and "exactly one positive" not in err and Bundle("bundles/mine").has_full_labels


def test_single_positive_table_keeps_a_fully_labelled_test_file_full(tmp_path, capsys):
    """Train rows with one positive each and a --test file whose rows have several: the
    training labels become observations, the test file keeps its full labels (and test
    mAP is then a real full-label number)."""
    rng = np.random.default_rng(0)
    _wide_csv(tmp_path / "train.csv", np.eye(3, dtype=bool)[rng.integers(0, 3, 90)])
    Yt = rng.random((30, 3)) < 0.5
    Yt[0] = True
    _wide_csv(tmp_path / "test.csv", Yt)
    code, out, err = run(capsys, "prepare", tmp_path / "train.csv", "--test", tmp_path / "test.csv", "--labels-last",
                         3, "-o", tmp_path / "b")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    assert not b.has_full_labels and b.meta["full_label_splits"] == ["test"]
    assert "the test split keeps full labels" in err


def test_a_semicolon_csv_gets_a_delimiter_hint_and_delimiter_reads_it(tmp_path, capsys):
    """Issue 37: a spreadsheet's semicolon CSV said "'label_*' matches no column of the
    header"; now the error names the delimiter and the option, and --delimiter ';' reads it."""
    rng = np.random.default_rng(0)
    Y = rng.random((40, 3)) < 0.5
    Y[0] = True
    p = tmp_path / "semi.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh, delimiter=";")
        w.writerow(["f1", "f2", "label_a", "label_b", "label_c"])
        w.writerows([[*map(float, rng.normal(size=2)), *map(int, y)] for y in Y])
    code, out, err = run(capsys, "prepare", p, "--label-columns", "label_*", "-o", tmp_path / "b")
    assert code == 2 and err.count("\n") == 1 and not (tmp_path / "b").exists()
    assert f"{p}, line 1: the header is one column" in err and "--delimiter ';'" in err
    code, out, err = run(capsys, "prepare", p, "--label-columns", "label_*", "--delimiter", ";", "--full-labels",
                         "-o", tmp_path / "b")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    assert b.label_names == ["label_a", "label_b", "label_c"] and b.meta["n_features"] == 2
    (tmp_path / "tab.csv").write_text("f1\tlabel_a\tlabel_b\n1\t1\t0\n2\t0\t1\n")
    code, out, err = run(capsys, "prepare", tmp_path / "tab.csv", "--labels-last", 2, "-o", tmp_path / "c")
    assert code == 2 and "separated by a tab" in err and "--delimiter '\\t'" in err


def _label_set_table(path, per_row, n=60, L=8, seed=0):
    """A numeric table with a label-set column naming ``per_row`` (lo, hi) labels per row."""
    rng = np.random.default_rng(seed)
    names = [f"sp{j}" for j in range(L)]
    rows = []
    for i in range(n):
        k = int(rng.integers(per_row[0], per_row[1] + 1))
        picked = rng.choice(L, size=k, replace=False)
        rows.append([f"{v:.3f}" for v in rng.normal(size=3)] + [";".join(names[j] for j in sorted(picked))])
    write_csv(path, ["f0", "f1", "f2", "labels"], rows)
    return path


def test_partial_label_sets_are_read_as_observed_with_the_evidence(tmp_path, capsys):
    """One or two names per row of eight labels: observed (not complete label sets whose
    'test mAP' would count every other label as absent), said in one line with the
    evidence; the bundle records it."""
    src = _label_set_table(tmp_path / "t.csv", (1, 2))
    code, out, err = run(capsys, "prepare", src, "--label-set-column", "labels", "-o", tmp_path / "b")
    assert code == 0, err
    note = next(line for line in err.splitlines() if "read as observed positives" in line)
    assert "training rows name 1-2 labels each (mean 1." in note and "of 8" in note
    b = Bundle(tmp_path / "b")
    assert not b.has_full_labels and any("labels read as observed" in n for n in b.meta["notes"])
    code, out, err = run(capsys, "prepare", src, "--label-set-column", "labels", "--full-labels",
                         "-o", tmp_path / "f")
    assert code == 0, err
    assert Bundle(tmp_path / "f").has_full_labels and "read as observed" not in err


def test_label_sets_that_may_be_complete_are_asked_about(tmp_path, capsys):
    src = _label_set_table(tmp_path / "t.csv", (1, 5))
    code, out, err = run(capsys, "prepare", src, "--label-set-column", "labels", "-o", tmp_path / "b")
    assert code == 2 and len(err.strip().splitlines()) == 1 and not (tmp_path / "b").exists()
    assert "are the names in --label-set-column 'labels' complete label sets or only the labels observed?" in err
    assert "pass --full-labels (observed=False) or --observed" in err
    for flag, full in (("--full-labels", True), ("--observed", False)):
        code, out, err = run(capsys, "prepare", src, "--label-set-column", "labels", flag, "-o", tmp_path / flag)
        assert code == 0, err
        assert Bundle(tmp_path / flag).has_full_labels is full


def test_a_wrong_column_name_names_the_users_option_and_every_column(tmp_path, capsys):
    header = [f"c{i}" for i in range(12)] + ["label"]
    write_csv(tmp_path / "w.csv", header, [[str(i)] * 12 + ["cat"] for i in range(6)])
    for opt in ("--label-set-column", "--label-column"):
        code, out, err = run(capsys, "prepare", tmp_path / "w.csv", opt, "lable", "-o", tmp_path / "b")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{opt} 'lable' is not a column of the header (did you mean 'label'?)" in err
        assert "'c11', 'label'" in err and "label_set_column" not in err


def test_the_plural_option_with_label_names_hints_at_the_singular(tmp_path, capsys):
    write_csv(tmp_path / "p.csv", ["f", "label"], [[str(i), LABELS[i % 3]] for i in range(9)])
    code, out, err = run(capsys, "prepare", tmp_path / "p.csv", "--label-columns", "label", "-o", tmp_path / "b")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "is --label-column (singular: one name per row)" in err


def test_a_failed_label_column_read_says_the_error_first_and_alone(tmp_path, capsys):
    write_csv(tmp_path / "e.csv", ["f", "label"], [["1", "cat"], ["2", ""], ["3", "dog"]])
    code, out, err = run(capsys, "prepare", tmp_path / "e.csv", "--label-column", "label", "-o", tmp_path / "b")
    assert code == 2 and err.strip().splitlines() == [err.strip()] and "empty label" in err
    assert "read as observed single positives" not in err
