"""``auto`` on presence-only data (a bundle with background rows): its members are the
background losses and it chooses by ``target_group_auc``; each species is scored on its
own surveyed test rows (the label mask)."""
import pytest

from spmlkit.config import TrainConfig
from spmlkit.errors import ConfigError, SpmlError
from spmlkit.methods.base import build_method
from spmlkit.training.run import train


def test_auto_trains_the_presence_members_by_target_group_auc(presence_bundle):
    cfg = TrainConfig(method="auto", epochs=2, batch_size=32, threads=1)
    (r,) = train(presence_bundle, cfg, lrs=[1e-3], seeds=[0])
    assert r.selection == "target_group_auc"
    assert [m["method"] for m in r.notes["members"]] == ["full-weighted", "an-full"]
    assert all("val_target_group_auc" in m for m in r.notes["members"])
    assert 0 <= r.val_score <= 100
    assert r.test_auc is not None and 0 <= r.test_auc["mean"] <= 1  # the label mask reached the recipe's scores
    masked_label = r.test_auc["per_label"][-1]  # surveyed on half of the test rows only
    assert masked_label is not None


def test_auto_keeps_its_general_members_on_ordinary_data(toy_bundle):
    (r,) = train(toy_bundle, TrainConfig(method="auto", epochs=1, batch_size=32, threads=1), lrs=[1e-3], seeds=[0])
    assert r.selection == "observed_map"
    assert [m["method"] for m in r.notes["members"]] == ["l1r", "em-apl", "wan", "ll-ct"]
    assert getattr(r, "test_auc", None) is None


def test_presence_members_are_checked_and_other_criteria_refused(presence_bundle):
    assert build_method("auto", presence_members="an-full").presence_candidates == ("an-full",)
    with pytest.raises(SpmlError, match="full-weightd"):
        build_method("auto", presence_members="full-weightd")
    with pytest.raises(ConfigError, match="selects with target_group_auc only"):
        train(presence_bundle, TrainConfig(method="auto", epochs=1, selection="background_auc", threads=1),
              lrs=[1e-3], seeds=[0])
