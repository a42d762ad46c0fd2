"""Command logic below the CLI (issue 26, part 3): each function a command now calls,
tested directly, without argparse.  The commands' own output is covered by test_cli.py and
the other command tests; here the library functions are held to what the commands print."""
from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError, DataFormatError, SpmlError


# ------------------------------------------------------------------ spml datasets
@pytest.fixture
def small_registry(monkeypatch):
    """A dataset registry of one built-in set, one data-root set and one that fails to load."""
    from spmlkit.data import registry as R
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.registry import Registry

    def builtin(data_root=None):
        Y = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=bool)
        return MultiLabelDataset("tiny", ["a", "b", "c"], {"train": Split(X=np.zeros((4, 5)), Y=Y),
                                                           "test": Split(X=np.zeros((2, 5)), Y=Y[:2])},
                                 notes=["official split", "dropped 1 row without labels"])

    def broken(data_root=None):
        raise ConfigError("dataset 'gone' is not built in; looked for gone/ under " + "x" * 80)

    reg = Registry("dataset", package=None)
    reg.add("tiny", R.DatasetSpec("tiny", builtin, "features", True, "a tiny set"), owner=builtin)
    reg.add("gone", R.DatasetSpec("gone", broken, "images", False, "a data-root set"), owner=broken)
    monkeypatch.setattr(R, "DATASETS", reg)
    monkeypatch.delenv("SPMLKIT_DATA", raising=False)
    return R


def _mulan(root: Path, name: str) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / f"{name}.xml").write_text('<labels xmlns="http://mulan.sourceforge.net/labels"><label name="A"/>'
                                   '<label name="B"/></labels>')
    (d / f"{name}.arff").write_text(f"@relation {name}\n@attribute x numeric\n@attribute A {{0,1}}\n"
                                    "@attribute B {0,1}\n@data\n" + "".join(f"{i},{i % 2},1\n" for i in range(6)))


def test_dataset_rows_without_a_data_root(small_registry):
    rows = small_registry.dataset_rows(None, stats=True)
    assert [(r.name, r.where) for r in rows] == [("tiny", "built-in"), ("gone", "needs --data-root")]
    tiny, gone = rows
    assert tiny.sizes == {"train": 4, "test": 2} and tiny.n_labels == 3 and tiny.n_features == 5
    assert tiny.cardinality == pytest.approx(7 / 4)  # positives per training example (Cole Eq. A1)
    assert tiny.notes == ("dropped 1 row without labels",) and tiny.description == "a tiny set"
    assert gone.sizes is None and gone.description == "a data-root set"


def test_dataset_rows_with_a_data_root_finds_mulan_folders_and_reports_failures(small_registry, tmp_path):
    _mulan(tmp_path, "enron")
    rows = {r.name: r for r in small_registry.dataset_rows(tmp_path, stats=True)}
    assert list(rows) == ["tiny", "enron", "gone"]  # built-in first, then by name
    assert rows["enron"].where == "data root" and rows["enron"].sizes == {"train": 6}
    assert rows["enron"].n_labels == 2 and rows["enron"].cardinality == pytest.approx(1.5)
    assert rows["gone"].where == "not found" and rows["gone"].sizes is None
    assert rows["gone"].description.startswith("dataset 'gone' is not built in")
    no_stats = small_registry.dataset_rows(tmp_path, stats=False)
    assert [(r.name, r.where, r.sizes) for r in no_stats] == [("tiny", "built-in", None), ("enron", "data root", None),
                                                              ("gone", "data root", None)]


