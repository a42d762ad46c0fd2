"""A run folder (spmlkit.practitioner.run_folder): what a run writes, how a finished run is
recognised (same configuration and bundle content, any device), and a schema-checked
result.json.  Killing and resuming runs is tested in tests/training/test_checkpoint.py."""
import json
from pathlib import Path

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.data import Bundle
from spmlkit.errors import ConfigError, CorruptFileError
from spmlkit.practitioner.run_folder import (bundle_identity, finished_run, input_description, is_run_folder,
                                      read_run_result, run_training)

CFG = TrainConfig(method="an", epochs=2, lr=1e-2, device="cpu")


def test_a_run_writes_its_folder_and_is_recognised_when_finished(toy_bundle, tmp_path):
    out = tmp_path / "run"
    result = run_training(toy_bundle, CFG, out)
    for name in ("config.json", "metrics.jsonl", "last.pt", "result.json", "report.md", "model/model.json"):
        assert (out / name).exists(), name
    assert is_run_folder(out) and not is_run_folder(tmp_path)
    rec = read_run_result(out)
    assert rec["method"] == "an" and rec["epochs_run"] == 2 and rec["test_map"] == pytest.approx(result.test_map)
    assert finished_run(toy_bundle, CFG, out) == rec
    assert finished_run(toy_bundle, CFG.replace(device="auto"), out) == rec  # the device is not the run's identity
    assert finished_run(toy_bundle, CFG.replace(lr=1e-3), out) is None
    again = Bundle(str(toy_bundle.path) + "/")  # another spelling of the same bundle
    assert bundle_identity(again) == bundle_identity(toy_bundle) and finished_run(again, CFG, out) == rec


def test_a_folder_of_the_users_is_refused(toy_bundle, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="refusing to write into .*: it holds files that are not a spmlkit run"):
        run_training(toy_bundle, CFG, mine)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_an_edited_result_is_one_line(toy_bundle, tmp_path):
    run_training(toy_bundle, CFG, tmp_path / "run")
    path = tmp_path / "run" / "result.json"
    rec = json.loads(path.read_text())
    path.write_text(json.dumps({**rec, "test_map": "high"}))
    with pytest.raises(CorruptFileError, match=r"result.json: 'test_map' is missing or not of the expected type"):
        read_run_result(tmp_path / "run")
    path.write_text("[1, 2]")
    with pytest.raises(CorruptFileError, match="expected a JSON object"):
        read_run_result(tmp_path / "run")


def test_input_description_names_the_feature_columns(toy_bundle):
    desc = input_description(toy_bundle, CFG)
    assert desc["kind"] == "features"
    names = toy_bundle.meta.get("feature_names")
    assert desc.get("feature_names") == (list(names) if isinstance(names, list) else None)


def test_default_method_and_run_folder(trained, tmp_path):
    from spmlkit.data import prepare_bundle
    from spmlkit.data.dataset import MultiLabelDataset, Split
    from spmlkit.practitioner.run_folder import default_method, default_run_folder

    assert default_method(TrainConfig(), trained.full) == ("auto", None)
    name, why = default_method(TrainConfig(setting="finetune"), trained.full)
    assert name == "an" and why.startswith("no -m given: fine-tuning trains 'an'")
    no_val = prepare_bundle(MultiLabelDataset("n", ["x", "y"], {"train": Split(X=np.zeros((10, 2)), Y=np.eye(2)[
        np.arange(10) % 2])}), tmp_path / "n", val_fraction=0.0, log=lambda m: None)
    name, why = default_method(TrainConfig(), no_val)
    assert name == "an" and "no validation split" in why
    assert default_run_folder(tmp_path / "my-data", TrainConfig(method="an", lr=1e-2, seed=3)) == \
        Path("runs") / "my-data-an-lr0.01-s3"
