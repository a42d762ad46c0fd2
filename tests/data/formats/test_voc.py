"""The Pascal VOC loader (spmlkit.data.formats.voc): image lists and XML, the real
VOC2007 where present, and missing or duplicated images refused in one line."""
import shutil

import numpy as np
import pytest

from spmlkit.data import load_dataset
from spmlkit.data.formats import load_voc
from spmlkit.errors import DataFormatError
from tests.helpers.cli import run_cli as run

VOC = ("voc2007", "VOCdevkit", "VOC2007")


def _real(shared_data):
    root = shared_data.joinpath(*VOC)
    if not (root / "ImageSets" / "Main").is_dir():
        pytest.skip(f"PASCAL VOC 2007 not found at {root}")
    return root


def _tiny_copy(src, dst, n_train=6, n_val=4):
    """A VOCdevkit/VOC2007 copy holding the first images of the official train and val
    lists (real JPEGs, the official per-class flags restricted to them)."""
    main_src = src / "ImageSets" / "Main"
    out = dst / "VOCdevkit" / "VOC2007"
    (out / "ImageSets" / "Main").mkdir(parents=True)
    (out / "JPEGImages").mkdir()
    keep = {}
    for split, n in (("train", n_train), ("val", n_val)):
        ids = [ln.split()[0] for ln in (main_src / f"{split}.txt").read_text().splitlines() if ln.strip()][:n]
        keep[split] = ids
        (out / "ImageSets" / "Main" / f"{split}.txt").write_text("".join(f"{i}\n" for i in ids))
        for f in sorted(main_src.glob(f"*_{split}.txt")):
            rows = [ln for ln in f.read_text().splitlines() if ln.split() and ln.split()[0] in set(ids)]
            (out / "ImageSets" / "Main" / f.name).write_text("\n".join(rows) + "\n")
        for i in ids:
            shutil.copy(src / "JPEGImages" / f"{i}.jpg", out / "JPEGImages" / f"{i}.jpg")
    return out, keep


def test_real_voc2007_matches_the_official_class_counts(shared_data):
    _real(shared_data)
    ds = load_dataset("voc2007", data_root=shared_data)
    assert len(ds.label_names) == 20 and ds.label_names[0] == "aeroplane"
    assert len(ds.splits["train"]) == 2500 and len(ds.splits["test"]) == 2508  # official train / val
    counts = dict(zip(ds.label_names, (ds.splits["train"].Y.sum(0) + ds.splits["test"].Y.sum(0)).tolist()))
    assert counts["aeroplane"] == 238 and counts["person"] == 2006 and counts["sheep"] == 96
    assert ds.splits["train"].Y.any(1).all()  # every image has a (non-difficult) positive


def test_tiny_copy_of_real_images_prepares_and_extracts(shared_data, tmp_path, capsys):
    src = _real(shared_data)
    root, keep = _tiny_copy(src, tmp_path / "data")
    code, out, err = run(capsys, "prepare", tmp_path / "data" / "VOCdevkit", "-o", tmp_path / "b")
    assert code == 0, err
    from spmlkit.data import Bundle

    b = Bundle(tmp_path / "b")
    assert b.kind == "images" and b.n_labels == 20
    assert b.size("test") == len(keep["val"]) and b.size("train") + b.size("val") == len(keep["train"])
    ds = load_voc(root)
    assert ds.splits["train"].ids == sorted(keep["train"])
    # the labels are the official flags of those images (1 positive; 0 difficult and -1 negative)
    flags = {ln.split()[0]: ln.split()[1] for ln in (root / "ImageSets" / "Main" / "person_train.txt")
             .read_text().splitlines() if ln.strip()}
    j = ds.label_names.index("person")
    assert [flags[i] == "1" for i in ds.splits["train"].ids] == ds.splits["train"].Y[:, j].tolist()
    code, _, err = run(capsys, "features", tmp_path / "b", "--backbone", "tiny-random", "--image-size", 32)
    assert code == 0, err
    X = np.load(tmp_path / "b" / "features" / "tiny-random-32" / "test.npy")
    assert X.shape == (len(keep["val"]), 32) and np.isfinite(X).all()


