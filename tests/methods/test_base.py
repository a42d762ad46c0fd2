"""The method contract (spmlkit.methods.base): a Method is a loss, a regime, components
with named hooks and regularisers; build_method is the one place that maps a name to
parts.  Every registered method is held to it in tests/contracts/test_methods.py."""
import numpy as np
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


# ------------------------------------------------ per-entry state declarations (issue 32)
def _big_context(n=1_000_000, L=10_000, G=1):
    from spmlkit.methods.base import TrainContext
    from spmlkit.sparse_labels import SparseLabels

    Z = SparseLabels.single(np.zeros(n, dtype=np.int64), L)  # 12 MB: the observations are not the problem
    return TrainContext(n_train=n, n_labels=L, observed=Z, n_members=G)


@pytest.mark.parametrize("name, params, alternative", [
    ("role", {}, "storage=factorised"), ("em-apl", {}, "em (the same loss"), ("ll-cp", {}, "ll-ct"),
    ("opml-lc", {}, "opml")])
def test_per_entry_state_over_the_budget_is_refused_in_one_line(name, params, alternative, monkeypatch):
    from spmlkit.errors import ConfigError
    from spmlkit.methods import build_method

    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "4096")
    m = build_method(name, **params) if name != "role" else build_method(name, k=2.0)
    with pytest.raises(ConfigError) as exc:
        m.setup(_big_context())
    msg = str(exc.value)
    assert "\n" not in msg and "1,000,000 examples x 10,000 labels" in msg and alternative in msg, msg
    assert "4.0 GiB budget" in msg


def test_methods_without_per_entry_state_declare_none_and_factorised_role_fits(monkeypatch):
    from spmlkit.methods import build_method

    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "4096")
    ctx = _big_context()
    for name in ("an", "an-ls", "wan", "epr", "l1r", "gr", "splc", "ll-ct", "ll-r", "em"):
        assert build_method(name).state_bytes(ctx) == 0, name
    role = build_method("role", k=2.0, storage="factorised")
    assert 0 < role.state_bytes(ctx) < 4 * 2 ** 30  # rank 64: O((N + L) x 64)
    assert build_method("role", k=2.0, storage="memmap").state_bytes(ctx) == 0  # on disk


def test_role_declares_what_it_allocates():
    """The declaration is the real size: ROLE's float32 table, moments and best-epoch
    snapshot, measured on a small context against the store it builds."""
    from spmlkit.methods import build_method
    from spmlkit.methods.base import TrainContext

    ctx = TrainContext(n_train=50, n_labels=7, observed=np.zeros((50, 7), np.int8), n_members=2, seeds=(0, 1),
                       base_lrs=(1e-3, 1e-2))
    m = build_method("role", k=2.0)
    m.setup(ctx)
    est = m.components[0]
    assert m.state_bytes(ctx) == sum(est.store.nbytes().values()) * 4 // 3
