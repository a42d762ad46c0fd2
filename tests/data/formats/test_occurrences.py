"""Occurrence records (issue 36): a raw export cleaned with every dropped row counted by
reason, names reduced to the species, and records on a raster stack (covariates at the
records, off-raster and nodata records counted, seeded background, categorical layers,
spatial-block validation)."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.data.formats.occurrences import clean_records, species_name, write_clean_records
from spmlkit.errors import ConfigError, DataFormatError
from tests.helpers.rasters import HEIGHT, SEA, WIDTH, centre, located_records, make_stack, write_records


def test_species_names():
    assert species_name("Solanum acaule Bitter") == "Solanum acaule"
    assert species_name("solanum ACAULE subsp. aemulans") == "Solanum acaule"
    assert species_name("Solanum") is None and species_name("Solanum sp.") is None
    assert species_name("Solanum spp") is None and species_name("Solanum acaule Bitter", "as-is") == \
        "Solanum acaule Bitter"


def test_hybrids_stay_apart_and_abbreviated_genera_are_warned(tmp_path):
    assert species_name("Bradypus variegatus × tridactylus") == "Bradypus variegatus × tridactylus"
    assert species_name("bradypus variegatus x tridactylus Linnaeus") == "Bradypus variegatus × tridactylus"
    assert species_name("Solanum ×ajanhuiri Juz. & Bukasov") == "Solanum × ajanhuiri"
    assert species_name("Mentha aquatica × Mentha spicata") == "Mentha aquatica × Mentha spicata"
    assert species_name("Solanum x") is None and species_name("Xylopia xylopioides") == "Xylopia xylopioides"
    rec = clean_records(write_records(tmp_path / "r.csv", [
        ["Bradypus variegatus", "-60", "-5"], ["Bradypus variegatus × tridactylus", "-61", "-5"],
        ["B. variegatus", "-62", "-5"], ["B. variegatus", "-63", "-5"]]))
    assert sorted(set(rec.species)) == ["B. variegatus", "Bradypus variegatus", "Bradypus variegatus × tridactylus"]
    assert ("warning: 'B. variegatus' (2 records) has an abbreviated genus: kept apart from 'Bradypus variegatus'; "
            "write the genus in full in the input to merge them") in rec.report()


def test_a_raw_export_is_cleaned_with_every_drop_counted(tmp_path):
    raw = write_records(tmp_path / "gbif.csv", [
        ["Solanum acaule Bitter", "-65.1", "-22.2"],
        ["solanum acaule acaule", "-65.2", "-22.3"],
        ["Solanum acaule f. acaule", "-65.1", "-22.2"],  # the first record again: a duplicate
        ["", "-65", "-22"],
        ["Solanum", "-65", "-22"],
        ["Solanum acaule", "NA", "-22"],
        ["Solanum acaule", "-65,5", "-22"],  # a decimal comma: quoted by csv, not a number
        ["Solanum acaule", "-265", "-22"],
        ["Solanum acaule", "0", "0"],
        ["Bradypus variegatus", "-60", "-5"],
        ["Bradypus variégatus", "-61", "-5"],  # Latin-1 accent in the name
    ], header=("species", "lon", "lat"), encoding="latin-1")
    c = clean_records(raw)
    assert c.read == 11 and c.kept == 4
    assert {k: v for k, v in c.dropped.items() if v} == {
        "duplicate": 1, "no species name": 1, "not identified to species": 1, "no coordinates": 1,
        "coordinates not numbers": 1, "coordinates out of range": 1, "coordinates 0, 0": 1}
    assert c.species == ["Solanum acaule", "Solanum acaule", "Bradypus variegatus", "Bradypus variégatus"]
    assert c.ids[:2] == ["gbif.csv:2", "gbif.csv:3"] and c.xy[0].tolist() == [-65.1, -22.2]
    assert sorted(c.spellings["Solanum acaule"]) == ["Solanum acaule Bitter", "solanum acaule acaule"]
    report = "\n".join(c.report())
    assert "not UTF-8; read as Latin-1" in report and "records: 11 read, 4 kept, 7 dropped" in report
    assert "'Solanum acaule': 2 records, from 2 spelling(s)" in report
    out = write_clean_records(c, tmp_path / "clean.csv")
    again = clean_records(out)  # a cleaned file reads back unchanged
    assert again.species == c.species and np.array_equal(again.xy, c.xy) and again.ids == c.ids


def test_columns_are_found_or_named(tmp_path):
    p = write_records(tmp_path / "r.csv", [["a b", 1, 2]], header=("scientificName", "decimalLongitude", "Lat"))
    assert clean_records(p).xy.tolist() == [[1.0, 2.0]]
    q = write_records(tmp_path / "q.csv", [["a b", 1, 2]], header=("taxon_name", "east", "north"))
    with pytest.raises(DataFormatError, match=r"q.csv, line 1: no species column .*--label-column"):
        clean_records(q)
    assert clean_records(q, species_column="taxon_name", x_column="east", y_column="north").kept == 1
    with pytest.raises(DataFormatError, match="no record left after cleaning"):
        clean_records(write_records(tmp_path / "e.csv", [["a b", "NA", "NA"]]))


def on_rasters(tmp_path, rows, **kw):
    pytest.importorskip("rasterio")
    from spmlkit.data.formats.occurrences import records_on_rasters

    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "rec.csv", rows)
    notes = []
    ds = records_on_rasters(rec, [env], background=kw.pop("background", 40), log=notes.append, **kw)
    return ds, notes


def test_records_on_rasters(tmp_path):
    rows = located_records(10) + [["Aus alpha", *centre(*SEA[0])], ["Aus alpha", 100.0, 0.0]]
    ds, notes = on_rasters(tmp_path, rows, seed=1)
    tr = ds.splits["train"]
    assert ds.label_names == ["Aus alpha", "Bus beta"] and ds.background
    n_rec = len(set(map(tuple, (tuple(r) for r in located_records(10)))))  # duplicates dropped by cleaning
    assert (tr.Z.sum(1) == 1).sum() == n_rec and (tr.Z.sum(1) == 0).sum() == 40
    text = "\n".join(notes)
    assert "dropped, outside the rasters: 1" in text and "dropped, on a nodata cell: 1" in text
    assert f"records on the rasters: {n_rec} of {n_rec + 2} cleaned records kept" in text
    assert "background: 40 cells drawn from 189 valid cells (seed 1)" in text
    # soil is uint8 with 3 levels: detected as categorical; temp is float, rain has 11 levels
    assert ds.encoding["categorical"] == {"soil": [1.0, 2.0, 3.0]}
    assert ds.feature_names == ["rain", "soil=1", "soil=2", "soil=3", "temp"]
    # an integer layer with more levels than the rule takes is read as continuous, with a note
    assert [n for n in notes if n.startswith("note: layer")] == [
        "note: layer 'rain' holds whole numbers with 12 values and is read as continuous (ordered); if its values "
        "are classes (a biome, a land-cover code), declare it: --categorical rain"]
    assert tr.ids[0] == "rec.csv:2" and tr.ids[-1] == "background:39" and tr.xy.shape == (len(tr.Z), 2)
    assert ds.places["crs"] == "EPSG:4326" and ds.places["rasters"]["layers"] == ["rain", "soil", "temp"]
    # the covariates are the rasters' values at the records
    from spmlkit.data.rasters import extract, open_stack

    vals, _ = extract(open_stack([tmp_path / "env"]), tr.xy[:3])
    assert np.array_equal(tr.X[:3, [0, 4]], vals[:, [0, 2]].astype(np.float32))


def test_declared_categorical_blocks_and_one_per_cell(tmp_path):
    rows = located_records(10)
    rows.append(list(rows[0][:1]) + [rows[0][1] + 0.1, rows[0][2]])  # same species, same cell, another place
    ds, notes = on_rasters(tmp_path, rows, categorical=[], one_per_cell=True, val_blocks=3, min_train_records=1)
    assert ds.encoding["categorical"] == {} and "val" in ds.splits
    assert "dropped, same species in the same cell: " in "\n".join(notes)
    # records per species and split are said; too few training records is one line naming the species
    assert any(line.startswith("  Aus alpha: train ") for line in notes)
    with pytest.raises(ConfigError, match=r"leaves species '\w+ \w+' with \d+ training records of 10"):
        on_rasters(tmp_path, rows, categorical=[], one_per_cell=True, val_blocks=3)
    ds, notes = on_rasters(tmp_path, rows, categorical=[], val_blocks=6, folds=3, spatial_test=True,
                           min_train_records=1)
    assert set(ds.splits) == {"train", "val", "test"} and "fold 2 tests" in "\n".join(notes)
    with pytest.raises(ConfigError, match="go with --val-blocks"):
        on_rasters(tmp_path, rows, spatial_test=True)
    with pytest.raises(ConfigError, match="--categorical 'bio1' is not a raster layer"):
        on_rasters(tmp_path, rows, categorical=["bio1"])


def test_records_off_the_rasters(tmp_path):
    with pytest.raises(DataFormatError, match=r"no record falls on a valid raster cell .* are x and y swapped"):
        on_rasters(tmp_path, [["Aus alpha", 50.0, 10.0], ["Bus beta", 49.0, 11.0]])
    rows = located_records(5) + [["Aus alpha", 100.0, 0.0]]
    with pytest.raises(DataFormatError, match=r"record rec.csv:12 \(Aus alpha, x 100, y 0\) is outside the rasters"):
        on_rasters(tmp_path, rows, off_raster="error")


def test_crs_mismatch_names_both(tmp_path):
    with pytest.raises(ConfigError, match=r"the records \(rec.csv, --crs\) are in EPSG:3857 but the rasters "
                                          r"\(rain.tif, ...\) are in EPSG:4326"):
        on_rasters(tmp_path, located_records(3), crs="EPSG:3857")


def test_a_coordinate_with_an_underscore_is_not_a_number(tmp_path):
    """Python's float reads '1_0' as 10; a data file never means that."""
    raw = write_records(tmp_path / "u.csv", [["Solanum acaule", "1_0", "-22"], ["Solanum acaule", "-65", "2_2"],
                                             ["Solanum acaule", "-65", "-22"]])
    c = clean_records(raw)
    assert c.kept == 1 and c.dropped["coordinates not numbers"] == 2 and c.xy.tolist() == [[-65.0, -22.0]]


