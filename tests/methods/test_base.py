"""The method contract (spmlkit.methods.base): a Method is a loss, a regime, components
with named hooks and regularisers; build_method is the one place that maps a name to
parts.  Every registered method is held to it in tests/contracts/test_methods.py."""
import warnings

import numpy as np
import pytest
import torch

from spmlkit.errors import ConfigError, UnknownNameError
from spmlkit.losses import get_loss
from spmlkit.methods import METHODS, build_method, describe_methods
from spmlkit.methods.base import Component, FinetuneNeeds, Method, register_method, resolve_k
from spmlkit.params import Interval, Options
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

    def after_optimizer_step(self, batch):
        self.heard.append(("after_optimizer_step", tuple(batch.index.shape)))

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
    m.after_optimizer_step(batch)
    assert m.on_epoch_end(1, lambda: torch.full((2, 2, 2), 0.25)) == {"mean_p": 0.25}
    assert rec.heard == [("setup", 2), ("start", 1), ("after_optimizer_step", (2, 2))]
    assert m.state_dict() == {"_Recorder": {"heard": 3}} and m.component(_Recorder) is rec
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


class _Counter(Component):
    state_key = "counter"  # declared: stable whatever the class is called or where it stands

    def __init__(self):
        self.n = 0

    def state_dict(self):
        return {"n": self.n}

    def load_state_dict(self, state):
        self.n = state["n"]

    def member_state(self, g):
        return {"n": self.n + g}

    def load_member_state(self, g, state):
        self.n = state["n"] - g


def test_component_state_is_keyed_by_state_key_never_by_position():
    a, b = _Counter(), _Recorder()
    assert (_Counter.state_key, _Recorder.state_key, Component.state_key) == ("counter", "_Recorder", "Component")
    a.n = 7
    saved = Method("m", "an", components=[a, b]).state_dict()
    assert saved == {"counter": {"n": 7}, "_Recorder": {"heard": 0}}
    other = _Counter()
    Method("m", "an", components=[_Recorder(), other]).load_state_dict(saved)  # the other order reads it
    assert other.n == 7
    again = _Counter()
    Method("m", "an", components=[again]).load_member_state(1, {"counter": {"n": 9}})
    assert again.n == 8


def test_checkpoints_with_positional_keys_still_load_and_a_foreign_key_is_refused():
    """Checkpoints written before state keys hold ``"<position>:<class name>"``."""
    c = _Counter()
    m = Method("m", "an", components=[_Recorder(), c])
    m.load_state_dict({"0:_Recorder": {}, "1:_Counter": {"n": 4}})
    assert c.n == 4
    for bad in ({"0:_Counter": {"n": 1}}, {"labelestimator": {}}, {"5:_Counter": {}}):
        with pytest.raises(ValueError, match="has no component with state key"):
            m.load_state_dict(bad)


def test_two_components_with_one_state_key_are_refused():
    with pytest.raises(ConfigError, match="two components share the state_key 'counter'"):
        Method("m", "an", components=[_Counter(), _Counter()])


def test_the_old_hook_name_still_works_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="after_optimizer_step"):
        class Old(Component):
            def __init__(self):
                self.steps = 0

            def after_backward(self, batch):
                self.steps += 1

    old = Old()
    m = Method("m", "an", components=[old])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the trainer's call does not warn: the class was told once
        m.after_optimizer_step(None)
    with pytest.warns(DeprecationWarning, match="after_optimizer_step"):
        m.after_backward(None)  # the old name on a method
    assert old.steps == 2


def test_data_dependent_loss_parameters_are_resolved_at_setup():
    m = Method("epr-like", "epr", loss_params={"k": None, "lam": 1.0}, params={"k": None, "lam": 1.0},
               resolve=resolve_k("epr-like"))
    Z = torch.tensor([[1, 0, 0], [0, 1, 0]], dtype=torch.int8)
    m.setup(train_context(Z, expected_positives=1.5))
    assert m.loss_params["k"] == 1.5 and m.params["k"] == 1.5
    m.setup(train_context(Z, expected_positives=2.5))  # set up again on other data: resolved again from what was given
    assert m.loss_params["k"] == 2.5
    with pytest.raises(ConfigError, match="needs k, the expected number of positives"):
        Method("x", "epr", resolve=resolve_k("x")).setup(train_context(Z))


