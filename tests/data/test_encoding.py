"""The covariate encoding (issue 36): one-hot levels learnt on training rows, applied by
name to a raw table; unseen levels and missing covariates are one-line errors naming them."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.data.encoding import CovariateEncoding, is_raw_layout, read_covariate_table
from spmlkit.errors import CorruptFileError, DataFormatError


def enc():
    return CovariateEncoding.fit(np.array([[1.5, 2, 0], [0.5, 3, 1], [2.5, 2, 2]]), ["t", "soil", "u"],
                                 categorical=["soil"], passthrough=("siteid", "x", "y"))


def test_feature_names_groups_and_transform():
    e = enc()
    assert e.feature_names == ["t", "soil=2", "soil=3", "u"]
    assert [(c, cols.tolist()) for c, cols in e.groups()] == [("t", [0]), ("soil", [1, 2]), ("u", [3])]
    assert e.transform(np.array([[4.0, 3, 7.0], [0.0, 2, 1.0]])).tolist() == [[4, 0, 1, 7], [0, 1, 0, 1]]
    assert e.categorical == ["soil"]


def test_round_trip_and_damaged_description():
    e = enc()
    assert CovariateEncoding.from_dict(e.to_dict()) == e
    for bad in ({"covariates": "t"}, {"covariates": ["t"], "categorical": {"z": [1]}}, {"categorical": {}},
                {"covariates": ["t", "t"]}, None):
        with pytest.raises(CorruptFileError, match="damaged covariate encoding"):
            CovariateEncoding.from_dict(bad, source="m.json")


def test_an_unseen_level_names_the_column_the_level_and_the_line():
    e = enc()
    with pytest.raises(DataFormatError, match=r"new.csv, line 4: covariate 'soil' has level 5 \(and 1 more row"
                                              r"\(s\)\), which the model never saw in training \(its levels: 2, 3\)"):
        e.transform(np.array([[0, 2, 0], [0, 5, 0], [0, 5, 0]]), source="new.csv", lines=[2, 4, 5])
    # the older rule of 'spml prepare' test tables: the row sets none of the covariate's columns
    assert e.transform(np.array([[0, 5, 0]]), unseen="ignore").tolist() == [[0, 0, 0, 0]]
    assert e.unseen_level(np.array([[0, 2, 0], [0, 9, 0]])) == ("soil", 9.0, 1, 1)


def test_read_by_name_in_any_order_with_ids_and_places(tmp_path):
    p = tmp_path / "new.csv"
    p.write_text("u,x,y,siteid,soil,notes,t\n1,10,20,s1,3,hello,0.5\n2,11,21,s2,2,,1.5\n")
    tab = read_covariate_table(p, enc())
    assert tab.X.tolist() == [[0.5, 3, 1], [1.5, 2, 2]] and tab.ids == ["s1", "s2"]
    assert tab.xy.tolist() == [[10, 20], [11, 21]] and tab.lines == [2, 3]
    assert is_raw_layout(["t", "soil", "u"], enc()) and not is_raw_layout(["t", "soil=2", "soil=3", "u"], enc())


@pytest.mark.parametrize("text, match", [
    ("t,u\n1,2\n", r"line 1: missing covariate column 'soil'; the model was trained on t, soil, u"),
    ("t,soil,u\n1,2,\n", r"line 2: missing value of covariate 'u'"),
    ("t,soil,u\n1,2,3\nabc,2,3\n", r"line 3: covariate 't' is 'abc', not a number"),
    ("t,soil,u\n", r"no data rows"),
])
def test_bad_tables_are_one_line_naming_the_column(tmp_path, text, match):
    p = tmp_path / "new.csv"
    p.write_text(text)
    with pytest.raises(DataFormatError, match=match):
        read_covariate_table(p, enc())


def test_a_named_id_column_must_be_there(tmp_path):
    p = tmp_path / "new.csv"
    p.write_text("t,soil,u,plot\n1,2,3,p1\n")
    assert read_covariate_table(p, enc(), id_column="plot").ids == ["p1"]
    with pytest.raises(DataFormatError, match="id column 'site' is not in the header"):
        read_covariate_table(p, enc(), id_column="site")
