"""Presence-only methods (spmlkit.methods.presence_only, issue 24): SINR's losses (Cole et
al. 2023) and Zbinden et al.'s full-weighted loss, with their components."""
import pytest
import torch

from spmlkit.losses import get_loss
from spmlkit.methods import METHODS, build_method
from spmlkit.methods.presence_only import LabelDraw, LabelFrequency
from tests.helpers.factories import batch_of, train_context

NAMES = ["an-full", "an-full-me", "an-slds", "an-slds-me", "an-ssdl", "an-ssdl-me", "full-weighted"]


def test_registered_for_the_linear_setting_outside_the_default_bench():
    for name in NAMES:
        spec = METHODS[name]
        assert spec.setting == "linear" and not spec.in_default_bench, name
    assert METHODS["an-full"].hyperparameters == {"pos_weight": 2048.0}  # SINR's λ
    assert METHODS["full-weighted"].hyperparameters == {"lambda1": 1.0, "lambda2": 0.8}
    background = {n for n in NAMES if build_method(n).uses_background}
    assert background == {"an-ssdl", "an-ssdl-me", "an-full", "an-full-me", "full-weighted"}


def test_label_frequency_counts_observed_positives_of_labelled_rows_only():
    Z = torch.tensor([[1, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0]], dtype=torch.int8)  # 2 background rows
    c = LabelFrequency()
    c.setup(train_context(Z))
    assert c.frequency.tolist() == pytest.approx([2 / 3, 1 / 3, 0.0])
    logits = torch.zeros(2, 4, 3)
    assert c.batch_inputs(None, logits)["label_frequency"].shape == (2, 4, 3)


def test_label_draws_are_per_member_streams_seeded_by_the_member():
    Z = torch.tensor([[1, 0, 0], [0, 1, 0]], dtype=torch.int8)
    pair, alone = LabelDraw(), LabelDraw()
    pair.setup(train_context(Z, G=2, seeds=(3, 7)))
    alone.setup(train_context(Z, seeds=(7,)))
    drawn = pair.batch_inputs(None, torch.zeros(2, 2, 3))["label_draw"]
    assert drawn.shape == (2, 2, 3) and ((drawn >= 0) & (drawn < 1)).all()
    # member 1 of the pair draws what a run of seed 7 alone draws
    assert torch.equal(drawn[1], alone.batch_inputs(None, torch.zeros(1, 2, 3))["label_draw"][0])
    state = pair.state_dict()
    again = pair.batch_inputs(None, torch.zeros(2, 2, 3))["label_draw"]
    pair.load_state_dict(state)
    assert torch.equal(pair.batch_inputs(None, torch.zeros(2, 2, 3))["label_draw"], again)  # resumes its streams


def test_an_slds_loss_is_the_registered_loss_with_the_components_draw():
    Z = torch.tensor([[1, 0, 0], [0, 0, 1]], dtype=torch.int8)
    m = build_method("an-slds")
    m.setup(train_context(Z, seeds=(0,)))
    logits = torch.tensor([[[2.0, -1.0, 0.5], [0.0, 1.0, -0.5]]])
    draw = LabelDraw()
    draw.setup(train_context(Z, seeds=(0,)))
    want = get_loss("an-slds")(logits, Z[None], **draw.batch_inputs(None, logits))
    assert torch.allclose(m.loss_matrix(logits, batch_of(Z)), want)