def test_species_names_are_nfc(tmp_path):
    raw = write_records(tmp_path / "n.csv", [["Bradypus varie\u0301gatus", "-60", "-5"],
                                             ["Bradypus vari\u00e9gatus", "-61", "-5"]])
    assert clean_records(raw).species == ["Bradypus vari\u00e9gatus"] * 2


# --------------------------------- mutation (issue 44): the helpers other modules call, unit-tested here
def test_spatial_blocks_hold_out_whole_cells_of_the_grid():
    from spmlkit.data.formats.occurrences import spatial_blocks

    rng = np.random.default_rng(5)
    for _ in range(40):
        n, blocks = int(rng.integers(1, 60)), int(rng.integers(1, 6))
        xy = rng.random((n, 2)) * 10
        if rng.random() < 0.3:
            xy[:, int(rng.integers(2))] = 3.0  # every point on one line: that axis has one cell
        bounds = None if rng.random() < 0.5 else (np.array([-1.0, -1.0]), np.array([11.0, 11.0]))
        fraction, seed = float(rng.choice([0.0, 0.2, 0.5, 1.0])), int(rng.integers(100))
        held = spatial_blocks(xy, blocks, fraction, seed, bounds)
        lo, hi = bounds if bounds is not None else (xy.min(0), xy.max(0))
        cell = [tuple(min(blocks - 1, int((v - a) / (b - a) * blocks)) if b > a else 0 for v, a, b in zip(p, lo, hi))
                for p in xy]
        fate = {}
        for c, h in zip(cell, held.tolist()):
            assert fate.setdefault(c, h) == h  # a cell is held out whole or not at all
        assert sum(fate.values()) == max(1, int(round(fraction * len(fate))))
        assert np.array_equal(spatial_blocks(xy, blocks, fraction, seed, bounds), held)  # seeded
    xy = np.c_[np.arange(100.0), np.zeros(100)]
    draws = {tuple(spatial_blocks(xy, 10, seed=s)) for s in range(6)}
    assert len(draws) > 1 and all(sum(d) == 20 for d in draws)  # 2 of 10 cells of 10 rows
    assert spatial_blocks(xy, 10).tolist() == spatial_blocks(xy, 10, 0.2, 0).tolist()  # the defaults


