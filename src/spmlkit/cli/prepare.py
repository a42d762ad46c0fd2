"""``spml prepare``: load, observe, split and save a bundle."""
from __future__ import annotations

import sys
from pathlib import Path

from .. import ownership
from ..data import load_any, prepare_bundle
from ..data.dataset import single_use_labels
from ..errors import ConfigError
from ..labels import REGIMES, REGIME_ALIASES
from .common import _csv_list, _label_names, _nonneg_float, _nonneg_int, _pos_int, _regime_name, _seed, _unit_float


def run(args) -> int:
    inputs = [args.source, args.test, args.labels_xml, args.images, args.test_images, args.val_file,
              args.label_names if args.label_names and Path(args.label_names).exists() else None,
              *(args.rasters or []), args.mask, args.bias]
    ownership.check_input_paths(inputs)
    ownership.refuse_inputs(args.out, inputs)  # the bundle is never written over (or into) what it is made of
    if args.label_set_column and not args.separator:
        raise ConfigError("--separator must not be empty (the text between label names in a --label-set-column "
                          "cell, e.g. ';')")
    if args.overwrite:  # replacing the bundle must not delete anything the command reads
        ownership.refuse_inputs(args.out, [args.data_root], option="--overwrite", inside_ok=True)
    table = _table_options(args)
    if args.observed and args.full_labels:
        raise ConfigError("--observed and --full-labels contradict each other; pass one of them")
    observed = True if args.observed else (False if args.full_labels else None)  # None: from the table's layout
    said: set[str] = set()  # notes already printed while loading are not repeated in the summary

    def log(m):
        said.add(m)
        print(m, file=sys.stderr)

    ds = load_any(args.source, data_root=args.data_root, format=args.format, test=args.test,
                  labels_xml=args.labels_xml, images=args.images, test_images=args.test_images,
                  observed=observed, name=args.name, val_file=args.val_file, log=log, **table)
    if (args.label_column or args.label_set_column) and not args.label_names:
        _warn_single_use_labels(ds, args.source)
    bundle = prepare_bundle(ds, args.out, regime=args.regime, seed=args.seed, val_fraction=args.val_fraction,
                            test_fraction=args.test_fraction, hide_prob=args.hide_prob, overwrite=args.overwrite,
                            log=log)
    print("\n".join(line for line in bundle.summary().splitlines() if line[len("  note: "):] not in said
                    or not line.startswith("  note: ")))
    if bundle.meta.get("background_rows") and bundle.n_labels <= 50:  # presence-only: what each species trains on
        print("records per species in the bundle: " + "; ".join(_split_counts(bundle)))
    return 0


def _split_counts(bundle) -> list[str]:
    """``name: train N, val N, test N`` per species (the bundle's observed positives)."""
    from ..sparse_labels import as_sparse  # lazy: torch-free CLI start-up

    counts = {s: as_sparse(bundle.observations(s)).col_counts(1) if bundle.size(s) else None
              for s in ("train", "val", "test")}
    return [f"{name}: " + ", ".join(f"{s} {0 if c is None else int(c[k])}" for s, c in counts.items())
            for k, name in enumerate(bundle.label_names)]


