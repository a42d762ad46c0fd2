"""``spml bench``: a paper's table, methods x datasets x grid x seeds."""
from __future__ import annotations

import shlex
from pathlib import Path

from ..catalogue import method_rows
from ..config import DEFAULT_BATCH_SIZES, DEFAULT_LRS
from ..errors import ConfigError
from ..io import json_record_path, read_json
from .common import (
    _add_device_option,
    _add_image_train_options,
    _add_log_to_option,
    _check_method,
    _check_source,
    _decimals,
    _image_overrides,
    _log_to,
    _nonneg_float,
    _nonneg_int,
    _pos_float,
    _pos_int,
    _seed,
    _unit_float,
)


def _check_method_rows(rows, setting: str, params) -> None:
    """Before torch: each --methods row names a registered method (from the catalogue, as
    :func:`spmlkit.cli.common._check_method`) of the --setting, ``+li`` only when fine-tuning,
    and each ``--param METHOD:...`` a registered method.  The rows' syntax (``role+li``,
    ``role[storage=float16]``) is :func:`spmlkit.experiments.bench.spec.split_row`'s; the
    hyper-parameters' names and values are checked by the bench's own validation, after."""
    settings = {r["name"]: r["setting"] for r in method_rows()}
    for row in rows or ():
        name = row.partition("[")[0] if row.endswith("]") else row
        base = name[:-len("+li")] if name.endswith("+li") else name
        _check_method(base)
        if settings.get(base, "any") not in ("any", setting):
            raise ConfigError(f"method {base!r} is for the {settings[base]} setting, not --setting {setting}")
        if base != name and setting != "finetune":
            raise ConfigError(f"{row!r}: LinearInit rows need --setting finetune")
    for item in params or ():
        lhs = item.partition("=")[0]
        if ":" in lhs:
            _check_method(lhs.split(":", 1)[0].strip())


def run(args) -> int:
    # before torch (seconds to import, a minute on a loaded machine): the datasets and the methods' names
    for entry in args.datasets:
        _check_source(entry, args.data_root)
    _check_method_rows(args.methods, args.setting, args.param)
    # lazy: torch-free CLI start-up
    from ..experiments.bench import (BenchSpec, check_device_options, check_engine_options, make_executor, run_bench,
                                     with_method_params)

    check_engine_options(shard=args.shard, jobs=args.jobs, executor=args.executor, address=args.address,
                         table_only=args.table_only, device=args.device, share_gpus=args.share_gpus)
    config = {}
    for opt, field in (("head", "head"), ("selection", "selection"), ("feature_set", "feature_set"),
                       ("empty_classes", "empty_classes"), ("max_memory_mb", "max_memory_mb"),
                       ("k", "expected_positives"), ("device", "device")):
        if getattr(args, opt) is not None:
            config[field] = getattr(args, opt)
    check_device_options({**config, **_image_overrides(args)})
    if args.no_standardize:
        config["standardize"] = False
    config.update({k: v for k, v in _image_overrides(args).items() if k != "setting"})
    seeds = tuple(args.seed_list) if args.seed_list is not None else tuple(range(args.seeds))
    spec = BenchSpec(datasets=args.datasets, methods=args.methods, lrs=tuple(args.lrs),
                     batch_sizes=tuple(args.batch_sizes), seeds=seeds, epochs=args.epochs, patience=args.patience,
                     regime=args.regime, setting=args.setting, data_root=args.data_root,
                     prepare_seed=args.prepare_seed, train_fractions=tuple(args.train_fractions or ()),
                     subsample_seed=args.subsample_seed, hide_fractions=tuple(args.hide_fractions or ()),
                     histograms=not args.no_histograms, config=config, decimals=args.decimals,
                     vary_draw=args.vary_draw)
    param_items = list(args.param or [])
    if args.pseudo_scores:  # every benchmarked method with a pseudo_scores hyper-parameter (vlpl, gpr)
        param_items.append(f"pseudo_scores={Path(args.pseudo_scores).resolve()}")
    spec = with_method_params(spec, param_items)
    argv = getattr(args, "argv", None)
    command = "spml " + shlex.join(argv) if argv else None
    log_to = _log_to(args)
    on_group = tracking = None
    if log_to:  # TensorBoard / MLflow: a parent run for the bench, a child run per group as it finishes
        from ..practitioner.loggers import BenchTracking  # lazy: torch-free CLI start-up

        tracking = BenchTracking(log_to, Path(args.out), command or "spml bench")
        on_group = tracking.on_group
    executor = make_executor(executor=args.executor, address=args.address, jobs=args.jobs, threads=args.threads,
                             table_only=args.table_only, shard=args.shard, share_gpus=args.share_gpus)
    if args.shard is not None:  # scheduler arrays: train this shard's groups, no table
        s = run_bench(spec, args.out, executor=executor, threads=args.threads, figures=False)
        print(f"shard {args.shard}: trained {s['trained']} of its {s['groups_in_shard']} group(s); "
              f"{s['finished']} of {s['groups_total']} finished in {args.out}")
        return 0
    summary = run_bench(spec, args.out, executor=executor, command=command, figures=not args.no_figures,
                        jobs=args.jobs or 1, threads=args.threads, on_group=on_group)
    if tracking is not None:
        from ..experiments.tables import summary_metrics  # lazy: torch-free CLI start-up

        manifest = Path(summary["written"].get("runs") or json_record_path(Path(args.out) / "runs.json"))
        tracking.finish(summary_metrics(read_json(manifest).get("runs", [])) if manifest.is_file() else {})
    w = summary["written"]
    main_file = w.get("table") or w.get("partial")
    print(Path(main_file).read_text(encoding="utf-8"), end="")
    print(f"\nresults in {args.out}: " + ", ".join(Path(p).name for k, p in w.items() if k != "figures")
          + "".join(f", {Path(p).name}" for p in w.get("figures", [])))
    return 0


