"""Format detection (spmlkit.data.formats.base) through ``load_any``."""

import pytest

from spmlkit.data import load_any
from spmlkit.errors import DataFormatError, UnknownNameError


def test_load_any_detects_formats(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("f,l\n1,0\n2,1\n")
    ds = load_any(str(p), labels_last=1, observed=False)
    assert ds.splits["train"].Y.shape == (2, 1)
    with pytest.raises(DataFormatError, match="not found"):
        load_any(str(tmp_path / "missing.csv"))
    with pytest.raises(UnknownNameError):
        load_any("no_such_dataset")


# ------------------------------------------------------------ one XML reader
def test_read_xml_words_missing_and_malformed_files(tmp_path):
    from spmlkit.data.formats.base import read_xml

    ok = tmp_path / "ok.xml"
    ok.write_text("<a><b/></a>")
    assert read_xml(ok, missing="x").tag == "a"
    with pytest.raises(DataFormatError, match=r"nope\.xml: the thing is missing$"):
        read_xml(tmp_path / "nope.xml", missing="the thing is missing")
    bad = tmp_path / "bad.xml"
    bad.write_text("<a>\n<b>\n</a>\n")
    with pytest.raises(DataFormatError, match=r"bad\.xml, line 3: invalid XML: mismatched tag") as exc:
        read_xml(bad, missing="x")
    assert exc.value.line == 3


def test_mulan_and_voc_readers_keep_their_messages(tmp_path):
    from spmlkit.data.formats import load_voc
    from spmlkit.data.formats.arff import read_label_xml

    with pytest.raises(DataFormatError, match=r"labels\.xml: label XML file not found$"):
        read_label_xml(tmp_path / "labels.xml")
    (tmp_path / "labels.xml").write_text("<labels>\n<label name='a'>\n</labels>")
    with pytest.raises(DataFormatError, match=r"labels\.xml, line 3: invalid XML"):
        read_label_xml(tmp_path / "labels.xml")
    main = tmp_path / "voc" / "VOC2012" / "ImageSets" / "Main"
    main.mkdir(parents=True)
    ann = tmp_path / "voc" / "VOC2012" / "Annotations"
    ann.mkdir()
    (ann / "a1.xml").write_text("<annotation><object><name>dog</name></object></annotation>")
    (main / "train.txt").write_text("a1\na2\n")
    with pytest.raises(DataFormatError, match=r"a2\.xml: annotation file listed in the split but missing$"):
        load_voc(tmp_path / "voc")
    (ann / "a2.xml").write_text("<annotation><object>\n</annotation>")
    with pytest.raises(DataFormatError, match=r"a2\.xml, line 2: invalid XML"):
        load_voc(tmp_path / "voc")
