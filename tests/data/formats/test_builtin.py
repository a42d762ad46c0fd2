"""The built-in formats' registrations (spmlkit.data.formats.builtin): every format is
detected by its extension or folder layout and loaded by its reader."""
import numpy as np
import pytest

from spmlkit.data import load_any
from spmlkit.data.formats.base import detect_format, format_names
from spmlkit.errors import ConfigError


def test_every_builtin_format_is_registered():
    assert {"voc", "coco", "nuswide", "cub", "mulan", "arff", "csv", "tsv", "npz"} <= set(format_names())


@pytest.mark.parametrize("name, fmt", [("x.csv", "csv"), ("x.TXT", "csv"), ("x.tsv", "tsv"), ("x.tab", "tsv"),
                                       ("x.npz", "npz"), ("x.arff", "arff"), ("x.json", "coco"), ("x.csv.gz", "csv")])
def test_files_are_detected_by_their_extension(tmp_path, name, fmt):
    assert detect_format(tmp_path / name) == fmt


@pytest.mark.parametrize("layout, fmt", [(["Annotations/"], "voc"), (["annotations/"], "coco"),
                                         (["Groundtruth/"], "nuswide"), (["images.txt"], "cub"),
                                         (["emotions.xml", "emotions.arff"], "mulan")])
def test_folders_are_detected_by_their_layout(tmp_path, layout, fmt):
    for entry in layout:
        (tmp_path / entry).mkdir() if entry.endswith("/") else (tmp_path / entry).write_text("")
    assert detect_format(tmp_path) == fmt


def test_unknown_layouts_ask_for_format(tmp_path):
    with pytest.raises(ConfigError, match=r"cannot tell the format of .*x.xyz from its extension; pass --format \("):
        detect_format(tmp_path / "x.xyz")
    with pytest.raises(ConfigError, match="cannot tell the format of folder"):
        detect_format(tmp_path)


def test_a_tab_separated_table_loads_like_the_comma_separated_one(tmp_path):
    rows = [["f1", "f2", "a", "b"], ["0.5", "1", "1", "0"], ["2", "-1", "1", "1"]]
    (tmp_path / "t.csv").write_text("\n".join(",".join(r) for r in rows) + "\n")
    (tmp_path / "t.tsv").write_text("\n".join("\t".join(r) for r in rows) + "\n")
    a = load_any(str(tmp_path / "t.csv"), labels_last=2, observed=False)
    b = load_any(str(tmp_path / "t.tsv"), labels_last=2, observed=False)
    assert a.label_names == b.label_names == ["a", "b"]
    assert np.array_equal(a.splits["train"].X, b.splits["train"].X)
    assert np.array_equal(a.splits["train"].Y, b.splits["train"].Y) and b.splits["train"].Y.sum() == 3


def test_npz_with_a_separate_test_file(tmp_path):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "tr.npz", X=rng.normal(size=(6, 2)), Y=rng.random((6, 3)) < 0.5)
    np.savez(tmp_path / "te.npz", X=rng.normal(size=(4, 2)), Y=rng.random((4, 3)) < 0.5)
    ds = load_any(str(tmp_path / "tr.npz"), test=str(tmp_path / "te.npz"))
    assert (len(ds.splits["train"]), len(ds.splits["test"])) == (6, 4)
