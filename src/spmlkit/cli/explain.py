"""``spml explain``: response curves and permutation importance of a model trained on
covariates (:mod:`spmlkit.practitioner.explain`)."""
from __future__ import annotations

from pathlib import Path

from ..data import Bundle
from ..errors import ConfigError
from .common import _check_model, _csv_list, _pos_int, _seed


def run(args) -> int:
    _check_model(args.model)  # before torch: a mistake is one line at once
    if args.bundle:
        Bundle(args.bundle)
    from ..practitioner.explain import explain  # lazy: torch-free CLI start-up
    from ..practitioner.saved import load_model

    model = load_model(args.model)
    source = args.bundle or (model.info or {}).get("bundle")
    if not source or not (Path(source) / "meta.json").exists():
        raise ConfigError(f"give the bundle the model was trained on (its recorded bundle {source!r} is not there)")
    written = explain(model, Bundle(source), args.out, split=args.split,
                      species=_csv_list(args.species) if args.species else None, points=args.points,
                      sample=args.sample, repeats=args.repeats, seed=args.seed, covariate_info=args.covariate_info)
    for p in written:
        print(p)
    return 0


def add_parser(sub) -> None:
    """``spml explain``: its options (``spml explain --help``)."""
    p = sub.add_parser("explain", help="response curves and permutation importance per covariate and species",
                       description="For a model trained on named covariates (presence-only tables, records on "
                                   "rasters): the partial dependence of each species on each covariate (response "
                                   "curves, over the bundle's background rows) and the drop in per-species AUC when "
                                   "a covariate is shuffled on held-out rows (permutation importance), as CSV and "
                                   "PNG figures in the -o folder (docs/presence_only.md).")
    p.add_argument("model", help="model folder (a run folder or its model/ subfolder)")
    p.add_argument("bundle", nargs="?", help="the bundle the model was trained on (default: the one it records)")
    p.add_argument("-o", "--out", required=True, help="output folder (new, empty, or one 'spml explain' wrote)")
    p.add_argument("--split", choices=("val", "test"), default="val",
                   help="held-out rows of the importance (default val): presences against background rows, or "
                        "against surveyed absences where the split has full labels")
    p.add_argument("--species", help="comma-separated species to draw response curves of (default: all)")
    p.add_argument("--points", type=_pos_int, default=50, help="values per continuous covariate (default 50)")
    p.add_argument("--sample", type=_pos_int, default=1000,
                   help="background rows averaged over in the response curves (default 1000)")
    p.add_argument("--repeats", type=_pos_int, default=5, help="shuffles per covariate (default 5)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the sample and the shuffles (default 0)")
    p.add_argument("--covariate-info", metavar="FILE",
                   help="a sidecar (JSON or CSV) of the covariates' names, units and class names, drawn in the "
                        "figures: {\"bio1\": {\"name\": ..., \"units\": ..., \"classes\": {\"1\": ...}}} or "
                        "covariate,name,units,classes with classes as 1=name;2=name (docs/presence_only.md)")
    p.set_defaults(func=run)
