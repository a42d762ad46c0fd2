"""docs/presence_only.md, "A day with rasters": every command of the section runs, in
order, on a crop of the dismo rasters (issue 36): raw GBIF records cleaned, covariates
read from the rasters, background drawn, one model for both species, maps, response
curves and importance.  The GeoTIFF has the input's grid, CRS and nodata, and predicting
from the raw training layout equals predicting from the encoded one."""
from __future__ import annotations

import csv
import re
import shlex

import numpy as np
import pytest

from tests.helpers import REPO
from tests.helpers.cli import run_cli

DISMO = "../shared/data/dismo_ex"
#: the crop: rows and columns of the 192 x 186 dismo grid (x -95..-35, y -30..15: most of
#: both species' records, some of them outside, to be counted)
ROWS, COLS = slice(50, 130), slice(60, 180)


def section_commands() -> list[str]:
    text = (REPO / "docs" / "presence_only.md").read_text(encoding="utf-8")
    section = text.split("## 6. A day with rasters", 1)[1].split("\n## ", 1)[0]
    cmds = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        current = ""
        for line in block.splitlines():
            line = line.split("  #", 1)[0].rstrip()
            if current:
                current += " " + line.rstrip("\\").strip()
            elif line.startswith("spml "):
                current = line.rstrip("\\")
            if current and not line.endswith("\\"):
                cmds.append(current.strip())
                current = ""
    return cmds


def test_the_section_lists_the_day():
    cmds = [c.split()[1] for c in section_commands()]
    assert cmds[:2] == ["clean", "prepare"] and {"train", "predict", "explain"} <= set(cmds)
    assert any("--rasters" in c and c.startswith("spml predict") for c in section_commands())


def crop(shared_data, out):
    rasterio = pytest.importorskip("rasterio")
    from rasterio.windows import Window

    out.mkdir()
    win = Window(COLS.start, ROWS.start, COLS.stop - COLS.start, ROWS.stop - ROWS.start)
    for grd in sorted((shared_data / "dismo_ex").glob("*.grd")):
        with rasterio.open(grd) as ds:
            a = ds.read(1, window=win)
            prof = {"driver": "GTiff", "dtype": a.dtype, "count": 1, "crs": ds.crs, "nodata": ds.nodata,
                    "width": a.shape[1], "height": a.shape[0], "transform": ds.window_transform(win)}
        with rasterio.open(out / f"{grd.stem}.tif", "w", **prof) as dst:
            dst.write(a, 1)
    return out


@pytest.mark.slow
@pytest.mark.shared_data
def test_the_day_runs_on_a_crop(shared_data, tmp_path, capsys, monkeypatch):
    rasterio = pytest.importorskip("rasterio")
    from spmlkit.data import Bundle
    from spmlkit.data.rasters import extract, open_stack, same_crs

    if not (shared_data / "dismo_ex" / "bio1.grd").exists():
        pytest.skip("dismo_ex not in the shared data")
    env = crop(shared_data, tmp_path / "crop")
    monkeypatch.chdir(tmp_path)
    # the covariate sidecar the section shows (its CSV block), as the reader would save it
    text = (REPO / "docs" / "presence_only.md").read_text(encoding="utf-8")
    (sidecar,) = re.findall(r"```\n(covariate,name,units,classes\n.*?)```", text, re.S)
    (tmp_path / "covariates.csv").write_text(sidecar, encoding="utf-8")
    outputs = {}
    for cmd in section_commands():
        argv = shlex.split(cmd)[1:]
        argv = [str(env) if a == DISMO else str(shared_data / "dismo_ex" / a[len(DISMO) + 1:])
                if a.startswith(DISMO + "/") else a for a in argv]
        if "--epochs" in argv:  # fast: two epochs
            argv[argv.index("--epochs") + 1] = "2"
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, f"{cmd}\n{err[-2000:]}"
        outputs[argv[0]] = outputs.get(argv[0], "") + out + err
    # cleaning: the raw GBIF export read as Latin-1, its spellings merged, drops counted
    assert "read as Latin-1" in outputs["clean"] and "records: 710 read, 709 kept, 1 dropped" in outputs["clean"]
    assert "'Solanum acaule': 593 records, from 8 spelling(s)" in outputs["clean"]
    # on the crop some records fall outside the rasters: counted, not kept
    m = re.search(r"dropped, outside the rasters: (\d+)", outputs["prepare"])
    assert m and int(m.group(1)) > 0
    b = Bundle(tmp_path / "bundles" / "sa")
    assert b.label_names == ["Bradypus variegatus", "Solanum acaule"] and "val" in b.meta["sizes"]
    assert b.meta["encoding"]["categorical"].keys() == {"biome"}
    # the map: the input's grid, CRS and nodata; one band per species
    with rasterio.open(env / "bio1.tif") as src, rasterio.open(tmp_path / "maps" / "sa.tif") as o:
        assert (o.width, o.height, o.transform, o.nodata) == (src.width, src.height, src.transform, src.nodata)
        assert same_crs(o.crs, src.crs) and o.count == 2
        P = o.read(masked=True)
        valid = ~np.ma.getmaskarray(src.read(1, masked=True))
    assert np.array_equal(~np.ma.getmaskarray(P[0]), valid & ~np.ma.getmaskarray(P[0])) and P.count() > 0
    for f in ("maps/sa_Bradypus_variegatus.png", "maps/sa_Solanum_acaule.png", "explain/importance.png",
              "explain/response_Solanum_acaule.png", "explain/importance.csv", "explain/response.csv"):
        assert (tmp_path / f).exists(), f
    # predicting from the raw training layout (covariates by name, biome as its level) = from the encoded bundle
    xy = b.xy("val")
    raw, status = extract(open_stack([env]), xy)
    names = open_stack([env]).names
    with open(tmp_path / "sites.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["siteid", "x", "y", *reversed(names)])
        for i, (p, v) in enumerate(zip(xy, raw)):
            w.writerow([f"s{i}", *p, *reversed([f"{x:g}" for x in v])])
    assert (status == 0).all()
    assert run_cli(capsys, "predict", "runs/sa", "sites.csv", "-o", "raw.csv")[0] == 0
    assert run_cli(capsys, "predict", "runs/sa", "bundles/sa", "--split", "val", "-o", "enc.csv")[0] == 0
    raw_rows, enc_rows = list(csv.reader(open("raw.csv"))), list(csv.reader(open("enc.csv")))
    assert raw_rows[0] == enc_rows[0] == ["id", "x", "y", "Bradypus variegatus", "Solanum acaule"]
    assert [r[1:] for r in raw_rows[1:]] == [r[1:] for r in enc_rows[1:]]
    assert [r[0] for r in enc_rows[1:]] == b.ids("val")  # the records' ids (file:line) and background ids
