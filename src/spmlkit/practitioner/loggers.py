"""Experiment tracking: TensorBoard and MLflow logging of runs and bench groups.

``spml train ... --log-to tensorboard,mlflow`` and ``spml bench ... --log-to ...`` log

* the hyper-parameters (the resolved configuration, the bundle, the method's parameters),
* scalars per epoch (training loss and validation score; for ``auto`` per member method;
  for a bench group per member ``lr``/``seed``),
* the final metrics (validation score, test mAP, label recovery, observed-label test
  metrics, label-set quality), and
* the run's files as artifacts: ``report.md``, ``result.json``, ``config.json`` and the
  figures (MLflow stores them as files; TensorBoard shows the report as text and the
  PNG figures as images).

Where it goes:

* **TensorBoard**: event files in ``<run>/tensorboard/`` (a bench:
  ``<bench>/tensorboard/<group>/``); view with ``tensorboard --logdir runs``.  Needs
  ``pip install "spmlkit[tensorboard]"``.
* **MLflow**: the tracking server or store named by ``MLFLOW_TRACKING_URI``, else a
  file store in the output folder: ``<run>/mlruns`` (a bench: ``<bench>/mlruns``; no
  network; ``mlflow ui --backend-store-uri <run>/mlruns`` shows it), experiment
  ``spmlkit`` (``MLFLOW_EXPERIMENT_NAME`` overrides).  MLflow 3 keeps file stores in
  "maintenance mode" and refuses them unless ``MLFLOW_ALLOW_FILE_STORE`` is set: for a
  ``file:`` store this module sets it (only when asked to log to MLflow).  Needs
  ``pip install "spmlkit[mlflow]"`` (``mlflow-skinny`` and pandas, which
  ``mlflow.search_runs`` needs; the full ``mlflow`` works too).

Metric names are the same for every run, so runs on different data compare in one
table (``mlflow.search_runs()``): the final metrics are ``final.<name>``, a label-set
rule's numbers ``final.label_sets.<rule>.<metric>`` with ``<rule>`` one of
``threshold_0.5``, ``threshold_0.5_min1``, ``top_1``, ``expected_k``, ``per_label`` (and
``default``: the run's own rule); what varies with the data — the estimated k, the
rule's description — is a tag (``label_sets.default_rule``, ``label_sets.expected_k.k``)
and, for k, also the metric ``final.label_sets.expected_k.k``.  A bench is one parent
run (its command, tables and summary metrics ``final.test_map/<dataset>/<method>``)
with one child run per group.

Neither library is imported unless asked for: this module is imported by the commands
only when ``--log-to`` is given, and each logger imports its library when it is made.
A missing library is a one-line error naming the extra to install, before any training.
"""
from __future__ import annotations

import importlib.util
import math
import os
import re
import statistics
import time
from pathlib import Path

import numpy as np
from PIL import Image
from urllib.parse import unquote, urlparse

from .. import ownership
from ..errors import ConfigError, did_you_mean
from ..io import read_json
from ..training.callbacks import Callback

#: names accepted by --log-to
BACKENDS = ("tensorboard", "mlflow")
_EXTRA = {"tensorboard": ("torch.utils.tensorboard", "tensorboard"), "mlflow": ("mlflow", "mlflow")}


def parse_log_to(text: str | None) -> list[str]:
    """``"tensorboard,mlflow"`` -> ``["tensorboard", "mlflow"]`` (checked, in order, once each).

    >>> parse_log_to("mlflow, tensorboard"), parse_log_to(None)
    (['mlflow', 'tensorboard'], [])
    """
    names = list(dict.fromkeys(t.strip().lower() for t in (text or "").split(",") if t.strip()))
    bad = [n for n in names if n not in BACKENDS]
    if bad:
        raise ConfigError(f"--log-to {text!r}: unknown logger {bad[0]!r}{did_you_mean(bad[0], BACKENDS)}; expected "
                          "a comma-separated list of "
                          f"{', '.join(BACKENDS)}")
    return names