def _clean(species):
    from spmlkit.data.formats.occurrences import CleanRecords

    n = len(species)
    return CleanRecords(species=list(species), xy=np.arange(2.0 * n).reshape(n, 2), ids=[f"r{i}" for i in range(n)],
                        read=n + 3, spellings={s: {s: species.count(s)} for s in set(species)}, notes=["earlier"])


def test_select_species_keeps_the_named_species_only():
    from spmlkit.data.formats.occurrences import select_species

    clean = _clean(["Aus a", "Bus b", "Aus a", "Cus c"])
    out = select_species(clean, [" Aus a ", "Cus c", "Aus a", ""], "r.csv")
    assert out.species == ["Aus a", "Aus a", "Cus c"] and out.ids == ["r0", "r2", "r3"]
    assert out.xy.tolist() == [[0, 1], [4, 5], [6, 7]] and out.read == 7 and out.dropped is clean.dropped
    assert out.spellings == {"Aus a": {"Aus a": 2}, "Cus c": {"Cus c": 1}}
    assert out.notes == ["earlier", "--species: the records of 'Aus a', 'Cus c' only (3 of 4; the other species' "
                                    "records are not read)"]
    assert clean.notes == ["earlier"]  # the input is left as it was
    with pytest.raises(DataFormatError) as e:
        select_species(clean, ["Aus a", "Dus d"], "r.csv")
    assert str(e.value) == "r.csv: --species 'Dus d': no record of that species (the species here: 'Aus a', 'Bus b', " \
                           "'Cus c')"
    with pytest.raises(DataFormatError) as e:
        select_species(clean, [" "], "r.csv")
    assert str(e.value) == "r.csv: --species '': no record of that species (the species here: 'Aus a', 'Bus b', 'Cus c')"
    many = _clean([f"S{i:02d} x" for i in range(9)])
    with pytest.raises(DataFormatError) as e:
        select_species(many, ["Zus"], "r.csv")
    assert str(e.value).endswith("(the species here: " + ", ".join(repr(f"S{i:02d} x") for i in range(8)) + ", ...)")
    eight = _clean([f"S{i:02d} x" for i in range(8)])
    with pytest.raises(DataFormatError) as e:
        select_species(eight, ["Zus"], "r.csv")
    assert str(e.value).endswith(", 'S07 x')")


