"""``spml evaluate``: mAP and AUC of a trained model on a bundle split."""
from __future__ import annotations

from ..data import Bundle
from ..io import dumps_json
from .common import _add_device_option, _check_model, _device


def run(args) -> int:
    _check_model(args.model)  # before torch: a mistake is one line at once
    Bundle(args.bundle)
    from ..practitioner.evaluation import evaluate_model  # lazy: torch-free CLI start-up
    from ..practitioner.saved import load_model

    device = _device(args)
    model = load_model(args.model)
    model.device = device
    bundle = Bundle(args.bundle)
    ev = evaluate_model(model, bundle, args.split, empty=args.empty_classes)
    if bundle.meta.get("background_rows"):  # presence-only: per species, records against background
        from ..practitioner.sdm_report import selected_model, species_metrics, summary_lines  # lazy: torch-free CLI start-up

        # a refitted run: validation scored by the model chosen there (the refitted one learned those rows)
        ev["sdm"] = species_metrics(model, bundle, selected=selected_model(args.model))
        if not args.json:
            if ev.get("labels") != "observed":  # surveyed sites: mAP and AUC as for any full labels, then the table
                _print_full(ev, args)
            for line in summary_lines(ev["sdm"], splits=(args.split,)):
                print(line)
            return 0
    if args.json:
        print(dumps_json(ev), end="")
    elif ev.get("labels") == "observed":  # the user's own observations: never a full-label mAP
        from ..practitioner.evaluation import format_label_set_quality, format_scores  # lazy: torch-free CLI start-up

        print(f"{args.split}: {format_scores(ev)}")
        print(f"label sets: {format_label_set_quality(ev['label_sets'])}")
    else:
        _print_full(ev, args)
    return 0


def _print_full(ev: dict, args) -> None:
    """The mAP and per-label AUC lines of a split with full labels."""
    n_empty = ev["n_empty_classes"]
    print(f"{args.split} mAP {ev['map']:.2f} over {ev['n_classes']} classes"
          + (f" ({n_empty} without positives {'excluded' if ev['empty_classes'] == 'exclude' else 'counted as 0'})"
             if n_empty else ""))
    print(f"{args.split} AUC-ROC per label: mean {ev['auc_mean']:.3f}, median {ev['auc_median']:.3f} over "
          f"{ev['n_auc_classes']} labels" + (" (each on its surveyed examples: the bundle's label mask)"
                                             if ev["masked"] else ""))
    print(f"  {'label':30s}     AP    AUC")
    for name, a in ev["ap"].items():
        u = ev["auc"][name]
        print(f"  {name:30s} {'   n/a' if a is None else f'{a:6.2f}'} {'   n/a' if u is None else f'{u:6.3f}'}")


def add_parser(sub) -> None:
    """``spml evaluate``: its options (``spml evaluate --help``)."""
    p = sub.add_parser("evaluate", help="mAP of a trained model on a bundle split",
                       description="Mean average precision (x100) and per-class AP of a saved model.")
    p.add_argument("model", help="model folder (a run folder or its model/ subfolder)")
    p.add_argument("bundle", help="prepared bundle folder")
    p.add_argument("--split", default="test", choices=["train", "val", "test"],
                   help="bundle split to evaluate on (default test)")
    p.add_argument("--empty-classes", default="exclude", choices=["exclude", "zero"],
                   help="classes without a positive in the split: excluded from the mean (default) or counted "
                        "as AP 0 (the papers' code)")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_device_option(p, "the model")
    p.set_defaults(func=run)
