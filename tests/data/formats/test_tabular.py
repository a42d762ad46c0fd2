"""CSV tables (spmlkit.data.formats.tabular; NPZ archives: test_npz.py): label layouts, official splits,
bad input refused in one line (issue 14 §3-4), and one label per row read as
observed single positives unless told otherwise (issue 15)."""
import csv
import warnings

import numpy as np
import pytest

from spmlkit.data import Bundle, load_any
from spmlkit.data.formats import read_table
from spmlkit.errors import ConfigError, DataFormatError
from tests.helpers.cli import run_cli as run
from tests.helpers.cli import strict_one_line_error as one_line_error




# ------------------------------------------------------------------------------- CSV
def test_csv_quoted_newline_in_a_numeric_feature_is_refused(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b'f1,l1\n"1\n2",1\n')
    with pytest.raises(DataFormatError) as exc:
        read_table(p, label_columns=["l1"])
    assert "q.csv, line 2: feature column 'f1' has value '1\\n2'; expected a number" in str(exc.value)


def test_csv_quoted_fields_spanning_lines_keep_file_line_numbers(tmp_path):
    p = tmp_path / "ids.csv"
    p.write_bytes(b'id,f1,l1\n"a\nb",1.5,1\nc,2,0\n"d\r\ne\nf",3,1\ng,x,1\n')
    with pytest.raises(DataFormatError, match=r"ids\.csv, line 8: feature column 'f1' has value 'x'"):
        read_table(p, label_columns=["l1"], id_column="id")
    p.write_bytes(b'id,f1,l1\n"a\nb",1.5,1\nc,2,0\r\n"d\r\ne\nf",3,1\n')
    s, names, feats = read_table(p, label_columns=["l1"], id_column="id")
    assert s.ids == ["a\nb", "c", "d\r\ne\nf"] and s.X[:, 0].tolist() == [1.5, 2.0, 3.0]
    assert s.Y[:, 0].tolist() == [True, False, True]


def test_csv_unclosed_quote_is_named(tmp_path):
    p = tmp_path / "u.csv"
    p.write_text('f1,l1,l2\n1,1,0\n"2,1,1\n3,0,1\n')
    with pytest.raises(DataFormatError, match=r"u\.csv, line 3: row has 1 fields; the header has 3; a quoted field "
                                              r"of this row runs over several lines — is a closing quote missing\?"):
        read_table(p, labels_last=2)


def test_csv_label_name_with_a_line_break_is_refused(tmp_path):
    p = tmp_path / "n.csv"
    p.write_bytes(b'f1,label\n1,cat\n2,"dog\nsofa"\n')
    with pytest.raises(DataFormatError, match=r"n\.csv, line 3: label 'dog\\nsofa' .* contains a line break"):
        read_table(p, label_column="label", observed=True)


@pytest.mark.parametrize("content,line", [
    (b"f\xe91,l1\n1,1\n", 1),  # a Latin-1 header
    (b"f1,l1\n1,1\n2,1\n\xff\xfe,0\n", 4),
])
def test_csv_not_utf8_is_refused_with_the_line(tmp_path, content, line):
    p = tmp_path / "enc.csv"
    p.write_bytes(content)
    with pytest.raises(DataFormatError) as exc:
        read_table(p, label_columns=["l1"])
    assert f"enc.csv, line {line}: byte 0x" in str(exc.value) and "expected a UTF-8 encoded file" in str(exc.value)


