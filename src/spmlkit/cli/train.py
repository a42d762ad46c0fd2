"""``spml train``: auto (the default recipe) or one method on a bundle (the linear setting or fine-tuning)."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from ..config import TrainConfig, parse_params
from ..data import Bundle
from ..errors import ConfigError
from .common import (
    _add_device_option,
    _add_image_train_options,
    _add_log_to_option,
    _check_method,
    _image_overrides,
    _log_to,
    _nonneg_float,
    _nonneg_int,
    _pos_float,
    _pos_int,
    _seed,
)


def _val_rows(text):
    """``--val-rows``: auto, all, or a whole number >= 1."""
    low = text.strip().lower()
    return low if low in ("auto", "all") else _pos_int(text)


def _train_config(args):
    base = TrainConfig.from_file(args.config).to_dict() if args.config else {}
    overrides = {"method": args.method, "lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs,
                 "patience": args.patience, "seed": args.seed, "head": args.head, "hidden": args.hidden,
                 "selection": args.selection, "expected_positives": args.k, "feature_set": args.feature_set,
                 "empty_classes": args.empty_classes, "max_memory_mb": args.max_memory_mb,
                 "threads": getattr(args, "threads", None), "device": getattr(args, "device", None),
                 "val_rows": getattr(args, "val_rows", None)}
    base.update({k: v for k, v in overrides.items() if v is not None})
    base.update(_image_overrides(args))
    if base.get("setting") == "finetune" and not base.get("linear_init") and args.epochs is not None:
        # without LinearInit there is no linear phase for --epochs to count: it counts the fine-tuning
        # epochs, unless --finetune-epochs says otherwise (then a note says --epochs is not used)
        if base.get("finetune_epochs") is None:
            base["finetune_epochs"] = args.epochs
        elif base["finetune_epochs"] != args.epochs and os.environ.get("RANK", "0") == "0":
            print(f"note: --epochs {args.epochs} is not used: fine-tuning runs --finetune-epochs "
                  f"{base['finetune_epochs']} (--epochs counts LinearInit's linear phase)", file=sys.stderr)
    if args.no_standardize:
        base["standardize"] = False
    params = dict(base.get("params") or {})

    params.update(parse_params(args.param))
    if getattr(args, "pseudo_scores", None):  # vlpl / gpr: user-supplied pseudo-label scores
        params["pseudo_scores"] = str(Path(args.pseudo_scores).resolve())
    base["params"] = params
    return TrainConfig.from_dict(base)


def _method_named(args) -> bool:
    """Whether the user chose a method (-m, or ``method:`` in the --config file)."""
    if args.method is not None:
        return True
    if not args.config:
        return False
    import yaml  # lazy: torch-free CLI start-up

    try:
        data = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):  # (TrainConfig.from_file has already reported a bad file)
        return False
    return isinstance(data, dict) and data.get("method") is not None


def _refit(args, out: Path, bundle, config, device) -> bool:
    """``--refit`` (default on presence-only data, :func:`spmlkit.practitioner.refit.refit_default`):
    the run's choices trained again on training + validation rows; whether the run's model
    is a refitted one."""
    from ..practitioner.refit import REFIT_FILE, refit_default, refit_run  # lazy: torch-free CLI start-up

    wanted = refit_default(bundle) if args.refit is None else args.refit
    done = (out / REFIT_FILE).exists()
    from ..training import distributed  # lazy: torch-free CLI start-up

    if wanted and distributed.context().enabled:  # (rank 0 alone writes here; the refit would train alone)
        print("note: no refit in a distributed run (torchrun): the model chosen on validation is kept; refit with "
              "a plain 'spml train ... --refit' on the same --out", file=sys.stderr)
        return done
    if not wanted:
        if done:
            print(f"note: {out} holds a refitted model (refit.json; the validated one in selected_model/); "
                  "--no-refit does not undo it: train into another --out", file=sys.stderr)
        return done
    info = refit_run(out, bundle, config, device=device, log=lambda m: print(m, file=sys.stderr, flush=True))
    if info is None:
        print(f"run {out} already refitted (refit.json): not refitting")
    else:
        print(f"refitted on training + validation rows ({info['rows']['train']:,} + {info['rows']['val']:,}): "
              f"{out / 'model'}; the model chosen on validation: {out / 'selected_model'}")
    return True


def _check_refit_and_cv(args, config, bundle) -> None:
    """``--refit`` and ``--cv`` that cannot run on this bundle: one line, before anything is written."""
    if args.refit and (config.setting == "finetune" or bundle.size("val") == 0):
        raise ConfigError("--refit: " + ("it applies to the linear setting (heads on cached features), not to "
                                         "fine-tuning" if config.setting == "finetune" else
                                         f"bundle {args.bundle} has no validation split, so nothing is chosen on "
                                         "held-out rows and there is nothing to add to training"))
    if (args.cv or args.cv_blocks) and not bundle.meta.get("background_rows"):
        raise ConfigError("--cv reports per-species metrics of records against background: it needs presence-only "
                          f"data (bundle {args.bundle} has no background rows)")
    if args.cv_blocks and not args.cv:
        raise ConfigError("--cv-blocks G goes with --cv K (the number of folds)")
    if args.cv is not None and args.cv < 3:
        raise ConfigError(f"--cv {args.cv}: need at least 3 folds (one tests, the next validates, the others train)")
    if args.cv and args.cv > bundle.size("train") + bundle.size("val"):
        raise ConfigError(f"--cv {args.cv}: more folds than the bundle's {bundle.size('train') + bundle.size('val')} "
                          "training and validation rows")


def presence_head_note(method, bundle, head: str | None) -> str | None:
    """The note when ``--head`` names a head that ``auto`` does not train its presence-only
    members with (they keep their own heads; unmarked ones take the recipe's
    ``presence_head``), or None."""
    po_head = getattr(method, "presence_head", None)  # (auto's members' head on presence-only data)
    if not (head and po_head and head != po_head and bundle.meta.get("background_rows")):
        return None
    heads = sorted({h for _, h in method.members_for(True, n_labels=len(bundle.label_names))})
    return (f"auto trains its presence-only members with the {', '.join(heads)} head{'s' if len(heads) > 1 else ''} "
            f"(unmarked members: {po_head}, SINR's network), not --head {head}; for a {head} model name the method, "
            f"e.g. -m full-weighted --head {head}, or --param presence_head={head}")


def run(args) -> int:
    # before torch (seconds to import, a minute on a loaded machine): the options, the method's
    # name and the bundle, so that a mistake is one line at once
    config = _train_config(args)
    _check_method(config.method if _method_named(args) else None)
    bundle = Bundle(args.bundle)
    _check_refit_and_cv(args, config, bundle)
    log_to = _log_to(args)  # a missing tracking library is refused before anything is written
    from ..device import validate_config  # lazy: torch-free CLI start-up
    from ..practitioner.report import run_summary_lines
    from ..practitioner.run_folder import (FinishedNote, default_method, default_run_folder, read_run_result,
                                           run_training, training_notes)
    from ..training import distributed
    from ..training.callbacks import ProgressBar
    from ..training.prepare import build_run_method
    from ..training.run import progress_plan
    from ..training.validation import validation_note

    device = validate_config(config)  # --device/--precision/--sync-bn: refused before anything is written
    # torchrun sets WORLD_SIZE/RANK; a plain run is one process (NCCL on GPUs, gloo on the CPU)
    dctx = distributed.init_from_env(backend="nccl" if device.type == "cuda" else "gloo")
    try:
        notes = []
        if not _method_named(args):  # the default: auto where it applies (default_method says why not)
            name, why = default_method(config, bundle)
            config = config.replace(method=name)
            notes += [why] if why else []
        out = Path(args.out) if args.out else default_run_folder(args.bundle, config)
        method = build_run_method(config)  # built once: the trainer sets this one up
        given = [opt for opt, v in (("--compile", config.compile), ("--freeze-bn", config.freeze_bn))
                 if v and getattr(args, opt[2:].replace("-", "_"), None)]
        notes += training_notes(config, method, lr_given=args.lr is not None, finetune_options=given)
        notes += [n for n in [presence_head_note(method, bundle, args.head)] if n]
        notes += [n for n in [validation_note(config, bundle)] if n]  # said once: what validation scores
        for note in notes if dctx.is_main else ():
            print(f"note: {note}", file=sys.stderr)

        progress = ProgressBar(progress_plan(config, method, bundle.size("train")), f"{config.method} on {bundle.name}")
        callbacks = [progress, FinishedNote()]
        if log_to:
            from ..practitioner.loggers import RunTracking  # lazy: torch-free CLI start-up

            callbacks.append(RunTracking(log_to, config=config, method=method, bundle=bundle, run_dir=out))
        with contextlib.closing(progress):
            run_training(bundle, config, out, resume=not args.no_resume, callbacks=callbacks, method=method,
                         device=device, log=lambda m: print(m, file=sys.stderr, flush=True))
        if dctx.is_main:
            if dctx.enabled:
                print(f"{dctx.world_size} processes, global batch {config.batch_size}")
            presence_only = bool(bundle.meta.get("background_rows"))
            for line in run_summary_lines(read_run_result(out), out, presence_only=presence_only):
                print(line)
            refitted = _refit(args, out, bundle, config, device)
            if presence_only:
                from ..practitioner.sdm_report import store_run_metrics  # lazy: torch-free CLI start-up

                for line in store_run_metrics(out, bundle, refitted=refitted):
                    print(line)
            if args.cv:
                from ..practitioner.sdm_cv import CV_FILE, cross_validate, cv_lines  # lazy: torch-free CLI start-up

                cv = cross_validate(out, bundle, config, k=args.cv, blocks=args.cv_blocks, seed=config.seed,
                                    refit=refitted, device=device, log=lambda m: print(m, file=sys.stderr, flush=True))
                for line in cv_lines(cv) + [f"cross-validated metrics: {out / CV_FILE}"]:
                    print(line)
        return 0
    finally:
        distributed.shutdown()


def add_parser(sub) -> None:
    """``spml train``: its options (``spml train --help``)."""
    p = sub.add_parser("train", help="train on a bundle: auto (the recommended recipe) by default, or -m METHOD",
                       description="Train a head on the bundle's features with a method; writes a run folder with "
                                   "the resolved config, per-epoch metrics, a resumable checkpoint and the best "
                                   "model. A killed run resumes when started again with the same options. "
                                   "Distributed: torchrun --standalone --nproc_per_node N -m spmlkit.cli train ... "
                                   "(--batch-size is the global batch, split over the N processes).")
    p.add_argument("bundle", help="prepared bundle folder")
    p.add_argument("-m", "--method", help="method name (see 'spml methods'; default auto, the recipe the "
                                          "measurements recommend (docs/recipe.md); an when fine-tuning or "
                                          "when the bundle has no validation split, with a note)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="method hyper-parameter (repeatable)")
    p.add_argument("--pseudo-scores", metavar="FILE",
                   help="vlpl / gpr: N x L .npy array of pseudo-label scores aligned with the bundle's training "
                        "rows (e.g. a vision-language model's label probabilities)")
    p.add_argument("--lr", type=_pos_float, help="learning rate (default 1e-3)")
    p.add_argument("--batch-size", type=_pos_int, help="batch size (default 8)")
    p.add_argument("--epochs", type=_pos_int, help="epochs (default 25, Cole et al.'s linear setting)")
    p.add_argument("--patience", type=_nonneg_int, help="stop after N epochs without validation improvement "
                                                "(default: run all epochs, keep the best)")
    p.add_argument("--seed", type=_seed, help="seed of initialisation and batch order (default 0)")
    p.add_argument("--head", help="classifier head: linear (default), mlp, another registered head, or decoder "
                                  "(label-wise attention, fine-tuning only)")
    p.add_argument("--hidden", type=_pos_int, help="hidden units of the mlp head (default 512)")
    p.add_argument("--no-standardize", action="store_true",
                   help="feed raw features (default: z-score tabular features, feed backbone features raw as "
                        "the papers' linear setting)")
    p.add_argument("--selection", help="validation criterion: map (full labels), observed_map, observed_recall@K "
                                       "(K = 1, 3, 5), background_auc / target_group_auc (presence-only data: "
                                       "presences against background rows / against the other species' "
                                       "records), last (no validation: keep the final epoch). Default auto: "
                                       "map when the validation split has full labels, else observed_map (mAP "
                                       "with observed positives as positives: lower than a true mAP but ordering "
                                       "models the same way per label; see docs/practitioner.md)")
    p.add_argument("--k", type=_pos_float, help="expected positives per example for EPR/ROLE and the expected_k "
                                           "label-set rule (default: Cole Eq. A1 on the full training labels, "
                                           "else on a fully labelled validation split)")
    p.add_argument("--feature-set", help="cached feature set of an image bundle")
    p.add_argument("--empty-classes", choices=["exclude", "zero"], help="classes without positives in the "
                                                                       "evaluation set: exclude (default) or AP 0")
    p.add_argument("--max-memory-mb", type=_nonneg_float, help="keep features memory-mapped when larger than this "
                                                      "(out of core: only batches and bounded chunks are read)")
    p.add_argument("--val-rows", type=_val_rows, metavar="N|all|auto",
                   help="validation rows scored every epoch: auto (default: every row up to 2**27 validation "
                        "rows x labels, above it a seeded fixed subsample, said once and recorded in the run), "
                        "all, or N (a subsample of N rows drawn with --seed)")
    p.add_argument("--threads", type=_pos_int, help="torch threads while training (default: 1 in the linear setting, "
                                               "fast on quiet and busy CPUs alike; torch's choice when fine-tuning)")
    p.add_argument("--refit", action=argparse.BooleanOptionalAction, default=None,
                   help="after choosing on validation (learning rate, epoch, members), train those choices again on "
                        "the training + validation rows and save that model (the validated one stays in "
                        "RUN/selected_model); default: on for presence-only data (records and background), where "
                        "a fifth of a hundred records is too much to leave out, off elsewhere (docs/presence_only.md)")
    p.add_argument("--cv", type=_pos_int, metavar="K",
                   help="presence-only data: after training, cross-validate the same configuration over K folds of "
                        "the training + validation rows (each fold tests once, the next validates; refitted when "
                        "the run is) and report each species' AUC, max TSS and Boyce index, mean ± sd over folds "
                        "(RUN/cv_metrics.json); the bundle's test split is not used")
    p.add_argument("--cv-blocks", type=_pos_int, metavar="G",
                   help="--cv: folds of whole blocks of a G x G grid over the rows' places, balanced per species "
                        "(spatial cross-validation; default: rows drawn at random)")
    p.add_argument("--config", help="YAML/JSON file with TrainConfig fields (options override it)")
    p.add_argument("-o", "--out", help="run folder (default runs/<bundle folder name>-<method>-lr<lr>-s<seed>)")
    p.add_argument("--no-resume", action="store_true", help="start over even if the run folder has a checkpoint")
    _add_log_to_option(p, "the run")
    _add_device_option(p, "training")
    _add_image_train_options(p)
    p.set_defaults(func=run)
