"""``spml evaluate``: mAP and AUC of a trained model on a bundle split."""
from __future__ import annotations

from ..errors import SpmlError
from .common import _add_device_option, _device


def run(args) -> int:
    from ..data import Bundle
    from ..io import dumps_json
    from ..metrics import evaluate_scores
    from ..practitioner.saved import load_model

    device = _device(args)
    model = load_model(args.model)
    model.device = device
    bundle = Bundle(args.bundle)
    if bundle.label_names != model.label_names:
        raise SpmlError(f"the model's labels differ from the bundle's ({len(model.label_names)} vs {bundle.n_labels})")
    Y = bundle.labels(args.split)
    # rank by logits: probabilities of confident models round to exactly 1.0 and create false ties
    scores = model.decision_function(bundle.features(args.split, model.info.get("feature_set")))
    if Y is None:  # the user's own observations: never a full-label mAP
        from scipy.special import expit

        from ..practitioner.evaluation import (
            evaluate_label_sets,
            format_label_set_quality,
            format_scores,
        )

        Z = bundle.observations(args.split)
        ev = evaluate_scores(scores, Z=Z)
        ev["label_sets"] = evaluate_label_sets(model.label_sets_from_proba(expit(scores)), Z=Z)
        ev["split"] = args.split
        if args.json:
            print(dumps_json(ev), end="")
        else:
            print(f"{args.split}: {format_scores(ev)}")
            print(f"label sets: {format_label_set_quality(ev['label_sets'])}")
        return 0
    mask = bundle.label_mask(args.split)  # labels known on part of the examples only (issue 24)
    ev = evaluate_scores(scores, Y=Y, empty=args.empty_classes, mask=mask)
    out = {"split": args.split, **{k: ev[k] for k in ("map", "n_classes", "n_empty_classes", "empty_classes")},
           "ap": dict(zip(model.label_names, ev["ap"])),
           **{k: ev[k] for k in ("auc_mean", "auc_median", "n_auc_classes", "masked")},
           "auc": dict(zip(model.label_names, ev["auc"]))}
    if args.json:
        print(dumps_json(out), end="")
    else:
        n_empty = ev["n_empty_classes"]
        print(f"{args.split} mAP {ev['map']:.2f} over {ev['n_classes']} classes"
              + (f" ({n_empty} without positives {'excluded' if ev['empty_classes'] == 'exclude' else 'counted as 0'})"
                 if n_empty else ""))
        print(f"{args.split} AUC-ROC per label: mean {ev['auc_mean']:.3f}, median {ev['auc_median']:.3f} over "
              f"{ev['n_auc_classes']} labels" + (" (each on its surveyed examples: the bundle's label mask)"
                                                 if mask is not None else ""))
        print(f"  {'label':30s}     AP    AUC")
        for name, a in out["ap"].items():
            u = out["auc"][name]
            print(f"  {name:30s} {'   n/a' if a is None else f'{a:6.2f}'} {'   n/a' if u is None else f'{u:6.3f}'}")
    return 0


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
