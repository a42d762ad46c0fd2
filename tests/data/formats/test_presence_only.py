"""Presence-only data (issue 24): the reader (views, one-hot, group masks, bad rows: one
line, exit 2), the bundle's background rows and label mask, and a small end-to-end run
of a background-consuming method."""
from __future__ import annotations

import numpy as np
import pytest

from spmlkit.data.formats.presence_only import load_presence_only, read_presence_only

HEAD = "siteid,spid,x,y,occ,group,t,soil\n"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def tiny(tmp_path, *, records=None, pa_bird=None, env_bird=None):
    rec = write(tmp_path, "po.csv", records or HEAD + "1,a,0,0,1,bird,1.5,1\n2,b,0,0,1,bird,2.0,2\n"
                "3,a,5,5,1,bird,0.5,1\n4,p,7,7,1,plant,3.0,3\n")
    bg = write(tmp_path, "bg.csv", HEAD + "9,pseudo,1,1,0,NA,0.0,1\n10,pseudo,2,2,0,NA,4.0,2\n")
    eb = write(tmp_path, "env_b.csv", env_bird or "group,siteid,x,y,t,soil\nbird,s1,0,0,1.0,1\nbird,s2,1,1,2.0,3\n")
    pb = write(tmp_path, "pa_b.csv", pa_bird or "group,siteid,x,y,a,b\nbird,s1,0,0,1,0\nbird,s2,1,1,0,1\n")
    ep = write(tmp_path, "env_p.csv", "group,siteid,x,y,t,soil\nplant,q1,0,0,1.0,2\n")
    pp = write(tmp_path, "pa_p.csv", "group,siteid,x,y,p\nplant,q1,0,0,1\n")
    return rec, bg, [(eb, pb), (ep, pp)]