def check_available(names: list[str]) -> None:
    """A one-line error, before any training, when a requested library is not installed."""
    for n in names:
        module, extra = _EXTRA[n]
        if importlib.util.find_spec(extra) is None:  # (torch.utils.tensorboard needs the tensorboard package)
            raise ConfigError(f"--log-to {n}: the {n} package is not installed; pip install \"spmlkit[{extra}]\"")


def _flat(d: dict, prefix: str = "") -> dict:
    """Nested dict -> ``{"a.b": value}`` of plain values (lists and None as text)."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        elif isinstance(v, (bool, int, float, str)):
            out[key] = v
        else:
            out[key] = "—" if v is None else str(v)
    return out


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def metric_name(text: str) -> str:
    """A name both trackers accept (MLflow: letters, digits, ``_ - . : /`` and spaces).

    >>> metric_name("label_sets.threshold 0.5, at least 1 label(s).f1")
    'label_sets.threshold_0.5_at_least_1_label_s_.f1'
    """
    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_\-.:/]", "_", text.replace(", ", "_")))


def rule_key(description: str) -> str:
    """A stable metric-name part for a label-set rule from its description (what
    ``label_set_quality`` rows hold): the estimated k is never part of it.

    >>> rule_key("expected-k (k=4.22: top 4 per example)"), rule_key("threshold 0.5, at least 1 label(s)")
    ('expected_k', 'threshold_0.5_min1')
    >>> rule_key("top-1"), rule_key("per-label thresholds (tuned for F1 on validation)")
    ('top_1', 'per_label')
    """
    d = str(description)
    least = re.search(r"at least (\d+) label", d)
    tail = f"_min{least.group(1)}" if least else ""
    if d.startswith("expected-k"):
        return "expected_k" + tail
    if d.startswith("per-label"):
        return "per_label" + tail
    m = re.match(r"threshold ([0-9.eE+-]+)", d)
    if m:
        return f"threshold_{m.group(1)}" + tail
    m = re.match(r"top-(\d+)", d)
    if m:
        return f"top_{m.group(1)}" + tail
    return metric_name(d.split(" (")[0])


def _rule_k(description: str) -> float | None:
    m = re.search(r"k=([0-9.]+)", str(description))
    return float(m.group(1)) if m else None


def final_metrics(result: dict) -> dict:
    """The numbers of a ``result.json`` (or a bench run record) worth a chart: scores, not
    settings (``val_score``, ``test_map``, ``train_map``, observed test metrics, label-set
    quality per rule), under names that do not depend on the data (:func:`rule_key`; the
    default rule's numbers also as ``label_sets.default.*``)."""
    out = {}
    for k in ("val_score", "test_map", "train_map", "best_epoch", "epochs_run", "seconds"):
        if _finite(result.get(k)):
            out[k] = float(result[k])
    for k, v in (result.get("test_observed") or {}).items():
        if _finite(v):
            out[f"test_observed.{k}"] = float(v)
    for row in result.get("label_set_quality") or []:
        rule = row.get("rule") or row.get("name")
        if not rule:
            continue
        keys = [rule_key(rule)] + (["default"] if row.get("default") else [])
        for k, v in row.items():
            if _finite(v) and k != "default":
                for key in keys:
                    out[metric_name(f"label_sets.{key}.{k}")] = float(v)
        if rule_key(rule) == "expected_k" and _rule_k(rule) is not None:
            out["label_sets.expected_k.k"] = _rule_k(rule)
    return out


def final_tags(result: dict) -> dict:
    """What describes a finished run but is not a number to chart: each label-set rule's
    description (with the k it used) as tags ``label_sets.<rule>.rule``, the default
    rule as ``label_sets.default_rule``, the estimated k as ``label_sets.expected_k.k``."""
    out = {}
    for row in result.get("label_set_quality") or []:
        rule = row.get("rule") or row.get("name")
        if not rule:
            continue
        out[f"label_sets.{rule_key(rule)}.rule"] = str(rule)
        if row.get("default"):
            out["label_sets.default_rule"] = str(rule)
        if rule_key(rule) == "expected_k" and _rule_k(rule) is not None:
            out["label_sets.expected_k.k"] = f"{_rule_k(rule):g}"
    for k in ("method", "selection"):
        if isinstance(result.get(k), str):
            out[k] = result[k]
    return out


class Logger:
    """One tracked run.  ``params`` once, ``scalars`` per step, ``finish`` with the final
    metrics and artifact files."""

    def params(self, params: dict) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def scalars(self, values: dict, step: int) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def finish(self, metrics: dict, files: list[Path]) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def set_tags(self, tags: dict) -> None:
        """Descriptions (strings) of the run; before :meth:`finish`.  Ignored by default."""


class TensorBoardLogger(Logger):
    """Event files in ``log_dir`` (``torch.utils.tensorboard.SummaryWriter``)."""

    def __init__(self, log_dir: str | Path, name: str):
        from torch.utils.tensorboard import SummaryWriter  # lazy: optional dependency

        # a folder spmlkit makes inside the run (or bench) folder: checked, never a link followed
        self.dir = ownership.folder(log_dir, "tensorboard")
        self.writer = SummaryWriter(str(self.dir))
        ownership.record_new(self.dir)  # the event file TensorBoard just created is spmlkit's
        self.name = name
        self._params: dict = {}

    def params(self, params: dict) -> None:
        self._params = _flat(params)
        table = "| parameter | value |\n|---|---|\n" + "".join(f"| {k} | {v} |\n" for k, v in self._params.items())
        self.writer.add_text("parameters", table, 0)

    def scalars(self, values: dict, step: int) -> None:
        for k, v in values.items():
            if _finite(v):
                self.writer.add_scalar(k, float(v), step)

    def set_tags(self, tags: dict) -> None:
        if tags:
            self.writer.add_text("tags", "| tag | value |\n|---|---|\n"
                                 + "".join(f"| {k} | {v} |\n" for k, v in tags.items()), 0)

    def finish(self, metrics: dict, files: list[Path]) -> None:
        for k, v in metrics.items():
            self.writer.add_scalar(f"final/{k}", v, 0)
        hp = {k: v for k, v in self._params.items() if isinstance(v, (bool, int, float, str))}
        if hp and metrics:  # the HParams dashboard: one row per run, in this run's folder
            self.writer.add_hparams(hp, {f"hparam/{k}": v for k, v in metrics.items()}, run_name=".")
        for f in files:
            if f.suffix == ".md" or f.suffix == ".json":
                self.writer.add_text(f.name, f.read_text(encoding="utf-8"), 0)
            elif f.suffix == ".png":
                with Image.open(f) as im:
                    self.writer.add_image(f.stem, np.asarray(im.convert("RGB")), 0, dataformats="HWC")
        self.writer.close()

        ownership.record_new(self.dir)  # (add_hparams writes a second event file)


def check_mlflow_store(uri: str) -> Path:
    """A local MLflow store (``file:`` URI or a path) is MLflow's folder, written by MLflow:
    spmlkit only names it, so it must be new, empty or an MLflow store already (its
    ``meta.yaml`` files, ``.trash``, ``models``) — a folder of the user's that happens to
    have the name, a file, or a dangling link is refused in one line before MLflow writes."""
    path = Path(unquote(urlparse(uri).path)) if uri.startswith("file:") else Path(uri)
    ownership.check_output_folder(path, option="MLflow store")
    if path.is_dir():
        names = {p.name for p in path.iterdir()}
        store = (not names or ".trash" in names or "models" in names
                 or any((path / n / "meta.yaml").is_file() for n in names))
        if not store:
            raise ownership.OwnershipError(f"MLflow store {path} holds files that are not an MLflow store; set "
                                           "MLFLOW_TRACKING_URI to another folder (or run from another folder)")
    return path


class MLflowLogger(Logger):
    """One MLflow run (experiment ``spmlkit``) in the store of ``MLFLOW_TRACKING_URI``, else
    a file store in ``store_dir`` (the output folder's ``mlruns/``; ``./mlruns`` when
    none is given).  ``parent``: the run id of a parent run (a bench's)."""

    def __init__(self, name: str, *, uri: str | None = None, experiment: str | None = None,
                 tags: dict | None = None, store_dir: str | Path | None = None, parent: str | None = None):
        uri = (uri or os.environ.get("MLFLOW_TRACKING_URI")
               or Path(store_dir if store_dir is not None else "mlruns").resolve().as_uri())
        if uri.startswith("file:") or "://" not in uri:
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3: file stores are opt-in
            check_mlflow_store(uri)
        from mlflow.tracking import MlflowClient  # lazy: optional dependency

        self.uri = uri
        self.client = MlflowClient(tracking_uri=uri)
        experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "spmlkit"
        exp = self.client.get_experiment_by_name(experiment)
        exp_id = exp.experiment_id if exp is not None else self.client.create_experiment(experiment)
        tags = dict(tags or {})
        if parent is not None:
            tags["mlflow.parentRunId"] = parent  # (MLflow's own tag: the UI nests the run under its parent)
        self.run_id = self.client.create_run(exp_id, run_name=name, tags=tags).info.run_id

    def params(self, params: dict) -> None:
        from mlflow.entities import Param  # lazy: optional dependency

        flat = _flat(params)
        items = [Param(k[:250], str(v)[:6000]) for k, v in flat.items()]
        for i in range(0, len(items), 100):  # (a batch holds at most 100 parameters)
            self.client.log_batch(self.run_id, params=items[i:i + 100])

    def scalars(self, values: dict, step: int) -> None:
        from mlflow.entities import Metric  # lazy: optional dependency

        ms = int(time.time() * 1000)
        items = [Metric(metric_name(k.replace("@", "_at_")), float(v), ms, int(step))
                 for k, v in values.items() if _finite(v)]
        if items:
            self.client.log_batch(self.run_id, metrics=items)

    def set_tags(self, tags: dict) -> None:
        for k, v in tags.items():
            self.client.set_tag(self.run_id, k[:250], str(v)[:5000])

    def finish(self, metrics: dict, files: list[Path]) -> None:
        self.scalars({f"final.{k}": v for k, v in metrics.items()}, 0)
        for f in files:
            if not f.name.startswith("."):  # internal markers (.spml-output.json) are not results
                self.client.log_artifact(self.run_id, str(f))
        self.client.set_terminated(self.run_id)


class RunLoggers:
    """The loggers of one run or bench group (any number, maybe none)."""

    def __init__(self, loggers: list[Logger]):
        self.loggers = loggers

    def __bool__(self) -> bool:
        return bool(self.loggers)

    def params(self, params: dict) -> None:
        for lg in self.loggers:
            lg.params(params)

    def scalars(self, values: dict, step: int) -> None:
        for lg in self.loggers:
            lg.scalars(values, step)

    def set_tags(self, tags: dict) -> None:
        for lg in self.loggers:
            lg.set_tags(tags)

    def finish(self, metrics: dict, files: list[Path]) -> None:
        for lg in self.loggers:
            lg.finish(metrics, [Path(f) for f in files if Path(f).is_file() and not Path(f).name.startswith(".")])

    @property
    def mlflow_run_id(self) -> str | None:
        """The MLflow run's id (a bench's parent run), None without MLflow."""
        return next((lg.run_id for lg in self.loggers if isinstance(lg, MLflowLogger)), None)


def open_loggers(names: list[str], *, name: str, tensorboard_dir: str | Path, tags: dict | None = None,
                 mlflow_dir: str | Path | None = None, parent: str | None = None) -> RunLoggers:
    """Loggers for ``names`` (from :func:`parse_log_to`): a run called ``name`` in each.
    MLflow's default store (no ``MLFLOW_TRACKING_URI``) is ``mlflow_dir``, by default
    ``mlruns/`` beside ``tensorboard_dir`` (a run folder's ``<run>/mlruns``)."""
    out: list[Logger] = []
    for n in names:
        if n == "tensorboard":
            out.append(TensorBoardLogger(tensorboard_dir, name))
        elif n == "mlflow":
            store = Path(mlflow_dir) if mlflow_dir is not None else Path(tensorboard_dir).parent / "mlruns"
            out.append(MLflowLogger(name, tags=tags, store_dir=store, parent=parent))
    return RunLoggers(out)


# ------------------------------------------------------------------- spml train
def epoch_scalars(info: dict) -> tuple[dict, int]:
    """``on_epoch`` info of a run -> ``({tag: value}, step)``; a recipe's member method gets
    its own tags (``l1r/train_loss``) and its own epochs."""
    r = info["rows"][0]
    member = info.get("member")
    prefix = f"{member.split(' ')[0]}/" if member else ""
    return {f"{prefix}train_loss": r.get("train_loss"), f"{prefix}val_score": r.get("val_score")}, int(info["epoch"])


class RunTracking(Callback):
    """``spml train --log-to``: a training loop callback that tracks one run in ``names``'s
    loggers (:func:`parse_log_to`).  They open when the first epoch ends (once the folder
    is a run's; on the main rank) with the run's parameters (the resolved configuration,
    the method's resolved hyper-parameters, the bundle); each epoch logs its scalars
    (:func:`epoch_scalars`); when the run folder is complete (also a run found finished),
    the final metrics and its files (:func:`log_finished_run`)."""

    def __init__(self, names: list[str], *, config, method, bundle, run_dir: str | Path):
        self.names, self.config, self.method, self.bundle = list(names), config, method, bundle
        self.run_dir = Path(run_dir)
        self.loggers: RunLoggers | None = None

    def _open(self) -> RunLoggers:
        if self.loggers is None:
            self.loggers = open_loggers(self.names, name=f"{self.run_dir.name} ({self.config.method} on "
                                                         f"{self.bundle.name})",
                                        tensorboard_dir=self.run_dir / "tensorboard", tags={"spmlkit.kind": "run"})
            self.loggers.params({"config": self.config.to_dict(), "method_params": dict(self.method.params),
                                 "bundle": str(self.bundle.path), "bundle_name": self.bundle.name})
        return self.loggers

    def on_epoch_end(self, fit, info: dict) -> None:
        if info.get("is_main", True):
            self._open().scalars(*epoch_scalars(info))

    def on_run_end(self, run_dir) -> None:
        log_finished_run(self._open(), Path(run_dir))


def log_finished_run(loggers: RunLoggers, run_dir: Path) -> None:
    """Final metrics and the run folder's files (report, result, config, figures)."""
    run_dir = Path(run_dir)
    result = read_json(run_dir / "result.json")
    files = [run_dir / n for n in ("report.md", "result.json", "config.json")] + sorted(run_dir.glob("*.png"))
    loggers.set_tags(final_tags(result))
    loggers.finish(final_metrics(result), files)


# ------------------------------------------------------------------- spml bench
def group_summary(record: dict) -> dict:
    """A bench group's numbers under names that do not depend on its grid: the lr with the
    best mean validation score over seeds (``selected_lr``) and, at it, the mean
    validation score, test mAP (± ``test_map_std`` over seeds) and training-set mAP."""
    by_lr: dict = {}
    for run in record.get("runs", []):
        if _finite(run.get("lr")) and _finite(run.get("val_score")):
            by_lr.setdefault(float(run["lr"]), []).append(run)
    if not by_lr:
        return {}
    lr, runs = max(by_lr.items(), key=lambda kv: statistics.fmean(r["val_score"] for r in kv[1]))
    out = {"selected_lr": lr, "val_score": statistics.fmean(r["val_score"] for r in runs)}
    for k in ("test_map", "train_map"):
        vals = [float(r[k]) for r in runs if _finite(r.get(k))]
        if vals:
            out[k] = statistics.fmean(vals)
            if k == "test_map":
                out["test_map_std"] = statistics.pstdev(vals)
    return out


def log_bench_group(names: list[str], bench_dir: Path, group_label: str, key: dict, record: dict,
                    parent: str | None = None) -> None:
    """One finished bench group (a child of the bench's run ``parent``): its key as
    parameters, each member's validation score per epoch (``lr<lr>-s<seed>/val_score``)
    and final metrics (``lr<lr>-s<seed>/test_map``: the grid's coordinates, the same for
    every dataset), and the group's summary (:func:`group_summary`)."""
    loggers = open_loggers(names, name=group_label, tensorboard_dir=Path(bench_dir) / "tensorboard" / group_label,
                           tags={"spmlkit.kind": "bench group"}, mlflow_dir=Path(bench_dir) / "mlruns", parent=parent)
    loggers.params(key)
    final: dict = dict(group_summary(record))
    for run in record.get("runs", []):
        tag = f"lr{run.get('lr'):g}-s{run.get('seed')}"
        for epoch, v in enumerate(run.get("val_history") or [], 1):
            loggers.scalars({f"{tag}/val_score": v}, epoch)
        final.update({f"{tag}/{k}": v for k, v in final_metrics(run).items()})
    loggers.finish(final, [])


def bench_group_label(g) -> str:
    """The tracker run name of a bench group (:class:`spmlkit.experiments.bench.Group`):
    dataset, method, the subsample fraction or hiding probability when there is one,
    batch size and the first 8 characters of the group's hash."""
    extra = f"-frac{g.fraction:g}" if g.fraction < 1 else (f"-hide{g.hide_prob:g}" if g.hide_prob is not None else "")
    return f"{g.dataset}-{g.method}{extra}-bs{g.batch_size}-{g.hash[:8]}"


class BenchTracking:
    """A bench's tracking: one parent run (opened with the first finished group, or at
    :meth:`finish`) holding the command, the tables and the summary metrics, and one
    child run per group as it finishes.  ``on_group(group, record)`` is the hook of
    :class:`spmlkit.experiments.bench.BenchRunner`."""

    def __init__(self, names: list[str], bench_dir: str | Path, command: str = "spml bench"):
        self.names = list(names)
        self.dir = Path(bench_dir)
        self.command = command
        self._parent: RunLoggers | None = None

    def parent(self) -> RunLoggers:
        if self._parent is None:
            self._parent = open_loggers(self.names, name=f"bench {self.dir.name}",
                                        tensorboard_dir=self.dir / "tensorboard" / "_bench",
                                        mlflow_dir=self.dir / "mlruns", tags={"spmlkit.kind": "bench"})
            self._parent.params({"command": self.command})
        return self._parent

    def on_group(self, g, record) -> None:
        log_bench_group(self.names, self.dir, bench_group_label(g), g.key, record, parent=self.parent().mlflow_run_id)

    def finish(self, summary: dict | None = None) -> None:
        """The parent run's metrics (``summary``: e.g. ``test_map/<dataset>/<method>``) and
        the bench's tables and figures as artifacts (internal files left out)."""
        files = sorted(p for p in self.dir.iterdir() if p.name.endswith((".md", ".csv", ".json", ".json.gz"))
                       and p.is_file() and not p.name.startswith("."))  # runs.json.gz: the run record
        files += sorted(self.dir.glob("figures/*.png")) + sorted(self.dir.glob("*.png"))
        self.parent().finish({k: float(v) for k, v in (summary or {}).items() if _finite(v)}, files)


def bench_group_logger(names: list[str], bench_dir: Path):
    """``on_group(group, record)`` logging each group as it finishes (:func:`log_bench_group`),
    without a parent run (:class:`BenchTracking` is the bench command's)."""
    def on_group(g, record) -> None:
        log_bench_group(names, Path(bench_dir), bench_group_label(g), g.key, record)

    return on_group


def log_bench_outputs(names: list[str], bench_dir: Path, command: str, summary: dict | None = None) -> None:
    """The bench's tables and figures as one run (``bench``) with its command and the
    ``summary`` metrics (:meth:`BenchTracking.finish` without child runs)."""
    BenchTracking(names, bench_dir, command).finish(summary)
