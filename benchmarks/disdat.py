"""Presence-only species data (issue 24): every applicable linear method, SINR's and
Zbinden's losses, linear and MLP heads, and elapid's MaxEnt, on the four disdat regions
(Elith et al. 2020; ``../shared/data/disdat``), 3 seeds.

    python benchmarks/disdat.py --data ../shared/data/disdat --regions NZ     # one region's runs
    python benchmarks/disdat.py --table-only                                  # table.md + figure

Per region (``OUT/runs-<R>.json.gz``, gzip-compressed JSON, resumable by region): the
records view (one example per record) with the 10,000 random background rows as
training rows with no observed label; ``spml prepare``'s split (seed 0): 20 % of the records and background rows held
out for validation; the surveyed presence/absence sites as test, each species scored
on its own group's sites (the label mask).  ``--val-block-folds G`` holds out whole
spatial blocks instead: fold 1 of 5 folds of the blocks of a G × G grid, each fold
holding about a fifth of every species' records and of the background
(:func:`block_fold_validation`; ``auto_table.py``'s disdat part, G = 10).

**Choices without the test labels.**  Every choice (each method's learning rate, its
epoch, and the "best spmlkit" row) is made by the **presence-vs-background AUC on the
held-out validation rows** (``--selection background_auc``: per species, its held-out
presence records against the held-out background rows; no absence, no test label).
``--selection target_group_auc`` makes the same choices by the **target-group AUC**
instead (per species, its held-out presence records against the held-out records of the
other species; background rows left out; Phillips et al. 2009): the observers' sampling
bias is on both sides, so a model of where people record is not rewarded.

    python benchmarks/disdat.py --selection target_group_auc --no-maxent \
        --out benchmarks/results/disdat/target-group                     # then --table-only with
    python benchmarks/disdat.py --selection target_group_auc --table-only \
        --out benchmarks/results/disdat/target-group --maxent-from benchmarks/results/disdat

The test AUC of a choice is reported as the mean over 3 seeds (each seed its own
initialisation and batch order, one data split).

MaxEnt: ``elapid.MaxentModel`` (PyPI ``elapid==1.0.4``, its defaults: linear, hinge and
product features, β = 1, cloglog output), one model per species on all its presence
records against the same 10,000 background rows, categorical covariates declared.
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
OUT = REPO / "benchmarks" / "results" / "disdat"
REGIONS = ["NZ", "SWI", "CAN", "AWT"]  # the regions in ../shared/data/disdat (the table's default)
#: the categorical covariates of every region of the R package ``disdat`` (Elith et al. 2020), as
#: its documentation types them (``man/<R>.Rd``, column "Type"); used when the data folder has no
#: ``docs/<R>.Rd`` of its own.  NSW's ``disturb`` (1-3) and ``soilfert`` (1-5) are documented as
#: continuous, and its ``vegsys`` (9 vegetation types) as categorical: the reader's fallback rule
#: (integers with at most 6 levels) would get all three wrong.
KNOWN_CATEGORICAL = {"AWT": [], "CAN": ["ontveg"], "NSW": ["vegsys"], "NZ": ["age", "toxicats"], "SA": [],
                     "SWI": ["calc"]}
NEW = ["an-full", "an-full-me", "an-ssdl", "an-ssdl-me", "an-slds", "an-slds-me", "full-weighted"]
ANCHORS = {"MaxEnt, random background (published, elapid)": {"mean": 0.707, "AWT": 0.674, "CAN": 0.586,
                                                               "NZ": 0.727, "SWI": 0.798},
           "RF down-sampled, target-group background": {"mean": 0.746},
           "ensemble of 5 SDMs, target-group background": {"mean": 0.755}}
#: validation criteria: (short name, what it is, how the 'best' row is said), ``--selection``
CRITERIA = {"background_auc": ("bg-AUC", "presence-vs-background AUC", "background AUC"),
            "target_group_auc": ("tg-AUC", "target-group AUC (each species' presence records against the other "
                                 "species' records; background rows left out; Phillips et al. 2009)",
                                 "target-group AUC")}
# methods that do not apply to presence-only data: they need full labels or observed negatives
NOT_APPLICABLE = {"bce", "bce-ls", "iu", "iun"}


def linear_methods() -> list[str]:
    from spmlkit.experiments.bench import default_methods
    from spmlkit.methods.base import METHODS

    names = default_methods("linear")
    METHODS.discover()
    names += [n for n, s in sorted(METHODS.items()) if n not in names and s.setting in ("any", "linear")]
    return [n for n in names if n not in NOT_APPLICABLE and METHODS[n].regime == "single_positive"]


def fail(message: str):
    """Bad input: one line on stderr, exit status 2."""
    print(f"disdat.py: {message}", file=sys.stderr)
    raise SystemExit(2)


def data_regions(folder) -> list[str]:
    """The regions of a folder in the disdat layout (``<R>train_po.csv``): the four shared
    ones first, then the others in name order."""
    found = [p.name[:-len("train_po.csv")] for p in Path(folder).glob("*train_po.csv")]
    return [R for R in REGIONS if R in found] + sorted(R for R in found if R not in REGIONS)


def parse_categorical(items) -> dict:
    """``--categorical R=a,b`` (repeatable; ``R=`` declares none) -> ``{R: [a, b]}``."""
    out = {}
    for item in items or []:
        region, sep, names = item.partition("=")
        if not sep or not region.strip():
            fail(f"--categorical {item!r}: expected REGION=COL1,COL2 (or REGION= for none)")
        out[region.strip()] = [c.strip() for c in names.split(",") if c.strip()]
    return out


def region_categorical(region: str, args, log=print) -> list[str] | None:
    """The categorical covariates of ``region``: declared (``--categorical``), else documented
    in the data folder (``docs/<R>.Rd``), else the ``disdat`` package's documentation of its
    regions (:data:`KNOWN_CATEGORICAL`); None (the reader's detection rule) for a region none of
    them knows, which is said."""
    from spmlkit.data.formats.presence_only import documented_categorical

    declared = parse_categorical(args.categorical)
    if region in declared:
        return declared[region]
    documented = documented_categorical(args.data, region)
    if documented is not None:
        return documented
    if region in KNOWN_CATEGORICAL:
        return KNOWN_CATEGORICAL[region]
    log(f"note: region {region} is not a region of the disdat package and {args.data} has no docs/{region}.Rd: "
        "its categorical covariates are detected by the reader's rule (integer columns with at most 6 levels), "
        f"which one-hot encodes ordinal codes and misses categories with more levels; declare them with "
        f"--categorical {region}=COL1,COL2 (or {region}= for none)")
    return None


def record_species(Z) -> np.ndarray:
    """``(N,)`` the observed species of each training row of the records view (its one
    observed positive), −1 for a background row (no observed label)."""
    from spmlkit.sparse_labels import dense_rows

    pos = (Z if isinstance(Z, np.ndarray) else dense_rows(Z, np.arange(Z.shape[0]))) == 1
    if (pos.sum(1) > 1).any():
        fail("--val-block-folds needs one observed species per training row (--view records)")
    return np.where(pos.any(1), pos.argmax(1), -1)


def block_fold_validation(ds, blocks: int, folds: int = 5, seed: int = 0):
    """``ds`` with its training rows (records and background) split by place: the
    validation rows are fold 1 of ``folds`` folds of whole blocks of a ``blocks`` × ``blocks``
    grid, the blocks dealt so that each fold holds about 1/``folds`` of every species' records
    and of the background (:func:`spmlkit.data.spatial_splits.block_folds`, the split of
    ``spml prepare --rasters --val-blocks G``).  Held-out records then lie in places the
    model did not train on: with random held-out records, spatial autocorrelation puts a
    training record next to each of them and validation rewards local fit (Roberts et al.
    2017, *Ecography* 40:913–929; Valavi et al. 2019, blockCV).  ``--val-blocks`` instead
    draws 20 % of the occupied cells at random, which on disdat holds 37–39 % of SWI's and
    AWT's rows and 12 % of CAN's records; these folds hold 19–22 % of each region's rows."""
    from dataclasses import replace

    from spmlkit.data.spatial_splits import block_folds

    if "val" in ds.splits:
        fail("--val-block-folds and --val-blocks are two validation splits: give one")
    train = ds.splits["train"]
    if train.xy is None:
        fail(f"--val-block-folds: region {ds.name} has no places (x, y) for its records and background")
    held = block_folds(train.xy, record_species(train.Z), folds, blocks, seed) == 0
    splits = {"train": train.subset(np.flatnonzero(~held)), "val": train.subset(np.flatnonzero(held)),
              **{k: v for k, v in ds.splits.items() if k != "train"}}
    note = (f"validation: {int(held.sum())} rows in fold 1 of {folds} balanced folds of whole blocks of a "
            f"{blocks}x{blocks} grid (seed {seed})")
    return replace(ds, splits=splits, notes=[*ds.notes, note])


def run_spmlkit(bundle, method: str, head: str, args) -> list[dict]:
    import torch

    from spmlkit.config import TrainConfig
    from spmlkit.metrics import mean_auc
    from spmlkit.methods.base import build_method
    from spmlkit.training.run import train

    lrs = [float(x) for x in args.lrs.split(",")]
    from spmlkit.methods.recipe import is_recipe

    if is_recipe(build_method(method)) or head == "tree":  # a recipe (auto) searches its own learning rates;
        lrs = lrs[:1]                                          # the tree head trains once per seed
    seeds = [int(s) for s in args.seeds.split(",")]
    cfg = TrainConfig(method=method, epochs=args.mlp_epochs if head == "mlp" else args.epochs, batch_size=args.batch_size, head=head, hidden=args.hidden,
                      selection=args.selection, patience=None, threads=1)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    res = train(bundle, cfg, lrs=[lr for lr in lrs for _ in seeds], seeds=[s for _ in lrs for s in seeds],
                keep_state=True)
    secs = time.perf_counter() - t0
    # the seeds' ensemble at each lr: mean of their test logits (a choice needing no test label)
    ens = {}
    for lr in dict.fromkeys(r.lr for r in res):  # (a tree run records its own learning rate)
        mean_logits = np.mean([r.state["test_logits"] for r in res if r.lr == lr], axis=0)
        a = mean_auc(bundle.labels("test"), mean_logits, bundle.label_mask("test"))
        ens[lr] = {"ens_test_auc": a.mean, "ens_test_auc_per_label": [None if v != v else float(v) for v in a.auc]}
    val_key = "val_bg_auc" if args.selection == "background_auc" else "val_score"
    return [{"method": method, "head": head, "lr": r.lr, "seed": r.seed, val_key: r.val_score,
             **({} if args.selection == "background_auc" else {"selection": args.selection}),
             "best_epoch": r.best_epoch, "test_auc": r.test_auc["mean"], "test_auc_median": r.test_auc["median"],
             "test_auc_per_label": r.test_auc["per_label"], "test_map": r.test_map, "seconds": secs / len(res),
             **ens[r.lr]} for r in res]


def run_maxent(region: str, args) -> dict:
    import elapid

    from spmlkit.data.formats.presence_only import read_presence_only, region_files
    from spmlkit.metrics import mean_auc, mean_average_precision

    f = region_files(args.data, region)
    T = read_presence_only(f["records"], background=f["background"], tests=f["tests"],
                           categorical=region_categorical(region, args, log=lambda m: None))
    cat = [T.covariates.index(c) for c in T.categorical]
    L = len(T.label_names)
    scores = np.zeros((len(T.test), L))
    t0 = time.perf_counter()
    for k in range(L):
        pres = T.records[T.record_labels == k]
        x = np.concatenate([pres, T.background])
        y = np.concatenate([np.ones(len(pres)), np.zeros(len(T.background))])
        m = elapid.MaxentModel()
        m.fit(x, y, categorical=cat or None)
        scores[:, k] = np.asarray(m.predict(T.test)).ravel()
    a = mean_auc(T.test_Y, scores, T.test_mask)
    return {"method": "maxent (elapid 1.0.4)", "head": "-", "lr": None, "seed": None, "val_bg_auc": None,
            "test_auc": a.mean, "test_auc_median": a.median,
            "test_auc_per_label": [None if v != v else float(v) for v in a.auc],
            "test_map": mean_average_precision(T.test_Y, scores, mask=T.test_mask).map,
            "seconds": time.perf_counter() - t0, "label_names": T.label_names}


def run_region(region: str, args) -> None:
    from spmlkit.data import prepare_bundle
    from spmlkit.data.formats.presence_only import load_presence_only_folder

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done = read_region(out, region) if region_record(out, region).exists() else \
        {"region": region, "runs": [], "failed": {}}
    path = out / f"runs-{region}.json.gz"  # written compressed (a record read from runs-R.json moves there)
    have = {(r["method"], r["head"]) for r in done["runs"]} | {tuple(k.split("|")) for k in done["failed"]}
    t_region = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        cat = region_categorical(region, args)
        ds = load_presence_only_folder(args.data, region, view=args.view, val_blocks=args.val_blocks,
                                       **({} if cat is None else {"categorical": cat}))
        if args.val_block_folds:
            ds = block_fold_validation(ds, args.val_block_folds)
            print(f"{region}: {ds.notes[-1]}", flush=True)
        print(f"{region}: categorical covariates {', '.join(cat) if cat else 'none'}"
              f"{' (detected by the rule)' if cat is None else ''}", flush=True)
        bundle = prepare_bundle(ds, Path(tmp) / region, seed=0, log=lambda m: None)
        linear = linear_methods() if args.methods is None else [m for m in args.methods.split(",") if m]
        plan = [(m, "linear") for m in dict.fromkeys(linear)]
        plan += [(m, "mlp") for m in args.mlp_methods.split(",") if m]
        plan += [(m, "tree") for m in args.tree_methods.split(",") if m]
        for method, head in plan:
            if (method, head) in have:
                continue
            try:
                runs = run_spmlkit(bundle, method, head, args)
            except Exception as exc:  # a method that does not apply: recorded, not fatal
                done["failed"][f"{method}|{head}"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                print(f"{region} {method} {head}: skipped ({done['failed'][f'{method}|{head}']})", flush=True)
            else:
                done["runs"].extend(runs)
                best = max(runs, key=lambda r: -math.inf if val_of(r) != val_of(r) else val_of(r))
                print(f"{region} {method:14s} {head:6s} val {CRITERIA[args.selection][0]} {val_of(best):.2f} "
                      f"test AUC {best['test_auc']:.3f} ({runs[0]['seconds'] * len(runs):.0f} s)", flush=True)
            save_region(path, done)
    if ("maxent (elapid 1.0.4)", "-") not in have and not args.no_maxent:
        r = run_maxent(region, args)
        done["runs"].append(r)
        print(f"{region} maxent test AUC {r['test_auc']:.3f} ({r['seconds']:.0f} s)", flush=True)
    done.setdefault("commands", []).append({"command": " ".join(shlex.quote(a) for a in sys.argv),
                                            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                            "wall_s": round(time.perf_counter() - t_region, 1)})
    done["label_names"] = ds.label_names
    done["grid"] = grid_line(args)
    save_region(path, done)


def region_record(folder: Path, region: str) -> Path:
    """A region's record: ``runs-R.json.gz``, or ``runs-R.json`` when written before records were compressed."""
    from spmlkit.io import json_record_path

    return json_record_path(Path(folder) / f"runs-{region}.json")


def read_region(folder: Path, region: str) -> dict:
    from spmlkit.io import read_json

    return read_json(region_record(folder, region))


def save_region(path: Path, done: dict) -> None:
    """``runs-R.json.gz``; the same record as ``runs-R.json`` (the form before compression) is superseded."""
    from spmlkit.io import write_json_gz

    write_json_gz(path, done)
    old = path.with_name(path.name[:-3])
    if old.is_file():
        old.unlink()


def val_of(r: dict):
    """A run's validation score under its criterion (``val_bg_auc``: runs chosen by
    background AUC, the table's first criterion; ``val_score``: any other)."""
    return r.get("val_score", r.get("val_bg_auc"))


def choose(runs: list[dict]) -> dict:
    """One (method, head): its lr chosen by mean validation score (the run's criterion) over
    seeds; the test AUC mean/std over the seeds at that lr."""
    by_lr: dict = {}
    for r in runs:
        by_lr.setdefault(r["lr"], []).append(r)

    def val(rs):
        v = [val_of(r) for r in rs if val_of(r) is not None and val_of(r) == val_of(r)]
        return float(np.mean(v)) if v else -math.inf

    lr, rs = max(by_lr.items(), key=lambda kv: val(kv[1]))
    t = np.array([r["test_auc"] for r in rs])
    per = np.nanmean(np.array([[np.nan if v is None else v for v in r["test_auc_per_label"]] for r in rs]), axis=0)
    ens = None
    if rs[0].get("ens_test_auc_per_label") is not None:
        ens = np.array([np.nan if v is None else v for v in rs[0]["ens_test_auc_per_label"]])
    return {"lr": lr, "val": val(rs), "auc": float(t.mean()), "ens_per_label": ens, "std": float(t.std()) if len(t) > 1 else 0.0,
            "median": float(np.mean([r["test_auc_median"] for r in rs])),
            "map": float(np.mean([r["test_map"] for r in rs])), "per_label": per, "n": len(rs),
            "seconds": float(sum(r["seconds"] for r in rs))}


def grid_line(args) -> str:
    vb, vf = args.val_blocks, getattr(args, "val_block_folds", None)
    split = (f"spatial blocks ({vb}x{vb}, 20% of the occupied cells)" if vb else
             f"fold 1 of 5 balanced folds of whole blocks ({vf}x{vf} grid)" if vf else "random 20% of the rows")
    return (f"lrs {args.lrs}; seeds {args.seeds}; {args.epochs} epochs (MLP head {args.mlp_epochs}); "
            f"batch {args.batch_size}; validation {split}; "
            f"MLP hidden {args.hidden}; view {args.view}"
            + ("" if args.selection == "background_auc" else f"; selection {args.selection}"))


def write_table(args) -> None:
    from spmlkit.experiments.machine import machine_info

    out = Path(args.out)
    # runs-R.json.gz, or runs-R.json when written before records were compressed
    found = sorted({p.name[len("runs-"):].split(".json")[0] for p in out.glob("runs-*.json*")})
    wanted = args.regions.split(",") if args.regions_given else found
    data = {R: read_region(out, R) for R in wanted if R in found}
    regions = [R for R in REGIONS if R in data] + sorted(R for R in data if R not in REGIONS)
    if not regions:
        fail(f"no region runs (runs-<R>.json) in {out}" + (
            f" for --regions {args.regions}" if args.regions_given else "") + "; run the regions first")
    n_species = sum(len(data[R].get("label_names") or []) for R in regions)
    shared = sorted(regions) == sorted(REGIONS)  # the anchors are for the four shared regions' species
    allN = f"all {n_species}"
    anchors_avg = " (the anchors' average)" if shared else ""
    if args.maxent_from:  # MaxEnt does not depend on the validation split: reuse another run's
        for R in regions:
            other = read_region(Path(args.maxent_from), R)
            data[R]["runs"] += [r for r in other["runs"] if r["method"].startswith("maxent")]
    cells: dict = {}
    for R in regions:
        groups: dict = {}
        for r in data[R]["runs"]:
            groups.setdefault((r["method"], r["head"]), []).append(r)
        for key, rs in groups.items():
            cells.setdefault(key, {})[R] = choose(rs)
    maxent = ("maxent (elapid 1.0.4)", "-")
    spml = [k for k in cells if k != maxent and all(R in cells[k] for R in regions)]

    def species_mean(k):  # mean over all species of all regions (the anchors' average)
        v = np.concatenate([cells[k][R]["per_label"] for R in regions])
        return float(np.nanmean(v))

    def ens_mean(k):
        if any(cells[k][R]["ens_per_label"] is None for R in regions):
            return float("nan")
        return float(np.nanmean(np.concatenate([cells[k][R]["ens_per_label"] for R in regions])))

    def val_mean(k):
        return float(np.mean([cells[k][R]["val"] for R in regions]))

    best_fixed = max(spml, key=val_mean) if spml else None
    lines = ["# Presence-only species data (disdat): spmlkit's methods and MaxEnt side by side", ""]
    cmds = [c for R in regions for c in data[R].get("commands", [])]
    wall = sum(c["wall_s"] for c in cmds)
    # the command that writes this table from the region records: as given when it is this one
    if args.table_only:
        table_cmd = ["python", "benchmarks/disdat.py", *sys.argv[1:]]
    else:
        table_cmd = ["python", "benchmarks/disdat.py", "--table-only"]
        if Path(args.out).resolve() != Path(OUT).resolve():
            table_cmd += ["--out", str(args.out)]
        if args.maxent_from:
            table_cmd += ["--maxent-from", str(args.maxent_from)]
        if args.selection != "background_auc":
            table_cmd += ["--selection", args.selection]
        if args.criteria_figure:
            table_cmd += ["--criteria-figure", str(args.criteria_figure)]
    lines += ["```",
              "commands: " + " ; ".join(sorted({c["command"] for c in cmds})) + " ; " + shlex.join(table_cmd),
              f"dates: {min(c['date'] for c in cmds) if cmds else '-'} .. {max(c['date'] for c in cmds) if cmds else '-'}",
              f"machine: {machine_info(setting='linear')}",
              "device: cpu (torch threads 1)",
              f"wall time: {wall / 60:.1f} min over {len(cmds)} region command(s)",
              "grid: " + " | ".join(sorted({data[R].get("grid") or grid_line(args) for R in regions})),
              "```", ""]
    lines += ["Region columns: mean ± std over the 3 seeds. Test score: per-species **AUC-ROC** on the species' own surveyed test sites (label mask), "
              "averaged over species: **mean** of the four regions' values in the region columns; "
              f"'{allN}' = mean over all species of all regions{anchors_avg}. "
              "mAP ×100 is masked the same way.",
              "", "**Choices without test labels**: each row's learning rate and epoch are chosen by the "
              f"{CRITERIA[args.selection][1]} on held-out validation rows (20 % of the records and of the background; "
              f"`--selection {args.selection}`; the grid line says whether the held-out rows are random or whole spatial blocks). 'best spmlkit' = the row with the highest mean validation "
              f"{CRITERIA[args.selection][2]} over the four regions, fixed for all regions.", ""]
    head = ("| method | head | " + " | ".join(regions) + f" | {allN} | {allN}, 3-seed ensemble | median (mean of regions) "
            f"| mAP (mean of regions) | val {CRITERIA[args.selection][0]} | s/run |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    order = sorted(cells, key=lambda k: -species_mean(k) if all(R in cells[k] for R in regions) else 0)
    for k in order:
        c = cells[k]
        if not all(R in c for R in regions):
            continue
        mark = " **(best spmlkit, chosen without test labels)**" if k == best_fixed else ""
        reg = " | ".join(f"{c[R]['auc']:.3f} ± {c[R]['std']:.3f}" if c[R]["n"] > 1 else f"{c[R]['auc']:.3f}"
                         for R in regions)
        v = "-" if k == maxent else f"{val_mean(k):.1f}"
        e = "-" if math.isnan(ens_mean(k)) else f"{ens_mean(k):.3f}"
        lines.append(f"| {k[0]}{mark} | {k[1]} | {reg} | {species_mean(k):.3f} | {e} | "
                     f"{np.mean([c[R]['median'] for R in regions]):.3f} | {np.mean([c[R]['map'] for R in regions]):.1f} | "
                     f"{v} | {np.mean([c[R]['seconds'] / c[R]['n'] for R in regions]):.1f} |")
    if shared:
        lines += ["", "Anchors (mean per-species AUC over these 142 species, from the issue; not measured here):", "",
                  "| anchor | " + " | ".join(regions) + " | all |", "|---|" + "---|" * (len(regions) + 1)]
        for name, a in ANCHORS.items():
            lines.append(f"| {name} | " + " | ".join(f"{a[R]:.3f}" if R in a else "-" for R in regions)
                         + f" | {a['mean']:.3f} |")
    if best_fixed and maxent in cells and all(R in cells[maxent] for R in regions):
        d = species_mean(best_fixed) - species_mean(maxent)
        lines += ["", f"Target (issue 24): best spmlkit chosen without test labels ≥ 0.75 mean AUC and ≥ 0.03 above "
                  f"elapid's MaxEnt in the same run. Measured: **{best_fixed[0]} ({best_fixed[1]}) "
                  f"{species_mean(best_fixed):.3f}** vs MaxEnt {species_mean(maxent):.3f} (difference {d:+.3f}); "
                  f"0.75 {'reached' if species_mean(best_fixed) >= 0.75 else 'not reached'}, +0.03 "
                  f"{'reached' if d >= 0.03 else 'not reached'}. The same choice as the ensemble of its 3 seeds "
                  f"(mean of their test logits; no further choice): {ens_mean(best_fixed):.3f} "
                  f"(difference {ens_mean(best_fixed) - species_mean(maxent):+.3f})."]
        per_region = {R: max(spml, key=lambda k: cells[k][R]["val"]) for R in regions}
        pr = float(np.nanmean(np.concatenate([cells[per_region[R]][R]["per_label"] for R in regions])))
        lines += [f"Chosen per region by the same validation criterion: "
                  + ", ".join(f"{R} {per_region[R][0]} ({per_region[R][1]}) {cells[per_region[R]][R]['auc']:.3f}"
                              for R in regions) + f"; {allN} species {pr:.3f}."]
        oracle = max(spml, key=species_mean)
        lines += [f"For reference only (chosen on test labels, not a result): the best row on test is "
                  f"{oracle[0]} ({oracle[1]}) {species_mean(oracle):.3f}."]
    failed = {k: v for R in regions for k, v in data[R]["failed"].items()}
    if failed:
        lines += ["", "Methods that did not run on this data (recorded, not fatal):", ""]
        lines += [f"- {k.replace('|', ' / ')}: {v}" for k, v in sorted(failed.items())]
    if args.criteria_figure:
        lines += ["", criteria_figure(args, cells, regions, out / "criteria.png")]
    (out / "table.md").write_text("\n".join(lines) + "\n")
    if best_fixed and maxent in cells:
        figure(cells, regions, [best_fixed, max(spml, key=species_mean)], maxent, out / "per_species_auc.png")
    print("\n".join(lines))


def criteria_figure(args, cells, regions, path) -> str:
    """Validation score against test AUC, one point per (method, head, region), for this
    folder's criterion and for the folder ``--criteria-figure`` names (another criterion on
    the same data and grid), with Spearman's rank correlation of each; returns the line
    for the table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from scipy.stats import spearmanr

    other = Path(args.criteria_figure)
    sets = []
    for folder, crit_cells in ((other, None), (Path(args.out), cells)):
        data = {R: read_region(folder, R) for R in regions}
        grid = data[regions[0]].get("grid", "")
        crit = grid.split("selection ")[-1] if "selection " in grid else "background_auc"
        pts = {R: [] for R in regions}
        for R in regions:
            groups: dict = {}
            for r in data[R]["runs"]:
                if r["method"].startswith("maxent"):
                    continue
                groups.setdefault((r["method"], r["head"]), []).append(r)
            for rs in groups.values():
                c = choose(rs)
                pts[R].append((c["val"], c["auc"]))
        allv = [p for R in regions for p in pts[R]]
        rho_all = spearmanr([v for v, _ in allv], [t for _, t in allv]).statistic
        rho = {R: spearmanr(*zip(*pts[R])).statistic for R in regions}
        sets.append((crit, pts, rho_all, rho))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), squeeze=False)
    for ax, (crit, pts, rho_all, rho) in zip(axes[0], sets):
        for R, mk in zip(regions, "os^D"):
            v, t = zip(*pts[R])
            ax.scatter(v, t, s=14, marker=mk, alpha=0.8, label=f"{R} (ρ = {rho[R]:.2f})")
        ax.set_xlabel(f"validation {CRITERIA[crit][0]} (no test label)")
        ax.set_ylabel("test AUC (mean over species)")
        ax.set_title(f"--selection {crit}: Spearman ρ within regions, mean {np.mean(list(rho.values())):.2f}",
                     fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return ("Validation criterion against test AUC, one point per method × head × region (![criteria](criteria.png)); "
            "Spearman's ρ within each region: " + "; ".join(
                f"`{crit}` " + ", ".join(f"{R} {rho[R]:.2f}" for R in regions)
                + f" (mean {np.mean(list(rho.values())):.2f})" for crit, _, _, rho in sets) + ".")


def figure(cells, regions, rows, maxent, path) -> None:
    """Per-species test AUC, MaxEnt (x) against spmlkit (y): the validation choice and the
    best row on test (labelled as such), one point per species."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = ["chosen by validation (no test label)", "best on test (reference, not a choice)"]
    fig, axes = plt.subplots(1, len(rows), figsize=(5 * len(rows), 5), squeeze=False)
    for ax, row, title in zip(axes[0], rows, titles):
        for R, mk in zip(regions, "os^D"):
            ax.scatter(cells[maxent][R]["per_label"], cells[row][R]["per_label"], s=14, marker=mk, label=R, alpha=0.8)
        ax.plot([0.2, 1], [0.2, 1], color="grey", lw=0.8)
        ax.set_xlabel("MaxEnt (elapid 1.0.4), per-species test AUC")
        ax.set_ylabel(f"spmlkit {row[0]} ({row[1]} head), per-species test AUC")
        ax.set_title(f"{title}\nabove the line: spmlkit better", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "disdat"))
    p.add_argument("--regions", default=None,
                   help="comma-separated regions of --data (default: the four shared ones, NZ,SWI,CAN,AWT; any "
                        "region in the disdat layout works); with --table-only: the regions to tabulate (default: "
                        "every runs-<R>.json in --out)")
    p.add_argument("--categorical", action="append", metavar="REGION=COL1,COL2",
                   help="declare a region's categorical covariates (repeatable; REGION= declares none); default: "
                        "the region's docs/<R>.Rd in --data, else the disdat package's documentation of its six "
                        "regions, else the reader's detection rule (said)")
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--methods", help="linear-head methods (default: every applicable registered method; '' for none)")
    p.add_argument("--mlp-methods", default="an,an-full,an-full-me,an-ssdl,full-weighted",
                   help="methods also trained with the MLP head (--hidden)")
    p.add_argument("--tree-methods", default="", help="methods trained with the tree head (--head tree; the trees "
                   "extra): it trains once per seed, whatever --lrs")
    p.add_argument("--lrs", default="1e-3,1e-2")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--mlp-epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--view", default="records", choices=("records", "sites"))
    p.add_argument("--no-maxent", action="store_true")
    p.add_argument("--maxent-from", help="table: take MaxEnt's runs from this result folder (same data, same test)")
    p.add_argument("--val-blocks", type=int, default=None,
                   help="validate on 20%% of a G x G grid of spatial blocks instead of a random 20%% of the rows")
    p.add_argument("--val-block-folds", type=int, default=None, metavar="G",
                   help="validate on fold 1 of 5 folds of whole blocks of a G x G grid, each fold holding about a "
                        "fifth of every species' records and of the background (spml prepare --rasters --val-blocks "
                        "G's split)")
    p.add_argument("--selection", default="background_auc", choices=sorted(CRITERIA),
                   help="validation criterion choosing each run's epoch, each row's lr and the best row (default "
                        "background_auc; target_group_auc: presences against the other species' records)")
    p.add_argument("--criteria-figure", metavar="OTHER_DIR",
                   help="table: also draw criteria.png, validation score against test AUC for this folder's "
                        "criterion and for OTHER_DIR's runs (another --selection on the same data)")
    p.add_argument("--table-only", action="store_true")
    args = p.parse_args(argv)
    args.regions_given = args.regions is not None
    if args.regions is None:
        args.regions = ",".join(REGIONS)
    os.environ.setdefault("SPML_NO_PROGRESS", "1")
    if not args.table_only:
        known = data_regions(args.data)
        unknown = [R for R in args.regions.split(",") if R not in known]
        if unknown:
            fail(f"{args.data} has no region {', '.join(unknown)} (no <R>train_po.csv); "
                             f"regions there: {', '.join(known) or 'none'}")
        for R in args.regions.split(","):
            run_region(R, args)
    write_table(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
