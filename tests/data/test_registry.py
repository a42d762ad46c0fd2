"""Datasets by name (spmlkit.data.registry): built-ins, Mulan folders under the data
root, ../shared/data where present, and the error for an unknown name."""

from pathlib import Path

import numpy as np
import pytest

from spmlkit.data import Bundle, load_any, load_dataset
from spmlkit.errors import ConfigError, UnknownNameError
from tests.helpers.cli import run_cli as run

# Every loader on small fixtures written here, and on ../shared/data where present.


def test_builtin_yeast_and_unknown_names():
    ds = load_dataset("yeast")
    assert ds.splits["train"].X.shape == (1500, 103) and ds.splits["test"].Y.shape == (917, 14)
    with pytest.raises(UnknownNameError, match="unknown dataset 'nope'"):
        load_dataset("nope")
    with pytest.raises(ConfigError, match="--data-root"):
        load_dataset("scene", data_root="/nonexistent")


# ------------------------------------------------------------------ shared data
@pytest.mark.shared_data
def test_shared_mulan_sets(shared_data):
    expected = {"scene": (1211, 1196, 6, 294), "emotions": (391, 202, 6, 72), "yeast-arff": (1500, 917, 14, 103),
                "medical": (333, 645, 45, 1449), "birds": (322, 323, 19, 260), "flags": (129, 65, 7, 19)}
    for name, (ntr, nte, L, D) in expected.items():
        ds = load_dataset(name, data_root=shared_data)
        assert (len(ds.splits["train"]), len(ds.splits["test"]), ds.n_labels, ds.splits["train"].X.shape[1]) == \
               (ntr, nte, L, D), name
    # the built-in river copy of yeast is the Mulan set, split for split
    river, mulan = load_dataset("yeast"), load_dataset("yeast-arff", data_root=shared_data)
    for s in ("train", "test"):
        assert np.allclose(river.splits[s].X, mulan.splits[s].X, atol=1e-6)
        assert (river.splits[s].Y == mulan.splits[s].Y).all()
    birds = load_dataset("birds", data_root=shared_data)
    assert "Swainson's Thrush" in birds.label_names  # escaped quote in the ARFF header


@pytest.mark.shared_data
def test_shared_coco_subsets(shared_data):
    ds = load_dataset("coco-tiny", data_root=shared_data)
    tr = ds.splits["train"]
    assert len(tr) == 80 and ds.n_labels == 80
    assert abs(tr.Y.sum(1).mean() - 3.775) < 1e-3  # cardinality stated in PROVENANCE.md
    from pathlib import Path

    assert all(Path(p).exists() for p in tr.paths)
    tiny = load_dataset("tiny-coco", data_root=shared_data)
    assert len(tiny.splits["train"]) == 30  # 32 images, 2 without annotations dropped


# Input readers refuse bad input in one line (issue 14 §3-4) and the new-user traps of
# issue 15: one label per row read as full labels, Mulan folders not found by name,
# dataset statistics that disagree with what the loader keeps.


# ------------------------------------------------------------ Mulan folders by name
def _mulan(root, name, split=True):
    d = root / name
    d.mkdir(parents=True)
    (d / f"{name}.xml").write_text('<?xml version="1.0"?><labels xmlns="http://mulan.sourceforge.net/labels">'
                                   '<label name="A"/><label name="B"/></labels>')
    head = (f"@relation {name}\n@attribute x numeric\n@attribute y numeric\n@attribute A {{0,1}}\n"
            "@attribute B {0,1}\n@data\n")
    rows = "".join(f"{i},{i % 3},{i % 2},{int(i % 3 != 0)}\n" for i in range(20))
    if split:
        (d / f"{name}-train.arff").write_text(head + rows)
        (d / f"{name}-test.arff").write_text(head + rows[:40])
    else:
        (d / f"{name}.arff").write_text(head + rows)
    return d


def test_any_mulan_folder_under_the_data_root_is_found_by_name(tmp_path, capsys):
    root = tmp_path / "data"
    _mulan(root, "enron")
    _mulan(root, "corel", split=False)
    ds = load_dataset("enron", data_root=root)
    assert ds.name == "enron" and set(ds.splits) == {"train", "test"} and ds.label_names == ["A", "B"]
    assert len(ds.splits["train"]) == 20
    ds = load_any("corel", data_root=root)
    assert set(ds.splits) == {"train"} and ds.splits["train"].X.shape == (20, 2)
    code, out, err = run(capsys, "prepare", "enron", "--data-root", root, "-o", tmp_path / "b")
    assert code == 0, err
    assert Bundle(tmp_path / "b").meta["name"] == "enron"
    code, out, err = run(capsys, "datasets", "--data-root", root)
    assert code == 0, err
    rows = {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}
    assert "train 20/test 5" in rows["enron"] and "train 20 " in rows["corel"] + " "


def test_unknown_dataset_name_says_a_path_works(tmp_path, capsys):
    with pytest.raises(UnknownNameError) as exc:
        load_any("enron", data_root=tmp_path)
    msg = str(exc.value)
    assert msg.startswith("unknown dataset 'enron'; expected one of: birds,") and "yeast" in msg
    assert "file or folder path" in msg and "enron-train.arff" in msg and str(tmp_path) in msg
    code, out, err = run(capsys, "prepare", "enron", "-o", tmp_path / "b")
    assert code == 2 and "file or folder path" in err and len(err.strip().splitlines()) == 1


# ------------------------------------------------------------ dataset_rows (spml datasets)
def _mulan_one_file(root: Path, name: str) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / f"{name}.xml").write_text('<labels xmlns="http://mulan.sourceforge.net/labels"><label name="A"/>'
                                   '<label name="B"/></labels>')
    (d / f"{name}.arff").write_text(f"@relation {name}\n@attribute x numeric\n@attribute A {{0,1}}\n"
                                    "@attribute B {0,1}\n@data\n" + "".join(f"{i},{i % 2},1\n" for i in range(6)))


def test_dataset_rows_without_a_data_root(small_registry):
    rows = small_registry.dataset_rows(None, stats=True)
    assert [(r.name, r.where) for r in rows] == [("tiny", "built-in"), ("gone", "needs --data-root")]
    tiny, gone = rows
    assert tiny.sizes == {"train": 4, "test": 2} and tiny.n_labels == 3 and tiny.n_features == 5
    assert tiny.cardinality == pytest.approx(7 / 4)  # positives per training example (Cole Eq. A1)
    assert tiny.notes == ("dropped 1 row without labels",) and tiny.description == "a tiny set"
    assert gone.sizes is None and gone.description == "a data-root set"


def test_dataset_rows_with_a_data_root_finds_mulan_folders_and_reports_failures(small_registry, tmp_path):
    _mulan_one_file(tmp_path, "enron")
    rows = {r.name: r for r in small_registry.dataset_rows(tmp_path, stats=True)}
    assert list(rows) == ["tiny", "enron", "gone"]  # built-in first, then by name
    assert rows["enron"].where == "data root" and rows["enron"].sizes == {"train": 6}
    assert rows["enron"].n_labels == 2 and rows["enron"].cardinality == pytest.approx(1.5)
    assert rows["gone"].where == "not found" and rows["gone"].sizes is None
    assert rows["gone"].description.startswith("dataset 'gone' is not built in")
    no_stats = small_registry.dataset_rows(tmp_path, stats=False)
    assert [(r.name, r.where, r.sizes) for r in no_stats] == [("tiny", "built-in", None), ("enron", "data root", None),
                                                              ("gone", "data root", None)]
