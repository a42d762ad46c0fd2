"""spml explain: response curves and permutation importance of a model trained on raster
covariates, as CSV and PNG in the -o folder; a model without covariates is refused."""
from __future__ import annotations

import csv

import pytest

pytest.importorskip("rasterio")

from tests.helpers.cli import one_line_error, run_cli as run  # noqa: E402
from tests.helpers.rasters import located_records, make_stack, write_records  # noqa: E402


def test_explain_a_raster_model(tmp_path, capsys):
    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "r.csv", located_records(20))
    assert run(capsys, "prepare", rec, "--rasters", env, "--background-points", "60", "-o", tmp_path / "b")[0] == 0
    assert run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", "2", "-o", tmp_path / "run")[0] == 0
    code, out, err = run(capsys, "explain", tmp_path / "run", "-o", tmp_path / "ex", "--points", "4",
                         "--repeats", "2")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "ex").iterdir() if not p.name.startswith(".")) == [
        "importance.csv", "importance.png", "response.csv", "response_Aus_alpha.png", "response_Bus_beta.png"]
    resp = list(csv.DictReader(open(tmp_path / "ex" / "response.csv")))
    assert {r["covariate"] for r in resp} == {"rain", "soil", "temp"}
    assert len([r for r in resp if r["covariate"] == "temp"]) == 4 * 2  # 4 points x 2 species


def test_explain_needs_a_model_trained_on_covariates(tmp_path, capsys, toy_csv):
    assert run(capsys, "prepare", toy_csv, "--label-columns", "a,b,c", "--full-labels", "-o", tmp_path / "b")[0] == 0
    assert run(capsys, "train", tmp_path / "b", "-m", "an", "--epochs", "1", "-o", tmp_path / "run")[0] == 0
    code, out, err = run(capsys, "explain", tmp_path / "run", "-o", tmp_path / "ex")
    assert code == 2 and "no covariate encoding" in one_line_error(err) and not (tmp_path / "ex").exists()
