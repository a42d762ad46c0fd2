"""Experiment tracking (spmlkit.practitioner.loggers): --log-to parsing, metric names both
trackers accept, the numbers of a result worth a chart, and loggers that only forward.
End-to-end logging to TensorBoard and MLflow is tested in
tests/integration/test_practitioner_day.py."""
import types

import pytest

from spmlkit.errors import ConfigError
from spmlkit.practitioner import loggers as LG


def test_parse_log_to():
    assert LG.parse_log_to(" MLflow, tensorboard,mlflow ") == ["mlflow", "tensorboard"]  # once each, in order
    assert LG.parse_log_to("") == LG.parse_log_to(None) == []
    with pytest.raises(ConfigError, match="--log-to 'tensorboard,wandb': unknown logger 'wandb'; expected a "
                                          "comma-separated list of tensorboard, mlflow"):
        LG.parse_log_to("tensorboard,wandb")


def test_a_missing_tracker_names_the_extra_to_install(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match=r'--log-to mlflow: the mlflow package is not installed; '
                                          r'pip install "spmlkit\[mlflow\]"'):
        LG.check_available(["mlflow"])


def test_metric_names_and_final_metrics():
    assert LG.metric_name("label_sets.expected k (k=2.0), f1") == "label_sets.expected_k_k_2.0_f1"
    result = {"val_score": 61.5, "test_map": 58.25, "best_epoch": 3, "seconds": float("nan"), "method": "an",
              "test_observed": {"observed_map": 40.0, "note": "observed labels only"},
              "label_set_quality": [{"rule": "threshold 0.5", "f1": 33.0, "default": True}]}
    assert LG.final_metrics(result) == {"val_score": 61.5, "test_map": 58.25, "best_epoch": 3.0,
                                        "test_observed.observed_map": 40.0, "label_sets.threshold_0.5.f1": 33.0}


def test_run_loggers_forward_to_every_logger_and_keep_existing_files_only(tmp_path):
    class Recording(LG.Logger):
        def __init__(self):
            self.calls = []

        def params(self, params):
            self.calls.append(("params", params))

        def scalars(self, values, step):
            self.calls.append(("scalars", values, step))

        def finish(self, metrics, files):
            self.calls.append(("finish", metrics, [f.name for f in files]))

    a, b = Recording(), Recording()
    loggers = LG.RunLoggers([a, b])
    assert loggers and not LG.RunLoggers([])
    (tmp_path / "report.md").write_text("# run")
    loggers.params({"lr": 0.01})
    info = {"epoch": 2, "rows": [{"train_loss": 0.5, "val_score": 60.0}], "member": "l1r lr 0.01"}
    loggers.scalars(*LG.epoch_scalars(info))
    loggers.finish({"test_map": 1.0}, [tmp_path / "report.md", tmp_path / "missing.png"])
    assert a.calls == b.calls == [("params", {"lr": 0.01}),
                                  ("scalars", {"l1r/train_loss": 0.5, "l1r/val_score": 60.0}, 2),
                                  ("finish", {"test_map": 1.0}, ["report.md"])]


def test_tensorboard_logger_writes_event_files(tmp_path):
    pytest.importorskip("tensorboard")
    loggers = LG.open_loggers(["tensorboard"], name="run", tensorboard_dir=tmp_path / "tb")
    loggers.params({"method": "an", "nested": {"lr": 0.01}})
    loggers.scalars({"train_loss": 0.5}, 1)
    loggers.finish({"test_map": 50.0}, [])
    assert list((tmp_path / "tb").rglob("events.out.tfevents.*"))


def test_bench_group_logger(monkeypatch, tmp_path):
    from spmlkit.practitioner import loggers

    g = types.SimpleNamespace(dataset="yeast", method="an", fraction=0.5, hide_prob=None, batch_size=8,
                              hash="0123456789abcdef", key={"method": "an"})
    assert loggers.bench_group_label(g) == "yeast-an-frac0.5-bs8-01234567"
    assert loggers.bench_group_label(types.SimpleNamespace(**{**vars(g), "fraction": 1.0, "hide_prob": 0.3})) == \
        "yeast-an-hide0.3-bs8-01234567"
    assert loggers.bench_group_label(types.SimpleNamespace(**{**vars(g), "fraction": 1.0})) == "yeast-an-bs8-01234567"
    calls = []
    monkeypatch.setattr(loggers, "log_bench_group", lambda *a: calls.append(a))
    loggers.bench_group_logger(["tensorboard"], str(tmp_path))(g, {"runs": []})
    assert calls == [(["tensorboard"], tmp_path, "yeast-an-frac0.5-bs8-01234567", {"method": "an"}, {"runs": []})]