def test_views_onehot_and_group_mask(tmp_path):
    rec, bg, tests = tiny(tmp_path)
    ds = load_presence_only(rec, background=bg, tests=tests)
    tr, te = ds.splits["train"], ds.splits["test"]
    assert ds.label_names == ["a", "b", "p"] and ds.background
    assert ds.feature_names == ["t", "soil=1", "soil=2", "soil=3"]  # soil detected as categorical
    assert tr.Z.shape == (6, 3) and (tr.Z[:4] == 1).sum(1).tolist() == [1, 1, 1, 1] and not tr.Z[4:].any()
    # birds only on bird sites, the plant only on the plant site
    assert te.mask.tolist() == [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    assert te.Y.tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    sites = load_presence_only(rec, background=bg, tests=tests, view="sites").splits["train"]
    assert len(sites.X) == 5 and sites.Z[0].tolist() == [1, 1, 0]  # a and b at (0, 0) merged
    declared = read_presence_only(rec, background=bg, tests=tests, categorical=[])
    assert declared.categorical == []


@pytest.mark.parametrize("case, where, what", [
    ("unknown", "pa_b.csv, line 1", "label 'zz' has no presence record in " + "{rec} (the test labels must be labels of the records)"),
    ("missing", "env_b.csv, line 3", "missing value of covariate 'soil'"),
    ("nocol", "env_b.csv, line 1", "no column 'soil' (expected: group, siteid, x, y, t)"),
    ("notbinary", "pa_b.csv, line 2", "label 'a' is '2'; expected 0 or 1 (absent / present)"),
    ("nolabel", "po.csv", "label(s) ['b'] have presence records but no column in any test table; every label needs surveyed test sites"),
    ("sites", "pa_b.csv, line 3", "site 's9' does not match row 3 of {env} (site 's2'); the two tables must list the same sites in order"),
    # a bird site with a column for the plant: the plant would be scored where it was never surveyed
    ("group", "pa_b.csv, line 2", "site of group 'bird' has a column for label 'p', whose records are of group 'plant'"),
    # one label's records in two survey groups: which sites survey it is ambiguous
    ("twogroups", "po.csv, line 6", "label 'a' has records in groups 'bird' and 'plant'"),
])
def test_bad_rows_name_file_and_line(tmp_path, case, where, what):
    from spmlkit.errors import DataFormatError

    kw = {}
    if case == "unknown":
        kw["pa_bird"] = "group,siteid,x,y,a,b,zz\nbird,s1,0,0,1,0,0\nbird,s2,1,1,0,1,0\n"
    elif case == "missing":
        kw["env_bird"] = "group,siteid,x,y,t,soil\nbird,s1,0,0,1.0,1\nbird,s2,1,1,2.0,NA\n"
    elif case == "nocol":
        kw["env_bird"] = "group,siteid,x,y,t\nbird,s1,0,0,1.0\nbird,s2,1,1,2.0\n"
    elif case == "notbinary":
        kw["pa_bird"] = "group,siteid,x,y,a,b\nbird,s1,0,0,2,0\nbird,s2,1,1,0,1\n"
    elif case == "nolabel":
        kw["pa_bird"] = "group,siteid,x,y,a\nbird,s1,0,0,1\nbird,s2,1,1,0\n"
    elif case == "sites":
        kw["pa_bird"] = "group,siteid,x,y,a,b\nbird,s1,0,0,1,0\nbird,s9,1,1,0,1\n"
    elif case == "group":
        kw["pa_bird"] = "group,siteid,x,y,a,b,p\nbird,s1,0,0,1,0,0\nbird,s2,1,1,0,1,1\n"
    elif case == "twogroups":
        kw["records"] = (HEAD + "1,a,0,0,1,bird,1.5,1\n2,b,0,0,1,bird,2.0,2\n3,a,5,5,1,bird,0.5,1\n"
                         "4,p,7,7,1,plant,3.0,3\n5,a,8,8,1,plant,1.0,1\n")
    rec, bg, tests = tiny(tmp_path, **kw)
    with pytest.raises(DataFormatError) as e:
        load_presence_only(rec, background=bg, tests=tests)
    what = what.format(rec=tmp_path / "po.csv", env=tmp_path / "env_b.csv")
    assert str(e.value) == f"{tmp_path / where}: {what}"


def test_group_checks_need_a_group_on_both_sides(tmp_path):
    """Records without a group column: any test table may survey any label (nothing to check
    against); a table without a group column likewise.  A label is still masked to the
    tables that have its column."""
    rec = write(tmp_path, "po.csv", "siteid,spid,x,y,occ,t,soil\n1,a,0,0,1,1.5,1\n2,p,7,7,1,3.0,3\n")
    env = write(tmp_path, "env.csv", "group,siteid,x,y,t,soil\nbird,s1,0,0,1.0,1\nplant,s2,1,1,2.0,3\n")
    pa = write(tmp_path, "pa.csv", "group,siteid,x,y,a,p\nbird,s1,0,0,1,0\nplant,s2,1,1,0,1\n")
    t = read_presence_only(rec, tests=[(env, pa)])
    assert t.test_Y.tolist() == [[1, 0], [0, 1]] and t.test_mask.all()
    rec, bg, tests = tiny(tmp_path)
    (eb, _), (ep, pp) = tests
    nogroup = write(tmp_path, "pa_ng.csv", "siteid,x,y,a,b,p\ns1,0,0,1,0,0\ns2,1,1,0,1,1\n")
    t = read_presence_only(rec, background=bg, tests=[(eb, nogroup), (ep, pp)])
    assert t.test_mask.tolist() == [[1, 1, 1], [1, 1, 1], [0, 0, 1]]


def test_cli_prepare_bad_row_is_one_line_exit_2(tmp_path, capsys):
    from spmlkit.cli import main

    rec, bg, tests = tiny(tmp_path, env_bird="group,siteid,x,y,t,soil\nbird,s1,0,0,1.0,1\nbird,s2,1,1,,3\n")
    (eb, pb), (ep, pp) = tests
    rc = main(["prepare", str(rec), "--background", str(bg), "--test", f"{eb}:{pb},{ep}:{pp}",
               "--out", str(tmp_path / "b")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "env_b.csv, line 3" in err[0] and "'t'" in err[0]
    assert not (tmp_path / "b").exists()


def synthetic(tmp_path, n_bg=300, seed=0):
    """Two species with opposite niches along one covariate, a noise covariate."""
    rng = np.random.default_rng(seed)
    rows = []
    for k, sp in enumerate(("s1", "s2")):
        t = rng.normal(1.5 if k == 0 else -1.5, 0.7, 120)
        rows += [f"{i},{sp},{i},{i},1,g,{v:.3f},{rng.normal():.3f}" for i, v in enumerate(t, 1000 * k)]
    rec = write(tmp_path, "po.csv", "siteid,spid,x,y,occ,group,t,u\n" + "\n".join(rows) + "\n")
    bg = write(tmp_path, "bg.csv", "siteid,spid,x,y,occ,group,t,u\n" + "\n".join(
        f"{i},p,{i},0,0,NA,{v:.3f},{rng.normal():.3f}" for i, v in enumerate(rng.uniform(-4, 4, n_bg))) + "\n")
    t = rng.uniform(-4, 4, 200)
    env = write(tmp_path, "env.csv", "group,siteid,x,y,t,u\n" + "\n".join(
        f"g,{i},0,0,{v:.3f},0.0" for i, v in enumerate(t)) + "\n")
    pa = write(tmp_path, "pa.csv", "group,siteid,x,y,s1,s2\n" + "\n".join(
        f"g,{i},0,0,{int(v > 0.5)},{int(v < -0.5)}" for i, v in enumerate(t)) + "\n")
    return rec, bg, [(env, pa)]


def test_bundle_keeps_background_and_mask_and_an_full_learns(tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.data import prepare_bundle
    from spmlkit.training.linear import train_linear

    rec, bg, tests = synthetic(tmp_path)
    b = prepare_bundle(load_presence_only(rec, background=bg, tests=tests), tmp_path / "b", log=lambda m: None)
    Z = b.observations("train")
    assert b.meta["background_rows"] == int((~(Z != 0).any(1)).sum()) > 200
    assert b.label_mask("test").shape == (200, 2)
    cfg = TrainConfig(method="an-full", epochs=8, batch_size=32, lr=1e-2, threads=1)
    r = train_linear(b, cfg)[0]
    assert r.selection == "target_group_auc"  # auto picks it on presence-only data (two species)
    assert r.test_auc["mean"] > 0.9 and r.val_score > 55
    # AN over the same rows (background as ordinary unobserved rows) runs unchanged
    r_an = train_linear(b, TrainConfig(method="an", epochs=2, batch_size=32, threads=1))[0]
    assert r_an.test_auc is not None and r_an.epochs_run == 2


def test_background_method_refuses_data_without_background(tmp_path):
    from spmlkit.config import TrainConfig
    from spmlkit.data import prepare_bundle
    from spmlkit.errors import ConfigError
    from spmlkit.training.linear import train_linear

    b = prepare_bundle(_toy(), tmp_path / "t", log=lambda m: None)
    with pytest.raises(ConfigError, match="background rows"):
        train_linear(b, TrainConfig(method="an-ssdl", epochs=1, threads=1))


def _toy():
    from spmlkit.data.dataset import MultiLabelDataset, Split

    rng = np.random.default_rng(0)
    Y = rng.random((40, 3)) < 0.5
    Y[:, 0] = True
    return MultiLabelDataset(name="toy", label_names=["a", "b", "c"], splits={"train": Split(X=rng.normal(size=(40, 4)), Y=Y)})


def test_cli_prepare_region_folder_train_evaluate(tmp_path, capsys):
    """The practitioner's path (docs/presence_only.md): one prepare command on a folder of
    <R>train_po / <R>train_bg / <R>test_env / <R>test_pa tables, train, evaluate with AUC."""
    import shutil

    from spmlkit.cli import main

    rec, bg, [(env, pa)] = synthetic(tmp_path)
    folder = tmp_path / "data"
    folder.mkdir()
    for src, name in ((rec, "Rtrain_po.csv"), (bg, "Rtrain_bg.csv"), (env, "Rtest_env.csv"), (pa, "Rtest_pa.csv")):
        shutil.copy(src, folder / name)
    assert main(["prepare", str(folder), "--region", "R", "--view", "sites", "--out", str(tmp_path / "b")]) == 0
    assert main(["train", str(tmp_path / "b"), "-m", "an-full", "--epochs", "3", "--batch-size", "32", "--lr", "0.01",
                 "-o", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "validation target_group_auc" in out and "test AUC-ROC per label" in out
    assert main(["evaluate", str(tmp_path / "r"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "AUC-ROC per label: mean" in out and "label mask" in out


def test_spatial_block_validation(tmp_path):
    from spmlkit.data.formats.presence_only import spatial_blocks

    xy = np.stack(np.meshgrid(np.arange(10.0), np.arange(10.0)), -1).reshape(-1, 2)
    held = spatial_blocks(xy, 5, 0.2, seed=1)
    assert held.sum() == 20  # 5 of 25 cells of 4 points each
    cells = {(int(x // 2), int(y // 2)) for x, y in xy[held]}
    assert len(cells) == 5 and not any((int(x // 2), int(y // 2)) in cells for x, y in xy[~held])
    rec, bg, tests = synthetic(tmp_path)
    ds = load_presence_only(rec, background=bg, tests=tests, val_blocks=4)
    tr, va = ds.splits["train"], ds.splits["val"]
    assert len(tr) + len(va) == 540 and 0 < len(va) < 540 and "spatial blocks" in ds.notes[-1]


def test_region_documentation_declares_the_covariate_types(tmp_path):
    """The detection rule (integers with at most 6 levels are categorical) one-hot encodes
    an ordinal code and leaves a categorical column with more levels numeric; a region
    folder that documents its covariates (the disdat package's ``<R>.Rd`` table, "Type"
    column) is read with the documented types instead (issue 35)."""
    from spmlkit.data.formats.presence_only import documented_categorical, load_presence_only_folder

    rng = np.random.default_rng(0)
    head = "siteid,spid,x,y,occ,group,disturb,vegsys\n"
    rows = [f"{i},{'ab'[i % 2]},{i},{i},1,g,{1 + i % 3},{1 + i % 9}\n" for i in range(30)]
    bg = [f"{i},bg,{i},{i},0,NA,{1 + i % 3},{1 + rng.integers(9)}\n" for i in range(30)]
    folder = tmp_path / "d"
    (folder / "docs").mkdir(parents=True)
    (folder / "Rtrain_po.csv").write_text(head + "".join(rows))
    (folder / "Rtrain_bg.csv").write_text(head + "".join(bg))
    (folder / "Rtest_env.csv").write_text("group,siteid,x,y,disturb,vegsys\ng,s1,0,0,2,5\ng,s2,1,1,3,9\n")
    (folder / "Rtest_pa.csv").write_text("group,siteid,x,y,a,b\ng,s1,0,0,1,0\ng,s2,1,1,0,1\n")
    ruled = load_presence_only_folder(folder, "R")  # no documentation: the rule gets both wrong
    assert ruled.feature_names == ["disturb=1", "disturb=2", "disturb=3", "vegsys"]
    (folder / "docs" / "R.Rd").write_text(
        "\\tabular{llll}{\n\\strong{Code} \\tab \\strong{Description} \\tab \\strong{Units} \\tab \\strong{Type} \\cr\n"
        "disturb  \\tab disturbance index \\tab 1 = light, 2 = moderate, 3 = heavy \\tab Continuous\\cr\n"
        "vegsys   \\tab broad vegetation type \\tab 1 = Rainforest, 2 = Moist open forest \\tab Categorical \\cr\n}\n")
    assert documented_categorical(folder, "R") == ["vegsys"]
    documented = load_presence_only_folder(folder, "R")
    assert documented.feature_names == ["disturb"] + [f"vegsys={v}" for v in range(1, 10)]
    declared = load_presence_only_folder(folder, "R", categorical=[])  # a declaration wins over the documentation
    assert declared.feature_names == ["disturb", "vegsys"]


def test_shared_disdat_documentation_matches_the_regions_categoricals():
    """The four shared regions' documentation types exactly the covariates the rule found
    (so their committed tables are unchanged)."""
    from pathlib import Path

    from spmlkit.data.formats.presence_only import documented_categorical

    folder = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "disdat"
    if not folder.is_dir():
        pytest.skip("../shared/data/disdat not present")
    assert {R: documented_categorical(folder, R) for R in ("NZ", "SWI", "CAN", "AWT")} == {
        "NZ": ["age", "toxicats"], "SWI": ["calc"], "CAN": ["ontveg"], "AWT": []}


# ------------------------------------------------------------- the reader's other refusals
@pytest.mark.parametrize("case, where, what", [
    ("empty", "po.csv, line 1", "empty file; expected a header line"),
    ("fields", "po.csv, line 3", "7 fields, the header has 8"),
    ("nolabel", "po.csv, line 2", "missing label ('spid')"),
    ("nocovariate", "po.csv, line 1", "no covariate column"),
    ("norecord", "po.csv", "no presence record"),
    ("text", "po.csv, line 2", "covariate 't' is 'warm', not a number"),
    ("rows", "pa_b.csv", "3 rows, but the covariate table"),  # ... <env> has 2
    ("nofile", "missing.csv", "file not found"),
])
def test_more_bad_files_name_file_and_line(tmp_path, case, where, what):
    from spmlkit.errors import DataFormatError

    kw = {}
    if case == "empty":
        kw["records"] = "\n"
    elif case == "fields":
        kw["records"] = HEAD + "1,a,0,0,1,bird,1.5,1\n2,b,0,0,1,bird,2.0\n"
    elif case == "nolabel":
        kw["records"] = HEAD + "1,NA,0,0,1,bird,1.5,1\n"
    elif case == "nocovariate":
        kw["records"] = "siteid,spid,x,y,occ,group\n1,a,0,0,1,bird\n"
    elif case == "norecord":
        kw["records"] = HEAD
    elif case == "text":
        kw["records"] = HEAD + "1,a,0,0,1,bird,warm,1\n"
    elif case == "rows":
        kw["pa_bird"] = "group,siteid,x,y,a,b\nbird,s1,0,0,1,0\nbird,s2,1,1,0,1\nbird,s3,2,2,0,0\n"
    if case == "empty":
        (tmp_path / "po.csv").write_text("")
        kw.pop("records")
    rec, bg, tests = tiny(tmp_path, **kw)
    if case == "empty":
        rec.write_text("")
    if case == "nofile":
        bg = tmp_path / "missing.csv"
    with pytest.raises(DataFormatError) as e:
        read_presence_only(rec, background=bg, tests=tests)
    assert str(e.value) == (f"{tmp_path / where}: {what}" if case != "rows" else
                            f"{tmp_path / where}: {what} {tmp_path / 'env_b.csv'} has 2")


def test_option_refusals_are_one_line_config_errors(tmp_path):
    from spmlkit.data.formats.presence_only import to_dataset
    from spmlkit.errors import ConfigError

    rec, bg, tests = tiny(tmp_path)
    with pytest.raises(ConfigError, match=r"^categorical covariate\(s\) \['z'\] are not covariates of .*po.csv \(t, soil\)$"):
        read_presence_only(rec, background=bg, tests=tests, categorical=["z"])
    with pytest.raises(ConfigError, match="needs at least one fully surveyed test table"):
        read_presence_only(rec, background=bg, tests=[])
    t = read_presence_only(rec, background=bg, tests=tests)
    with pytest.raises(ConfigError, match=r"unknown presence-only view 'site'; expected 'records' or 'sites'"):
        to_dataset(t, view="site")
    nowhere = read_presence_only(write(tmp_path, "noxy.csv", "spid,group,t,soil\na,bird,1.5,1\nb,bird,2.0,2\n"
                                       "p,plant,3.0,3\n"), background=bg, tests=tests)
    assert nowhere.record_xy is None and nowhere.background_xy is None
    with pytest.raises(ConfigError, match="spatial-block validation needs the place columns"):
        to_dataset(nowhere, val_blocks=2)


def test_one_table_with_covariates_and_labels_and_levels_seen_only_in_test(tmp_path):
    """A test table may hold both covariates and the 0/1 columns (the same file twice); a
    categorical level that no training row has sets no one-hot column."""
    from spmlkit.data.formats.presence_only import encode

    rec, bg, _ = tiny(tmp_path)
    both = write(tmp_path, "both.csv", "group,siteid,x,y,t,soil,a,b,p\nbird,s1,0,0,1.0,9,1,0,0\n")
    with pytest.raises(Exception, match="site of group 'bird' has a column for label 'p'"):
        read_presence_only(rec, background=bg, tests=[(both, both)])
    both.write_text("siteid,x,y,t,soil,a,b,p\ns1,0,0,1.0,9,1,0,1\ns2,1,1,0.5,2,0,1,0\n")
    t = read_presence_only(rec, background=bg, tests=[(both, both)])
    assert t.test_Y.tolist() == [[1, 0, 1], [0, 1, 0]] and t.test_mask.all()
    X, names = encode(t, t.test)
    assert names == ["t", "soil=1", "soil=2", "soil=3"] and X.dtype == np.float32
    assert X.tolist() == [[1.0, 0, 0, 0], [0.5, 0, 1, 0]]  # soil 9: no column set
    assert t.sources == {"records": str(rec), "background": str(bg), "tests": [[str(both), str(both)]]}


def test_categorical_detection_stops_above_max_levels(tmp_path):
    head = "siteid,spid,x,y,occ,group,t,soil\n"
    rows = [f"{i},a,{i},{i},1,bird,{i % 7},{i % 6}" for i in range(14)]
    rec = write(tmp_path, "po.csv", head + "\n".join(rows) + "\n")
    env = write(tmp_path, "env.csv", "siteid,x,y,t,soil\ns1,0,0,1,2\n")
    pa = write(tmp_path, "pa.csv", "siteid,x,y,a\ns1,0,0,1\n")
    assert read_presence_only(rec, tests=[(env, pa)]).categorical == ["soil"]  # 7 levels of t: continuous
    assert read_presence_only(rec, tests=[(env, pa)], max_levels=7).categorical == ["t", "soil"]
    assert read_presence_only(rec, tests=[(env, pa)], max_levels=5).categorical == []


def test_sites_view_and_spatial_blocks_in_the_dataset(tmp_path):
    from spmlkit.data.formats.presence_only import to_dataset

    rec, bg, tests = tiny(tmp_path)
    ds = to_dataset(read_presence_only(rec, background=bg, tests=tests), view="sites", val_blocks=2,
                    val_fraction=0.5, seed=3)
    tr, va = ds.splits["train"], ds.splits["val"]
    assert len(tr.X) + len(va.X) == 5 and len(va.X) >= 1  # 3 places of records + 2 background rows
    assert any("spatial blocks (seed 3)" in n for n in ds.notes) and any("(sites view)" in n for n in ds.notes)
    rows = np.concatenate([tr.Z, va.Z])
    assert sorted(map(tuple, rows.tolist())) == sorted([(1, 1, 0), (1, 0, 0), (0, 0, 1), (0, 0, 0), (0, 0, 0)])


def test_region_folders(tmp_path):
    from spmlkit.data.formats.presence_only import load_presence_only_folder, region_files
    from spmlkit.errors import ConfigError, DataFormatError

    rec, bg, [(eb, pb), (ep, pp)] = tiny(tmp_path)
    folder = tmp_path / "d"
    folder.mkdir()
    for src, dst in ((rec, "AWTtrain_po.csv"), (eb, "AWTtest_env_bird.csv"), (pb, "AWTtest_pa_bird.csv"),
                     (ep, "AWTtest_env_plant.csv"), (pp, "AWTtest_pa_plant.csv")):
        (folder / dst).write_bytes(src.read_bytes())
    from spmlkit.data.formats.base import detect_format

    assert detect_format(folder) == "presence-only"  # a folder with <R>train_po.csv
    other = tmp_path / "other"
    other.mkdir()
    (other / "AWTtrain_bg.csv").write_text("x\n")  # background alone: not a presence-only folder
    with pytest.raises(ConfigError, match="cannot tell the format of folder"):
        detect_format(other)
    f = region_files(folder, "AWT")
    assert f["background"] is None and [e.name for e, _ in f["tests"]] == ["AWTtest_env_bird.csv",
                                                                           "AWTtest_env_plant.csv"]
    assert [p.name for _, p in f["tests"]] == ["AWTtest_pa_bird.csv", "AWTtest_pa_plant.csv"]
    ds = load_presence_only_folder(folder, "AWT")
    assert ds.name == "AWT" and ds.splits["test"].mask.tolist() == [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    with pytest.raises(ConfigError, match=r"no NZtrain_po.csv; regions here: AWT$"):
        region_files(folder, "NZ")
    (folder / "AWTtest_pa_plant.csv").unlink()
    with pytest.raises(DataFormatError, match=r"AWTtest_env_plant.csv: no presence/absence table AWTtest_pa_plant.csv"):
        region_files(folder, "AWT")


def test_prepare_entry_points_refuse_missing_region_and_tests(tmp_path):
    from spmlkit.data.formats.presence_only import _load
    from spmlkit.errors import ConfigError

    rec, bg, [(eb, pb), (ep, pp)] = tiny(tmp_path)
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "Rtrain_po.csv").write_bytes(rec.read_bytes())
    (folder / "Strain_po.csv").write_bytes(rec.read_bytes())
    with pytest.raises(ConfigError) as e:
        _load(folder)
    assert str(e.value) == f"{folder}: presence-only folder: name the region with --region (R, S)"
    with pytest.raises(ConfigError) as e:
        _load(rec, background=bg)
    assert str(e.value) == ("presence-only records need surveyed test tables: --test "
                            "ENV.csv:PA.csv[,ENV2.csv:PA2.csv]")
    ds = _load(rec, background=bg, test=f"{eb}:{pb},{ep}:{pp}", name="x", label_column="spid", categorical="")
    assert ds.name == "x" and ds.feature_names == ["t", "soil"] and ds.splits["test"].Y.shape == (3, 3)


# ------------------------------------------------------------- what the reader keeps
def test_types_sources_and_place_columns_without_background(tmp_path):
    rec, bg, tests = tiny(tmp_path)
    t = read_presence_only(rec, tests=tests)  # no background file
    assert t.test_Y.dtype == bool and t.test_mask.dtype == bool
    assert t.background.shape == (0, 2) and t.background_xy.shape == (0, 2)  # records have x, y: none of background
    assert t.sources == {"records": str(rec), "background": None, "tests": [[str(e), str(p)] for e, p in tests]}
    ds = load_presence_only(rec, tests=tests)
    assert ds.splits["train"].Z.dtype == np.int8 and ds.splits["train"].X.dtype == np.float32
    assert ds.source == str(rec) and ds.name == "po"
    from spmlkit.data.formats.presence_only import to_dataset

    assert to_dataset(t).name == "presence-only"
    assert "one-hot encoded categorical covariates: soil" in to_dataset(t).notes
    two = read_presence_only(rec, tests=tests, categorical=["t", "soil"])
    assert "one-hot encoded categorical covariates: t, soil" in to_dataset(two).notes
    # background without place columns: read, with no background places
    nobg = write(tmp_path, "bg2.csv", "t,soil\n0.0,1\n4.0,2\n")
    t2 = read_presence_only(rec, background=nobg, tests=tests)
    assert t2.background_xy is None and t2.background.tolist() == [[0.0, 1.0], [4.0, 2.0]]
    with pytest.raises(Exception) as e:
        to_dataset(t2, val_blocks=2)
    assert str(e.value) == "spatial-block validation needs the place columns (x, y) in the records and background"


@pytest.mark.parametrize("file, text, message", [
    ("po.csv", "siteid,x,y,group,t,soil\n1,0,0,bird,1.5,1\n",
     "po.csv, line 1: no column 'spid' (expected: siteid, x, y, group, t, soil)"),
    ("po.csv", HEAD + "1,a,east,0,1,bird,1.5,1\n", "po.csv, line 2: covariate 'x' is 'east', not a number"),
    ("bg.csv", HEAD + "9,pseudo,1,1,0,NA,warm,1\n", "bg.csv, line 2: covariate 't' is 'warm', not a number"),
    ("bg.csv", HEAD + "9,pseudo,1,north,0,NA,0.0,1\n", "bg.csv, line 2: covariate 'y' is 'north', not a number"),
])
def test_bad_cells_name_their_own_file(tmp_path, file, text, message):
    from spmlkit.errors import DataFormatError

    rec, bg, tests = tiny(tmp_path)
    (tmp_path / file).write_text(text)
    with pytest.raises(DataFormatError) as e:
        read_presence_only(rec, background=bg, tests=tests)
    assert str(e.value) == f"{tmp_path / message}"


def test_more_messages_are_exact(tmp_path):
    from spmlkit.errors import ConfigError, DataFormatError
    from spmlkit.data.formats.presence_only import region_files

    rec, bg, tests = tiny(tmp_path)
    with pytest.raises(ConfigError) as e:
        read_presence_only(rec, tests=[])
    assert str(e.value) == ("presence-only data needs at least one fully surveyed test table (covariates and "
                            "presence/absence)")
    for text, msg in (("", "empty file; expected a header line"), ("siteid,spid,x,y,occ,group\n1,a,0,0,1,bird\n",
                                                                   "no covariate column"), (HEAD, "no presence record")):
        rec.write_text(text)
        with pytest.raises(DataFormatError) as e:
            read_presence_only(rec, tests=tests)
        assert str(e.value) == f"{rec}{', line 1' if msg != 'no presence record' else ''}: {msg}"
    with pytest.raises(DataFormatError) as e:
        read_presence_only(tmp_path / "nope.csv", tests=tests)
    assert str(e.value) == f"{tmp_path / 'nope.csv'}: file not found"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError) as e:
        region_files(empty, "AWT")
    assert str(e.value) == f"{empty}: no AWTtrain_po.csv; regions here: none"
    for r in ("A", "B"):
        (empty / f"{r}train_po.csv").write_text("")
    with pytest.raises(ConfigError) as e:
        region_files(empty, "C")
    assert str(e.value) == f"{empty}: no Ctrain_po.csv; regions here: A, B"


def test_missing_test_columns_list_at_most_five_labels(tmp_path):
    from spmlkit.errors import DataFormatError

    rows = "".join(f"{i},{sp},{i},{i},1,bird,1.0,1\n" for i, sp in enumerate("abcdefg"))
    rec = write(tmp_path, "po.csv", HEAD + rows)
    env = write(tmp_path, "env.csv", "siteid,x,y,t,soil\ns1,0,0,1.0,1\n")
    pa = write(tmp_path, "pa.csv", "siteid,x,y,a\ns1,0,0,1\n")
    with pytest.raises(DataFormatError) as e:
        read_presence_only(rec, tests=[(env, pa)])
    assert str(e.value) == (f"{rec}: label(s) ['b', 'c', 'd', 'e', 'f'] have presence records but no column in any "
                            "test table; every label needs surveyed test sites")


def test_csv_details_bom_quoted_newlines_and_site_ids_on_one_side(tmp_path):
    """A UTF-8 BOM (Excel's CSV) is not part of the first column's name; a quoted cell keeps
    its line break as written; a presence/absence table without site ids is not compared."""
    rec = tmp_path / "po.csv"
    rec.write_bytes("\ufeffspid,x,y,group,t,soil\n\"Acacia\r\nsp.\",0,0,bird,1.5,1\nb,1,1,bird,2.0,2\n".encode())
    env = write(tmp_path, "env.csv", "siteid,x,y,t,soil\ns1,0,0,1.0,1\n")
    pa = write(tmp_path, "pa.csv", "x,y,\"Acacia\r\nsp.\",b\n0,0,1,0\n")
    t = read_presence_only(rec, tests=[(env, pa)])
    assert t.label_names == ["Acacia\r\nsp.", "b"] and t.test_Y.tolist() == [[1, 0]]


def test_prepare_options_reach_the_reader(tmp_path):
    """``spml prepare``'s presence-only options: a single ENV.csv with the labels in it, the
    background, the view, the validation blocks, the label column, the name and region."""
    from spmlkit.data.formats.presence_only import _load

    rec, bg, [(eb, pb), (ep, pp)] = tiny(tmp_path)
    both = write(tmp_path, "both.csv", "siteid,x,y,t,soil,a,b,p\ns1,0,0,1.0,1,1,0,1\n")
    ds = _load(rec, test=str(both), background=bg, view="sites", val_blocks="2")
    assert ds.splits["test"].Y.tolist() == [[1, 0, 1]] and set(ds.splits) == {"train", "val", "test"}
    assert len(ds.splits["train"].X) + len(ds.splits["val"].X) == 5  # 3 places + 2 background rows
    renamed = write(tmp_path, "po2.csv", rec.read_text().replace("spid", "species"))
    assert _load(renamed, test=f"{eb}:{pb},{ep}:{pp}", label_column="species").label_names == ["a", "b", "p"]
    folder = tmp_path / "d"
    folder.mkdir()
    for src, dst in ((rec, "Rtrain_po.csv"), (bg, "Rtrain_bg.csv"), (eb, "Rtest_env_b.csv"), (pb, "Rtest_pa_b.csv"),
                     (ep, "Rtest_env_p.csv"), (pp, "Rtest_pa_p.csv")):
        (folder / dst).write_bytes(src.read_bytes())
    ds = _load(folder, region="R", name="awt", view="sites", val_blocks=2, categorical=[])
    assert ds.name == "awt" and ds.feature_names == ["t", "soil"] and "val" in ds.splits
    assert any("(sites view)" in n for n in ds.notes)
    from spmlkit.data import load_any

    assert load_any(str(folder), region="R").label_names == ["a", "b", "p"]  # detected as presence-only


def test_sites_view_without_place_columns_keeps_every_record(tmp_path):
    rec = write(tmp_path, "noxy.csv", "spid,group,t,soil\na,bird,1.5,1\nb,bird,2.0,2\na,bird,0.5,1\n")
    env = write(tmp_path, "env.csv", "t,soil\n1.0,1\n")
    pa = write(tmp_path, "pa.csv", "a,b\n1,0\n")
    from spmlkit.data.formats.presence_only import to_dataset

    ds = to_dataset(read_presence_only(rec, tests=[(env, pa)]), view="sites")
    assert ds.splits["train"].Z.tolist() == [[1, 0], [0, 1], [1, 0]]  # no places: nothing merged


def test_spatial_blocks_are_whole_cells_of_the_given_bounds():
    from spmlkit.data.formats.presence_only import spatial_blocks

    # a 10 x 10 grid of points offset from the origin, x and y on different ranges
    xy = np.stack(np.meshgrid(10 + np.arange(10.0), 100 + 3 * np.arange(10.0)), -1).reshape(-1, 2)
    cell = lambda p: (int((p[0] - 10) // 2), int((p[1] - 100) // 6))  # noqa: E731 - 5 x 5 cells of 4 points

    def cells(held):
        return {cell(p) for p in xy[held]}

    one = spatial_blocks(xy, 5, 0.04, seed=2)  # round(0.04 · 25) = 1 cell
    assert one.sum() == 4 and len(cells(one)) == 1
    every = spatial_blocks(xy, 5, 1.0, seed=2)
    assert every.all()  # drawn without replacement: all 25 cells
    five = spatial_blocks(xy, 5, seed=7)  # default fraction 0.2: 5 cells
    assert five.sum() == 20 and len(cells(five)) == 5
    assert not (cells(five) & cells(~five))  # whole cells: no cell split between held and kept
    assert np.array_equal(spatial_blocks(xy, 5), spatial_blocks(xy, 5, 0.2, seed=0))  # defaults
    assert np.array_equal(spatial_blocks(xy, 5, seed=3), spatial_blocks(xy, 5, seed=3))  # seeded
    assert len({spatial_blocks(xy, 5, seed=s).tobytes() for s in range(6)}) > 1
    # bounds: the grid of the bounding box given, points outside it clipped into the edge cells
    wide = spatial_blocks(xy, 2, 1.0, seed=0, bounds=(np.array([0.0, 0.0]), np.array([40.0, 400.0])))
    assert wide.all()
    half = spatial_blocks(xy, 2, 0.5, seed=1, bounds=(np.array([12.0, 106.0]), np.array([16.0, 118.0])))
    # 2 x 2 cells of the box [12, 16] x [106, 118]; points beyond it fall in the edge cells
    held_cells = {(int(np.clip((x - 12) // 2, 0, 1)), int(np.clip((y - 106) // 6, 0, 1))) for x, y in xy[half]}
    kept_cells = {(int(np.clip((x - 12) // 2, 0, 1)), int(np.clip((y - 106) // 6, 0, 1))) for x, y in xy[~half]}
    assert len(held_cells) == 2 and not (held_cells & kept_cells)
    # a degenerate axis (every point at the same y) is one row of cells
    flat = np.stack([np.arange(10.0), np.zeros(10)], 1)
    assert spatial_blocks(flat, 5, 0.2, seed=0).sum() == 2


def test_spatial_validation_in_the_dataset_uses_the_seed(tmp_path):
    from spmlkit.data.formats.presence_only import spatial_blocks, to_dataset

    rows = "".join(f"{i},{'ab'[i % 2]},{i % 7},{i // 7},1,bird,{i / 10},1\n" for i in range(49))
    rec = write(tmp_path, "po.csv", HEAD + rows)
    bg = write(tmp_path, "bg.csv", HEAD + "99,pseudo,3,3,0,NA,0.0,1\n")
    env = write(tmp_path, "env.csv", "t,soil\n1.0,1\n")
    pa = write(tmp_path, "pa.csv", "a,b\n1,0\n")
    t = read_presence_only(rec, background=bg, tests=[(env, pa)])
    all_xy = np.concatenate([t.record_xy, t.background_xy])
    for seed in (0, 5):
        ds = to_dataset(t, val_blocks=3, val_fraction=0.3, seed=seed)
        held = spatial_blocks(all_xy, 3, 0.3, seed)
        assert len(ds.splits["val"].X) == held.sum() and "test" in ds.splits
        assert np.allclose(ds.splits["val"].X[:, 0], np.concatenate([t.records, t.background])[held, 0])
    assert np.array_equal(to_dataset(t, val_blocks=3).splits["val"].X, to_dataset(t, val_blocks=3, seed=0).splits["val"].X)


def test_latin1_records_are_read_with_a_note(tmp_path):
    """A presence-only table saved by a Latin-1 tool reads as its producer meant (a
    UnicodeDecodeError traceback before), and the dataset says how it was read."""
    rec, bg, tests = tiny(tmp_path)
    text = rec.read_text().replace("1,a,0,0", "1,\u00e9a,0,0")
    rec.write_bytes(text.encode("latin-1"))
    pb = tests[0][1]
    pb.write_bytes(pb.read_text().replace(",a,b", ",\u00e9a,a,b").replace("0,0,1,0", "0,0,1,0,0")
                   .replace("1,1,0,1", "1,1,0,0,1").encode("utf-8"))
    tables = read_presence_only(rec, background=bg, tests=tests)
    assert "\u00e9a" in tables.label_names and tables.latin1 == ("po.csv",)
    ds = load_presence_only(rec, background=bg, tests=tests)
    assert any("po.csv not UTF-8; read as Latin-1" in n for n in ds.notes)


# ----------------------------------- mutation survivors (issue 44): ids, places, documentation, --rasters
def test_ids_and_places_pass_into_both_splits_in_both_views(tmp_path):
    rec, bg, tests = tiny(tmp_path)
    ds = load_presence_only(rec, background=bg, tests=tests)
    tr, te = ds.splits["train"], ds.splits["test"]
    assert tr.ids == ["1", "2", "3", "4", "9", "10"] and tr.xy.tolist() == [[0, 0], [0, 0], [5, 5], [7, 7], [1, 1],
                                                                             [2, 2]]
    assert te.ids == ["s1", "s2", "q1"] and te.xy.tolist() == [[0, 0], [1, 1], [0, 0]]
    assert ds.places == {"columns": ["x", "y"], "crs": None}
    assert ds.encoding == read_presence_only(rec, background=bg, tests=tests).encoding.to_dict()
    sites = load_presence_only(rec, background=bg, tests=tests, view="sites").splits["train"]
    assert sites.ids == ["1", "3", "4", "9", "10"] and sites.xy.tolist() == [[0, 0], [5, 5], [7, 7], [1, 1], [2, 2]]
    assert sites.Z.shape == (5, 3) and np.asarray(sites.Z).dtype.kind in "iub"
    nobg = write(tmp_path, "bg2.csv", "spid,occ,group,t,soil\npseudo,0,NA,0.0,1\n")  # no ids, no places
    ds = load_presence_only(rec, background=nobg, tests=tests)
    assert ds.splits["train"].ids is None and ds.splits["train"].xy is None and ds.places is None


def test_latin1_files_are_named_together_and_unseen_test_levels_set_no_column(tmp_path):
    rec, bg, tests = tiny(tmp_path)
    for f in (rec, bg):  # a species and a pseudo-species name with a Latin-1 accent
        f.write_bytes(f.read_text().replace("pseudo", "pseud\xe9").replace(",p,", ",p\xe9,").encode("latin-1"))
    tests[1][1].write_text("group,siteid,x,y,p\xe9\nplant,q1,0,0,1\n", encoding="utf-8")
    ds = load_presence_only(rec, background=bg, tests=tests)
    assert [n for n in ds.notes if "not UTF-8" in n] == ["po.csv, bg.csv not UTF-8; read as Latin-1"]
    env = write(tmp_path, "env_u.csv", "group,siteid,x,y,t,soil\nbird,s1,0,0,1.0,9\nbird,s2,1,1,2.0,3\n")
    ds = load_presence_only(rec, background=bg, tests=[(env, tests[0][1]), tests[1]])
    assert ds.splits["test"].X[0].tolist() == [1.0, 0.0, 0.0, 0.0]  # level 9 never seen in training: no column set


def test_region_documentation_is_read_from_docs_or_man_with_bad_bytes_replaced(tmp_path):
    from spmlkit.data.formats.presence_only import documented_categorical, rd_categorical

    assert documented_categorical(tmp_path, "AWT") is None
    (tmp_path / "man").mkdir()
    (tmp_path / "man" / "AWT.Rd").write_bytes(b"veg \\tab vegetation \xff \\tab 1 = wet \\tab Categorical \\cr\n")
    assert documented_categorical(tmp_path, "AWT") == ["veg"]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "AWT.Rd").write_text("soil \\tab x \\tab Categorical \\cr\n")
    assert documented_categorical(tmp_path, "AWT") == ["soil"]  # docs/ first
    text = ("a \\tab \\tab Categorical \\cr\n"  # three cells, the second empty: still a row
            "two words \\tab x \\tab Categorical \\cr\n"  # not a code
            "b \\tab Categorical\n"  # two cells: not a row of the table
            "c\tx\tCategorical\n")  # tabs are not \\tab
    assert rd_categorical(text) == ["a"]


def test_prepare_with_rasters_passes_its_options_to_records_on_rasters(tmp_path, monkeypatch):
    from spmlkit.data.formats import presence_only as P
    from spmlkit.errors import ConfigError

    calls = []
    monkeypatch.setattr(P, "records_on_rasters", lambda *a, **kw: calls.append((a, kw)) or "dataset")
    log = print
    assert P._load(tmp_path / "r.csv", rasters=["env"], categorical=["soil"], label_column="sp", val_blocks="3",
                   name="n", log=log, raster_options={"seed": 2}) == "dataset"
    assert calls[-1] == ((tmp_path / "r.csv", ["env"]), {"categorical": ["soil"], "label_column": "sp", "val_blocks": 3,
                                                         "name": "n", "log": log, "seed": 2})
    P._load(tmp_path / "r.csv", rasters=["env"])
    assert calls[-1] == ((tmp_path / "r.csv", ["env"]), {"categorical": None, "label_column": None, "val_blocks": None,
                                                         "name": None, "log": None})
    for kw in (dict(test="e.csv"), dict(background="bg.csv"), dict(region="AWT")):
        with pytest.raises(ConfigError) as e:
            P._load(tmp_path / "r.csv", rasters=["env"], **kw)
        assert str(e.value) == ("--rasters draws the background from the rasters and holds out test rows: --test, "
                                "--background and --region do not apply")


def test_test_sites_keep_places_only_when_both_columns_are_there_and_latin1_tables_are_noted(tmp_path):
    rec, bg, tests = tiny(tmp_path)
    eb = write(tmp_path, "env_x.csv", "group,siteid,x,t,soil\nbird,s1,0,1.0,1\nbird,s2,1,2.0,3\n")
    pb = write(tmp_path, "pa_x.csv", "group,siteid,x,a,b\nbird,s1,0,1,0\nbird,s2,1,0,1\n")
    ep = write(tmp_path, "env_q.csv", "group,siteid,x,y,t,soil\nplant,q1,0,0,1.0,2\n")
    ds = load_presence_only(rec, background=bg, tests=[(eb, pb), (ep, tests[1][1])])
    assert ds.splits["test"].xy is None  # one table without y: no places for the test sites
    for f in (tests[0][0], tests[0][1]):
        f.write_bytes(f.read_text().replace("bird", "b\xefrd").encode("latin-1"))
    rec.write_text(rec.read_text().replace("bird", "b\xefrd"), encoding="utf-8")
    ds = load_presence_only(rec, background=bg, tests=tests)
    assert [n for n in ds.notes if "not UTF-8" in n] == ["env_b.csv, pa_b.csv not UTF-8; read as Latin-1"]


def test_record_ids_decide_the_background_ids_and_the_reader_names_unreadable_tables(tmp_path):
    rec, bg, tests = tiny(tmp_path)
    t = read_presence_only(rec, background=bg, tests=tests)
    assert t.passthrough == ("siteid", "spid", "x", "y", "occ", "group") and t.background_ids == ["9", "10"]
    alone = read_presence_only(rec, tests=tests)  # no background file: the records' ids alone
    assert alone.record_ids == ["1", "2", "3", "4"] and alone.background_ids == []
    noid = write(tmp_path, "noid.csv", "spid,x,y,occ,group,t,soil\na,0,0,1,bird,1.5,1\nb,0,0,1,bird,2.0,2\n"
                 "a,5,5,1,bird,0.5,1\np,7,7,1,plant,3.0,3\n")
    t = read_presence_only(noid, background=bg, tests=tests)
    assert t.record_ids is None and t.background_ids is None  # ids on one side only are not ids
    assert load_presence_only(noid, background=bg, tests=tests).splits["train"].ids is None
    nul = write(tmp_path, "nul.csv", HEAD + "1,a,0,0,1,bird," + "1" * 140_000 + ",1\n")  # over csv's field limit
    from spmlkit.errors import DataFormatError

    with pytest.raises(DataFormatError) as e:
        read_presence_only(nul, background=bg, tests=tests)
    assert str(e.value).startswith(f"{nul}: not a readable CSV table (")
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes((HEAD.replace("\n", "\r\n") + '"1\r\nx",a,0,0,1,bird,1.5,1\r\n2,b,0,0,1,bird,2.0,2\r\n'
                      "3,p,7,7,1,plant,3.0,3\r\n").encode())
    assert read_presence_only(crlf, background=bg, tests=tests).record_ids[0] == "1\r\nx"


def test_region_documentation_is_read_as_utf_8_whatever_the_locale(tmp_path, monkeypatch):
    """pathlib asks io.text_encoding for the locale's encoding when none is given: an ASCII
    locale must not change the codes read."""
    import io

    from spmlkit.data.formats.presence_only import documented_categorical

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "NSW.Rd").write_text("v\u00e9g\u00e9 \\tab x \\tab Categorical \\cr\n", encoding="utf-8")
    real = io.text_encoding
    monkeypatch.setattr(io, "text_encoding", lambda enc, stacklevel=2: "ascii" if enc is None else real(enc))
    assert documented_categorical(tmp_path, "NSW") == ["v\u00e9g\u00e9"]


def test_without_record_ids_there_are_no_background_ids_even_without_a_background(tmp_path):
    rec, bg, tests = tiny(tmp_path)
    noid = write(tmp_path, "noid.csv", "spid,x,y,occ,group,t,soil\na,0,0,1,bird,1.5,1\nb,0,0,1,bird,2.0,2\n"
                 "p,7,7,1,plant,3.0,3\n")
    assert read_presence_only(noid, tests=tests).background_ids is None
