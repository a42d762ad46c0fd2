"""model.json is checked without torch (spmlkit.practitioner.model_folder), so a command
taking a model answers a mistake in one line before importing torch."""
from __future__ import annotations

import json

import pytest

from spmlkit.errors import ConfigError, CorruptFileError, SpmlError
from spmlkit.practitioner.model_folder import MODEL_FORMAT, model_folder, read_model_description

GOOD = {"format": MODEL_FORMAT, "label_names": ["a", "b"], "head": "linear", "hidden": 8, "n_features": 3}


def write(folder, meta):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_a_run_folder_leads_to_its_model(tmp_path):
    write(tmp_path / "run" / "model", GOOD)
    assert model_folder(tmp_path / "run") == tmp_path / "run" / "model"
    path, meta = read_model_description(tmp_path / "run")
    assert path == tmp_path / "run" / "model" and meta["label_names"] == ["a", "b"]


@pytest.mark.parametrize("change, error, words", [
    ({"format": 99}, ConfigError, "model format 99 is not supported"),
    ({"head": 3}, CorruptFileError, "head"),
    ({"label_names": ["a", "a"]}, CorruptFileError, "listed twice"),
    ({"members": 2, "member_heads": ["linear", "mlp", "linear"]}, CorruptFileError, "member_heads"),
    ({"input": {"feature_names": ["x", "x"]}}, CorruptFileError, "feature_names"),
])
def test_a_damaged_description_is_one_line(tmp_path, change, error, words):
    write(tmp_path / "m", {**GOOD, **change})
    with pytest.raises(error, match=words) as info:
        read_model_description(tmp_path / "m")
    assert "\n" not in str(info.value)


def test_not_a_model(tmp_path):
    with pytest.raises(SpmlError, match="not found"):
        model_folder(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpmlError, match="no model.json"):
        model_folder(tmp_path / "empty")


def test_head_kinds_are_checked_against_the_registry_when_given(tmp_path):
    write(tmp_path / "m", {**GOOD, "members": 2, "member_heads": ["linear", "tree"]})
    read_model_description(tmp_path / "m")  # structure only
    with pytest.raises(CorruptFileError, match="member_heads"):
        read_model_description(tmp_path / "m", head_kinds={"linear", "mlp"})