def _fake_layout(root, ids=("000005", "000007"), with_images=True):
    main_dir = root / "VOC2007" / "ImageSets" / "Main"
    main_dir.mkdir(parents=True)
    (main_dir / "train.txt").write_text("".join(f"{i}\n" for i in ids))
    (main_dir / "cat_train.txt").write_text(f"{ids[0]}  1\n{ids[1]} -1\n")
    (main_dir / "dog_train.txt").write_text(f"{ids[0]} -1\n{ids[1]}  1\n")
    if with_images:
        (root / "VOC2007" / "JPEGImages").mkdir()
        for i in ids:
            (root / "VOC2007" / "JPEGImages" / f"{i}.jpg").write_bytes(b"")
    return main_dir


def test_missing_image_is_one_line_exit_2(tmp_path, capsys):
    _fake_layout(tmp_path / "v")
    assert load_voc(tmp_path / "v").splits["train"].ids == ["000005", "000007"]
    (tmp_path / "v" / "VOC2007" / "JPEGImages" / "000007.jpg").unlink()
    code, out, err = run(capsys, "prepare", tmp_path / "v", "-o", tmp_path / "b")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "cat_train.txt, line 2" in err and "000007" in err and "does not exist" in err
    assert not (tmp_path / "b").exists()


def test_list_naming_an_unknown_image_is_one_line_exit_2(tmp_path, capsys):
    main_dir = _fake_layout(tmp_path / "v")
    with open(main_dir / "dog_train.txt", "a") as f:
        f.write("009999  1\n")
    code, out, err = run(capsys, "prepare", tmp_path / "v", "-o", tmp_path / "b")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "dog_train.txt, line 3" in err and "'009999' is not in train.txt" in err


def test_list_leaving_out_an_image_and_duplicates_are_refused(tmp_path):
    main_dir = _fake_layout(tmp_path / "v")
    (main_dir / "dog_train.txt").write_text("000005 -1\n")
    with pytest.raises(DataFormatError, match=r"dog_train.txt: does not list 1 image\(s\) of train.txt \(e.g. '000007'\)"):
        load_voc(tmp_path / "v")
    (main_dir / "dog_train.txt").write_text("000005 -1\n000007 1\n000005 1\n")
    with pytest.raises(DataFormatError, match="dog_train.txt, line 3: image id '000005' listed twice"):
        load_voc(tmp_path / "v")


# Every loader on small fixtures written here, and on ../shared/data where present.


def _voc(root, with_lists=True):
    main = root / "VOC2012" / "ImageSets" / "Main"
    main.mkdir(parents=True)
    ann = root / "VOC2012" / "Annotations"
    ann.mkdir()
    objs = {"a1": [("dog", 0), ("cat", 1)], "a2": [("cat", 0)], "b1": [("dog", 0)]}
    for i, o in objs.items():
        ann.joinpath(f"{i}.xml").write_text("<annotation>" + "".join(
            f"<object><name>{n}</name><difficult>{d}</difficult></object>" for n, d in o) + "</annotation>")
    if with_lists:
        main.joinpath("cat_train.txt").write_text("a1  0\na2  1\n")
        main.joinpath("dog_train.txt").write_text("a1  1\na2 -1\n")
        main.joinpath("cat_val.txt").write_text("b1 -1\n")
        main.joinpath("dog_val.txt").write_text("b1  1\n")
    else:
        main.joinpath("train.txt").write_text("a1\na2\n")
        main.joinpath("val.txt").write_text("b1\n")


def test_voc_lists_and_xml(tmp_path):
    _voc(tmp_path / "l")
    ds = load_voc(tmp_path / "l")
    assert ds.label_names == ["cat", "dog"]
    assert ds.splits["train"].Y.tolist() == [[False, True], [True, False]]  # difficult (0) is negative
    assert ds.splits["test"].Y.tolist() == [[False, True]]
    assert ds.splits["train"].paths[0].endswith("JPEGImages/a1.jpg")
    _voc(tmp_path / "x", with_lists=False)
    dx = load_voc(tmp_path / "x")
    assert dx.splits["train"].Y[:, dx.label_names.index("cat")].tolist() == [False, True]  # difficult skipped
