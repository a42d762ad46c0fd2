import shutil

import numpy as np
import pytest

from spmlkit.config import TrainConfig
from spmlkit.errors import DataFormatError
from spmlkit.features import extract_features
from spmlkit.training import train_linear

from tests.helpers.image_fixtures import tiny_digits_bundle

QUIET = dict(progress=False, log=lambda m: None)


def test_extract_then_linear(tmp_path):
    b = tiny_digits_bundle(tmp_path)
    name = extract_features(b, backbone="tiny-random", image_size=32, batch_size=8, **QUIET)
    assert name == "tiny-random-32" and b.feature_sets() == [name]
    for split in ("train", "val", "test"):
        X = b.features(split, name)
        assert isinstance(X, np.memmap) and X.shape == (b.size(split), 32) and X.dtype == np.float32
    (r,) = train_linear(b, TrainConfig(method="an", epochs=2, feature_set=name))
    assert r.test_map is not None and r.epochs_run == 2
    # a complete cache is skipped
    msgs = []
    assert extract_features(b, backbone="tiny-random", image_size=32, progress=False, log=msgs.append) == name
    assert "complete" in msgs[0]


def test_a_cache_an_older_spmlkit_wrote_is_sealed_when_reused(tmp_path):
    """A complete cache without checksum sidecars (an older spmlkit's) is unreadable until
    they are recorded: both ``spml features`` and ``ensure_features`` (what ``spml bench``
    calls when it reuses a bundle) record them, and say so."""
    from spmlkit.features.extract import ensure_features

    b = tiny_digits_bundle(tmp_path)
    name = extract_features(b, backbone="tiny-random", image_size=32, batch_size=8, **QUIET)
    folder = b.path / "features" / name
    for side in folder.glob("*.npy.sha256"):
        side.unlink()
    with pytest.raises(Exception, match="no checksum is recorded"):
        b.features("train", name)
    msgs = []
    assert ensure_features(b, backbone="tiny-random", weights=None, image_size=32, log=msgs.append) == name
    assert msgs == [f"feature set {name!r} of {b.path}: recorded the checksums of its 3 array(s), which an older "
                    "spmlkit wrote without them"]
    assert b.features("train", name).shape == (b.size("train"), 32)
    msgs.clear()
    assert ensure_features(b, backbone="tiny-random", weights=None, image_size=32, log=msgs.append) == name
    assert msgs == []  # nothing to record twice


def test_resume_after_interruption_equals_uninterrupted(tmp_path):
    full = tiny_digits_bundle(tmp_path, "full")
    part = tiny_digits_bundle(tmp_path, "part")
    extract_features(full, backbone="tiny-random", image_size=32, batch_size=5, **QUIET)
    # "killed" after 6 batches: train (24 rows = 5 batches) done, val half done
    assert extract_features(part, backbone="tiny-random", image_size=32, batch_size=5, max_batches=6, **QUIET) is None
    folder = part.path / "features" / "tiny-random-32"
    assert part.feature_sets() == []  # not visible until complete
    assert (folder / "train.npy").exists() and (folder / ".val.npy.partial").exists()
    assert (folder / ".val.progress.json").read_text().count('"rows": 5')
    extract_features(part, backbone="tiny-random", image_size=32, batch_size=5, **QUIET)
    assert part.feature_sets() == ["tiny-random-32"]
    assert not list(folder.glob(".*"))  # partial files and progress markers are gone
    for split in ("train", "val", "test"):
        np.testing.assert_array_equal(np.asarray(part.features(split)), np.asarray(full.features(split)))


def test_unreadable_image_names_the_file(tmp_path):
    b = tiny_digits_bundle(tmp_path)
    bad = b.paths("val")[3]
    shutil.copy(bad, tmp_path / "backup.png")
    with open(bad, "wb") as fh:
        fh.write(b"not a png")
    with pytest.raises(DataFormatError, match=bad.split("/")[-1]):
        extract_features(b, backbone="tiny-random", image_size=32, batch_size=4, **QUIET)
    shutil.copy(tmp_path / "backup.png", bad)  # fixed: the rerun resumes and completes
    assert extract_features(b, backbone="tiny-random", image_size=32, batch_size=4, **QUIET) == "tiny-random-32"


def test_other_weights_for_an_existing_cache_is_refused(tmp_path):
    from spmlkit.errors import ConfigError

    b = tiny_digits_bundle(tmp_path)
    extract_features(b, backbone="tiny-random", image_size=32, **QUIET)
    w = tmp_path / "w.pth"
    import torch

    torch.save({}, w)
    with pytest.raises(ConfigError, match="holds features of"):
        extract_features(b, backbone="tiny-random", image_size=32, weights=str(w), **QUIET)


@pytest.mark.slow
def test_unreadable_image_with_loader_workers(tmp_path):
    b = tiny_digits_bundle(tmp_path)
    bad = b.paths("train")[5]
    with open(bad, "wb") as fh:
        fh.write(b"\x89PNG broken")
    with pytest.raises(DataFormatError) as err:
        extract_features(b, backbone="tiny-random", image_size=32, batch_size=4, num_workers=1, **QUIET)
    assert str(err.value).startswith(bad + ": cannot read image")


@pytest.mark.slow
def test_shared_coco_images_through_the_cache(shared_data, tmp_path):
    from spmlkit.data import load_dataset, prepare_bundle

    ds = load_dataset("coco-tiny", data_root=shared_data)
    b = prepare_bundle(ds, tmp_path / "coco", log=lambda m: None)
    name = extract_features(b, backbone="tiny-random", image_size=32, batch_size=32, **QUIET)
    assert b.features("test", name).shape == (b.size("test"), 32) and b.n_labels == 80
    (r,) = train_linear(b, TrainConfig(method="an", epochs=1, feature_set=name))
    assert r.test_map is not None


def test_per_file_extraction_equals_the_cache_and_predicts_from_images(tmp_path):
    """``extract_image_features`` (used by ``spml predict`` on new images) computes exactly the
    features of the bundle cache, so a head trained on the cache predicts from image files."""
    from spmlkit.config import TrainConfig
    from spmlkit.features import extract_image_features
    from spmlkit.practitioner.saved import load_model
    from spmlkit.practitioner.run_folder import run_training

    b = tiny_digits_bundle(tmp_path)
    name = extract_features(b, backbone="tiny-random", image_size=32, batch_size=8, **QUIET)
    X = extract_image_features(b.paths("test"), backbone="tiny-random", image_size=32, batch_size=3)
    np.testing.assert_array_equal(X, np.asarray(b.features("test", name)))
    run_training(b, TrainConfig(method="an", epochs=2, feature_set=name), tmp_path / "run")
    model = load_model(tmp_path / "run")
    assert model.takes_images and model.input["backbone"] == "tiny-random"
    np.testing.assert_allclose(model.predict_proba(b.paths("test")), model.predict_proba(X), atol=1e-6)
