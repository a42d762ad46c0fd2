"""The covariate sidecar's CSV at its edges (spmlkit.data.covariate_info): a row with more
cells than the header (an unquoted comma in a name or unit) is refused in one line naming
the file and the line, never read with its extra cells dropped; fewer cells are fine."""
from __future__ import annotations

import pytest

from spmlkit.data.covariate_info import read_covariate_info
from spmlkit.errors import DataFormatError


@pytest.mark.parametrize("text, line", [
    ("covariate,name,units\nbio1,annual mean temperature,°C, x 10\n", 2),
    ("covariate,name\nbio1,t\nbiome,biome,1=forest\n", 3),
    ("covariate,name,units,classes\nbio1,t,C,,\n", 2),
], ids=["comma-in-units", "class-cell-without-header", "trailing-empty-cell"])
def test_a_row_with_more_cells_than_the_header_is_one_line(tmp_path, text, line):
    p = tmp_path / "info.csv"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError) as e:
        read_covariate_info(p, ["bio1", "biome"])
    msg = str(e.value)
    assert "cells but the header has" in msg and "info.csv" in msg and f"line {line}" in msg and "\n" not in msg


def test_a_row_with_fewer_cells_reads_the_cells_given(tmp_path):
    p = tmp_path / "info.csv"
    p.write_text("covariate,name,units\nbio1,t\n", encoding="utf-8")
    assert read_covariate_info(p, ["bio1"]) == {"bio1": {"name": "t"}}