def test_a_clean_records_file_is_known_by_its_header(tmp_path):
    from spmlkit.data.formats.occurrences import is_clean_records_file

    (tmp_path / "c.csv").write_text("id,species,x,y\nr0,Aus a,1,2\n", encoding="utf-8")
    (tmp_path / "o.csv").write_text("species,x,y\nAus a,1,2\n", encoding="utf-8")
    (tmp_path / "b.csv").write_bytes(b"id,sp\xe9cies,x,y\n")
    (tmp_path / "s.csv").write_text("  id,species,x,y  \n", encoding="utf-8")
    assert is_clean_records_file(tmp_path / "c.csv") and is_clean_records_file(tmp_path / "s.csv")
    assert not is_clean_records_file(tmp_path / "o.csv") and not is_clean_records_file(tmp_path / "b.csv")
    assert not is_clean_records_file(tmp_path / "none.csv")


def test_cleaning_counts_every_drop_at_its_bounds_and_says_so_in_whole_lines(tmp_path):
    rows = [["Aus a", "180", "90"], ["Aus a", "-180", "-90"], ["Aus a", "180.5", "1"], ["Aus a", "1", "90.5"],
            ["Aus a", "inf", "1"], ["Aus a", "1", "nan"], ["Aus a", "2", "-inf"],
            ["", "1", "1"], ["NA", "2", "2"], ["Aus", "1", "1"], ["Bus sp.", "1", "1"], ["Aus a", "", "1"],
            ["Aus a", "1", "NULL"], ["Aus a", "1_0", "1"], ["Aus a", "x", "1"], ["Aus a", "0", "0"], ["Bus b", "0", "0"],
            ["Aus a", "180", "90"], ["Aus a", "-180", "-90"], ["Bus b", "5", "5"]]
    p = write_records(tmp_path / "r.csv", rows, header=("species", "lon", "lat"))
    c = clean_records(p)
    assert c.species == ["Aus a", "Aus a", "Bus b"] and c.xy.tolist() == [[180, 90], [-180, -90], [5, 5]]
    assert c.xy.dtype == np.float64 and c.ids == ["r.csv:2", "r.csv:3", "r.csv:21"] and c.read == 20
    assert dict(c.dropped) == {"no species name": 2, "not identified to species": 2, "no coordinates": 3,
                               "coordinates not numbers": 2, "coordinates out of range": 4, "coordinates 0, 0": 2,
                               "duplicate": 2}
    lon = clean_records(p, geographic=False)  # planar coordinates: no range, but still finite
    assert lon.kept == 5 and lon.dropped["coordinates out of range"] == 2
    assert clean_records(p, rank="as-is").dropped["not identified to species"] == 0
    assert clean_records(p, rank="as-is").species[:4] == ["Aus a", "Aus a", "Aus", "Bus sp."]
    with pytest.raises(ConfigError) as e:
        clean_records(p, rank="genus")
    assert str(e.value) == "rank must be one of species, as-is, got 'genus'"
    with pytest.raises(DataFormatError) as e:
        clean_records(p, id_column="gbifID")
    assert str(e.value) == f"{p}, line 1: no id column 'gbifID'"
    ids = write_records(tmp_path / "i.csv", [["Aus a", 1, 2, "k1"], ["Bus b", 3, 4, "k2"]],
                        header=("species", "lon", "lat", "key"))
    assert clean_records(ids, id_column="key").ids == ["k1", "k2"]
    gbif = write_records(tmp_path / "g.csv", [["7", "Aus a", 1, 2]], header=("gbifID", "species", "lon", "lat"))
    assert clean_records(gbif).ids == ["7"]
    (tmp_path / "short.csv").write_text("species,lon,lat,key\nAus a,1,2,k1\nBus b,3,4\n")
    with pytest.raises(DataFormatError) as e:
        clean_records(tmp_path / "short.csv", id_column="key")
    assert str(e.value) == f"{tmp_path / 'short.csv'}, line 3: 3 fields, the header has 4"
    (tmp_path / "narrow.csv").write_text("lat,species,lon\n2,Aus a\n")
    with pytest.raises(DataFormatError) as e:
        clean_records(tmp_path / "narrow.csv")
    assert str(e.value) == f"{tmp_path / 'narrow.csv'}, line 2: 2 fields, the header has 3"
    empty = write_records(tmp_path / "e.csv", [["a b", "NA", "NA"], ["", "1", "1"]])
    with pytest.raises(DataFormatError) as e:
        clean_records([empty])
    assert str(e.value) == f"{empty}: no record left after cleaning (no species name: 1, no coordinates: 1)"
    two = write_records(tmp_path / "f.csv", [["a b", "NA", "NA"]])
    with pytest.raises(DataFormatError) as e:
        clean_records([empty, two])
    assert str(e.value).startswith(f"{empty}, {two}: no record left after cleaning (")


