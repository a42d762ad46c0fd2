"""The NUS-WIDE loader (spmlkit.data.formats.nuswide) on a small fixture written here."""

import pytest

from spmlkit.data.formats import (load_nuswide)
from spmlkit.errors import DataFormatError


def test_nuswide(tmp_path):
    (tmp_path / "ImageList").mkdir()
    gt = tmp_path / "Groundtruth" / "TrainTestLabels"
    gt.mkdir(parents=True)
    (tmp_path / "Concepts81.txt").write_text("sky\nwater\n")
    (tmp_path / "ImageList" / "TrainImagelist.txt").write_text("a\\1.jpg\nb\\2.jpg\n")
    (tmp_path / "ImageList" / "TestImagelist.txt").write_text("c\\3.jpg\n")
    for c, tr, te in (("sky", "1\n0\n", "1\n"), ("water", "1\n1\n", "0\n")):
        (gt / f"Labels_{c}_Train.txt").write_text(tr)
        (gt / f"Labels_{c}_Test.txt").write_text(te)
    ds = load_nuswide(tmp_path)
    assert ds.label_names == ["sky", "water"] and ds.splits["train"].Y.tolist() == [[True, True], [False, True]]
    assert ds.splits["train"].paths[0].endswith("Flickr/a/1.jpg")
    (gt / "Labels_water_Test.txt").write_text("0\n0\n")
    with pytest.raises(DataFormatError, match="2 lines; the image list"):
        load_nuswide(tmp_path)
