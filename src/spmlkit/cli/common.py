"""Shared by the ``spml`` commands: one-line argparse errors, option types, and the options
and helpers that several commands have (--device, --log-to, the image options)."""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from ..catalogue import method_names
from ..data.registry import DATASETS, find_mulan_folder, unknown_dataset_error
from ..errors import DataFormatError, UnknownNameError
from ..labels import get_regime
from ..practitioner.model_folder import read_model_description


# ------------------------------------------------------------ option validation
class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``spml: error: <what>`` and exit status 2, like
    every other input error (argparse prints the whole usage first)."""

    def error(self, message: str):  # noqa: D401 - argparse API
        cmd = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f" (see 'spml {cmd} --help')" if cmd else " (see 'spml --help')"
        self.exit(2, f"spml: error: {message}{hint}\n")


def _number(kind, text: str, *, low=None, high=None, low_open=False, what=""):
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


# ------------------------------------------------- input checks (before torch)
# Importing torch takes seconds (a minute on a loaded machine): a command checks its
# arguments and input files with these first, so a mistake is one line at once.
def _check_model(path) -> None:
    """A model folder (or a run folder holding model/) with a readable model.json."""
    read_model_description(path)


def _check_method(name: str | None) -> None:
    """A method name the registry knows (from the catalogue, without importing the methods;
    from the live registry when it is already loaded, with any plug-in's names)."""
    if name is None:
        return
    live = sys.modules.get("spmlkit.methods")
    known = set(live.METHODS.names()) if live is not None and hasattr(live, "METHODS") else set(method_names())
    if name not in known:
        raise UnknownNameError("method", name, known)


def _check_source(entry, data_root=None) -> None:
    """A data source a command prepares: an existing path, a dataset name or a Mulan
    folder under the data root (one line naming the known datasets otherwise)."""
    if not Path(entry).exists() and entry not in DATASETS and find_mulan_folder(entry, data_root) is None:
        raise unknown_dataset_error(entry, data_root)


def _check_exists(path, what: str = "file or folder") -> None:
    """An input path that must exist (one line naming it)."""
    if path is not None and not Path(path).exists():
        raise DataFormatError(Path(path), f"{what} not found")


# ----------------------------------------------------------------------- helpers
def _add_device_option(p, what: str = "the run") -> None:
    """--device, the same on every command (spmlkit.device; docs/gpu.md)."""
    p.add_argument("--device", help=f"where {what} computes: auto (default: CUDA when available, else the CPU), "
                                    "cpu, cuda, cuda:N or mps; an unavailable choice is an error")


def _device(args, option: str = "--device"):
    """The resolved --device of a command (a one-line error, before anything is written)."""
    from ..device import resolve_device  # lazy: torch-free CLI start-up

    return resolve_device(getattr(args, "device", None), option=option)


def _csv_list(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def _label_names(text: str) -> list[str]:
    """--label-names: a file with one name per line, or a comma-separated list."""
    p = Path(text)
    if p.is_file():
        return [line.strip() for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    return _csv_list(text)


def _log_to(args) -> list[str]:
    """--log-to: the experiment trackers asked for (checked installed; nothing imported otherwise)."""
    if not getattr(args, "log_to", None):
        return []
    from ..practitioner.loggers import check_available, parse_log_to  # lazy: torch-free CLI start-up

    names = parse_log_to(args.log_to)
    check_available(names)
    return names


def _add_log_to_option(p, what: str) -> None:
    p.add_argument("--log-to", metavar="LOGGERS",
                   help=f"also log {what} to tensorboard and/or mlflow (comma-separated): hyper-parameters, "
                        "scalars per epoch, final metrics, the report and figures. TensorBoard: event files in "
                        "<out>/tensorboard/ (pip install \"spmlkit[tensorboard]\"); MLflow: the store of "
                        "MLFLOW_TRACKING_URI, else <out>/mlruns (pip install \"spmlkit[mlflow]\"); see "
                        "docs/practitioner.md")


# ------------------------------------------------------------------------ images
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