def test_columns_not_found_are_named_with_their_option(tmp_path):
    q = write_records(tmp_path / "q.csv", [["a b", 1, 2]], header=("species", "east", "north"))
    for kw, msg in ((dict(), "no x (longitude) column (looked for x, lon, longitude, decimalLongitude, long, lng); "
                             "name it with --x-column"),
                    (dict(x_column="east"), "no y (latitude) column (looked for y, lat, latitude, decimalLatitude); "
                                            "name it with --y-column"),
                    (dict(x_column="west"), "no column 'west' (x (longitude)); the columns are species, east, north"),
                    (dict(x_column="east", y_column="south"),
                     "no column 'south' (y (latitude)); the columns are species, east, north")):
        with pytest.raises(DataFormatError) as e:
            clean_records(q, **kw)
        assert str(e.value) == f"{q}, line 1: {msg}", kw
    wide = write_records(tmp_path / "w.csv", [["a b", 1, 2] + [0] * 12],
                         header=("species", "lon", "lat", *[f"c{i}" for i in range(12)]))
    with pytest.raises(DataFormatError) as e:
        clean_records(wide, species_column="taxon")
    assert str(e.value) == (f"{wide}, line 1: no column 'taxon' (species); the columns are species, lon, lat, "
                            + ", ".join(f"c{i}" for i in range(9)))
    lower = write_records(tmp_path / "l.csv", [["a b", 1, 2]], header=("SPECIES", "Lon", "LAT"))
    assert clean_records(lower).xy.tolist() == [[1, 2]]  # the usual names in any case
    (tmp_path / "latin.csv").write_bytes("species,lon,lat\nAus caf\xe9,1,2\n".encode("latin-1"))
    assert clean_records(tmp_path / "latin.csv").notes == ["note: latin.csv is not UTF-8; read as Latin-1"]
    assert clean_records(lower).notes == []


@pytest.mark.parametrize("raw, want", [
    ("Aus cf. bus", None), ("Aus aff. bus", None), ("Aus indet", None), ("Aus spp.", None), ("Aus CF", None),
    ("Aus_bus var_x", "Aus bus"), ("Aus b1", "Aus b1"), ("1us bus", None), ("Aus 1bus", None),
    ("Aus × bus", "Aus × bus"), ("Aus x bus", "Aus × bus"), ("Aus ×", None), ("Aus ×bus cus", "Aus × bus"),
    ("Aus × bus × cus", "Aus × bus × cus"), ("Aus bus ×", "Aus bus"), ("Aus bus × Cus", "Aus bus × cus"),
    ("Aus bus × Cus dus", "Aus bus × Cus dus"), ("Aus bus × Cus dus eus", "Aus bus × Cus dus"),
    ("Aus bus × cus", "Aus bus × cus")])
def test_species_names_of_every_form(raw, want):
    assert species_name(raw) == want


def test_names_kept_as_written_and_abbreviated_genera():
    from spmlkit.data.formats.occurrences import abbreviated_genus_notes

    assert species_name("  Aus_bus   cus ", "as-is") == "Aus bus cus" and species_name("  ", "as-is") is None
    spell = {"Aus bus": {"Aus bus": 1}, "B. variegatus major": {"B. variegatus major": 2},
             "Bradypus variegatus major": {}, "Br. variegatus": {"Br. variegatus": 3}, "Bxyz variegatus": {},
             "Brady variegatus": {}, "Bra. tridactylus": {"Bra. tridactylus": 1}, "Abc var": {"Abc var": 1},
             "C. alone": {"C. alone": 4}}
    assert abbreviated_genus_notes(spell) == [
        "warning: 'B. variegatus major' (2 records) has an abbreviated genus: kept apart from 'Bradypus variegatus "
        "major'; write the genus in full in the input to merge them",
        "warning: 'Br. variegatus' (3 records) has an abbreviated genus: kept apart from 'Brady variegatus'; write the "
        "genus in full in the input to merge them",
        "warning: 'C. alone' (4 records) has an abbreviated genus: kept apart as a species of its own"]


def test_the_report_lists_spellings_only_where_names_were_merged():
    from collections import Counter

    from spmlkit.data.formats.occurrences import CleanRecords

    c = CleanRecords(species=["Aus a"] * 3 + ["Bus b", "Cus c"], xy=np.zeros((5, 2)), ids=list("abcde"), read=6,
                     spellings={"Aus a": Counter({"Aus a": 2, "aus A": 1}), "Bus b": Counter({"Bus b": 1}),
                                "Cus c": Counter({"Cus c var. d": 1})}, notes=["n"])
    c.dropped["duplicate"] = 1
    assert c.report() == ["n", "records: 6 read, 5 kept, 1 dropped", "  dropped, duplicate: 1",
                          "  species 'Aus a': 3 records, from 2 spelling(s): 'Aus a' (2); 'aus A' (1)",
                          "  species 'Bus b': 1 records",
                          "  species 'Cus c': 1 records, from 1 spelling(s): 'Cus c var. d' (1)"]


def test_tables_are_read_with_their_delimiter_and_line_breaks_kept(tmp_path):
    from spmlkit.data.formats.occurrences import read_table_text

    for name in ("r.tsv", "r.tab", "r.txt", "r.TSV"):
        (tmp_path / name).write_text("species\tlon\tlat\nAus a\t1,5\t2\n")
        assert read_table_text(tmp_path / name) == (["species", "lon", "lat"], [["Aus a", "1,5", "2"]], "UTF-8")
    (tmp_path / "r.csv").write_bytes(b'id,species\r\n"a\r\nb",Aus a\r\n')
    assert read_table_text(tmp_path / "r.csv")[1] == [["a\r\nb", "Aus a"]]
    with pytest.raises(DataFormatError) as e:
        read_table_text(tmp_path / "none.csv")
    assert str(e.value) == f"{tmp_path / 'none.csv'}: file not found"
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(DataFormatError) as e:
        read_table_text(tmp_path / "e.csv")
    assert str(e.value) == f"{tmp_path / 'e.csv'}, line 1: empty file; expected a header line"


