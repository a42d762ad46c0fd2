"""``spml predict``: label sets or per-label probabilities for new data."""
from __future__ import annotations

import sys
from pathlib import Path

from .common import (
    _add_device_option,
    _device,
    _finite_float,
    _nonneg_int,
    _pos_float,
    _pos_int,
)


def run(args) -> int:
    from ..practitioner.inference import (
        check_prediction_output,
        predicted_label_sets,
        read_prediction_input,
        write_label_sets,
        write_probabilities,
    )
    from ..practitioner.saved import load_model

    device = _device(args)
    model = load_model(args.model)
    model.device = device
    check_prediction_output(args.out, label_names=model.label_names, source=args.input, overwrite=args.overwrite,
                            model=model.path)
    X, ids = read_prediction_input(model, args.input, split=args.split, path_column=args.path_column,
                                   id_column=args.id_column, backbone=args.backbone, image_size=args.image_size,
                                   batch_size=args.batch_size, log=lambda m: print(m, file=sys.stderr))
    P = model.predict_proba(X)
    out = Path(args.out)
    if not args.labels:
        write_probabilities(out, ids, model.label_names, P)
        print(f"wrote probabilities for {len(P)} example(s) x {P.shape[1]} labels to {out}")
        return 0
    from ..practitioner.report import describe_rule

    rule = None if args.threshold_rule == "default" else args.threshold_rule
    S, used, warn = predicted_label_sets(model, P, rule=rule, threshold=args.threshold, k=args.k,
                                         min_labels=args.min_labels)
    write_label_sets(out, ids, model.label_names, S)
    print(f"wrote label sets for {len(S)} example(s) to {out} (rule: {describe_rule(used['rule'], used)}; "
          f"{S.sum(1).mean():.2f} labels per example)")
    if warn is not None:
        print(f"spml: warning: {warn}", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    """``spml predict``: its options (``spml predict --help``)."""
    p = sub.add_parser("predict", help="label sets or per-label probabilities for new data",
                       description="Write a CSV with one row per example: with --labels, 'id,labels' (the labels "
                                   "of the predicted set joined by ';'); with --proba (default), one probability "
                                   "column per label. Inputs: a bundle, features (.npy/.npz/CSV) or, for a model "
                                   "trained on image features, images (a folder, a .txt list or a CSV with a path "
                                   "column) whose features are extracted with the model's backbone.")
    p.add_argument("model", help="model folder (a run folder or its model/ subfolder)")
    p.add_argument("input", help="a bundle folder; features as .npy / .npz / CSV (optional 'id' column); or "
                                 "images: a folder, a .txt list of paths, or a CSV with a path column")
    p.add_argument("-o", "--out", required=True, help="output CSV (written atomically; an existing file is replaced "
                                                     "only when it is a prediction file spmlkit wrote)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the -o file even when it is not a prediction file spmlkit wrote (never the input)")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--labels", action="store_true", help="write label sets (id,labels joined by ';')")
    what.add_argument("--proba", action="store_true", help="write per-label probabilities (the default)")
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
    _add_device_option(p, "the model")
    p.set_defaults(func=run)