def _table_options(args) -> dict:
    """The table options of :func:`spmlkit.data.load_any` that the command line gives."""
    table = {}
    if args.label_columns:
        table["label_columns"] = _csv_list(args.label_columns)
    if args.labels_last is not None:
        table["labels_last"] = args.labels_last
    if args.label_set_column:
        table["label_set_column"] = args.label_set_column
        table["separator"] = args.separator
    if args.label_column:
        table["label_column"] = args.label_column
    if args.delimiter:
        table["delimiter"] = "\t" if args.delimiter in ("\\t", "tab") else args.delimiter
    for opt in ("region", "background", "view", "val_blocks"):  # presence-only data
        if getattr(args, opt, None):
            table[opt] = getattr(args, opt)
    if getattr(args, "rasters", None):  # records on covariate rasters
        table["rasters"] = list(args.rasters)
        table["raster_options"] = {
            "crs": args.crs, "background": args.background_points or 10000, "mask": args.mask, "bias": args.bias,
            "seed": args.seed, "one_per_cell": args.one_per_cell, "off_raster": args.off_raster,
            "window_rows": args.window_rows, "x_column": args.x_column, "y_column": args.y_column,
            "rank": args.rank, "covariates": _csv_list(args.covariates) if args.covariates else None,
            "split": args.split, "folds": args.folds, "spatial_test": args.spatial_test, "buffer": args.buffer,
            "min_train_records": args.min_train_records,
            "species": [n.strip() for n in args.species.split(",")] if args.species else None}
    else:
        given = [o for o in ("crs", "mask", "bias", "covariates", "x_column", "y_column", "spatial_test", "buffer",
                             "species")
                 if getattr(args, o, None)]
        if given or args.one_per_cell or args.background_points is not None:
            raise ConfigError(f"--{(given or ['background-points'])[0].replace('_', '-')} goes with --rasters "
                              "(records on covariate rasters)")
    if getattr(args, "categorical", None) is not None:
        table["categorical"] = _csv_list(args.categorical) if args.categorical else []
    if args.path_column:
        table["path_column"] = args.path_column
        table["check_files"] = not args.no_check_files
    if args.id_column:
        table["id_column"] = args.id_column
    if args.label_names:
        table["label_names"] = _label_names(args.label_names)
    return table


def _warn_single_use_labels(ds, source) -> None:
    """Labels named in one row only, when the vocabulary comes from a label column
    (:func:`spmlkit.data.dataset.single_use_labels`): --label-names makes a typo an error."""
    once = single_use_labels(ds)
    if once:
        shown = ", ".join(repr(n) for n in once[:5]) + (f" and {len(once) - 5} more" if len(once) > 5 else "")
        print(f"warning: {source}: label{'s' if len(once) > 1 else ''} {shown} appear{'' if len(once) > 1 else 's'} "
              f"in one row only — a typo makes a new label; pass --label-names (a file or a comma-separated list "
              "of every label) so that an unknown label is an error", file=sys.stderr)


def add_parser(sub) -> None:
    """``spml prepare``: its options (``spml prepare --help``)."""
    p = sub.add_parser("prepare", help="load, observe, split and save a bundle",
                       description="Turn a fully labelled dataset (or your own observed labels) into a prepared "
                                   "bundle: official test split (or a seeded hold-out), 20% of training held out for "
                                   "validation, observations simulated under --regime and stored.")
    p.add_argument("source", help="a dataset name (see 'spml datasets') or a file/folder path")
    p.add_argument("-o", "--out", required=True, help="bundle folder to create")
    p.add_argument("--regime", default="single_positive", type=_regime_name, metavar="REGIME",
                   help="observation regime simulated for training (default: single_positive): "
                        + ", ".join(sorted(REGIMES)) + "; short names: "
                        + ", ".join(f"{a}={n}" for a, n in REGIME_ALIASES.items() if a in ("1p-frequent", "1p-rare",
                                                                                          "1p-largest")))
    _split_arguments(p)
    _table_arguments(p)
    _presence_only_arguments(p)
    geo = p.add_argument_group("records on covariate rasters (needs the [geo] extra: pip install "
                               "'spmlkit[geo]'; docs/presence_only.md)")
    _raster_arguments(geo)
    p.add_argument("--data-root", help="folder holding standard datasets (or set SPMLKIT_DATA)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing bundle")
    p.set_defaults(func=run)