def test_cleaned_records_are_written_as_lines_and_never_over_a_users_file(tmp_path):
    from spmlkit.data.formats.occurrences import CleanRecords

    c = CleanRecords(species=["Aus a"], xy=np.array([[1.5, -2.0]]), ids=["k,1"])
    write_clean_records(c, tmp_path / "c.csv")
    assert (tmp_path / "c.csv").read_bytes() == b'id,species,x,y\n"k,1",Aus a,1.5,-2.0\n'
    (tmp_path / "mine.csv").write_text("mine\n")
    with pytest.raises(ConfigError) as e:
        write_clean_records(c, tmp_path / "mine.csv")
    assert str(e.value).startswith(f"refusing to replace {tmp_path / 'mine.csv'}: it is not a cleaned-records file "
                                   "spmlkit wrote")


def test_records_on_rasters_passes_every_setting_on_and_says_what_it_kept(tmp_path, monkeypatch):
    """Each option reaches the step that uses it (recorded at the rasters module and the
    block split), and the lines said are whole."""
    pytest.importorskip("rasterio")
    from spmlkit.data import rasters as R
    from spmlkit.data.formats import occurrences as O

    seen = {}
    real_extract, real_background, real_split = R.extract, R.sample_background, O.spatial_split

    def extract(stack, xy, **kw):
        seen["extract"] = kw
        return real_extract(stack, xy, **kw)

    def background(stack, n, **kw):
        seen["background"] = dict(kw, n=n)
        xy, values, info = real_background(stack, n, seed=kw["seed"], window_rows=kw["window_rows"])
        return xy, values, {**info, "weighted": kw["bias"] is not None, "masked": kw["mask"] is not None,
                            "all_taken": kw["bias"] is not None}

    def split(xy, sp, names, **kw):
        seen["split"] = dict(kw, sp=sp)
        return real_split(xy, sp, names, **{**kw, "kind": "blocks", "buffer": 0.0, "min_records": 1})

    monkeypatch.setattr(R, "extract", extract)
    monkeypatch.setattr(R, "sample_background", background)
    monkeypatch.setattr(O, "spatial_split", split)
    env = make_stack(tmp_path / "env")
    rows = located_records(6) + [["Cus gamma", 100.0, 0.0], ["Cus gamma", 101.0, 0.0]]
    rec = write_records(tmp_path / "rec.csv", [[s, x, y, "k"] for s, x, y in rows], header=("sp", "east", "north", "k"))
    notes = []
    ds = O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north", seed=3,
                              background=30, mask="M", bias="B", window_rows=2, val_blocks=3, split="checkerboard",
                              folds=4, buffer=0.5, min_train_records=2, covariates=["temp", "soil"], max_levels=3,
                              name="mine", log=notes.append)
    assert seen["extract"] == {"window_rows": 2}
    assert seen["background"] == {"n": 30, "seed": 3, "mask": "M", "bias": "B", "window_rows": 2}
    sp = seen["split"].pop("sp")
    assert seen["split"] == {"kind": "checkerboard", "blocks": 3, "folds": 4, "seed": 3, "spatial_test": False,
                             "buffer": 0.5, "min_records": 2}
    assert sp.dtype == np.int64 and (sp[-30:] == -1).all() and set(sp[:-30].tolist()) == {0, 1}
    assert ds.name == "mine" and ds.source == str(rec) and ds.label_names == ["Aus alpha", "Bus beta"]
    assert ds.feature_names == ["temp", "soil=1", "soil=2", "soil=3"]  # the covariates chosen; soil's 3 levels
    assert ds.encoding["passthrough"] == ["id", "species", "x", "y"]
    assert ds.places["columns"] == ["x", "y"] and set(ds.places["rasters"]) >= {"layers", "sources", "nodata"}
    assert ds.places["rasters"]["layers"] == ["temp", "soil"] and ds.notes == notes
    kept = (ds.splits["train"].Z.sum(1) == 1).sum() + sum((s.Z.sum(1) == 1).sum() for k, s in ds.splits.items()
                                                          if k != "train")
    n_a = sum(1 for r in located_records(6) if r[0] == "Aus alpha")
    assert f"records on the rasters: {kept} of {kept + 2} cleaned records kept (Aus alpha: {n_a}, Bus beta: " \
           f"{kept - n_a})" in notes
    assert "  species left without records (not labels): Cus gamma" in notes
    assert "  dropped, outside the rasters: 2" in notes and not any("same cell" in n for n in notes)
    assert ("background: 30 cells drawn from 189 valid cells (seed 3, weighted by the bias raster, inside the mask; "
            "every valid cell taken)") in notes
    assert "one-hot encoded categorical layers: soil" in notes
    # the defaults
    seen.clear()
    ds = O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north", val_blocks=3,
                              min_train_records=1)
    assert seen["background"] == {"n": 10000, "seed": 0, "mask": None, "bias": None, "window_rows": None}
    assert seen["split"]["folds"] == 5 and seen["split"]["kind"] == "blocks" and seen["split"]["buffer"] == 0.0
    O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north", val_blocks=3)
    assert seen["split"]["min_records"] == 10  # the default (the recorded split itself runs with 1)
    assert ds.name == "rec" and "soil=1" in ds.feature_names  # 3 levels <= 6: categorical
    assert not any(n.startswith("background:") and "weighted" in n for n in ds.notes)
    assert O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north",
                                max_levels=2).feature_names == ["rain", "soil", "temp"]
    with pytest.raises(ConfigError) as e:
        O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north", buffer=1.0)
    assert str(e.value) == "--spatial-test, --buffer and --split go with --val-blocks G (the grid of spatial blocks)"
    with pytest.raises(ConfigError) as e:
        O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north", split="checkerboard")
    assert "go with --val-blocks" in str(e.value)
    with pytest.raises(ConfigError) as e:
        O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north", categorical=["a", "b"])
    assert str(e.value) == "--categorical 'a' is not a raster layer (rain, soil, temp)"
    with pytest.raises(ConfigError, match="--crs"):
        O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north", crs="no such crs")
    one = O.records_on_rasters(rec, [env], label_column="sp", x_column="east", y_column="north", species=["Bus beta"])
    assert one.label_names == ["Bus beta"]


