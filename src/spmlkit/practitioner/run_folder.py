"""One training run with everything written next to it.

``run_training`` creates ``<run>/``::

    config.json      the resolved TrainConfig + bundle + method hyper-parameters
    metrics.jsonl    one line per epoch (train loss, validation score, component logs)
    last.pt          resumable checkpoint (+ .sha256)
    model/           the best-validation model (see spmlkit.practitioner.saved)
    curves.png       training loss and validation score per epoch
    report.md        configuration, curves, final metrics, label-set quality
    linear-init/     LinearInit's linear phase (setting "finetune" with linear_init)
    result.json      final metrics (best epoch, validation, test mAP, label recovery);
                     written last: a folder with it is a finished run

A run killed at any point (even mid-epoch, even SIGKILL) continues from ``last.pt``
when started again with the same configuration and ends with the same result as an
uninterrupted run.  Starting a finished run again does not retrain: the stored result
is returned (``--no-resume`` / ``resume=False`` trains from scratch).

In a distributed run (torchrun) every rank calls :func:`run_training`; rank 0 alone
reads and writes the folder's bookkeeping and broadcasts its decisions.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path

import numpy as np
from scipy.special import expit

from ..config import TrainConfig
from ..data.bundle import Bundle
from ..device import device_info, validate_config
from ..errors import ConfigError, CorruptFileError, SpmlError
from .. import ownership
from ..io import FolderLock, read_json, sha256_file
from ..ownership import write_json
from ..methods.base import SCRATCH_DIR
from ..methods.recipe import is_recipe
from .labelsets import default_rule, estimate_k_observed_streamed, model_label_rule
from .report import label_set_quality, label_set_quality_streamed, write_run_report
from .saved import SavedModel, save_model
from ..training import distributed
from ..training.callbacks import Callback
from ..training.checkpoint import is_run_folder, load_run_checkpoint  # noqa: F401  (the run kind is declared with it)
from ..training.result import RunResult
from ..training.run import train


def bundle_identity(bundle: Bundle) -> str:
    """The content identity of a bundle: a hash of its ``meta.json`` (which records the
    creation time and the SHA-256 of every array), the same wherever the bundle lies and
    however its path is spelled."""
    return hashlib.sha256(json.dumps(bundle.meta, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _input_hashes(config: TrainConfig) -> dict:
    """SHA-256 of the files a run reads besides the bundle (``pseudo_scores``): a file
    changed in place at the same path makes another run."""
    out = {}
    ps = config.param_dict.get("pseudo_scores")
    if ps and Path(str(ps)).is_file():
        out["pseudo_scores"] = sha256_file(ps)
    return out


def _resolved(bundle: Bundle, config: TrainConfig) -> dict:
    # the bundle's creation time: a bundle prepared again at the same path is another run
    return {"config": config.to_dict(), "bundle": str(bundle.path), "bundle_name": bundle.name,
            "bundle_created": bundle.meta.get("created"), "bundle_path": str(Path(bundle.path).resolve()),
            "bundle_id": bundle_identity(bundle), "inputs": _input_hashes(config)}


def _same_run(previous: dict, resolved: dict) -> bool:
    """Same configuration, bundle (by content, whatever the spelling of its path or the
    working folder: ``b`` and ``$PWD/b`` are one bundle) and input files (pseudo-scores,
    by content).  The device is not part of a run's identity (a run started on a GPU
    resumes on a CPU and vice versa; files are device-free), and an option a run's
    config.json predates counts with its default value.  Runs written before the bundle
    identity was recorded compare the bundle path (resolved when possible)."""
    if not isinstance(previous, dict):
        return False
    defaults = TrainConfig().to_dict()

    def ident(cfg):
        if not isinstance(cfg, dict):
            return cfg
        return {k: v for k, v in {**defaults, **cfg}.items() if k != "device"}

    if ident(previous.get("config")) != ident(resolved["config"]):
        return False
    if previous.get("bundle_created") != resolved["bundle_created"]:
        return False
    if "bundle_id" in previous:
        same_bundle = previous["bundle_id"] == resolved["bundle_id"]
    else:
        prev = previous.get("bundle")
        same_bundle = prev == resolved["bundle"] or (isinstance(prev, str) and
                                                     str(Path(prev).resolve()) == resolved["bundle_path"])
    if not same_bundle:
        return False
    if "inputs" in previous and previous["inputs"] != resolved["inputs"]:
        return False
    return True


_NUM = (int, float)
#: what a run's result.json holds (RunResult.to_record()), with the types read back
_RESULT_FIELDS = {"method": (str,), "params": (dict,), "lr": _NUM, "batch_size": (int,), "seed": (int,),
                  "best_epoch": (int,), "val_score": (*_NUM, type(None)), "selection": (str,),
                  "test_map": (*_NUM, type(None)), "train_map": (*_NUM, type(None)), "epochs_run": (int,),
                  "val_history": (list,), "seconds": _NUM}


def read_run_result(out_dir: str | Path) -> dict:
    """``RUN/result.json``, schema-checked: a JSON object with the fields of a run's
    result, of the right types; anything else is a one-line :class:`CorruptFileError`
    naming the file."""
    path = Path(out_dir) / "result.json"
    rec = read_json(path)
    if not isinstance(rec, dict):
        raise CorruptFileError(f"{path}: expected a JSON object (the run's result), found {type(rec).__name__}; "
                               "train again with --no-resume")
    for k, types in _RESULT_FIELDS.items():
        v = rec.get(k, ...)
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            raise CorruptFileError(f"{path}: {k!r} is missing or not of the expected type; the file was edited — "
                                   "train again with --no-resume")
    return rec


def finished_run(bundle: Bundle, config: TrainConfig, out_dir: str | Path) -> dict | None:
    """The stored ``result.json`` of a finished run of this configuration in ``out_dir``, else None."""
    out = Path(out_dir)
    if not (out / "result.json").exists() or not (out / "config.json").exists():
        return None
    if not _same_run(read_json(out / "config.json"), _resolved(bundle, config)):
        return None
    return read_run_result(out)


def input_description(bundle: Bundle, config: TrainConfig) -> dict:
    """What the model takes as input (``model.json["input"]``, see :mod:`spmlkit.practitioner.saved`).

    For a head trained on a cached feature set, the keys of
    ``<bundle>/features/<name>/meta.json`` written by ``spml features`` that say how
    the features were made (``backbone``, ``image_size``, ``extractor_options``, ...)
    are copied, so ``spml predict`` can extract the same features from new images."""
    if bundle.kind == "features" and config.feature_set is None:
        names = bundle.meta.get("feature_names")
        if (isinstance(names, list) and len(names) == bundle.meta.get("n_features")
                and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)):
            # 'spml predict' matches the columns of a CSV by these names, not by position
            out = {"kind": "features", "feature_names": list(names)}
            for key in ("encoding", "places"):  # predict from the raw training layout, on a map
                if isinstance(bundle.meta.get(key), dict):
                    out[key] = bundle.meta[key]
            return out
        return {"kind": "features"}
    sets = bundle.feature_sets()
    fs = config.feature_set or (sets[0] if len(sets) == 1 else None)
    info: dict = {"kind": "images" if bundle.kind == "images" else "features", "feature_set": fs}
    for name in ("meta.json", "info.json"):
        p = bundle.path / "features" / str(fs) / name
        if fs is not None and p.exists():
            meta = read_json(p)
            if isinstance(meta, dict):
                for k, v in meta.items():
                    if k not in info and (isinstance(v, (str, int, float, bool)) or v is None or
                                          k == "extractor_options"):
                        info[k] = v
            break
    return info


def default_method(config: TrainConfig, bundle) -> tuple[str, str | None]:
    """The method of a run whose user named none: ``auto`` (the measured recommendation,
    docs/recipe.md) where it applies; else ``an``, with the reason (a note to show):
    ``auto`` is a recipe of the linear setting, and it chooses its learning rates on
    validation observations."""
    if config.setting == "finetune":
        return "an", ("no -m given: fine-tuning trains 'an' (the default 'auto' is a recipe of the linear "
                      "setting: it trains several heads on cached features); name a method with -m")
    if bundle.size("val") == 0:
        return "an", ("no -m given and the bundle has no validation split: training 'an' with the last epoch "
                      "kept (the default 'auto' chooses its learning rates on validation observations; prepare "
                      "with --val-fraction > 0 for it)")
    return "auto", None


def training_notes(config: TrainConfig, method, *, lr_given: bool = False, finetune_options=()) -> list[str]:
    """Notes for the user of ``spml train``: options given that the run does not use.
    ``lr_given``: ``--lr`` was given (a recipe tries its own learning rates);
    ``finetune_options``: the fine-tuning options given (``--compile``, ``--freeze-bn``),
    which the linear setting does not use."""
    notes = []

    if is_recipe(method) and lr_given:
        notes.append(f"{config.method} tries each member at its own learning rates "
                     f"({', '.join(f'{lr:g}' for lr in method.lrs)}; --param lrs=... changes them); "
                     "--lr is not used")
    ignored = list(finetune_options)
    if config.setting != "finetune" and ignored:
        notes.append(f"{' and '.join(ignored)} apply to fine-tuning (--setting finetune); the linear setting trains a "
                     f"head on cached features and does not use {'them' if len(ignored) > 1 else 'it'}")
    return notes


class FinishedNote(Callback):
    """Says (on stdout) that the run folder already holds this finished run, so nothing
    trains (``spml train``; ``--no-resume`` trains again)."""

    def on_run_skipped(self, run_dir) -> None:
        print(f"run {run_dir} already finished with this configuration: not retraining (--no-resume trains again)")


def default_run_folder(bundle_path: str | Path, config: TrainConfig) -> Path:
    """``runs/<bundle folder>-<method>-lr<lr>-s<seed>``: named after the bundle's folder
    (the user's name for the data), not its source file."""
    return Path("runs") / f"{Path(bundle_path).resolve().name}-{config.method}-lr{config.lr:g}-s{config.seed}"


def run_inputs(bundle: Bundle, config: TrainConfig) -> list:
    """What a run reads (its output folder may be none of them, nor lie inside one): the
    bundle and the files named by its hyper-parameters (``pseudo_scores``)."""
    ps = config.param_dict.get("pseudo_scores")
    return [bundle.path, *([str(ps)] if ps else [])]


def run_training(bundle: Bundle, config: TrainConfig, out_dir: str | Path, *, resume: bool = True,
                 on_epoch=None, log=None, method=None, device=None, callbacks=()) -> RunResult:
    """Train into ``out_dir`` (see the module docstring).  The folder is locked while
    the run writes it (a second process is refused; a killed one leaves no stale lock),
    temporaries left by a killed writer are removed, and a run that fails before its
    first checkpoint leaves nothing behind.  ``log(message)`` hears "resuming from
    epoch N" (and the fine-tuning trainer's messages).

    ``method`` / ``device``: the run's method (fresh) and resolved device when the caller
    has them already (the CLI does), so neither is built twice.  ``callbacks``
    (:mod:`spmlkit.training.callbacks`) hear the training loop and, on rank 0, the run
    folder: ``on_run_skipped(out)`` when ``out`` already holds this finished run (nothing
    trains), ``on_run_end(out)`` once the folder is complete (also after a skip)."""
    if device is None:  # (a caller that passes the device has validated the config: the CLI)
        device = validate_config(config)  # an impossible device/precision is refused before the folder exists
    dctx = distributed.context()
    # a folder of the user's (not new, empty or a spmlkit run), a link or an input: refused, nothing written
    out = ownership.claim(out_dir, "run", inputs=run_inputs(bundle, config), create=False)
    done = finished_run(bundle, config, out) if resume else None
    if done is not None:  # recognised before the folder is locked: a finished run is not touched
        return _skipped(done, out, callbacks)
    lock = None
    created = False
    if dctx.is_main:
        ownership.claim(out, "run", inputs=run_inputs(bundle, config))
        created = ownership.created(out)
        lock = FolderLock(out, what="run folder").acquire()
        ownership.remove_stale_temporaries(out, recursive=True)
    try:
        result = _run_training(bundle, config, out, resume=resume, on_epoch=on_epoch, log=log, method=method,
                               device=device, callbacks=callbacks)
    except BaseException:
        if dctx.is_main and not (out / "last.pt").exists() and not (out / "result.json").exists():
            # nothing worth resuming: leave no config.json/metrics behind (and no folder we made)
            for name in ("config.json", "metrics.jsonl", "last.pt.sha256"):
                with contextlib.suppress(SpmlError, OSError):
                    ownership.remove(out / name)
            if lock is not None:
                lock.remove = True  # (removed only while it is still the file this process locked)
                lock.release()
                lock = None
            if created:
                with contextlib.suppress(SpmlError, OSError):
                    ownership.discard(out, only_if_empty=True)
        raise
    finally:
        if lock is not None:
            lock.release()
    if dctx.is_main:
        for cb in callbacks:
            cb.on_run_end(out)
    return result


def _skipped(record: dict, out: Path, callbacks, *, end: bool = True) -> RunResult:
    """The result of a run ``out`` already holds; the callbacks hear it (rank 0), and that
    the run ends with ``end``."""
    if distributed.context().is_main:
        for cb in callbacks:
            cb.on_run_skipped(out)
        for cb in callbacks if end else ():
            cb.on_run_end(out)
    return RunResult.from_record(record)


def _run_training(bundle: Bundle, config: TrainConfig, out: Path, *, resume: bool, on_epoch, log, method, device,
                  callbacks) -> RunResult:
    dctx = distributed.context()
    cfg_path = out / "config.json"
    resolved = _resolved(bundle, config)
    done = problem = None
    if dctx.is_main:
        if resume:
            done = finished_run(bundle, config, out)
        if done is None:
            if resume and cfg_path.exists() and ((out / "last.pt").exists() or (out / "result.json").exists()):
                if not _same_run(read_json(cfg_path), resolved):
                    problem = (f"{out} holds a run with a different configuration (or of a bundle prepared "
                               "again); choose another --out or pass --no-resume to start over")
            if problem is None:
                if not resume:
                    ownership.remove(out / "result.json")

                write_json(cfg_path, {**resolved, "world_size": dctx.world_size, "device": device_info(device)})
    done, problem = distributed.broadcast_object((done, problem))  # every rank takes rank 0's decision
    if problem is not None:
        raise ConfigError(problem)
    if done is not None:  # a finished run: nothing to do (run_training ends it)
        return _skipped(done, out, callbacks, end=False)
    # (a tree run says itself after which seeds it resumes: its last.pt counts seeds, not epochs)
    if dctx.is_main and log is not None and resume and (out / "last.pt").exists() and config.head != "tree":
        linear = config.setting != "finetune"  # (fine-tuning counts its own epochs)
        epoch = load_run_checkpoint(out / "last.pt", epochs=config.epochs if linear else None)["epoch"]
        log(f"resuming {out} after epoch {epoch} (from last.pt; --no-resume starts over)")
    finetune = config.setting == "finetune"
    (result,) = train(bundle, config, run_dir=out, resume=resume, on_epoch=on_epoch, keep_state=True, log=log,
                      method=method, device=device, callbacks=callbacks)
    if dctx.is_main:
        st = result.state
        info = {"bundle": str(bundle.path), "best_epoch": result.best_epoch, "val_score": result.val_score,
                "selection": result.selection, "test_map": result.test_map, "feature_set": config.feature_set,
                "has_full_labels": bundle.has_full_labels, "method_state_keys": sorted(st["method"].keys()),
                "world_size": dctx.world_size, "setting": config.setting}
        provisional = {"rule": "top_k", "k": 1, "k_source": None, "note": "provisional: the label-set step "
                       "did not finish (the rule is written when it does)"}
        if finetune:  # the whole backbone + head: the model takes image files
            model = SavedModel(label_names=bundle.label_names, head=st["spec"]["head"], hidden=st["spec"]["hidden"],
                               n_features=0, state=st["model"], method=config.method, params=result.params,
                               config=config.to_dict(), label_sets=provisional, info=info,
                               input={"kind": "images", "fine_tuned": True, "backbone": config.backbone,
                                      "image_size": config.image_size},
                               image={**st["spec"], "image_size": config.image_size})
        else:
            model = SavedModel.from_training_state(
                st, label_names=bundle.label_names, config=config.to_dict(), method=config.method,
                params=result.params, label_sets=provisional, input=input_description(bundle, config), info=info)
        # the trained model is saved before any reporting step that could fail or run out of
        # memory; the label-set rule is written into it once computed
        save_model(model, out / "model")
        rule, quality = _label_sets(bundle, result, st, model=model, feature_set=config.feature_set)
        model.label_sets = rule
        save_model(model, out / "model")
        record = result.to_record()

        record.update({"labels": "full" if bundle.has_full_labels else "observed",
                       "label_sets": {k: v for k, v in rule.items() if k != "thresholds"},
                       "label_set_quality": quality, "world_size": dctx.world_size,
                       "device": device_info(device)})

        meta = dict(bundle.meta)
        meta["path"] = str(bundle.path)
        meta.setdefault("full_label_splits",
                        [s for s in ("train", "val", "test") if bundle.labels(s) is not None])
        write_run_report(out, result=record, config=config.to_dict(), bundle_meta=meta, label_set_rows=quality,
                         label_rule=rule)
        write_json(out / "result.json", record)  # last: marks the run finished
        # components' on-disk scratch (not needed to resume): what spmlkit wrote there, nothing else
        ownership.remove(out / SCRATCH_DIR)
    distributed.barrier()
    return result


def _split_logits(model, bundle: Bundle, split: str, stored, feature_set: str | None):
    """``chunks()`` over the logits of ``split``: the run's stored logits when it kept
    them (small data), else computed in row blocks by the saved model from the bundle's
    features (never ``N × L`` at once).  None when the split is empty."""
    if not bundle.size(split):
        return None
    if stored is not None:
        if not len(stored):
            return None
        return lambda: iter([(0, stored)])
    if model.takes_images and model.image is not None:
        return None  # a fine-tuned image model keeps its logits in the state; nothing to stream
    X = bundle.features(split, feature_set)
    rows = model.stream_rows(8 * 2 ** 20)  # probabilities in float64 and every rule's sets per block: small blocks
    return lambda: model.iter_decision_function(X, batch_rows=rows)


def _label_sets(bundle: Bundle, result: RunResult, st: dict, *, model=None,
                feature_set: str | None = None) -> tuple[dict, list]:
    """The model's default label-set rule and the label-set quality on the test split.

    With full validation labels: per-label thresholds are tuned on them (F1) and stored,
    and the default rule is chosen among fixed threshold, expected-k and per-label by
    validation example-F1 (per-label scored out of fold; :func:`spmlkit.practitioner.labelsets.choose_rule`).
    Otherwise expected-k with k known (--k, Eq. A1 on full labels) or estimated from the
    validation observations (:func:`spmlkit.practitioner.labelsets.estimate_k_observed`); ``k`` is stored.

    Logits the run kept (small data) are used whole; otherwise they stream from ``model``
    in row blocks (:func:`_split_logits`), the k estimate by ``argmax`` and the test
    quality tallied block by block; the out-of-fold choice among rules, which needs the
    whole validation matrix, is then skipped (expected-k is kept, and the rule says so)."""
    k = None if result.expected_positives is None else float(result.expected_positives)
    Y_val = bundle.labels("val") if bundle.size("val") else None
    val = _split_logits(model, bundle, "val", st.get("val_logits"), feature_set)
    if st.get("val_logits") is not None and len(st["val_logits"]):  # held whole: the one rule of a trained model
        P_val = expit(st["val_logits"].astype(np.float64))
        full = Y_val is not None
        rule = model_label_rule(k=k, k_source="given (--k) or Eq. A1 on full labels",
                                Z=None if full else bundle.observations("val"), P=P_val, where="validation",
                                Y_val=np.asarray(Y_val) if full else None, P_val=P_val, seed=result.seed)
        if full:
            rule["tuning"]["on"] = f"validation split ({len(Y_val)} examples, full labels)"
    elif k is None and val is not None and Y_val is None:  # streamed: k estimated block by block
        Z_val = bundle.observations("val")
        if Z_val.count(1):
            k_hat = estimate_k_observed_streamed(Z_val, val)
            rule = {"rule": "expected_k", "k": k_hat, "k_estimate": k_hat,
                    "k_source": f"1 / observed recall@1 on {len(Z_val)} validation example(s), no full labels"}
        else:
            rule = default_rule(where="validation")
    else:
        rule = default_rule(k=k, k_source="given (--k) or Eq. A1 on full labels", where="validation")
        if Y_val is not None and val is not None and rule.get("k") is not None:
            rule["note"] = ("validation too large to hold whole: per-label thresholds were not tuned; "
                            "expected-k with k from the full labels")
    quality: list = []
    test = _split_logits(model, bundle, "test", st.get("test_logits"), feature_set)
    if test is not None:
        Y_test = bundle.labels("test")
        Z_test = bundle.observations("test") if Y_test is None else None
        if st.get("test_logits") is not None:
            quality = label_set_quality(expit(st["test_logits"].astype(np.float64)),
                                        Y=None if Y_test is None else np.asarray(Y_test),
                                        Z=None if Z_test is None else np.asarray(Z_test), spec=rule)
        else:
            quality = label_set_quality_streamed(  # on the float32 logits: no float64 block per chunk
                lambda: ((s, np.asarray(b, dtype=np.float32)) for s, b in test()), Y=Y_test, Z=Z_test, spec=rule,
                logits=True)
    return rule, quality
