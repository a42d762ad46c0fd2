"""The ARFF loader (spmlkit.data.formats.arff): MEKA and Mulan headers, sparse rows,
and bad input refused in one line naming the file and line."""
import warnings

import pytest

from spmlkit.data.formats import read_arff
from spmlkit.errors import DataFormatError

ARFF = """% comment
@relation 'toy: -C -2'
@attribute f1 numeric
@attribute 'f 2' real
@attribute colour {red,green}
@attribute 'lab\\'a' {0,1}
@attribute labb {0,1}
@data
1.5,2,red,1,0
-1,0.5,green,0,1
"""


def test_arff_meka_header_and_quoted_names(tmp_path):
    p = tmp_path / "toy.arff"
    p.write_text(ARFF)
    a = read_arff(p)
    assert a.label_names == ["lab'a", "labb"]
    assert a.feature_names == ["f1", "f 2", "colour=red", "colour=green"]
    assert a.X.tolist() == [[1.5, 2, 1, 0], [-1, 0.5, 0, 1]]
    assert a.Y.tolist() == [[True, False], [False, True]]


def test_arff_mulan_xml_and_sparse(tmp_path):
    xml = tmp_path / "t.xml"
    xml.write_text('<?xml version="1.0"?><labels xmlns="http://mulan.sourceforge.net/labels">'
                   '<label name="A"></label><label name="B b"></label></labels>')
    p = tmp_path / "t.arff"
    p.write_text("@relation t\n@attribute x numeric\n@attribute y numeric\n@attribute A {0,1}\n"
                 "@attribute 'B b' {0,1}\n@data\n{0 2.5,3 1}\n{1 -1,2 1}\n{}\n")
    a = read_arff(p, labels_xml=xml)
    assert a.X.tolist() == [[2.5, 0], [0, -1], [0, 0]]
    assert a.Y.tolist() == [[False, True], [True, False], [False, False]]


@pytest.mark.parametrize("body,msg,line", [
    ("1,2,red,1\n", "row has 4 values; expected 5", 9),
    ("1,2,red,2,0\n", "has value '2'; expected 0 or 1", 9),
    ("1,x,red,1,0\n", "expected a number", 9),
    ("1,2,blue,1,0\n", "expected one of", 9),
    ("1,?,red,1,0\n", "missing value", 9),
])
def test_arff_errors_name_file_and_line(tmp_path, body, msg, line):
    p = tmp_path / "bad.arff"
    p.write_text(ARFF.split("@data\n")[0] + "@data\n" + body)
    with pytest.raises(DataFormatError) as exc:
        read_arff(p)
    assert msg in str(exc.value) and f"bad.arff, line {line}" in str(exc.value)


def test_arff_without_label_information(tmp_path):
    p = tmp_path / "n.arff"
    p.write_text("@relation n\n@attribute x numeric\n@data\n1\n")
    with pytest.raises(DataFormatError, match="cannot tell which attributes are labels"):
        read_arff(p)


# Input readers refuse bad input in one line (issue 14 §3-4) and the new-user traps of
# issue 15: one label per row read as full labels, Mulan folders not found by name,
# dataset statistics that disagree with what the loader keeps.


# ------------------------------------------------------------------------------ ARFF
FLAGS_LIKE = """@relation flags
@attribute landmass {1,2,3,4,5,6}
@attribute area numeric
@attribute red {0,1}
@attribute green {0,1}
@data
1,0.5,1,0
9,0.7,0,1
"""


def test_arff_numeric_nominal_value_outside_its_set_is_refused(tmp_path):
    p = tmp_path / "f.arff"
    p.write_text(FLAGS_LIKE)
    with pytest.raises(DataFormatError) as exc:
        read_arff(p, label_names=["red", "green"])
    msg = str(exc.value)
    assert "f.arff, line 8" in msg and "'landmass'" in msg and "'9'" in msg and "{1,2,3,4,5,6}" in msg
    # the declared values are still read as numbers, written either way
    p.write_text(FLAGS_LIKE.replace("9,0.7", "6.0,0.7"))
    a = read_arff(p, label_names=["red", "green"])
    assert a.feature_names == ["landmass", "area"] and a.X[:, 0].tolist() == [1.0, 6.0]


def test_arff_numeric_nominal_check_applies_to_sparse_rows(tmp_path):
    p = tmp_path / "s.arff"
    p.write_text(FLAGS_LIKE.split("@data\n")[0] + "@data\n{0 2,2 1}\n{0 7,3 1}\n")
    with pytest.raises(DataFormatError, match=r"s\.arff, line 8: nominal feature 'landmass' has value '7'"):
        read_arff(p, label_names=["red", "green"])


def test_arff_duplicate_attribute_names_are_refused(tmp_path):
    p = tmp_path / "d.arff"
    p.write_text("@relation d\n@attribute x numeric\n@attribute A {0,1}\n@attribute A {0,1}\n@data\n1,0,1\n")
    with pytest.raises(DataFormatError) as exc:
        read_arff(p, label_names=["A"])
    assert "d.arff, line 4" in str(exc.value) and "'A' is declared twice (first on line 3)" in str(exc.value)


def test_arff_without_feature_attributes_is_refused(tmp_path):
    p = tmp_path / "nf.arff"
    p.write_text("@relation nf\n@attribute id string\n@attribute A {0,1}\n@attribute B {0,1}\n@data\nx,0,1\ny,1,1\n")
    with pytest.raises(DataFormatError, match=r"nf\.arff: no feature attributes: every attribute is a label or was "
                                               r"dropped \(id\)"):
        read_arff(p, label_names=["A", "B"])


def test_arff_not_utf8_names_the_line(tmp_path):
    p = tmp_path / "l.arff"
    p.write_bytes(b"@relation l\n@attribute x numeric\n@attribute 'caf\xe9' {0,1}\n@data\n1,1\n")
    with pytest.raises(DataFormatError, match=r"l\.arff, line 3: byte 0xe9 is not valid UTF-8.*expected a UTF-8"):
        read_arff(p, label_names=["café"])


def test_arff_float32_overflow_is_one_error_without_a_warning(tmp_path):
    p = tmp_path / "o.arff"
    p.write_text("@relation o\n@attribute x numeric\n@attribute y numeric\n@attribute A {0,1}\n@data\n"
                 "1,2,1\n3,1e39,0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataFormatError) as exc:
            read_arff(p, label_names=["A"])
    assert "o.arff, line 7: feature 'y' has value 1e+39, which overflows float32" in str(exc.value)
