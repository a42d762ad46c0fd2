"""The COCO loader (spmlkit.data.formats.coco): instances JSON, the largest-instance
areas of the biased regimes, and what it drops."""
import json

import pytest

from spmlkit.data.formats import load_coco
from spmlkit.errors import DataFormatError
from spmlkit.labels import observe


# Biased ("realistic") single positives: the kept positive is the most frequent, the least
# frequent or the largest-object label of each example (spmlkit.labels), and COCO's
# largest-instance areas that feed the last one (data/formats/coco.py).


def _coco_with_areas(tmp_path):
    data = {"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.jpg"}, {"id": 3, "file_name": "c.jpg"}],
            "categories": [{"id": 5, "name": "cat"}, {"id": 7, "name": "dog"}],
            "annotations": [{"image_id": 1, "category_id": 5, "area": 10.0},
                            {"image_id": 1, "category_id": 5, "area": 30.0},  # the largest cat instance counts
                            {"image_id": 1, "category_id": 7, "area": 20.0},
                            {"image_id": 2, "category_id": 7, "bbox": [0, 0, 4, 5]},  # no area: bbox w*h
                            {"image_id": 2, "category_id": 5, "area": 3.0},
                            {"image_id": 3, "category_id": 5, "area": 1.0}]}
    p = tmp_path / "instances.json"
    p.write_text(json.dumps(data))
    return p


def test_coco_records_the_largest_instance_area(tmp_path):
    from spmlkit.data.formats.coco import read_coco_instances

    split, names, _ = read_coco_instances(_coco_with_areas(tmp_path), tmp_path)
    assert names == ["cat", "dog"]
    assert split.areas.tolist() == [[30.0, 20.0], [3.0, 20.0], [1.0, 0.0]]
    Z = observe(split.Y, "single_positive_largest", seed=0, areas=split.areas)
    assert Z.tolist() == [[1, 0], [0, 1], [1, 0]]
    bad = json.loads(_coco_with_areas(tmp_path).read_text())
    bad["annotations"][0]["area"] = -1
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    from spmlkit.errors import DataFormatError

    with pytest.raises(DataFormatError, match="annotation #0"):
        read_coco_instances(tmp_path / "bad.json", tmp_path)


# Every loader on small fixtures written here, and on ../shared/data where present.


def test_coco_json(tmp_path):
    j = tmp_path / "inst.json"
    j.write_text(json.dumps({"images": [{"id": 3, "file_name": "c.jpg"}, {"id": 1, "file_name": "a.jpg"},
                                        {"id": 2, "file_name": "b.jpg"}],
                             "annotations": [{"image_id": 1, "category_id": 7}, {"image_id": 1, "category_id": 7},
                                             {"image_id": 3, "category_id": 9}],
                             "categories": [{"id": 9, "name": "nine"}, {"id": 7, "name": "seven"}]}))
    ds = load_coco(j, tmp_path / "imgs")
    s = ds.splits["train"]
    assert ds.label_names == ["nine", "seven"] and s.ids == ["1", "3"]  # image 2 has no annotation
    assert s.Y.tolist() == [[False, True], [True, False]]
    assert load_coco(j, tmp_path, keep_unannotated=True).splits["train"].Y.shape == (3, 2)
    bad = tmp_path / "bad.json"
    bad.write_text('{"images": [], "annotations": [{"image_id": 5, "category_id": 1}], "categories": [{"id": 1}]}')
    with pytest.raises(DataFormatError, match="unknown image_id 5"):
        load_coco(bad, tmp_path)


# Input readers refuse bad input in one line (issue 14 §3-4) and the new-user traps of
# issue 15: one label per row read as full labels, Mulan folders not found by name,
# dataset statistics that disagree with what the loader keeps.


# --------------------------------------------------------------- dataset statistics
def _coco(root):
    import json

    ann = root / "annotations"
    ann.mkdir(parents=True)
    for split, n, unannotated in (("train", 4, 1), ("val", 2, 0)):
        (root / f"{split}2017").mkdir()
        images = [{"id": i, "file_name": f"{i}.jpg"} for i in range(n)]
        anns = [{"image_id": i, "category_id": 1 + i % 2, "bbox": [0, 0, 2, 2]} for i in range(n - unannotated)]
        (ann / f"instances_{split}2017.json").write_text(json.dumps(
            {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}))


def test_coco_loader_says_what_it_dropped(tmp_path):
    from spmlkit.data.formats import load_coco_folder

    _coco(tmp_path / "c")
    ds = load_coco_folder(tmp_path / "c")
    assert len(ds.splits["train"]) == 3 and len(ds.splits["test"]) == 2
    assert ds.notes == ["dropped 1 of the 4 train images without annotations (as the SPML papers' preprocessing)"]