def add_parser(sub) -> None:
    """``spml bench``: its options (``spml bench --help``)."""
    p = sub.add_parser(
        "bench", help="reproduce a paper's table: methods x datasets x grid x seeds",
        description="Train every method on every dataset over the grid lr x batch size x seeds, select per method "
                    "the configuration with the best mean validation mAP, and write table.md (Cole et al. Table 1), "
                    "recovery.md (Table 2), runs.csv, runs.json.gz and figures into RESULTS_DIR. Resumable: rerun "
                    "the same command after an interruption.")
    p.add_argument("--datasets", nargs="+", required=True, metavar="DATASET",
                   help="dataset names (see 'spml datasets'; prepared into RESULTS_DIR/bundles with their official "
                        "splits) or prepared bundle folders")
    p.add_argument("--methods", nargs="+", metavar="METHOD",
                   help="methods (default: every registered method of the setting; with --hide-fractions: iu an em); "
                        "with --setting finetune, 'METHOD+li' is METHOD with LinearInit (Cole Table 1); "
                        "'METHOD[NAME=VALUE,...]' is a row of its own with those hyper-parameters, e.g. "
                        "'role[storage=float16]' next to 'role' (quote it in the shell)")
    p.add_argument("--lrs", nargs="+", type=_pos_float, default=list(DEFAULT_LRS), metavar="LR",
                   help="learning rates (default 1e-2 1e-3 1e-4 1e-5, Cole et al. 6.1)")
    p.add_argument("--batch-sizes", nargs="+", type=_pos_int, default=list(DEFAULT_BATCH_SIZES), metavar="B",
                   help="batch sizes (default 8 16)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--seeds", type=_pos_int, default=3, help="number of seeds 0..N-1 (default 3)")
    g.add_argument("--seed-list", nargs="+", type=_seed, metavar="SEED", help="explicit seeds")
    p.add_argument("--epochs", type=_pos_int, help="epochs (default 25 linear, 10 finetune)")
    p.add_argument("--patience", type=_nonneg_int, help="early stopping patience (default: every epoch, best kept)")
    p.add_argument("--regime", help="train EVERY method on this regime instead of its own (e.g. full: the OPML "
                                    "paper's full-label Table V)")
    p.add_argument("--setting", choices=["linear", "finetune"], default="linear",
                   help="linear: a head on cached features (default); finetune: backbone + head end to end "
                        "(image bundles)")
    p.add_argument("--param", nargs="+", action="extend", metavar="METHOD:NAME=VALUE",
                   help="method hyper-parameter (NAME=VALUE alone: every benchmarked method that has it)")
    p.add_argument("--data-root", help="folder holding standard datasets (or set SPMLKIT_DATA)")
    p.add_argument("--prepare-seed", type=_seed, default=0, help="seed of the splits and observations of the "
                                                               "bundles prepared from names (default 0)")
    p.add_argument("--vary-draw", action="store_true",
                   help="vary the draw with the seed: seed s trains on a bundle prepared with prepare seed s (its "
                        "own single positives and validation split), so the reported spread is over draws and "
                        "initialisations together (dataset names only; default: one draw, --prepare-seed)")
    p.add_argument("--pseudo-scores", metavar="FILE",
                   help="N x L .npy array of pseudo-label scores aligned with the training rows of the bundle "
                        "(vlpl, gpr: e.g. a vision-language model's label probabilities)")
    p.add_argument("--train-fractions", nargs="+", type=_unit_float, metavar="F",
                   help="also train on nested seeded subsamples of the training set (Cole Fig. 1)")
    p.add_argument("--subsample-seed", type=_seed, default=999, help="seed of --train-fractions (default 999)")
    p.add_argument("--hide-fractions", nargs="+", type=_unit_float, metavar="P",
                   help="partial-label sweep instead of the table: hide each label with probability P "
                        "(Zhou et al. Fig. 5c); writes partial.md and partial.png")
    p.add_argument("--no-histograms", action="store_true",
                   help="do not record per-epoch histograms of unobserved positives (Cole Fig. 2)")
    p.add_argument("--no-figures", action="store_true", help="do not draw the figures at the end")
    p.add_argument("--decimals", type=_decimals, default=1, help="decimals in the tables (default 1, as in the papers)")
    p.add_argument("--head", help="classifier head: linear (default), mlp, or another registered head")
    p.add_argument("--no-standardize", action="store_true",
                   help="feed raw features (default: z-score tabular features, feed backbone features raw as "
                        "the papers' linear setting)")
    p.add_argument("--selection", help="validation criterion (default auto: mAP on the full validation labels)")
    p.add_argument("--k", type=_pos_float, help="expected positives per example (default: from the full training labels)")
    p.add_argument("--feature-set", help="cached feature set of image bundles")
    p.add_argument("--empty-classes", choices=["exclude", "zero"], help="classes without positives in evaluation")
    p.add_argument("--max-memory-mb", type=_nonneg_float, help="keep features memory-mapped when larger than this")
    _add_image_train_options(p, bench=True)
    p.add_argument("--jobs", type=_pos_int, default=None,
                   help="worker processes training groups in parallel (default 1; on a CPU use one per core "
                        "with --threads 1); results are identical to a sequential bench")
    p.add_argument("--shard", metavar="K/N",
                   help="train only shard K of N of the grid's groups into RESULTS_DIR and write no table (N "
                        "processes, e.g. a Slurm job array, share one folder); then run the same command without "
                        "--shard, or with --table-only, to write the tables")
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="ray: every training group is a Ray task (pip install 'spmlkit[ray]'), on a local cluster "
                        "with --jobs CPUs or on --address; default local (this process, or --jobs workers)")
    p.add_argument("--address", metavar="HOST:PORT",
                   help="Ray cluster to run on with --executor ray (HOST:PORT, ray://HOST:PORT or auto)")
    p.add_argument("--share-gpus", action="store_true",
                   help="with --jobs N --device cuda: allow more workers than GPUs (round-robin); by default "
                        "each worker takes a GPU of its own and --jobs beyond the visible GPUs is refused")
    p.add_argument("--table-only", action="store_true",
                   help="train nothing: write the tables from the groups already finished (e.g. by --shard runs)")
    p.add_argument("--threads", type=_pos_int, help="torch threads per worker (default 1 with --jobs > 1)")
    _add_device_option(p, "every run")
    _add_log_to_option(p, "every training group as it finishes (and the tables at the end)")
    p.add_argument("-o", "--out", required=True, metavar="RESULTS_DIR", help="results folder (resumable)")
    p.set_defaults(func=run)
