"""The loss registry and its conventions (spmlkit.losses.base): registered functions keep
their keyword-only hyper-parameters and inputs, unknown hyper-parameters are one clear
error, and reduction is kept apart from the per-entry loss."""
import math

import pytest
import torch

from spmlkit.errors import ConfigError, UnknownNameError
from spmlkit.losses import LOSSES, get_loss, reduce_mean
from spmlkit.losses.base import bce_with_target, masks, neg_log_sigmoid, register_loss


def test_a_registered_loss_knows_its_hyperparameters_and_inputs():
    name = "test-base-scaled"

    @register_loss(name, reference="a test", inputs=("targets",))
    def scaled(logits, observed, *, targets, scale: float = 2.0):
        """Scaled squared error (first docstring line is the summary)."""
        return scale * (logits - targets) ** 2

    try:
        spec = get_loss(name)
        assert (spec.hyperparameters, spec.inputs, spec.reference) == ({"scale": 2.0}, ("targets",), "a test")
        assert spec.summary == "Scaled squared error (first docstring line is the summary)."
        out = spec(torch.ones(1, 2), torch.zeros(1, 2, dtype=torch.int8), targets=torch.zeros(1, 2))
        assert out.tolist() == [[2.0, 2.0]]
        assert spec.check_params({"scale": 3.0}) == {"scale": 3.0}
        with pytest.raises(ConfigError, match=r"loss 'test-base-scaled' has no hyper-parameter\(s\) \['gamma'\]; "
                                              r"it takes \['scale'\]"):
            spec.check_params({"gamma": 1.0})
    finally:
        LOSSES.remove(name)


def test_unknown_loss_names_list_the_known_ones():
    with pytest.raises(UnknownNameError, match="unknown loss 'nope'; expected one of: an, "):
        get_loss("nope")


def test_reduce_mean_counts_every_entry_per_member():
    loss = torch.tensor([[[1.0, 0.0], [3.0, 0.0]], [[2.0, 2.0], [2.0, 2.0]]])  # (G=2, B=2, L=2)
    assert reduce_mean(loss).tolist() == [1.0, 2.0]  # Cole et al.: sum / (B * L), zeros included


def test_shared_helpers():
    pos, neg, unk = masks(torch.tensor([1, -1, 0, 1]))
    assert pos.tolist() == [True, False, False, True] and neg.tolist() == [False, True, False, False]
    assert unk.tolist() == [False, False, True, False]
    s = torch.tensor([0.0, 2.0, -3.0])
    t = torch.tensor([1.0, 0.25, 0.0])
    p = torch.sigmoid(s)
    assert torch.allclose(bce_with_target(s, t), -(t * p.log() + (1 - t) * (1 - p).log()))
    assert neg_log_sigmoid(torch.tensor(0.0)).item() == pytest.approx(math.log(2))
    big = neg_log_sigmoid(torch.tensor([-200.0, 200.0]))
    assert big.tolist() == [pytest.approx(200.0), 0.0] and torch.isfinite(big).all()  # log(p) would be -inf


def test_registration_records_summary_reference_and_owner():
    """The summary is the docstring's first line (empty without one), the reference empty
    unless given; registering the same function again is accepted (a module imported
    twice), another function under a taken name is refused."""

    def plain(logits, observed):
        return logits

    def documented(logits, observed):
        """First line.

        Second paragraph."""
        return logits

    try:
        register_loss("test-base-plain")(plain)
        register_loss("test-base-plain")(plain)  # the same function again: fine
        register_loss("test-base-doc", reference="ref")(documented)
        assert (LOSSES["test-base-plain"].summary, LOSSES["test-base-plain"].reference) == ("", "")
        assert (LOSSES["test-base-doc"].summary, LOSSES["test-base-doc"].reference) == ("First line.", "ref")
        with pytest.raises(ValueError, match="loss 'test-base-plain' registered twice"):
            register_loss("test-base-plain")(documented)
        with pytest.raises(ConfigError) as e:
            LOSSES["test-base-plain"].check_params({"gamma": 1.0})
        assert str(e.value) == "loss 'test-base-plain' has no hyper-parameter(s) ['gamma']; it takes none"
    finally:
        LOSSES.remove("test-base-plain")
        LOSSES.remove("test-base-doc")


def test_hyperparameters_are_checked_by_the_constraints_of_the_registration():
    """A registered loss checks its hyper-parameters by their annotations and the declared
    constraints; a spec made without any accepts any value for the names it takes."""
    from spmlkit.losses.base import LossSpec
    from spmlkit.params import Interval

    name = "test-base-checked"

    @register_loss(name, inputs=("targets",), constraints={"rate": [Interval(float, 0, 1)]})
    def checked(logits, observed, *, targets=None, scale: float = 2.0, rate: float = 0.5):
        return scale * rate * logits

    try:
        spec = get_loss(name)
        assert spec.check_params({"scale": 3, "rate": 1.0}) == {"scale": 3, "rate": 1.0}
        with pytest.raises(ConfigError, match="loss 'test-base-checked': scale"):
            spec.check_params({"scale": "big"})
        with pytest.raises(ConfigError, match="loss 'test-base-checked': rate"):
            spec.check_params({"rate": 2.0})
        with pytest.raises(ConfigError, match=r"has no hyper-parameter\(s\) \['targets'\]"):  # an input, not one
            spec.check_params({"targets": 1.0})
    finally:
        LOSSES.remove(name)
    bare = LossSpec("bare", lambda s, z, *, cap=2.0: s, {"cap": 2.0}, ())
    assert bare.check_params({"cap": "anything"}) == {"cap": "anything"}
