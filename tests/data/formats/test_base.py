"""Format detection (spmlkit.data.formats.base) through ``load_any``."""

import pytest

from spmlkit.data import load_any
from spmlkit.errors import DataFormatError, UnknownNameError


def test_load_any_detects_formats(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("f,l\n1,0\n2,1\n")
    ds = load_any(str(p), labels_last=1)
    assert ds.splits["train"].Y.shape == (2, 1)
    with pytest.raises(DataFormatError, match="not found"):
        load_any(str(tmp_path / "missing.csv"))
    with pytest.raises(UnknownNameError):
        load_any("no_such_dataset")
