"""The CUB loader (spmlkit.data.formats.cub) on a small fixture written here."""


from spmlkit.data.formats import (load_cub)


def test_cub(tmp_path):
    base = tmp_path / "CUB_200_2011"
    (base / "attributes").mkdir(parents=True)
    (base / "images.txt").write_text("1 001.x/a.jpg\n2 001.x/b.jpg\n3 002.y/c.jpg\n")
    (base / "train_test_split.txt").write_text("1 1\n2 0\n3 1\n")
    (tmp_path / "attributes.txt").write_text("1 has_bill::long\n2 has_wing::red\n3 has_eye::black\n")
    rows = ["1 1 1 3 1.0", "1 2 0 1 2.0", "1 3 1 4 1.0 extra", "2 1 0 1 1.0", "2 2 1 2 1.0", "2 3 0 1 1.0",
            "3 1 0 2 1.0", "3 2 0 1 1.0", "3 3 1 3 1.0"]
    (base / "attributes" / "image_attribute_labels.txt").write_text("\n".join(rows) + "\n")
    ds = load_cub(tmp_path)
    assert ds.label_names[0] == "has_bill::long"
    assert ds.splits["train"].Y.tolist() == [[True, False, True], [False, False, True]]
    assert ds.splits["test"].Y.tolist() == [[False, True, False]]