def test_records_off_the_rasters_are_named_in_whole_lines(tmp_path):
    pytest.importorskip("rasterio")
    from spmlkit.data.formats.occurrences import records_on_rasters

    env = make_stack(tmp_path / "env")
    rec = write_records(tmp_path / "r.csv", [["Aus alpha", 50.0, 10.0], ["Bus beta", 49.0, 11.5]])
    with pytest.raises(DataFormatError) as e:
        records_on_rasters(rec, [env])
    assert str(e.value) == (f"{rec}: no record falls on a valid raster cell (records: x 49..50, y 10..11.5; rasters: "
                            "x 10..18, y 44..50); are x and y swapped, or in another CRS than --crs says?")
    rows = located_records(3) + [["Aus alpha", 100.0, 0.0], ["Bus beta", 101.0, 1.0], ["Bus beta", 102.0, 2.0]]
    rec = write_records(tmp_path / "o.csv", rows)
    with pytest.raises(DataFormatError) as e:
        records_on_rasters(rec, [env], off_raster="error")
    n = len(located_records(3))
    assert str(e.value) == (f"{rec}: record o.csv:{n + 2} (Aus alpha, x 100, y 0) is outside the rasters (and 2 more); "
                            "drop such records with --off-raster drop")
    same = located_records(3)
    x, y = same[0][1], same[0][2]
    rows = same + [[same[0][0], x + 0.1, y], [same[0][0], x + 0.2, y]]  # two more in the first record's cell
    notes = []
    records_on_rasters(write_records(tmp_path / "c.csv", rows), [env], one_per_cell=True, background=5,
                       log=notes.append)
    assert "  dropped, same species in the same cell: 2" in notes
    notes.clear()
    records_on_rasters(write_records(tmp_path / "d.csv", same), [env], one_per_cell=True, background=5,
                       log=notes.append)
    assert not any("same cell" in n for n in notes)


def test_integer_layers_read_as_numbers_are_noted_up_to_fifty_values():
    from types import SimpleNamespace

    from spmlkit.data.formats.occurrences import _integer_layer_notes

    stack = SimpleNamespace(layers=[SimpleNamespace(name="a", dtype="int16"), SimpleNamespace(name="f", dtype="float32"),
                                    SimpleNamespace(name="c", dtype="uint8")])
    values = np.c_[np.arange(100) % 50, np.arange(100) % 3, np.arange(100) % 51]
    assert _integer_layer_notes(stack, values, ["c"]) == [
        "note: layer 'a' holds whole numbers with 50 values and is read as continuous (ordered); if its values are "
        "classes (a biome, a land-cover code), declare it: --categorical a"]
    assert _integer_layer_notes(stack, values, []) == _integer_layer_notes(stack, values, ["c"])  # c: 51 values
    assert len(_integer_layer_notes(stack, values, [], most=51)) == 2


