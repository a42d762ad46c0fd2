"""The covariate sidecar (spmlkit.data.covariate_info): JSON and CSV read alike, labels for
figures, and a bad sidecar refused in one line (exit 2, nothing written)."""
from __future__ import annotations

import pytest

from spmlkit.data.covariate_info import class_label, covariate_label, read_covariate_info
from spmlkit.errors import DataFormatError
from tests.helpers.cli import one_line_error, run_cli

WANT = {"bio1": {"name": "annual mean temperature", "units": "°C × 10"},
        "biome": {"name": "biome", "classes": {1.0: "tropical moist forest", 13.0: "desert"}}}


def test_json_and_csv_sidecars_read_the_same(tmp_path):
    j = tmp_path / "info.json"
    j.write_text('{"bio1": {"name": "annual mean temperature", "units": "°C × 10"},\n'
                 ' "biome": {"name": "biome", "classes": {"1": "tropical moist forest", "13.0": "desert"}}}',
                 encoding="utf-8")
    c = tmp_path / "info.csv"
    c.write_text("covariate,name,units,classes\nbio1,annual mean temperature,°C × 10,\n"
                 "biome,biome,,1=tropical moist forest; 13=desert\n", encoding="utf-8")
    assert read_covariate_info(j, ["bio1", "bio12", "biome"]) == WANT == read_covariate_info(c)
    assert covariate_label(WANT, "bio1") == "annual mean temperature (bio1), °C × 10"
    assert covariate_label(WANT, "biome") == "biome" and covariate_label(WANT, "bio12") == "bio12"
    assert class_label(WANT, "biome", 13) == "13 desert" and class_label(WANT, "biome", 4) == "4"


@pytest.mark.parametrize("name, text, line, words", [
    ("a.json", '{"bio1": {"name": "t",\n "unit": "C"}}', None, "unknown key 'unit'"),
    ("a.json", '{"bio1": {"name": "t",\n "units": }}', 2, "not valid JSON"),
    ("a.json", '{"bio99": {"name": "t"}}', None, "'bio99' is not one of the model's"),
    ("a.json", '{"biome": {"classes": {"forest": "1"}}}', None, "class level 'forest' is not a number"),
    ("a.csv", "covariate,label\nbio1,t\n", 1, "expected the header"),
    ("a.csv", "covariate,name,classes\nbio1,t,\nbiome,b,1 forest\n", 3, "is not level=class name"),
    ("a.csv", "covariate,name\nbio1,t\nbio1,u\n", 3, "described twice"),
])
def test_a_bad_sidecar_is_one_line_naming_the_file_and_line(tmp_path, name, text, line, words):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError) as e:
        read_covariate_info(p, ["bio1", "biome"])
    msg = str(e.value)
    assert words in msg and name in msg and "\n" not in msg
    if line is not None:
        assert f"line {line}" in msg


def test_explain_with_a_bad_sidecar_is_exit_2_and_writes_nothing(tmp_path, capsys):
    pytest.importorskip("rasterio")
    from tests.helpers.rasters import located_records, make_stack, write_records

    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "r.csv", located_records(20))
    assert run_cli(capsys, "prepare", rec, "--rasters", env, "--background-points", "60", "-o", tmp_path / "b")[0] == 0
    assert run_cli(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", 1, "-o", tmp_path / "run")[0] == 0
    bad = tmp_path / "info.json"
    bad.write_text('{"rainfall": {"units": "mm"}}', encoding="utf-8")
    code, _, err = run_cli(capsys, "explain", tmp_path / "run", "-o", tmp_path / "ex", "--covariate-info", bad)
    assert code == 2 and "'rainfall' is not one of the model's (rain, soil, temp)" in one_line_error(err)
    assert not (tmp_path / "ex").exists()
    good = tmp_path / "info.csv"
    good.write_text("covariate,name,units,classes\ntemp,temperature,°C,\nsoil,soil,,1=sand;2=clay\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "explain", tmp_path / "run", "-o", tmp_path / "ex", "--covariate-info", good)
    assert code == 0, err and "response.csv" in out
