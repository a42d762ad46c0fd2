"""Saved models: one folder, spmlkit.load, version errors, corruption, the image-input
extension point; checkpoints that survive a kill between their two files."""
import json

import numpy as np
import pytest
import torch

import spmlkit
from spmlkit.cli import main
from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError, CorruptFileError, SpmlError
from spmlkit.practitioner.saved import MODEL_FORMAT, SavedModel, load_model, save_model
from spmlkit.training import checkpoint as ckmod
from spmlkit.training.checkpoint import load_checkpoint, save_checkpoint
from spmlkit.practitioner.run_folder import run_training


@pytest.fixture
def run_dir(toy_bundle, tmp_path):
    run_training(toy_bundle, TrainConfig(method="an", epochs=2, lr=0.01), tmp_path / "r")
    return tmp_path / "r"


def test_one_folder_with_everything(run_dir, toy_bundle):
    meta = json.loads((run_dir / "model" / "model.json").read_text())
    assert meta["format"] == MODEL_FORMAT and meta["label_names"] == toy_bundle.label_names
    assert meta["method"] == "an" and meta["config"]["lr"] == 0.01 and meta["input"] == {"kind": "features"}
    # the toy bundle's validation split has full labels: thresholds tuned, the rule chosen on it
    assert len(meta["label_sets"]["thresholds"]) == toy_bundle.n_labels and meta["label_sets"]["k"] > 0
    assert len(meta["label_sets"]["choice"]) == 5
    m = spmlkit.load(run_dir)  # a run folder or its model/ folder
    assert m.mean is not None and m.mean.shape == (6,)  # standardisation is part of the model
    X = toy_bundle.features("test")
    P = m.predict_proba(X)
    assert P.shape == (len(X), 5)
    assert np.array_equal(m.predict(X, rule="per_label"), P >= np.array(m.label_sets["thresholds"]))
    assert m.predict(X, rule="top_k", k=2).sum(1).tolist() == [2] * len(X)


def test_future_format_gives_a_clear_error(run_dir):
    p = run_dir / "model" / "model.json"
    meta = json.loads(p.read_text())
    meta["format"] = MODEL_FORMAT + 1
    meta["spmlkit_version"] = "9.0"
    p.write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match=rf"model format {MODEL_FORMAT + 1} is not supported by spmlkit .* "
                                          rf"\(expects format {MODEL_FORMAT}\).*\(9.0\)"):
        spmlkit.load(run_dir)


class _Payload:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))  # creates the file if ever unpickled


