"""Every name table of spmlkit is one :class:`spmlkit.registry.Registry` (issue 26 part 2):
losses, methods, datasets, backbones, heads and analyses.  One contract for all of them
(an unknown name is one clear error listing the known ones; a name cannot be taken twice;
a registration is idempotent and can be withdrawn), and one per kind: what a registered
entry must provide, and that a new entry is found through the kind's own entry point
without editing any list."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from spmlkit.data import (DATASETS, FILE_FORMATS, MultiLabelDataset, Split, detect_format, load_any, load_dataset,
                          register_dataset, register_format)
from spmlkit.errors import ConfigError, UnknownNameError
from spmlkit.experiments.analyses import ANALYSES, Arg, all_analyses, get_analysis, register_analysis
from spmlkit.features.backbones import BACKBONES, Backbone, TinyRandom, build_backbone, register_backbone
from spmlkit.losses import LOSSES
from spmlkit.methods import METHODS
from spmlkit.models.heads import HEADS, StackedLinear, build_head, register_head, select_members
from spmlkit.registry import Registry

REGISTRIES = {"loss": LOSSES, "method": METHODS, "dataset": DATASETS, "backbone": BACKBONES, "head": HEADS,
              "analysis": ANALYSES, "file format": FILE_FORMATS}


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


def test_every_in_tree_backbone_is_registered_by_the_decorator():
    """Each concrete :class:`Backbone` of spmlkit.features.backbones is the factory of the
    registered name it declares, with the same pooled feature size (one way to add a backbone)."""
    import inspect

    import spmlkit.features.backbones as mod

    classes = [c for _, c in inspect.getmembers(mod, inspect.isclass)
               if issubclass(c, Backbone) and c.__module__ == mod.__name__ and c.name]
    assert {c.name for c in classes} == {n for n, s in BACKBONES.items() if s.factory.__module__ == mod.__name__}
    for c in classes:
        assert BACKBONES[c.name].factory is c and BACKBONES[c.name].out_dim == c.out_dim, c


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
@pytest.mark.parametrize("name", sorted(set(HEADS) - {"tree"}))  # (the tree head: tests/models/test_trees.py)
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


# ------------------------------------------------------------------------ file formats
def test_every_format_declares_how_it_is_detected_and_loaded():
    assert {"arff", "csv", "tsv", "npz", "mulan", "voc", "coco", "nuswide", "cub"} <= set(FILE_FORMATS.names())
    claimed = {}
    for name, spec in FILE_FORMATS.items():
        assert callable(spec.load) and spec.description and (spec.suffixes or spec.folder), name
        for suffix in spec.suffixes:
            assert suffix.startswith(".") and suffix not in claimed, (name, suffix, claimed.get(suffix))
            claimed[suffix] = name


def _write_pipe_table(path, X, Y):
    """A made-up text format: one example per line, features ``|`` label indices."""
    lines = [",".join(f"{v:g}" for v in x) + "|" + " ".join(str(j) for j in np.flatnonzero(y)) for x, y in zip(X, Y)]
    path.write_text("\n".join(lines) + "\n")


def test_a_new_format_is_detected_loaded_and_round_tripped(tmp_path, capsys):
    """Registered in one place (here), found by ``load_any`` / ``spml prepare`` by its
    extension and by ``--format``, and a prepared bundle gives back what was written."""
    from spmlkit.cli import main
    from spmlkit.data import Bundle

    @register_format("contract-pipe", suffixes=(".pipe",), description="features | label indices")
    def load_pipe(path, *, name=None, **_):
        rows = [line.split("|") for line in Path(path).read_text().splitlines() if line]
        X = np.array([[float(v) for v in a.split(",")] for a, _ in rows], dtype=np.float32)
        Y = np.zeros((len(rows), 3), bool)
        for i, (_, labels) in enumerate(rows):
            Y[i, [int(j) for j in labels.split()]] = True
        return MultiLabelDataset(name or Path(path).stem, ["a", "b", "c"], {"train": Split(X=X, Y=Y)})

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4)).round(3).astype(np.float32)
    Y = rng.random((40, 3)) < 0.4
    Y[np.arange(40), np.arange(40) % 3] = True
    src = tmp_path / "toy.pipe"
    _write_pipe_table(src, X, Y)
    try:
        assert detect_format(src) == "contract-pipe"
        ds = load_any(str(src))
        np.testing.assert_array_equal(ds.splits["train"].X, X)
        np.testing.assert_array_equal(ds.splits["train"].Y, Y)
        renamed = tmp_path / "toy.txt-not-csv"
        renamed.write_text(src.read_text())
        assert load_any(str(renamed), format="contract-pipe").n_labels == 3
        assert main(["prepare", str(src), "-o", str(tmp_path / "b")]) == 0
        b = Bundle(tmp_path / "b")
        splits = [s for s in ("train", "val", "test") if b.size(s)]
        rows = sorted(tuple(x) + tuple(y) for s in splits for x, y in zip(np.asarray(b.features(s)),
                                                                          np.asarray(b.labels(s))))
        assert rows == sorted(tuple(x) + tuple(y) for x, y in zip(X, Y))  # every example back, unchanged
    finally:
        FILE_FORMATS.remove("contract-pipe")
    with pytest.raises(UnknownNameError, match="file format 'contract-pipe'"):
        load_any(str(src), format="contract-pipe")
    with pytest.raises(ValueError, match="suffixes"):
        register_format("contract-bad", suffixes=("PIPE",))


def test_a_new_folder_format_is_detected_by_its_layout(tmp_path):
    (tmp_path / "d" / "MARKER").mkdir(parents=True)

    @register_format("contract-folder", folder=lambda p: (p / "MARKER").is_dir(), order=5, description="marker")
    def load_folder(path, **_):
        Y = np.array([[1, 1], [1, 0], [0, 1]], dtype=bool)
        return MultiLabelDataset("f", ["a", "b"], {"train": Split(X=np.eye(3, 2, dtype=np.float32), Y=Y)})

    try:
        assert detect_format(tmp_path / "d") == "contract-folder"
        assert load_any(str(tmp_path / "d")).name == "f"
    finally:
        FILE_FORMATS.remove("contract-folder")
    with pytest.raises(ConfigError, match="cannot tell the format of folder"):
        detect_format(tmp_path / "d")
