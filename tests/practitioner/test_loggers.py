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
                                        "test_observed.observed_map": 40.0, "label_sets.threshold_0.5.f1": 33.0,
                                        "label_sets.default.f1": 33.0}


def _quality(k):
    return [{"rule": f"expected-k (k={k:.2f}: top {round(k)} per example)", "default": True, "example_f1": 30.0},
            {"rule": "top-1", "default": False, "example_f1": 20.0},
            {"rule": "threshold 0.5, at least 1 label(s)", "default": False, "example_f1": 10.0},
            {"rule": "per-label thresholds (tuned for F1 on validation)", "default": False, "example_f1": 5.0}]


def test_metric_names_do_not_depend_on_the_estimated_k():
    """Issue 37: 'final.label_sets.expected-k_k_4.22:_top_4_per_example_.example_f1' made runs on
    different data incomparable; k and the rule's description are tags (and k a metric of its own)."""
    a = LG.final_metrics({"label_set_quality": _quality(4.22)})
    b = LG.final_metrics({"label_set_quality": _quality(1.37)})
    assert set(a) == set(b) == {"label_sets.expected_k.example_f1", "label_sets.default.example_f1",
                                "label_sets.top_1.example_f1", "label_sets.threshold_0.5_min1.example_f1",
                                "label_sets.per_label.example_f1", "label_sets.expected_k.k"}
    assert a["label_sets.expected_k.k"] == 4.22 and b["label_sets.expected_k.k"] == 1.37
    tags = LG.final_tags({"label_set_quality": _quality(4.22), "method": "auto"})
    assert tags["label_sets.default_rule"] == "expected-k (k=4.22: top 4 per example)"
    assert tags["label_sets.expected_k.k"] == "4.22" and tags["method"] == "auto"


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


def _observed_bundle(path, seed, n_labels):
    """An observed-only bundle (k is estimated from its observations: it differs by data)."""
    import numpy as np

    from spmlkit.data import Split, prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(160, 4))
    Y = (X[:, :1] + rng.normal(size=(160, n_labels))) > 0.3
    Y[~Y.any(1), 0] = True
    Z = np.zeros(Y.shape, np.int8)
    for i, row in enumerate(Y):
        Z[i, rng.choice(np.flatnonzero(row))] = 1
    ds = MultiLabelDataset(f"obs{seed}", [f"l{j}" for j in range(n_labels)], {"train": Split(X=X, Z=Z)})
    return prepare_bundle(ds, path, log=lambda m: None)


def test_runs_on_different_data_compare_in_search_runs(tmp_path, monkeypatch, capsys):
    """Issue 37: two runs on different data (different estimated k) in one MLflow store have
    the same metric columns in mlflow.search_runs() (which needs pandas: the [mlflow] extra
    installs it), k is a tag; without MLFLOW_TRACKING_URI the store is <run>/mlruns, not ./mlruns."""
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("pandas")
    from spmlkit.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    a, b = _observed_bundle(tmp_path / "a", 0, 4), _observed_bundle(tmp_path / "b", 1, 6)
    assert main(["train", str(a.path), "-m", "an", "--epochs", "2", "-o", "ra", "--log-to", "mlflow"]) == 0
    assert (tmp_path / "ra" / "mlruns").is_dir() and not (tmp_path / "mlruns").exists()
    store = (tmp_path / "shared-store").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    for bundle, out in ((a, "sa"), (b, "sb")):
        assert main(["train", str(bundle.path), "-m", "an", "--epochs", "2", "-o", out, "--log-to", "mlflow"]) == 0
    assert not (tmp_path / "sa" / "mlruns").exists()  # the named store, not the run folder
    capsys.readouterr()
    mlflow.set_tracking_uri(store)
    df = mlflow.search_runs(experiment_names=["spmlkit"])
    assert len(df) == 2
    col = "metrics.final.label_sets.expected_k.observed_recall"
    assert col in df.columns and df[col].notna().all()
    ks = df["tags.label_sets.expected_k.k"].tolist()
    assert len(set(ks)) == 2  # different data, different k: in a tag, not in the metric names
    assert not [c for c in df.columns if c.startswith("metrics.") and "k=" in c]


def test_a_bench_is_a_parent_run_with_summary_metrics_and_children(tmp_path, monkeypatch, toy_bundle):
    """Issue 37: the bench's run has summary metrics (final.test_map/<dataset>/<method>), each group
    is its child, no internal file (.spml-output.json) is an artifact, and the store is
    <bench>/mlruns unless MLFLOW_TRACKING_URI names one."""
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    from spmlkit.cli import main
    from spmlkit.io import read_json

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = tmp_path / "bench"
    assert main(["bench", "--datasets", str(toy_bundle.path), "--methods", "an", "iu", "--lrs", "0.01", "0.001",
                 "--batch-sizes", "8", "--seeds", "2", "--epochs", "2", "--no-figures", "-o", str(out),
                 "--log-to", "mlflow"]) == 0
    assert (out / "mlruns").is_dir() and not (tmp_path / "mlruns").exists()
    client = MlflowClient((out / "mlruns").as_uri())
    exp = client.get_experiment_by_name("spmlkit")
    runs = client.search_runs([exp.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("spmlkit.kind") == "bench"]
    children = [r for r in runs if r.data.tags.get("spmlkit.kind") == "bench group"]
    assert len(children) == 2 and all(c.data.tags["mlflow.parentRunId"] == parent.info.run_id for c in children)
    name = toy_bundle.name
    from spmlkit.experiments.tables import select_cells

    sel = {k[1]: v for k, v in select_cells(read_json(out / "runs.json.gz")["runs"]).items()}
    for m in ("an", "iu"):
        assert parent.data.metrics[f"final.test_map/{name}/{m}"] == pytest.approx(sel[m].test_mean)
        assert f"final.test_map_std/{name}/{m}" in parent.data.metrics
    for c in children:
        assert {"final.selected_lr", "final.test_map", "final.val_score"} <= set(c.data.metrics)
    arts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert "table.md" in arts and "runs.json.gz" in arts and not [a for a in arts if a.startswith(".")]


def test_rule_keys_follow_the_reports_rule_descriptions():
    """The stable keys are read from report.describe_rule's wording: if it changes, this fails."""
    from spmlkit.practitioner.report import describe_rule

    cases = {("expected_k", (("k", 4.22),)): "expected_k", ("expected_k", (("k", 1.37),)): "expected_k",
             ("top_k", (("k", 1),)): "top_1", ("threshold", (("threshold", 0.5),)): "threshold_0.5",
             ("threshold", (("threshold", 0.5), ("min_labels", 1))): "threshold_0.5_min1",
             ("per_label", (("thresholds", (0.5,)),)): "per_label"}
    for (rule, opts), key in cases.items():
        assert LG.rule_key(describe_rule(rule, dict(opts))) == key, (rule, opts)