def _split_arguments(p) -> None:
    """``spml prepare``: the seed, the shares held out for validation and test, and the 'partial' regime's
    hiding probability."""
    p.add_argument("--seed", type=_seed, default=0, help="seed of the splits and the observations (default 0)")
    p.add_argument("--val-fraction", type=_unit_float, default=0.2,
                   help="share of the training rows held out for validation (default 0.2; it chooses the best "
                        "epoch and auto's learning rates; 0: none, the last epoch is kept and auto refuses)")
    p.add_argument("--test-fraction", type=_unit_float, default=0.2,
                   help="share held out as test when the source has no official test split (default 0.2; 0: no "
                        "test split, every row trains or validates: the model to deploy, after evaluating with "
                        "a hold-out)")
    p.add_argument("--hide-prob", type=_unit_float, default=0.5, help="hiding probability of the 'partial' regime")


def _table_arguments(p) -> None:
    """``spml prepare``: the input format and how a table's labels, paths and identifiers are read."""
    p.add_argument("--format", help="input format: arff, csv, tsv, npz, mulan, voc, coco, nuswide, cub or another "
                                    "registered one (default: from the extension / folder layout)")
    p.add_argument("--test", help="separate test file in the same format (official split)")
    p.add_argument("--labels-xml", help="Mulan label XML for an ARFF file")
    p.add_argument("--label-columns", help="CSV/TSV: comma-separated label column names or globs (e.g. 'Class*')")
    p.add_argument("--labels-last", type=_pos_int, help="CSV/TSV: the last N columns are labels")
    p.add_argument("--label-set-column", help="CSV/TSV: a column of label names separated by --separator")
    p.add_argument("--label-column", help="CSV/TSV: a column holding exactly one label name per row (e.g. a "
                                          "'path,label' file; an image listed on several rows gets all its labels); "
                                          "with --rasters, the species column (default: species, scientificName, "
                                          "spid, ...)")
    p.add_argument("--label-names", help="CSV/TSV with --label-column/--label-set-column: the label vocabulary "
                                         "and its order, as a comma-separated list or a file with one name per "
                                         "line (a label outside it is an error; default: the names found)")
    p.add_argument("--delimiter", help="CSV/TSV: the character between columns (default: ',' for .csv, a tab for "
                                       ".tsv, else detected); e.g. ';' for spreadsheets' semicolon CSVs, '\\t' or "
                                       "'tab' for tabs")
    p.add_argument("--separator", default=";", help="separator inside --label-set-column cells (default ';')")
    p.add_argument("--path-column", help="CSV/TSV: column of image paths (inputs are images, not features)")
    p.add_argument("--id-column", help="CSV/TSV: column of example identifiers (not a feature)")
    p.add_argument("--images", help="COCO JSON / NUS-WIDE: image folder")
    p.add_argument("--test-images", help="COCO JSON: image folder of the --test file")
    p.add_argument("--observed", action="store_true",
                   help="labels are observations (+1 positive, -1 negative, 0/empty unknown; in label-set "
                        "columns a '-name' is a negative), not full labels: the bundle has no full labels and "
                        "everything downstream says 'observed labels only'. Without it or --full-labels, a table "
                        "(any layout) is read as observed when its training rows are evidently partial (one "
                        "label each, or one or two of 5+ labels), and otherwise refused, asking")
    p.add_argument("--full-labels", action="store_true",
                   help="the labels are complete label sets (e.g. multi-class data given with --label-column, or "
                        "a table with one or two positives per row, which are otherwise read as observed)")
    p.add_argument("--val-file", help="a small FULLY labelled validation file in the same format and layout (with "
                                      "--label-column, that column may hold several names separated by "
                                      "--separator); used for validation instead of holding out training data")
    p.add_argument("--no-check-files", action="store_true",
                   help="CSV/TSV with --path-column: do not check that every image file exists")


