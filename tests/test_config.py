"""The run configuration (spmlkit.config.TrainConfig): frozen, typed, checked when made,
and read from YAML/JSON with one-line errors."""
import dataclasses

import pytest

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError


def test_defaults_are_coles_linear_setting():
    cfg = TrainConfig()
    assert (cfg.method, cfg.lr, cfg.batch_size, cfg.epochs, cfg.patience) == ("an", 1e-3, 8, 25, None)
    assert (cfg.setting, cfg.head, cfg.image_size, cfg.device, cfg.precision) == ("linear", "linear", 448, "auto", "32")


def test_frozen_hashable_and_params_normalised():
    a = TrainConfig(params={"gamma": 0.2, "alpha": 1})
    b = TrainConfig(params=[("alpha", 1), ("gamma", 0.2)])
    assert a.params == (("alpha", 1), ("gamma", 0.2)) and a == b and hash(a) == hash(b)
    assert a.param_dict == {"alpha": 1, "gamma": 0.2}
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.lr = 0.1
    c = a.replace(lr=0.01, regime="1p-frequent")
    assert c.lr == 0.01 and a.lr == 1e-3 and c.regime == "single_positive_most_frequent"  # short regime names resolve


@pytest.mark.parametrize("field, value, message", [
    ("lr", float("nan"), "lr must be a finite number, got nan"),
    ("seed", -1, "seed (--seed) must be a whole number in [0, 4294967295], got -1"),
    ("epochs", "3", "epochs must be a whole number, got '3'"),  # e.g. a quoted number in a YAML file
    ("standardize", 1, "standardize must be true or false or None, got 1"),
    ("selection", "best", "selection must be one of "),
    ("head", "transformer", "head must be one of "),  # (the registered heads, then "or decoder ...")
    ("hide_prob", 1.5, "hide_prob must be in [0, 1], got 1.5"),
    ("ema_decay", 1.0, "ema_decay must be in [0, 1) or None, got 1.0"),
    ("precision", "fp8", "precision must be one of "),
])
def test_bad_values_are_one_clear_error(field, value, message):
    with pytest.raises(ConfigError) as e:
        TrainConfig(**{field: value})
    assert str(e.value).startswith(message)


def test_decoder_head_needs_fine_tuning():
    with pytest.raises(ConfigError, match="use it with setting 'finetune'"):
        TrainConfig(head="decoder")
    assert TrainConfig(head="decoder", setting="finetune").head == "decoder"


def test_members():
    assert TrainConfig(lr=0.01, seed=3).members() == ([0.01], [3])
    assert TrainConfig(seed=3).members(lrs=[0.1, 0.01]) == ([0.1, 0.01], [3, 3])
    assert TrainConfig().members(lrs=[0.1, 0.01], seeds=[4, 5]) == ([0.1, 0.01], [4, 5])
    with pytest.raises(ConfigError, match="one seed per learning rate"):
        TrainConfig().members(lrs=[0.1, 0.01], seeds=[4])


def test_dict_and_file_round_trip(tmp_path):
    cfg = TrainConfig(method="wan", params={"gamma": 0.25}, epochs=3, patience=2)
    d = cfg.to_dict()
    assert d["params"] == {"gamma": 0.25} and TrainConfig.from_dict(d) == cfg
    f = tmp_path / "c.yaml"
    f.write_text("method: wan\nparams: {gamma: 0.25}\nepochs: 3\npatience: 2\n", encoding="utf-8")
    assert TrainConfig.from_file(f) == cfg
    (tmp_path / "empty.yaml").write_text("")
    assert TrainConfig.from_file(tmp_path / "empty.yaml") == TrainConfig()


def test_file_errors_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) \['epoch'\]; expected some of \["):
        TrainConfig.from_dict({"epoch": 3})
    with pytest.raises(ConfigError, match=r"config file .*missing.yaml not found"):
        TrainConfig.from_file(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: an\nepochs: [3\n")
    with pytest.raises(ConfigError) as e:
        TrainConfig.from_file(bad)
    assert str(e.value).startswith(f"{bad}, line ") and "invalid YAML/JSON" in str(e.value)
    assert "\n" not in str(e.value)
    (tmp_path / "list.yaml").write_text("- an\n- wan\n")
    with pytest.raises(ConfigError, match="expected a mapping of options"):
        TrainConfig.from_file(tmp_path / "list.yaml")


def test_param_values_are_parsed_as_numbers_booleans_or_none():
    from spmlkit.config import parse_param_value, parse_params

    assert [parse_param_value(t) for t in ("3", "0.5", "1e-3", "True", "none", "NULL", "float16")] == [
        3, 0.5, 1e-3, True, None, None, "float16"]
    assert parse_params(["k=2", "k=3", "storage=dense"]) == {"k": 3, "storage": "dense"}  # a later name wins
    with pytest.raises(ConfigError, match="--param 'gamma': expected name=value"):
        parse_params(["gamma"])
