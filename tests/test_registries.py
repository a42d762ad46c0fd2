"""Every name table of spmlkit is one :class:`spmlkit.registry.Registry` (issue 26 part 2):
losses, methods, datasets, backbones, heads and analyses.  One contract for all of them
(an unknown name is one clear error listing the known ones; a name cannot be taken twice;
a registration is idempotent and can be withdrawn), and one per kind: what a registered
entry must provide, and that a new entry is found through the kind's own entry point
without editing any list."""
from __future__ import annotations

import pytest
import torch

from spmlkit.data import DATASETS, MultiLabelDataset, Split, load_dataset, register_dataset
from spmlkit.errors import ConfigError, UnknownNameError
from spmlkit.experiments.analyses import ANALYSES, Arg, all_analyses, get_analysis, register_analysis
from spmlkit.features.backbones import BACKBONES, Backbone, TinyRandom, build_backbone, register_backbone
from spmlkit.losses import LOSSES
from spmlkit.methods import METHODS
from spmlkit.models.heads import HEADS, StackedLinear, build_head, register_head, select_members
from spmlkit.registry import Registry

REGISTRIES = {"loss": LOSSES, "method": METHODS, "dataset": DATASETS, "backbone": BACKBONES, "head": HEADS,
              "analysis": ANALYSES}


@pytest.mark.parametrize("kind", REGISTRIES)
def test_the_common_contract(kind):
    reg = REGISTRIES[kind]
    assert isinstance(reg, Registry) and reg.kind == kind
    names = list(reg.names())
    assert names and names == sorted(reg)  # discovered, sorted
    with pytest.raises(UnknownNameError) as e:
        reg.lookup("no-such-name")
    assert str(e.value) == f"unknown {kind} 'no-such-name'; expected one of: {', '.join(names)}"
    spec, owner, other = object(), object(), object()
    try:
        reg.add("contract-test", spec, owner=owner)
        reg.add("contract-test", spec, owner=owner)  # the same registration again (a module re-imported)
        with pytest.raises(ValueError, match="registered twice"):
            reg.add("contract-test", object(), owner=other)
        assert reg.lookup("contract-test") is spec
    finally:
        reg.remove("contract-test")
    assert "contract-test" not in reg and list(reg.names()) == names


def test_every_name_is_its_specs_name():
    for kind, reg in REGISTRIES.items():
        for name in reg.names():
            assert getattr(reg[name], "name", name) == name, (kind, name)


# ---------------------------------------------------------------------------- datasets
def test_every_dataset_declares_how_it_loads():
    for name, spec in DATASETS.items():
        assert callable(spec.loader) and spec.kind in ("features", "images") and spec.description, name
    assert {"yeast", "digits"} <= {n for n, s in DATASETS.items() if s.builtin}


def test_a_new_dataset_is_loaded_by_name():
    import numpy as np

    def tiny(data_root):
        X = np.eye(3, dtype=np.float32)
        return MultiLabelDataset("contract-tiny", ["a", "b", "c"], {"train": Split(X=X, Y=np.eye(3, dtype=bool))})

    register_dataset("contract-tiny", kind="features", builtin=True, description="three rows")(tiny)
    try:
        ds = load_dataset("contract-tiny")
        assert ds.name == "contract-tiny" and ds.splits["train"].X.shape == (3, 3)
    finally:
        DATASETS.remove("contract-tiny")
    with pytest.raises(ValueError, match="kind"):
        register_dataset("contract-bad", kind="audio", builtin=True, description="")


# --------------------------------------------------------------------------- backbones
def test_every_backbone_declares_its_feature_size_and_the_test_one_builds():
    for name, spec in BACKBONES.items():
        assert callable(spec.factory) and spec.out_dim > 0 and spec.description, name
    net = build_backbone("tiny-random", image_size=32)
    assert isinstance(net, Backbone) and net(torch.rand(2, 3, 32, 32)).shape == (2, BACKBONES["tiny-random"].out_dim)


def test_a_new_backbone_is_built_by_name():
    register_backbone("contract-tiny", out_dim=32, description="tiny-random under another name")(TinyRandom)
    try:
        net = build_backbone("contract-tiny", image_size=32)
        assert isinstance(net, TinyRandom) and net(torch.rand(1, 3, 32, 32)).shape == (1, 32)
    finally:
        BACKBONES.remove("contract-tiny")
    with pytest.raises(UnknownNameError, match="backbone 'contract-tiny'"):
        build_backbone("contract-tiny")


# ------------------------------------------------------------------------------- heads
@pytest.mark.parametrize("name", sorted(HEADS))
def test_every_head_is_a_stack_of_independent_members(name):
    """(G, B, D) -> (G, B, L), one member per generator, every parameter with the member
    axis first (so early-stopped members can leave the stack: select_members)."""
    gens = [torch.Generator().manual_seed(s) for s in (0, 1, 2)]
    head = build_head(name, 5, 4, gens, hidden=8)
    x = torch.randn(3, 6, 5)
    out = head(x)
    assert out.shape == (3, 6, 4)
    assert all(p.shape[0] == 3 for p in head.parameters())
    one = build_head(name, 5, 4, [torch.Generator().manual_seed(1)], hidden=8)
    assert torch.allclose(one(x[1:2]), out[1:2], atol=1e-6)  # member 1 = a single-member head of seed 1
    select_members(head, [1])
    assert torch.allclose(head(x[1:2]), out[1:2], atol=1e-6)


def test_a_new_head_is_accepted_by_the_config_and_the_trainer(toy_bundle):
    from spmlkit.config import TrainConfig
    from spmlkit.training import train_linear

    @register_head("contract-linear", description="the linear head under another name")
    def build(in_features, out_features, generators, *, hidden):
        return StackedLinear(in_features, out_features, generators)

    try:
        cfg = TrainConfig(method="an", head="contract-linear", epochs=1, batch_size=16)
        (r,) = train_linear(toy_bundle, cfg)
        (ref,) = train_linear(toy_bundle, cfg.replace(head="linear"))
        assert r.test_map == ref.test_map  # the same module, found by its new name
    finally:
        HEADS.remove("contract-linear")
    with pytest.raises(ConfigError, match="head must be one of"):
        TrainConfig(head="contract-linear")


# ---------------------------------------------------------------------------- analyses
def test_every_analysis_declares_its_command():
    for name, a in all_analyses().items():
        assert callable(a.func) and a.help and a.paper and all(isinstance(x, Arg) for x in a.arguments), name


def test_a_new_analysis_is_found_and_offered_by_the_cli(capsys):
    from spmlkit.cli import main

    @register_analysis("contract-echo", help="prints its output folder", paper="none")
    def echo(source, out, *, log=print, **kw):
        """Echo (a contract test)."""
        log(f"echo {source} -> {out}")
        return {}

    try:
        assert get_analysis("contract-echo").func is echo
        with pytest.raises(SystemExit):
            main(["analyze", "--help"])
        assert "contract-echo" in capsys.readouterr().out
    finally:
        ANALYSES.remove("contract-echo")