def test_csv_byte_order_mark_and_crlf_still_read(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbff1,l1\r\n1,1\r\n2,0\r\n")
    s, names, feats = read_table(p, label_columns=["l1"])
    assert feats == ["f1"] and names == ["l1"] and s.X[:, 0].tolist() == [1.0, 2.0]


def test_csv_float32_overflow_names_line_and_column_without_a_warning(tmp_path, capsys):
    p = tmp_path / "big.csv"
    p.write_text("f1,f2,l1\n1,2,1\n3,-4e38,0\n")
    err = one_line_error(capsys, "prepare", p, "--labels-last", 1, "-o", tmp_path / "b")
    assert "big.csv, line 3: feature column 'f2' has value -4e+38, which overflows float32" in err
    assert not (tmp_path / "b").exists()


def test_feature_table_for_prediction_uses_file_lines(tmp_path):
    from spmlkit.data.formats.tabular import read_feature_table

    p = tmp_path / "new.csv"
    p.write_bytes(b'id,f1\n"x\ny",1\nz,1e39\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataFormatError, match=r"new\.csv, line 4: feature column 'f1' has value 1e\+39"):
            read_feature_table(p)


def test_many_label_columns_are_linear(tmp_path):
    """20,000 label columns, named one by one (as --label-columns a,b,...) and by a glob:
    the column matching was quadratic (about 20 s here for the named case). No time is
    asserted (wall-clock limits fail on a loaded machine); this checks the result."""
    L = 20_000
    names = [f"label_{j}" for j in range(L)]
    p = tmp_path / "wide.csv"
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["f1", *names])
        for i in range(3):
            w.writerow([i, *(1 if j == i else 0 for j in range(L))])
    for label_columns in (names, ["label_*"]):
        s, labels, feats = read_table(p, label_columns=label_columns)
        assert labels == names and feats == ["f1"] and s.Y.shape == (3, L) and s.Y.sum() == 3


def test_label_columns_keep_pattern_then_header_order_once(tmp_path):
    p = tmp_path / "o.csv"
    p.write_text("f,b1,a1,b2,a2\n1,0,1,1,0\n")
    s, labels, _ = read_table(p, label_columns=["a*", "b2", "a1", "b*"])
    assert labels == ["a1", "a2", "b2", "b1"]


# ------------------------------------------------------------------------------- NPZ


# ------------------------------------------------------- one label per row (issue 15)
def _photos(tmp_path, n=30, labels=("cat", "dog", "sofa")):
    d = tmp_path / "photos"
    d.mkdir()
    with open(d / "photos.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["path", "label"])
        for i in range(n):
            (d / f"im{i}.png").touch()
            w.writerow([f"im{i}.png", labels[i % len(labels)]])
    return d / "photos.csv"


def test_label_column_is_read_as_observed_single_positives_by_default(tmp_path, capsys):
    p = _photos(tmp_path)
    code, out, err = run(capsys, "prepare", p, "--path-column", "path", "--label-column", "label",
                         "-o", tmp_path / "b")
    assert code == 0, err
    b = Bundle(tmp_path / "b")
    assert not b.has_full_labels and b.regime == "observed"
    Z = b.observations("train")
    assert ((Z == 1).sum(1) == 1).all()
    notes = [line for line in err.splitlines() if "one label per row" in line]
    assert len(notes) == 1 and "observed single positives" in notes[0] and "--full-labels" in notes[0]
    assert "test mAP (full labels)" not in out


def test_full_labels_flag_keeps_a_multiclass_table_full(tmp_path, capsys):
    p = _photos(tmp_path)
    code, out, err = run(capsys, "prepare", p, "--path-column", "path", "--label-column", "label", "--full-labels",
                         "-o", tmp_path / "b")
    assert code == 0, err
    assert Bundle(tmp_path / "b").has_full_labels
    assert "single positives" not in err  # the user said so: no second-guessing
    code, out, err = run(capsys, "prepare", p, "--path-column", "path", "--label-column", "label", "--full-labels",
                         "--observed", "-o", tmp_path / "c")
    assert code == 2 and "contradict" in err and not (tmp_path / "c").exists()


def test_wide_table_with_one_positive_per_row_is_read_as_observed(tmp_path, capsys):
    """Issue 37: the README's own-table line on single-positive data: read as observations
    (one note naming both options), never as full labels that score every other label as
    a true negative; --full-labels keeps them complete."""
    p = tmp_path / "w.csv"
    rng = np.random.default_rng(0)
    with open(p, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["f1", "a", "b", "c"])
        for i in range(30):
            w.writerow([float(rng.normal()), *(int(j == i % 3) for j in range(3))])
    code, out, err = run(capsys, "prepare", p, "--labels-last", 3, "-o", tmp_path / "b")
    notes = [line for line in err.splitlines() if "exactly one positive" in line]
    assert code == 0 and len(notes) == 1 and "--observed" in notes[0] and "--full-labels" in notes[0]
    b = Bundle(tmp_path / "b")
    assert not b.has_full_labels and b.regime == "observed"
    assert (np.asarray(b.observations("train")) == 1).sum(1).tolist() == [1] * b.size("train")
    code, out, err = run(capsys, "prepare", p, "--labels-last", 3, "--full-labels", "-o", tmp_path / "f")
    assert code == 0 and "exactly one positive" not in err and Bundle(tmp_path / "f").has_full_labels
    with pytest.warns(UserWarning, match="read as observed single positives"):
        assert not load_any(str(p), labels_last=3).has_full_labels
    # --observed / --full-labels say nothing; a table that may be multi-label is asked about
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = load_any(str(p), labels_last=3, observed=True)
        assert not ds.has_full_labels
        assert load_any(str(p), labels_last=3, observed=False).has_full_labels
        p.write_text("f1,a,b\n1,1,1\n2,0,1\n")
        with pytest.raises(ConfigError, match="--labels-last 2"):
            load_any(str(p), labels_last=2)
        assert load_any(str(p), labels_last=2, observed=False).has_full_labels


def test_python_api_label_column_default_and_override(tmp_path):
    p = _photos(tmp_path)
    seen = []
    ds = load_any(str(p), path_column="path", label_column="label", log=seen.append)
    assert not ds.has_full_labels and len(seen) == 1 and "one label per row" in seen[0]
    assert any("observed single positives" in n for n in ds.notes)
    seen.clear()
    ds = load_any(str(p), path_column="path", label_column="label", observed=False, log=seen.append)
    assert ds.has_full_labels and not seen  # observed=False: the caller said the labels are complete


# Every loader on small fixtures written here, and on ../shared/data where present.


def test_csv_wide_set_and_observed(tmp_path):
    p = tmp_path / "wide.csv"
    p.write_text("id,f1,f2,cat,dog\na,1,2,1,0\nb,3,4,1,1\n")
    s, labels, feats = read_table(p, label_columns=["cat", "dog"], id_column="id")
    assert labels == ["cat", "dog"] and feats == ["f1", "f2"] and s.Y.tolist() == [[True, False], [True, True]]
    s2, labels2, _ = read_table(p, labels_last=2, id_column="id")
    assert labels2 == labels
    q = tmp_path / "set.tsv"
    q.write_text("path\tlabels\nimg1.jpg\tcat\nimg2.jpg\tdog;-cat\n")
    (tmp_path / "img1.jpg").touch(), (tmp_path / "img2.jpg").touch()  # image files must exist
    s3, names, _ = read_table(q, label_set_column="labels", path_column="path", observed=True)
    assert names == ["cat", "dog"] and s3.Z.tolist() == [[1, 0], [-1, 1]]
    assert s3.paths[0] == str(tmp_path / "img1.jpg")
    with pytest.raises(DataFormatError, match="line 3"):
        read_table(q, label_set_column="labels", path_column="path")  # '-cat' without --observed


@pytest.mark.parametrize("content,msg,line", [
    ("f1,l1\n1,2\n", "expected 0 or 1", 2),
    ("f1,l1\nx,1\n", "expected a number", 2),
    ("f1,l1\n1,1,3\n", "row has 3 fields", 2),
    ("f1,l1\nnan,1\n", "non-finite", 2),
])
def test_csv_errors(tmp_path, content, msg, line):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    with pytest.raises(DataFormatError) as exc:
        read_table(p, label_columns=["l1"])
    assert msg in str(exc.value) and f"line {line}" in str(exc.value)


def test_csv_needs_label_layout(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("f,l\n1,0\n")
    with pytest.raises(DataFormatError, match="say where the labels are"):
        read_table(p)
    with pytest.raises(DataFormatError, match="matches no column"):
        read_table(p, label_columns=["zz*"])


# ------------------------------------------------ sparse labels from tables (issue 32)
def test_long_table_rows_of_one_example_are_merged_by_id(tmp_path):
    """A long table lists an example once per label: rows with the same id are one example
    (labels merged, features shared); the labels are sparse whatever their number."""
    from spmlkit.sparse_labels import SparseLabels

    p = tmp_path / "long.csv"
    p.write_text("id,f0,f1,label\n" "a,1,2,cat\n" "b,3,4,dog\n" "a,1,2,sofa\n" "c,5,6,cat\n" "a,1,2,cat\n")
    s, names, feats = read_table(p, label_column="label", id_column="id", observed=True)
    assert names == ["cat", "dog", "sofa"] and feats == ["f0", "f1"] and s.ids == ["a", "b", "c"]
    assert isinstance(s.Z, SparseLabels)
    assert s.Z.dense().tolist() == [[1, 0, 1], [0, 1, 0], [1, 0, 0]]
    assert s.X.tolist() == [[1, 2], [3, 4], [5, 6]]


def test_long_table_with_different_features_for_one_id_is_refused(tmp_path):
    p = tmp_path / "long.csv"
    p.write_text("id,f0,label\n" "a,1,cat\n" "a,2,dog\n")
    with pytest.raises(DataFormatError, match="line 3.*'a' is listed on several rows with different values of "
                                              "feature column 'f0' \\(line 2\\)"):
        read_table(p, label_column="label", id_column="id", observed=True)


def test_contradictory_observations_in_one_row_are_refused_with_the_line(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("f0,tags\n" "1,cat\n" "2,cat;-cat\n")
    with pytest.raises(DataFormatError, match="line 3.*'cat'.*positive on one line and negative"):
        read_table(p, label_set_column="tags", observed=True)


def test_table_read_in_blocks_equals_one_block(tmp_path, monkeypatch):
    import spmlkit.data.formats.tabular as tab

    rng = np.random.default_rng(0)
    p = tmp_path / "w.csv"
    rows = ["f0,f1,a,b,c"] + [f"{rng.normal():.4f},{rng.normal():.4f},{int(rng.random() < .3)},"
                              f"{int(rng.random() < .3)},{int(rng.random() < .5)}" for _ in range(57)]
    p.write_text("\n".join(rows) + "\n")
    s1, *_ = read_table(p, label_columns=["a", "b", "c"])
    monkeypatch.setattr(tab, "BLOCK_ROWS", 5)
    s2, *_ = read_table(p, label_columns=["a", "b", "c"])
    assert np.array_equal(s1.X, s2.X) and np.array_equal(np.asarray(s1.Y), np.asarray(s2.Y))


# ------------------------------------------------------------------ labels mean one thing
def _table(path, rows, header="f,label"):
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_label_names_are_nfc_and_stripped_once(tmp_path):
    nfd, nfc = "cafe\u0301", "caf\u00e9"
    p = _table(tmp_path / "t.csv", [f"1,{nfd}", f"2, {nfc} ", "3,cat", "4,cat "])
    _, names, _ = read_table(p, label_column="label", observed=True)
    assert names == [nfc, "cat"]
    p = _table(tmp_path / "s.csv", [f"1,{nfd};cat ", f"2,{nfc}"], header=f"f, lab{nfd}")
    split, names, _ = read_table(p, label_set_column=f"lab{nfc}", observed=True)
    assert names == [nfc, "cat"] and np.asarray(split.Z).sum() == 3


@pytest.mark.parametrize("marker", ["NA", "N/A", "NaN", "null"])
def test_na_is_a_missing_value_not_a_label(tmp_path, marker):
    p = _table(tmp_path / "s.csv", [f"1,cat;{marker}", f"2,{marker}", "3,dog"])
    split, names, _ = read_table(p, label_set_column="label", observed=True)
    assert names == ["cat", "dog"] and np.asarray(split.Z).tolist() == [[1, 0], [0, 0], [0, 1]]
    p = _table(tmp_path / "one.csv", ["1,cat", f"2,{marker}"])
    with pytest.raises(DataFormatError, match=rf"line 3: missing \('{marker}'\) label in column 'label'"):
        read_table(p, label_column="label", observed=True)
    p = _table(tmp_path / "w.csv", [f"1,1,{marker}", "2,0,1"], header="f,cat,dog")
    split, names, _ = read_table(p, label_columns=["cat", "dog"], observed=True)
    assert np.asarray(split.Z).tolist() == [[1, 0], [0, 1]]


def test_class_codes_in_a_label_column_are_refused(tmp_path, capsys):
    p = _table(tmp_path / "c.csv", ["1,-1", "2,0", "3,1", "4,1"])
    with pytest.raises(DataFormatError) as e:
        read_table(p, label_column="label", observed=True)
    assert "holds only the codes -1, 0, 1: class codes, not label names" in str(e.value)
    err = one_line_error(capsys, "prepare", p, "--label-column", "label", "-o", tmp_path / "b")
    assert "class codes" in err and not (tmp_path / "b").exists()


@pytest.mark.parametrize("name,said", [("a;b", "contains ';'"), ("id", "a label is named 'id'"),
                                       ("x", "a label is named 'x'"), ("labels", "a label is named 'labels'")])
def test_label_names_that_outputs_would_make_ambiguous_are_refused(tmp_path, name, said):
    p = tmp_path / "c.csv"
    with open(p, "w", newline="") as fh:
        csv.writer(fh).writerows([["f", "label"], ["1", name], ["2", "cat"]])
    with pytest.raises(DataFormatError) as e:
        read_table(p, label_column="label", observed=True)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_contradicting_repeated_ids_of_a_label_set_table_are_refused(tmp_path):
    p = _table(tmp_path / "r.csv", ["a,1,cat", "b,2,dog", "a,1,dog", "c,3,cat", "c,3,cat"], header="id,f,label")
    with pytest.raises(DataFormatError) as e:
        read_table(p, label_set_column="label", id_column="id", observed=True)
    assert "id 'a' (lines 2 and 4) repeated with different labels" in str(e.value)
    p = _table(tmp_path / "ok.csv", ["a,1,cat", "b,2,dog", "c,3,cat", "c,3,cat"], header="id,f,label")
    assert len(read_table(p, label_set_column="label", id_column="id", observed=True)[0].ids) == 4


def test_observed_data_without_a_positive_is_refused(tmp_path, capsys):
    p = _table(tmp_path / "n.csv", ["1,-1,0", "2,0,-1", "3,,-1"], header="f,cat,dog")
    with pytest.raises(DataFormatError, match="no observed positive in the table"):
        read_table(p, label_columns=["cat", "dog"], observed=True)
    err = one_line_error(capsys, "prepare", p, "--label-columns", "cat,dog", "--observed", "-o", tmp_path / "b")
    assert "no observed positive" in err and not (tmp_path / "b").exists()