def test_hyper_parameters_are_checked_against_their_declared_constraints_before_the_factory_runs():
    name = "test-base-constrained"
    built = []

    @register_method(name, reference="a test", family="tests", in_default_bench=False,
                     constraints={"mode": [Options("a", "b")], "rate": [Interval(float, 0, 1)]})
    def _build(rate: float = 0.5, mode: str = "a", steps: int = 3, soft: bool = True, k: float | None = None) -> Method:
        """A test method."""
        built.append(1)
        return Method(name, "an")

    try:
        for bad, message in (({"rate": 1.5}, r"rate must be a finite number in \[0, 1\], got 1.5"),
                             ({"mode": "c"}, "mode must be one of 'a', 'b', got 'c'"),
                             ({"steps": 2.5}, "steps must be a whole number, got 2.5"),
                             ({"soft": 1}, "soft must be true or false, got 1"),
                             ({"k": "abc"}, "k must be a finite number or None, got 'abc'"),
                             ({"k": float("inf")}, "k must be a finite number or None, got inf")):
            with pytest.raises(ConfigError, match=f"method '{name}': " + message):
                build_method(name, **bad)
        assert not built  # refused before the factory ran
        build_method(name, rate=1, mode="b", steps=2, soft=False, k=None)
        assert METHODS[name].constraints["steps"] == [int]
    finally:
        METHODS.remove(name)


def test_fine_tuning_needs_are_one_declared_object():
    assert Method.finetune == FinetuneNeeds() and FinetuneNeeds().views == ("train",)
    lac = build_method("lac")
    assert lac.finetune.views == ("weak", "strong") and lac.finetune.embeddings
    assert lac.finetune.defaults["head"] == "decoder"


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


@pytest.mark.parametrize("raw", ["abc", "nan", "inf", "1e400"])
def test_the_state_budget_variable_is_parsed_with_one_message(monkeypatch, raw):
    from spmlkit.methods.base import state_budget_bytes

    monkeypatch.setenv("SPML_STATE_BUDGET_MB", raw)
    with pytest.raises(ConfigError, match=f"environment variable SPML_STATE_BUDGET_MB={raw!r} is not a usable size"):
        state_budget_bytes()
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "3")
    assert state_budget_bytes() == 3 * 2 ** 20


def test_the_state_budget_is_half_of_the_memory_available_not_installed(monkeypatch, tmp_path):
    """Without SPML_STATE_BUDGET_MB the budget is half of MemAvailable (what is left on a
    shared machine), read from /proc/meminfo; the env var still overrides it."""
    from spmlkit.methods import base

    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:    9000000 kB\n")
    assert base.available_memory_bytes(str(info)) == 9000000 * 1024
    monkeypatch.delenv("SPML_STATE_BUDGET_MB", raising=False)
    monkeypatch.setattr(base, "available_memory_bytes", lambda: 9000000 * 1024)
    assert base.state_budget_bytes("cpu") == 9000000 * 1024 // 2  # not half of the 24 GB installed
    monkeypatch.setenv("SPML_STATE_BUDGET_MB", "100")
    assert base.state_budget_bytes("cpu") == 100 * 2 ** 20
    monkeypatch.delenv("SPML_STATE_BUDGET_MB")
    monkeypatch.setattr(base, "available_memory_bytes", lambda: None)  # unknown: a fixed 8 GiB
    assert base.state_budget_bytes("cpu") == 8 * 2 ** 30


def test_available_memory_falls_back_to_the_free_pages_without_meminfo(monkeypatch, tmp_path):
    import os

    from spmlkit.methods import base

    (tmp_path / "bad").write_text("MemTotal: 5 kB\nMemAvailable: lots kB\n")
    pages = {"SC_AVPHYS_PAGES": 1000, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    assert base.available_memory_bytes(str(tmp_path / "missing")) == 1000 * 4096
    assert base.available_memory_bytes(str(tmp_path / "bad")) == 1000 * 4096