def test_datasets_command_prints_the_rows(small_registry, tmp_path, capsys):
    from spmlkit.cli import main

    assert main(["datasets", "--data-root", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "kind", "where", "splits", "labels", "features", "description"]
    assert lines[1].split()[:7] == ["tiny", "features", "built-in", "train", "4/test", "2", "3"]
    assert lines[1].endswith("train cardinality 1.75; a tiny set; dropped 1 row without labels")
    why = ("dataset 'gone' is not built in; looked for gone/ under " + "x" * 80)[:60]  # cut at 60 characters
    assert lines[2].startswith("gone ") and lines[2].endswith("  " + why)


# ------------------------------------------------------------------ spml prepare
def _observed_dataset(names_per_row, labels):
    from spmlkit.data.dataset import MultiLabelDataset, Split

    Z = np.zeros((len(names_per_row), len(labels)), dtype=np.int8)
    for i, n in enumerate(names_per_row):
        Z[i, labels.index(n)] = 1
    return MultiLabelDataset("own", labels, {"train": Split(X=np.zeros((len(Z), 2)), Z=Z)})


def test_single_use_labels():
    from spmlkit.data.dataset import MultiLabelDataset, Split, single_use_labels

    labels = ["cat", "dog", "dgo", "sofa", "sfoa"]
    ds = _observed_dataset(["cat", "cat", "dog", "dog", "dgo", "sofa", "sofa", "sfoa"], labels)
    assert single_use_labels(ds) == ["dgo", "sfoa"]
    assert single_use_labels(_observed_dataset(["cat", "dog"], ["cat", "dog"])) == []  # all once: none stands out
    # full labels count too, over every split
    Y = np.array([[1, 0, 1], [1, 1, 0]], dtype=bool)
    ds = MultiLabelDataset("t", ["a", "b", "c"], {"train": Split(X=np.zeros((2, 1)), Y=Y),
                                                  "test": Split(X=np.zeros((1, 1)), Y=[[0, 0, 1]])})
    assert single_use_labels(ds) == ["b"]


def test_check_input_paths(tmp_path):
    from spmlkit.io import check_input_paths

    f = tmp_path / "data.csv"
    f.write_text("x\n")
    check_input_paths([None, f, tmp_path, tmp_path / "not-yet"])  # files, folders, absent paths: fine
    with pytest.raises(ConfigError, match=r"^/dev/null: not a regular file or folder \(a device"):
        check_input_paths([f, "/dev/null"])


# ------------------------------------------------------------------ spml train / evaluate / predict
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A model trained on a toy bundle with full labels, and one on observed labels only."""
    from conftest import make_toy_dataset

    from spmlkit.data import prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.practitioner.run import run_training
    from spmlkit.practitioner.saved import load_model

    tmp = tmp_path_factory.mktemp("below")
    full = prepare_bundle(make_toy_dataset(), tmp / "full", log=lambda m: None)
    run_training(full, TrainConfig(method="an", epochs=2, threads=1), tmp / "run-full", log=lambda m: None)
    ds = make_toy_dataset(seed=1)
    rng = np.random.default_rng(0)
    splits = {}
    for name, s in ds.splits.items():  # one observed positive per row, no full labels
        Z = np.zeros(s.Y.shape, dtype=np.int8)
        Z[np.arange(len(Z)), [rng.choice(np.flatnonzero(y)) for y in s.Y]] = 1
        splits[name] = Split(X=s.X, Z=Z)
    own = prepare_bundle(MultiLabelDataset("own", ds.label_names, splits), tmp / "own", log=lambda m: None)
    run_training(own, TrainConfig(method="an", epochs=2, threads=1), tmp / "run-own", log=lambda m: None)
    return types.SimpleNamespace(full=full, own=own, model_full=load_model(tmp / "run-full"),
                                 model_own=load_model(tmp / "run-own"))


def test_evaluate_model_with_full_labels(trained):
    from spmlkit.metrics import mean_average_precision, roc_auc
    from spmlkit.practitioner.evaluation import evaluate_model

    m, b = trained.model_full, trained.full
    ev = evaluate_model(m, b, "test")
    scores = m.decision_function(b.features("test"))
    assert ev["split"] == "test" and ev["map"] == pytest.approx(mean_average_precision(b.labels("test"), scores).map)
    assert list(ev["ap"]) == m.label_names and list(ev["auc"]) == m.label_names
    auc = roc_auc(b.labels("test"), scores)
    assert [ev["auc"][n] for n in m.label_names] == pytest.approx(list(auc))
    assert ev["auc_mean"] == pytest.approx(float(np.mean(auc))) and ev["masked"] is False
    assert "labels" not in ev and ev["empty_classes"] == "exclude"
    val = evaluate_model(m, b, "val", empty="zero")
    assert val["split"] == "val" and val["empty_classes"] == "zero"


def test_evaluate_model_on_observed_labels_is_never_a_full_label_map(trained):
    from spmlkit.metrics import observed_positive_map
    from spmlkit.practitioner.evaluation import evaluate_model

    m, b = trained.model_own, trained.own
    ev = evaluate_model(m, b, "test")
    assert ev["labels"] == "observed" and "map" not in ev and ev["split"] == "test"
    scores = m.decision_function(b.features("test"))
    assert ev["observed_map"] == pytest.approx(observed_positive_map(b.observations("test"), scores))
    assert ev["label_sets"]["labels"] == "observed"


def test_evaluate_model_refuses_other_labels(trained, tmp_path):
    from spmlkit.data import prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.practitioner.evaluation import evaluate_model

    other = prepare_bundle(MultiLabelDataset("o", ["x", "y"], {"train": Split(X=np.zeros((10, 6)), Y=np.eye(2)[
        np.arange(10) % 2])}), tmp_path / "o", log=lambda m: None)
    with pytest.raises(SpmlError, match=r"^the model's labels differ from the bundle's \(5 vs 2\)$"):
        evaluate_model(trained.model_full, other, "train")


def test_predicted_label_sets(trained):
    from spmlkit.practitioner.inference import predicted_label_sets

    m = trained.model_full
    P = m.predict_proba(trained.full.features("test"))
    S, used, warning = predicted_label_sets(m, P)
    assert np.array_equal(S, m.label_sets_from_proba(P)) and used == m.label_sets
    S, used, _ = predicted_label_sets(m, P, rule="top_k", k=2)
    assert (S.sum(1) == 2).all() and used["rule"] == "top_k" and used["k"] == 2
    S, used, warning = predicted_label_sets(m, P, rule="threshold", threshold=1.0)
    assert not S.any() and used["threshold"] == 1.0 and "empty" in warning  # every set empty: said


def test_default_method_and_run_folder(trained, tmp_path):
    from spmlkit.data import prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.practitioner.run import default_method, default_run_folder

    assert default_method(TrainConfig(), trained.full) == ("auto", None)
    name, why = default_method(TrainConfig(setting="finetune"), trained.full)
    assert name == "an" and why.startswith("no -m given: fine-tuning trains 'an'")
    no_val = prepare_bundle(MultiLabelDataset("n", ["x", "y"], {"train": Split(X=np.zeros((10, 2)), Y=np.eye(2)[
        np.arange(10) % 2])}), tmp_path / "n", val_fraction=0.0, log=lambda m: None)
    name, why = default_method(TrainConfig(), no_val)
    assert name == "an" and "no validation split" in why
    assert default_run_folder(tmp_path / "my-data", TrainConfig(method="an", lr=1e-2, seed=3)) == \
        Path("runs") / "my-data-an-lr0.01-s3"


def test_progress_plan():
    from spmlkit.methods import build_method
    from spmlkit.training.run import planned_epochs, progress_plan

    cfg = TrainConfig(method="an", epochs=7)
    assert progress_plan(cfg, build_method("an"), 100) == (7, 1, 7, "epoch")
    auto = build_method("auto")
    plan = progress_plan(TrainConfig(method="auto", epochs=3), auto, 100)
    assert (plan.per_member, plan.total) == (3, 3 * len(auto.candidates)) == (3, planned_epochs(
        TrainConfig(method="auto", epochs=3), auto))
    ft = progress_plan(TrainConfig(method="an", setting="finetune", finetune_epochs=4, batch_size=8), build_method("an"),
                       100)
    assert ft == (4, 13, 52, "step")  # ceil(100 / 8) optimizer steps per epoch


# ------------------------------------------------------------------ spml estimate-k
def test_training_labels(trained):
    from spmlkit.practitioner.estimate_k import training_labels

    Y, name = training_labels(str(trained.full.path))
    assert np.array_equal(Y, trained.full.labels("train"))
    assert name == f"toy (bundle {trained.full.path}, training split)"
    Y, name = training_labels("yeast")
    assert Y.shape == (1500, 14) and name == "yeast (training split)"
    with pytest.raises(SpmlError, match="has no full training labels; k needs fully labelled examples"):
        training_labels(str(trained.own.path))


# ------------------------------------------------------------------ spml bench
@pytest.mark.parametrize("options, words", [
    (dict(shard="1/2", jobs=2), "--shard 1/2 with --jobs: a shard is one process"),
    (dict(shard="1/2", executor="ray"), "--shard 1/2 with --executor ray"),
    (dict(shard="1/2", table_only=True), "--shard 1/2 with --table-only"),
    (dict(shard="3/2"), "--shard 3/2: K must be between 1 and N"),
    (dict(address="h:1"), "--address is the Ray cluster of --executor ray"),
    (dict(table_only=True, jobs=2), "--table-only trains nothing"),
    (dict(table_only=True, executor="ray"), "--table-only trains nothing"),
    (dict(executor="ray", address="h:1", jobs=2), "--jobs with --executor ray sets the CPUs"),
    (dict(jobs=3, device="cuda"), "CUDA"),
])
def test_check_engine_options_refuses(options, words):
    from spmlkit.experiments.executors import check_engine_options

    with pytest.raises(SpmlError) as exc:
        check_engine_options(**options)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_check_engine_options_accepts_and_make_executor_chooses():
    from spmlkit.experiments.executors import RayExecutor, TableOnly, check_engine_options, make_executor

    for ok in (dict(), dict(shard="2/2"), dict(jobs=4, device="cpu"), dict(executor="ray", address="h:1"),
               dict(executor="ray", jobs=2), dict(table_only=True)):
        check_engine_options(**ok)
    assert make_executor() is None
    assert isinstance(make_executor(table_only=True), TableOnly)
    ray = make_executor(executor="ray", address="h:1", jobs=3, threads=2)
    assert isinstance(ray, RayExecutor) and (ray.address, ray.num_cpus, ray.threads) == ("h:1", 3, 2)
    assert ray.ray is None  # nothing imported before connect()
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        make_executor(executor="dask")


def test_bench_spec_params_and_device_options():
    from spmlkit.experiments.bench import BenchSpec, check_device_options, with_method_params

    spec = with_method_params(BenchSpec(datasets=["yeast"], methods=["an", "epr"]), ["epr:k=2", "k=3"])
    assert spec.params == {"epr": {"k": 3}}  # NAME=VALUE: every benchmarked method that has it
    default = with_method_params(BenchSpec(datasets=["yeast"]), ["storage=float16"])
    assert default.methods is None and set(default.params) == {"role"}  # the default rows with that parameter
    with pytest.raises(ConfigError, match="no benchmarked method has a hyper-parameter 'nope'"):
        with_method_params(BenchSpec(datasets=["yeast"], methods=["an"]), ["nope=1"])
    check_device_options({"device": "cpu", "head": "mlp"})  # other fields are not its business
    with pytest.raises(SpmlError, match="CUDA is not available"):
        check_device_options({"device": "cuda"})


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


# ------------------------------------------------------------------ one XML reader
def test_read_xml_words_missing_and_malformed_files(tmp_path):
    from spmlkit.data.formats.base import read_xml

    ok = tmp_path / "ok.xml"
    ok.write_text("<a><b/></a>")
    assert read_xml(ok, missing="x").tag == "a"
    with pytest.raises(DataFormatError, match=r"nope\.xml: the thing is missing$"):
        read_xml(tmp_path / "nope.xml", missing="the thing is missing")
    bad = tmp_path / "bad.xml"
    bad.write_text("<a>\n<b>\n</a>\n")
    with pytest.raises(DataFormatError, match=r"bad\.xml, line 3: invalid XML: mismatched tag") as exc:
        read_xml(bad, missing="x")
    assert exc.value.line == 3


def test_mulan_and_voc_readers_keep_their_messages(tmp_path):
    from spmlkit.data.formats import load_voc
    from spmlkit.data.formats.arff import read_label_xml

    with pytest.raises(DataFormatError, match=r"labels\.xml: label XML file not found$"):
        read_label_xml(tmp_path / "labels.xml")
    (tmp_path / "labels.xml").write_text("<labels>\n<label name='a'>\n</labels>")
    with pytest.raises(DataFormatError, match=r"labels\.xml, line 3: invalid XML"):
        read_label_xml(tmp_path / "labels.xml")
    main = tmp_path / "voc" / "VOC2012" / "ImageSets" / "Main"
    main.mkdir(parents=True)
    ann = tmp_path / "voc" / "VOC2012" / "Annotations"
    ann.mkdir()
    (ann / "a1.xml").write_text("<annotation><object><name>dog</name></object></annotation>")
    (main / "train.txt").write_text("a1\na2\n")
    with pytest.raises(DataFormatError, match=r"a2\.xml: annotation file listed in the split but missing$"):
        load_voc(tmp_path / "voc")
    (ann / "a2.xml").write_text("<annotation><object>\n</annotation>")
    with pytest.raises(DataFormatError, match=r"a2\.xml, line 2: invalid XML"):
        load_voc(tmp_path / "voc")