def test_records_on_rasters_defaults_crs_and_the_records_options(tmp_path):
    pytest.importorskip("rasterio")
    from spmlkit.data.formats.occurrences import records_on_rasters

    env = make_stack(tmp_path / "env")
    rows = located_records(4)
    rows += [["Aus alpha", rows[0][1] + 0.1, rows[0][2]], ["Aus alpha", 200.0, 10.0]]  # same cell; lon 200
    rec = write_records(tmp_path / "r.csv", rows)
    notes = []
    ds = records_on_rasters(rec, env, background=5, log=notes.append)  # one raster folder, not a list
    assert "  dropped, coordinates out of range: 1" in notes and not any("same cell" in n for n in notes)
    n_a = sum(1 for r in rows[:-1] if r[0] == "Aus alpha")
    assert f"records on the rasters: {n_a + 4} of {n_a + 4} cleaned records kept (Aus alpha: {n_a}, Bus beta: 4)" \
        in notes and ds.label_names == ["Aus alpha", "Bus beta"]
    with pytest.raises(ConfigError) as e:
        records_on_rasters(rec, env, off_raster="skip")
    assert str(e.value) == "off_raster must be 'drop' or 'error', got 'skip'"
    with pytest.raises(ConfigError) as e:
        records_on_rasters(rec, env, crs="no such crs")
    assert str(e.value).startswith("--crs 'no such crs' is not a coordinate reference system GDAL knows (")
    with pytest.raises(DataFormatError) as e:
        records_on_rasters(rec, env, species=["Zus zeta"])
    assert str(e.value).startswith(f"{rec}: --species 'Zus zeta': no record of that species")
    merc = make_stack(tmp_path / "merc", crs="EPSG:3857")
    with pytest.raises(ConfigError) as e:
        records_on_rasters(rec, merc)
    assert str(e.value).startswith("the records (r.csv, default) are in EPSG:4326 but the rasters (rain.tif, ...) "
                                   "are in EPSG:3857")
    planar = write_records(tmp_path / "p.csv", [*located_records(3), ["Aus alpha", 500000.0, 10.0]])
    notes.clear()
    records_on_rasters(planar, merc, crs="EPSG:3857", background=5, log=notes.append)  # metres: no range check
    assert "  dropped, outside the rasters: 1" in notes and not any("out of range" in n for n in notes)
    odd = write_records(tmp_path / "o.csv", [[f"{s} var. x", x, y] for s, x, y in located_records(3)])
    assert records_on_rasters(odd, env, rank="as-is", background=5).label_names == ["Aus alpha var. x",
                                                                                   "Bus beta var. x"]
    int7 = tmp_path / "int7"
    make_stack(int7)
    from tests.helpers.rasters import write_raster

    write_raster(int7 / "rain.tif", (np.arange(12 * 16).reshape(12, 16) % 7).astype(np.int16), nodata=-32768)
    assert "rain=0" not in records_on_rasters(rec, int7, background=60).feature_names  # 7 levels > 6: numbers
    assert "rain=0" in records_on_rasters(rec, int7, background=60, max_levels=7).feature_names


def test_the_lines_join_every_name_and_count_each_species(tmp_path):
    from spmlkit.data.formats.occurrences import CleanRecords, _count_lines, abbreviated_genus_notes

    c = CleanRecords(species=["A a", "A a", "B b", "C c", "D d"], xy=np.zeros((5, 2)), ids=list("vwxyz"), read=5)
    info = {"drawn": 3, "valid_cells": 9, "weighted": False, "masked": False, "all_taken": False}
    lines = _count_lines(c, {"outside the rasters": 2}, ["A a", "A a", "B b"], ["A a", "B b"], ["C c", "D d"], info, 0,
                         ["soil", "veg"])
    assert lines[-4:] == ["records on the rasters: 3 of 5 cleaned records kept (A a: 2, B b: 1)",
                          "  species left without records (not labels): C c, D d",
                          "background: 3 cells drawn from 9 valid cells (seed 0)",
                          "one-hot encoded categorical layers: soil, veg"]
    notes = abbreviated_genus_notes({"B. v": {"B. v": 1}, "Ba v": {}, "Bb v": {}})
    assert notes == ["warning: 'B. v' (1 records) has an abbreviated genus: kept apart from 'Ba v', 'Bb v'; write the "
                     "genus in full in the input to merge them"]


def test_cleaning_reads_past_blank_rows_and_checks_the_last_column_it_needs(tmp_path):
    (tmp_path / "b.csv").write_text("species,lon,lat\nAus a,1,2\n\n,,\nBus b,3,4\n")
    assert clean_records(tmp_path / "b.csv").species == ["Aus a", "Bus b"]
    for header, row, n in (("lon,lat,species", "1,2", 2), ("species,lon,lat", "Aus a,1", 2)):
        (tmp_path / "s.csv").write_text(f"{header}\n{row}\n")
        with pytest.raises(DataFormatError) as e:
            clean_records(tmp_path / "s.csv")
        assert str(e.value) == f"{tmp_path / 's.csv'}, line 2: {n} fields, the header has 3"
    q = write_records(tmp_path / "q.csv", [["a b", 1, 2]], header=("taxon_name", "lon", "lat"))
    with pytest.raises(DataFormatError) as e:
        clean_records(q)
    assert str(e.value) == (f"{q}, line 1: no species column (looked for species, scientificName, scientific_name, "
                            "spid, name, taxon); name it with --label-column")
    (tmp_path / "big.csv").write_text("species,lon,lat\nAus a,1," + "1" * 140_000 + "\n")
    with pytest.raises(DataFormatError) as e:
        clean_records(tmp_path / "big.csv")
    assert str(e.value).startswith(f"{tmp_path / 'big.csv'}: not a readable CSV table (")
