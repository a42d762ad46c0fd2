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
  file store ``./mlruns`` in the working directory (no network; ``mlflow ui`` shows
  it), experiment ``spmlkit`` (``MLFLOW_EXPERIMENT_NAME`` overrides).  MLflow 3 keeps
  file stores in "maintenance mode" and refuses them unless ``MLFLOW_ALLOW_FILE_STORE``
  is set: for a ``file:`` store this module sets it (only when asked to log to MLflow).
  Needs ``pip install "spmlkit[mlflow]"`` (``mlflow-skinny``; the full ``mlflow``
  works too).

Neither library is imported unless asked for: this module is imported by the commands
only when ``--log-to`` is given, and each logger imports its library when it is made.
A missing library is a one-line error naming the extra to install, before any training.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

from ..errors import ConfigError
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
        raise ConfigError(f"--log-to {text!r}: unknown logger {bad[0]!r}; expected a comma-separated list of "
                          f"{', '.join(BACKENDS)}")
    return names


def check_available(names: list[str]) -> None:
    """A one-line error, before any training, when a requested library is not installed."""
    import importlib.util

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
    import re

    return re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_\-.:/]", "_", text.replace(", ", "_")))


def final_metrics(result: dict) -> dict:
    """The numbers of a ``result.json`` (or a bench run record) worth a chart: scores, not
    settings (``val_score``, ``test_map``, ``train_map``, observed test metrics, label-set
    quality per rule)."""
    out = {}
    for k in ("val_score", "test_map", "train_map", "best_epoch", "epochs_run", "seconds"):
        if _finite(result.get(k)):
            out[k] = float(result[k])
    for k, v in (result.get("test_observed") or {}).items():
        if _finite(v):
            out[f"test_observed.{k}"] = float(v)
    for row in result.get("label_set_quality") or []:
        rule = row.get("rule") or row.get("name")
        for k, v in row.items():
            if rule and _finite(v):
                out[metric_name(f"label_sets.{rule}.{k}")] = float(v)
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


class TensorBoardLogger(Logger):
    """Event files in ``log_dir`` (``torch.utils.tensorboard.SummaryWriter``)."""

    def __init__(self, log_dir: str | Path, name: str):
        from torch.utils.tensorboard import SummaryWriter

        self.dir = Path(log_dir)
        self.writer = SummaryWriter(str(self.dir))
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
                import numpy as np
                from PIL import Image

                with Image.open(f) as im:
                    self.writer.add_image(f.stem, np.asarray(im.convert("RGB")), 0, dataformats="HWC")
        self.writer.close()


class MLflowLogger(Logger):
    """One MLflow run (experiment ``spmlkit``) in the store of ``MLFLOW_TRACKING_URI``, else
    ``./mlruns``."""

    def __init__(self, name: str, *, uri: str | None = None, experiment: str | None = None,
                 tags: dict | None = None):
        uri = uri or os.environ.get("MLFLOW_TRACKING_URI") or Path("mlruns").resolve().as_uri()
        if uri.startswith("file:") or "://" not in uri:
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3: file stores are opt-in
        from mlflow.tracking import MlflowClient

        self.uri = uri
        self.client = MlflowClient(tracking_uri=uri)
        experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "spmlkit"
        exp = self.client.get_experiment_by_name(experiment)
        exp_id = exp.experiment_id if exp is not None else self.client.create_experiment(experiment)
        self.run_id = self.client.create_run(exp_id, run_name=name, tags=dict(tags or {})).info.run_id

    def params(self, params: dict) -> None:
        from mlflow.entities import Param

        flat = _flat(params)
        items = [Param(k[:250], str(v)[:6000]) for k, v in flat.items()]
        for i in range(0, len(items), 100):  # (a batch holds at most 100 parameters)
            self.client.log_batch(self.run_id, params=items[i:i + 100])

    def scalars(self, values: dict, step: int) -> None:
        import time

        from mlflow.entities import Metric

        ms = int(time.time() * 1000)
        items = [Metric(metric_name(k.replace("@", "_at_")), float(v), ms, int(step))
                 for k, v in values.items() if _finite(v)]
        if items:
            self.client.log_batch(self.run_id, metrics=items)

    def finish(self, metrics: dict, files: list[Path]) -> None:
        self.scalars({f"final.{k}": v for k, v in metrics.items()}, 0)
        for f in files:
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

    def finish(self, metrics: dict, files: list[Path]) -> None:
        for lg in self.loggers:
            lg.finish(metrics, [Path(f) for f in files if Path(f).is_file()])


def open_loggers(names: list[str], *, name: str, tensorboard_dir: str | Path, tags: dict | None = None) -> RunLoggers:
    """Loggers for ``names`` (from :func:`parse_log_to`): a run called ``name`` in each."""
    out: list[Logger] = []
    for n in names:
        if n == "tensorboard":
            out.append(TensorBoardLogger(tensorboard_dir, name))
        elif n == "mlflow":
            out.append(MLflowLogger(name, tags=tags))
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
    from ..io import read_json

    run_dir = Path(run_dir)
    result = read_json(run_dir / "result.json")
    files = [run_dir / n for n in ("report.md", "result.json", "config.json")] + sorted(run_dir.glob("*.png"))
    loggers.finish(final_metrics(result), files)


# ------------------------------------------------------------------- spml bench
def log_bench_group(names: list[str], bench_dir: Path, group_label: str, key: dict, record: dict) -> None:
    """One finished bench group: its key as parameters, each member's validation score per
    epoch (``lr<lr>-s<seed>/val_score``) and final metrics (``lr<lr>-s<seed>/test_map``)."""
    loggers = open_loggers(names, name=group_label, tensorboard_dir=Path(bench_dir) / "tensorboard" / group_label,
                           tags={"spmlkit.kind": "bench group"})
    loggers.params(key)
    final: dict = {}
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


def bench_group_logger(names: list[str], bench_dir: Path):
    """``on_group(group, record)`` for :class:`spmlkit.experiments.bench.BenchRunner`: logs
    each group as it finishes (:func:`log_bench_group`) under :func:`bench_group_label`."""
    def on_group(g, record) -> None:
        log_bench_group(names, Path(bench_dir), bench_group_label(g), g.key, record)

    return on_group


def log_bench_outputs(names: list[str], bench_dir: Path, command: str, summary: dict | None = None) -> None:
    """The bench's tables and figures as one more run (``bench``) with its command."""
    bench_dir = Path(bench_dir)
    loggers = open_loggers(names, name=f"bench {bench_dir.name}", tensorboard_dir=bench_dir / "tensorboard" / "_bench",
                           tags={"spmlkit.kind": "bench"})
    loggers.params({"command": command})
    files = sorted(p for p in bench_dir.iterdir() if p.suffix in (".md", ".csv", ".json") and p.is_file())
    files += sorted(bench_dir.glob("figures/*.png")) + sorted(bench_dir.glob("*.png"))
    loggers.finish({}, files)
