"""``spml predict``: label sets or per-label probabilities for new data."""
from __future__ import annotations

import csv
import sys
from pathlib import Path

from ..errors import ConfigError, DataFormatError
from .common import (
    _add_device_option,
    _check_exists,
    _check_model,
    _device,
    _finite_float,
    _nonneg_int,
    _pos_float,
    _pos_int,
)


def run(args) -> int:
    if args.rasters:
        return _run_rasters(args)
    if args.mess or args.binary:
        raise ConfigError(f"{'--mess' if args.mess else '--binary'} is a map beside the suitability maps: it needs "
                          "--rasters")
    if args.input is None:
        raise ConfigError("give the input to predict (a bundle, features or images), or --rasters for maps")
    _check_model(args.model)  # before torch: a mistake is one line at once
    _check_exists(args.input)
    _check_id_column(Path(args.input), args.id_column)
    # lazy: torch-free CLI start-up
    from ..practitioner.inference import check_prediction_output, predict_to_file, prediction_input
    from ..practitioner.saved import load_model

    device = _device(args)
    model = load_model(args.model)
    model.device = device
    check_prediction_output(args.out, label_names=model.label_names, source=args.input, overwrite=args.overwrite,
                            model=model.path)
    inp = prediction_input(model, args.input, split=args.split, path_column=args.path_column,
                           id_column=args.id_column, backbone=args.backbone, image_size=args.image_size,
                           batch_size=args.batch_size, log=lambda m: print(m, file=sys.stderr))
    kind = "labels" if args.labels else "top_k" if args.top_k else "proba"
    rule = None if args.threshold_rule == "default" else args.threshold_rule
    summary = predict_to_file(model, inp, args.out, kind=kind, rule=rule, threshold=args.threshold, k=args.k,
                              min_labels=args.min_labels, top_k=args.top_k)
    print(summary["message"])
    if summary.get("warning"):
        print(f"spml: warning: {summary['warning']}", file=sys.stderr)
    return 0


def _check_id_column(source: Path, id_column: str | None) -> None:
    """Before torch: a CSV/TSV input has the --id-column it is given (the reader's message)."""
    if id_column is None or not source.is_file() or source.suffix.lower() not in (".csv", ".tsv", ".tab"):
        return
    with open(source, encoding="utf-8-sig", errors="replace", newline="") as fh:
        first = fh.readline()
    delim = "\t" if source.suffix.lower() in (".tsv", ".tab") else ","
    header = [h.strip() for h in next(csv.reader([first], delimiter=delim), [])]
    if id_column not in header:
        raise DataFormatError(source, f"id column {id_column!r} is not in the header ({', '.join(map(repr, header))})",
                              line=1)


def _run_rasters(args) -> int:
    """``spml predict RUN --rasters ...``: probability maps (GeoTIFF) and PNG maps."""
    _check_model(args.model)  # before torch: a mistake is one line at once
    from ..practitioner.maps import predict_rasters  # lazy: torch-free CLI start-up
    from ..practitioner.saved import load_model

    if args.input is not None:
        raise ConfigError("--rasters predicts on the raster cells: give no other input (got "
                          f"{args.input!r})")
    if args.labels or args.top_k:
        raise ConfigError("--rasters writes probabilities (one band per species): --labels and --top-k do not apply")
    model = load_model(args.model)
    model.device = _device(args)
    res = predict_rasters(model, args.rasters, args.out, per_species=args.per_species, maps=args.maps,
                          records=args.records, window_rows=args.window_rows, overwrite=args.overwrite,
                          unseen_levels=args.unseen_levels, mess=args.mess, binary=args.binary,
                          log=lambda m: print(m, file=sys.stderr))
    for path in res["written"]:
        print(path)
    print(res["message"])
    return 0