def _presence_only_arguments(p) -> None:
    """``spml prepare``: the bundle's ``--name`` and the presence-only options (region, background, view,
    categorical covariates, spatial validation blocks), in the help's order."""
    p.add_argument("--name", help="dataset name stored in the bundle")
    p.add_argument("--region", help="presence-only folder (<R>train_po.csv, <R>train_bg.csv, <R>test_env*.csv, "
                   "<R>test_pa*.csv): the region R to prepare, e.g. NZ (docs/presence_only.md)")
    p.add_argument("--background", help="presence-only records CSV: the background rows' CSV (no label)")
    p.add_argument("--view", choices=("records", "sites"),
                   help="presence-only: one example per record (default) or records at the same x, y merged")
    p.add_argument("--categorical", help="presence-only: comma-separated categorical covariates (one-hot encoded; "
                   "default: integer columns with at most 6 levels)")
    p.add_argument("--val-blocks", type=_pos_int, metavar="G",
                   help="presence-only: validate on 20%% of a G x G grid of spatial blocks (records and background "
                        "there) instead of a random 20%% of the rows")


def _raster_arguments(geo) -> None:
    """``spml prepare``: the options of records on covariate rasters (the ``[geo]`` argument group)."""
    geo.add_argument("--rasters", nargs="+", metavar="DIR_OR_FILE",
                     help="covariate rasters (a folder or files GDAL reads; band/file names = covariate names): the "
                          "records' covariates are read at their x, y, and background rows drawn from the valid cells")
    geo.add_argument("--crs", help="--rasters: CRS of the records' x, y (default EPSG:4326, longitude/latitude); "
                                   "it must be the rasters' CRS")
    geo.add_argument("--background-points", type=_pos_int, metavar="N",
                     help="--rasters: background cells to draw (default 10000; every valid cell when fewer)")
    geo.add_argument("--mask", help="--rasters: draw background only where this raster has data and is not 0")
    geo.add_argument("--bias", help="--rasters: draw background with probability proportional to this raster "
                                    "(e.g. sampling effort)")
    geo.add_argument("--covariates", help="--rasters: comma-separated layers to use (default: every layer)")
    geo.add_argument("--species", metavar="NAME[,NAME]",
                     help="--rasters: keep only these species' records (names as spml clean writes them), as if "
                          "the file held nothing else: the species' bundle, split and model do not depend on the "
                          "other species in the file (default: every species, trained together)")
    geo.add_argument("--one-per-cell", action="store_true",
                     help="--rasters: keep one record per species and raster cell (the others are counted)")
    geo.add_argument("--off-raster", choices=("drop", "error"), default="drop",
                     help="--rasters: records outside the rasters or on nodata: dropped and counted (default) or "
                          "an error")
    geo.add_argument("--x-column", help="--rasters: the records' x (longitude) column (default: x, lon, longitude, "
                                        "decimalLongitude, ...)")
    geo.add_argument("--y-column", help="--rasters: the records' y (latitude) column (default: y, lat, latitude, ...)")
    geo.add_argument("--rank", choices=("species", "as-is"), default="species",
                     help="--rasters: species names reduced to 'Genus epithet' (default) or kept as written")
    geo.add_argument("--split", choices=("blocks", "checkerboard"), default="blocks",
                     help="--rasters --val-blocks G: validation on one of --folds folds of whole blocks, each fold "
                          "about 1/folds of every species' records (default), or on one colour of a G x G "
                          "checkerboard (half the blocks)")
    geo.add_argument("--folds", type=_pos_int, default=5,
                     help="--split blocks: folds the blocks are dealt into (default 5: validation about 20%%)")
    geo.add_argument("--spatial-test", action="store_true",
                     help="--split blocks: the test split is another fold of whole blocks (instead of a random "
                          "--test-fraction of the rows)")
    geo.add_argument("--buffer", type=_nonneg_float, default=0.0, metavar="D",
                     help="--val-blocks: leave out of training the rows within D (map units; degrees for "
                          "longitude/latitude) of a validation or test row")
    geo.add_argument("--min-train-records", type=_nonneg_int, default=10, metavar="N",
                     help="--val-blocks: refuse a split that leaves a species fewer than N training records "
                          "(default 10)")
    geo.add_argument("--window-rows", type=_pos_int,
                     help="--rasters: raster rows read at a time (default: about 65,536 cells' worth; memory stays "
                          "bounded whatever the raster's size)")