def test_corrupted_or_unsafe_weights_are_reported_not_loaded(run_dir, tmp_path, capsys):
    w = run_dir / "model" / "weights.pt"
    data = bytearray(w.read_bytes())
    data[len(data) // 2] ^= 0xFF
    w.write_bytes(bytes(data))
    with pytest.raises(CorruptFileError, match="checksum mismatch"):
        spmlkit.load(run_dir)
    np.save(tmp_path / "x.npy", np.zeros((1, 6), np.float32))
    code = main(["predict", str(run_dir), str(tmp_path / "x.npy"), "-o", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "checksum mismatch" in err and not (tmp_path / "p.csv").exists()
    # a file with a valid checksum but holding arbitrary objects is refused (tensors only)
    import hashlib

    import torch

    torch.save({"state": {}, "mean": _Payload(str(tmp_path / "PWNED")), "std": None}, w)
    (w.parent / "weights.pt.sha256").write_text(hashlib.sha256(w.read_bytes()).hexdigest() + "\n")
    with pytest.raises(CorruptFileError, match="refused to load"):
        load_model(run_dir / "model")
    assert not (tmp_path / "PWNED").exists()
    (run_dir / "model" / "model.json").unlink()
    with pytest.raises(SpmlError, match="not a saved spmlkit model"):
        load_model(run_dir / "model")


def test_image_input_extension_point(tmp_path):
    """A head on backbone features records its input; a fine-tuned backbone's weights
    travel in the same folder and reach the extractor as an absolute path."""
    from spmlkit.practitioner.inference import image_features

    gen = [torch.Generator().manual_seed(0)]
    from spmlkit.models.heads import build_head

    head = build_head("linear", 4, 2, gen)
    state = {k: v[0].detach() for k, v in head.state_dict().items()}
    m = SavedModel(label_names=["a", "b"], head="linear", hidden=512, n_features=4, state=state,
                   input={"kind": "images", "backbone": "net", "image_size": 32, "feature_set": "net-32",
                          "backbone_weights": "backbone.pt", "extractor_options": {"pooling": "avg"}})
    save_model(m, tmp_path / "m")
    save_checkpoint({"w": torch.zeros(1)}, tmp_path / "m" / "backbone.pt")
    back = load_model(tmp_path / "m")
    assert back.input == m.input
    seen = {}

    def extractor(paths, **kw):
        seen.update(kw)
        return np.ones((len(paths), 4), np.float32)

    X = image_features(back, ["a.jpg", "b.jpg"], extractor=extractor, batch_size=7)
    assert X.shape == (2, 4)
    assert seen == {"backbone": "net", "image_size": 32, "pooling": "avg", "batch_size": 7,
                    "weights": str(tmp_path / "m" / "backbone.pt")}
    resnet = SavedModel(label_names=["a", "b"], head="linear", hidden=512, n_features=4, state=state,
                        input={"kind": "images", "backbone": "resnet50", "image_size": 448,
                               "weights": "/models/resnet50.pth"})  # as copied from the cache's meta.json
    seen.clear()
    image_features(resnet, ["a.jpg"], extractor=extractor)
    assert seen == {"backbone": "resnet50", "image_size": 448, "weights": "/models/resnet50.pth"}
    features_model = SavedModel(label_names=["a"], head="linear", hidden=1, n_features=4, state=state)
    with pytest.raises(ConfigError, match="trained on feature vectors"):
        image_features(features_model, ["a.jpg"], extractor=extractor)


def test_checkpoint_survives_a_kill_between_its_two_files(tmp_path, monkeypatch):
    from spmlkit import ownership

    tmp_path = ownership.claim(tmp_path / "run", "run")  # (spmlkit writes only into folders it made)
    p = tmp_path / "last.pt"
    save_checkpoint({"epoch": 1}, p)
    real = ckmod.write_text
    calls = []

    def dies_on_final_sidecar(path, text):  # killed after the rename, before the sidecar's phase 2
        calls.append(text)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(path, text)

    monkeypatch.setattr(ckmod, "write_text", dies_on_final_sidecar)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint({"epoch": 2}, p)
    monkeypatch.setattr(ckmod, "write_text", real)
    assert load_checkpoint(p)["epoch"] == 2  # the new file is accepted (listed in phase 1)
    save_checkpoint({"epoch": 3}, p)
    assert len((tmp_path / "last.pt.sha256").read_text().split()) == 1  # back to one digest

    import spmlkit.ownership as iomod

    def dies_before_rename(path, data):  # killed after phase 1, before the checkpoint is renamed
        raise KeyboardInterrupt

    monkeypatch.setattr(iomod, "write_bytes", dies_before_rename)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint({"epoch": 4}, p)
    monkeypatch.undo()
    assert load_checkpoint(p)["epoch"] == 3  # the old file is still accepted
    p.write_bytes(p.read_bytes()[:-5])  # truncated
    with pytest.raises(CorruptFileError, match="checksum mismatch"):
        load_checkpoint(p)


def test_an_edited_model_json_cannot_claim_members_or_nan_thresholds(run_dir):
    p = run_dir / "model" / "model.json"
    good = p.read_text()
    meta = json.loads(good)
    meta["members"] = 10 ** 9
    p.write_text(json.dumps(meta))
    with pytest.raises(CorruptFileError, match="members is 1,000,000,000 but the weights do not hold"):
        spmlkit.load(run_dir)
    meta = json.loads(good)
    meta["label_sets"]["thresholds"][0] = float("nan")
    p.write_text(json.dumps(meta))  # (json writes NaN, and reads it back as a float)
    with pytest.raises(CorruptFileError, match="label_sets holds a NaN or infinite number"):
        spmlkit.load(run_dir)
    p.write_text(good)
    assert spmlkit.load(run_dir).members == 1
