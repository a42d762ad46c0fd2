"""Checks shared by the method tests: a stacked grid against separate runs, a killed
run resumed from its checkpoint against an uninterrupted one, and a paper's rows registered."""
from __future__ import annotations

from spmlkit.methods import METHODS, build_method, get_method_spec
from spmlkit.training import train_linear


def members_and_separate_runs(bundle, cfg, lrs, seeds, **kw) -> list:
    """``(member, alone)`` pairs: each member of the stacked grid ``zip(lrs, seeds)`` of
    ``cfg`` and the same configuration trained on its own."""
    grid = train_linear(bundle, cfg, lrs=lrs, seeds=seeds, **kw)
    return [(r, train_linear(bundle, cfg.replace(lr=r.lr, seed=r.seed), **kw)[0]) for r in grid]


def assert_resume_equals_uninterrupted(bundle, cfg, tmp_path, *, killed_after: int) -> None:
    """A run stopped after ``killed_after`` epochs and started again in the same folder
    ends exactly like an uninterrupted run of ``cfg``."""
    full = train_linear(bundle, cfg, run_dir=tmp_path / "full")[0]
    part = tmp_path / "part"
    train_linear(bundle, cfg.replace(epochs=killed_after), run_dir=part)  # "killed" after that epoch
    resumed = train_linear(bundle, cfg, run_dir=part)[0]
    assert resumed.val_history == full.val_history and resumed.test_map == full.test_map


def host_reads_during(monkeypatch, fn):
    """Run ``fn()`` while every tensor-to-host read (``item``, ``tolist``, ``numpy``, and
    the ``float``/``int``/``bool`` conversions) is recorded; returns ``(fn(), reads)``.
    A training epoch must make none: each would be a host synchronisation on a GPU."""
    import torch

    calls = []
    for name in ("item", "tolist", "__float__", "__int__", "__bool__", "numpy"):
        orig = getattr(torch.Tensor, name)

        def spy(self, *a, _orig=orig, _name=name, **k):
            calls.append(_name)
            return _orig(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, spy)
    out = fn()
    return out, list(calls)


def assert_rows_registered(names, *, family: str) -> None:
    """Each method of ``names`` (a paper's table rows) is registered in ``family`` on the
    single-positive regime with a reference, and builds a method of that name that stacks
    members."""
    get_method_spec("an")
    for name in names:
        spec = METHODS[name]
        assert spec.family == family and spec.regime == "single_positive" and spec.reference
        m = build_method(name)
        assert m.name == name and m.supports_members