def add_parser(sub) -> None:
    """``spml predict``: its options (``spml predict --help``)."""
    p = sub.add_parser("predict", help="label sets or per-label probabilities for new data, or species maps",
                       description="Write a CSV with one row per example: with --labels, 'id,labels' (the labels "
                                   "of the predicted set joined by ';'); with --proba (default), one probability "
                                   "column per label (or, with -o FILE.npy, a float32 matrix for large outputs); "
                                   "with --top-k K, the K best labels of each row. Rows are scored in chunks, so "
                                   "memory does not grow with rows x labels. Inputs: a bundle, features "
                                   "(.npy/.npz/CSV), the raw covariate table of a model trained on covariates "
                                   "(columns by name; siteid/x/y pass through) or, for a model trained on image "
                                   "features, images (a folder, a .txt list or a CSV with a path column). With "
                                   "--rasters: a GeoTIFF of relative suitability (the model's output) per species on the rasters' grid "
                                   "(docs/presence_only.md).")
    p.add_argument("model", help="model folder (a run folder or its model/ subfolder)")
    p.add_argument("input", nargs="?", help="a bundle folder; features as .npy / .npz / CSV (optional 'id' column); "
                                            "a covariate table in the training layout; or images: a folder, a .txt "
                                            "list of paths, or a CSV with a path column (not with --rasters)")
    p.add_argument("-o", "--out", required=True,
                   help="output file: a CSV, or .npy for --proba (written atomically; an existing file is replaced "
                        "only when it is a prediction file spmlkit wrote); with --rasters a .tif (one band per "
                        "species) or, with --per-species, a folder")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the -o file even when it is not a prediction file spmlkit wrote (never the input)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--labels", action="store_true", help="write label sets (id,labels joined by ';')")
    what.add_argument("--proba", action="store_true",
                      help="write per-label probabilities (the default): CSV, or -o FILE.npy (float32, written "
                           "chunk by chunk) — CSV is refused above 50 million probabilities")
    what.add_argument("--top-k", type=_pos_int, metavar="K",
                      help="write the K highest-scoring labels of each row, best first, with their probabilities "
                           "('id,labels,probabilities')")
    p.add_argument("--threshold-rule", default="default",
                   choices=["default", "threshold", "top_k", "expected_k", "per_label"],
                   help="how probabilities become label sets (default: the model's rule — chosen on a fully "
                        "labelled validation split when there was one (see report.md), else expected_k with k "
                        "known or estimated without full labels; models trained before keep their stored rule)")
    p.add_argument("--threshold", type=_finite_float, help="cut of the threshold rule (default 0.5)")
    p.add_argument("--k", type=_pos_float, help="labels per example: top_k (a whole number) or the expected number of "
                                           "the expected_k rule (default: the model's k, when known)")
    p.add_argument("--min-labels", type=_nonneg_int, help="always keep at least this many top labels (e.g. 1)")
    p.add_argument("--split", default="test", choices=["train", "val", "test"], help="bundle split to predict")
    p.add_argument("--path-column", help="CSV of images: the column of image paths (default 'path')")
    p.add_argument("--id-column", help="CSV: the column of example identifiers, written as the output's id and not "
                                       "read as a feature (default: 'id' when present; images: the path)")
    p.add_argument("--backbone", help="images: backbone to extract features with (default: the model's)")
    p.add_argument("--image-size", type=_pos_int, help="images: input size (default: the model's)")
    p.add_argument("--batch-size", type=_pos_int, help="images: extraction batch size")
    geo = p.add_argument_group("maps (a model trained on covariates; needs the [geo] extra: pip install "
                               "'spmlkit[geo]')")
    geo.add_argument("--rasters", nargs="+", metavar="DIR_OR_FILE",
                     help="covariate rasters (a folder or files; band/file names = the model's covariates): write "
                          "the relative suitability (the model's output, not a probability of presence) of each species on their grid (same CRS, transform, nodata)")
    geo.add_argument("--per-species", action="store_true",
                     help="--rasters: one GeoTIFF per species in the -o folder instead of one multi-band file")
    geo.add_argument("--maps", metavar="SPECIES", help="--rasters: also write a PNG map of these species "
                     "(comma-separated, or 'all') with their training records overlaid, beside the GeoTIFF")
    geo.add_argument("--records", help="--rasters --maps: the bundle whose training records to overlay (default: "
                                       "the model's training bundle, when it is still there)")
    geo.add_argument("--window-rows", type=_pos_int,
                     help="--rasters: raster rows read and predicted at a time (default: about 65,536 cells' worth; "
                          "memory stays bounded whatever the raster's size)")
    geo.add_argument("--unseen-levels", choices=("error", "nodata"), default="error",
                     help="--rasters: a cell whose categorical covariate has a level the model never saw: an error "
                          "naming the layer and the level (default), or nodata in the output (counted)")
    geo.add_argument("--mess", action="store_true",
                     help="--rasters: also write <out>_mess.tif, the MESS of each cell against the training rows' "
                          "covariates (Elith et al. 2010): negative where a covariate is outside the training "
                          "range, i.e. where the map extrapolates")
    geo.add_argument("--binary", choices=("max-tss", "p10"),
                     help="--rasters: also write <out>_binary.tif, 1 where a species' suitability is >= its "
                          "threshold stored by spml train (max-tss: maximum sensitivity + specificity; p10: "
                          "10th-percentile training presence), 0 below, 255 without data")
    _add_device_option(p, "the model")
    p.set_defaults(func=run)
