"""The method contract (spmlkit.methods.base): a Method is a loss, a regime, components
with named hooks and regularisers; build_method is the one place that maps a name to
parts.  Every registered method is held to it in tests/contracts/test_methods.py."""
import pytest
import torch

from spmlkit.errors import ConfigError, UnknownNameError
from spmlkit.losses import get_loss
from spmlkit.methods import METHODS, build_method, describe_methods
from spmlkit.methods.base import Component, Method, parse_params, parse_param_value, register_method
from tests.helpers.factories import batch_of, train_context


class _Recorder(Component):
    """Scales the loss by 10, supplies nothing, and records every hook it hears."""

    supports_compaction = True

    def __init__(self):
        self.heard = []
        self.kept = [0, 1]

    def setup(self, ctx):
        super().setup(ctx)
        self.heard.append(("setup", ctx.n_members))

    def on_epoch_start(self, epoch):
        self.heard.append(("start", epoch))

    def modify_loss(self, loss, batch, logits, observed):
        return 10 * loss

    def after_backward(self, batch):
        self.heard.append(("after_backward", tuple(batch.index.shape)))

    def on_epoch_end(self, epoch, predict_train):
        return {"mean_p": predict_train().mean().item()}

    def state_dict(self):
        return {"heard": len(self.heard)}

    def select_members(self, keep):
        self.kept = [self.kept[i] for i in keep]


def test_hooks_reach_the_components_in_order():
    rec = _Recorder()
    m = Method("recorder", "an", components=[rec], regularizers=[lambda logits, batch, model: torch.ones(2)])
    Z = torch.tensor([[1, 0], [0, 1]], dtype=torch.int8)
    m.setup(train_context(Z, G=2, base_lrs=(1e-2, 1e-3), seeds=(4, 5)))
    m.on_epoch_start(1)
    batch = batch_of(Z, G=2)
    logits = torch.zeros(2, 2, 2)
    loss = m.compute_loss(logits, batch)
    an = get_loss("an")(logits, batch.observed).mean(dim=(1, 2))
    assert torch.allclose(loss, 10 * an + 1)  # the component's modification, then the regulariser
    m.after_backward(batch)
    assert m.on_epoch_end(1, lambda: torch.full((2, 2, 2), 0.25)) == {"mean_p": 0.25}
    assert rec.heard == [("setup", 2), ("start", 1), ("after_backward", (2, 2))]
    assert m.state_dict() == {"0:_Recorder": {"heard": 3}} and m.component(_Recorder) is rec
    assert m.supports_members and m.supports_compaction and not m.uses_background
    m.select_members([1])
    assert rec.kept == [1] and (m.ctx.n_members, m.ctx.base_lrs, m.ctx.seeds) == (1, (1e-3,), (5,))


def test_a_background_loss_without_background_rows_is_one_clear_error():
    m = build_method("an-ssdl")
    assert m.uses_background
    Z = torch.tensor([[1, 0]], dtype=torch.int8)
    m.setup(train_context(Z))
    with pytest.raises(ConfigError, match="method 'an-ssdl' needs background rows"):
        m.compute_loss(torch.zeros(1, 1, 2), batch_of(Z))


def test_build_method_is_the_one_place_that_maps_a_name_to_parts():
    name = "test-base-method"

    @register_method(name, regime="full", reference="a test", family="tests", in_default_bench=False)
    def _build(gamma: float = 0.5) -> Method:
        """A test method."""
        return Method("whatever", "focal", loss_params={"gamma": gamma})

    try:
        m = build_method(name, gamma=1.0)
        assert (m.name, m.regime, m.params, m.loss_params["gamma"]) == (name, "full", {"gamma": 1.0}, 1.0)
        spec = METHODS[name]
        assert (spec.hyperparameters, spec.summary, spec.in_default_bench) == ({"gamma": 0.5}, "A test method.", False)
        assert any(d["name"] == name and d["family"] == "tests" for d in describe_methods())
        with pytest.raises(ConfigError, match=r"method 'test-base-method' has no hyper-parameter\(s\) \['alpha'\]; "
                                              r"it takes \['gamma'\]"):
            build_method(name, alpha=1.0)
    finally:
        METHODS.remove(name)
    with pytest.raises(UnknownNameError, match="unknown method 'test-base-method'"):
        build_method(name)


def test_param_values_are_parsed_as_numbers_booleans_or_none():
    assert [parse_param_value(t) for t in ("3", "0.5", "1e-3", "True", "none", "NULL", "float16")] == [
        3, 0.5, 1e-3, True, None, None, "float16"]
    assert parse_params(["k=2", "k=3", "storage=dense"]) == {"k": 3, "storage": "dense"}  # a later name wins
    with pytest.raises(ConfigError, match="--param 'gamma': expected name=value"):
        parse_params(["gamma"])
