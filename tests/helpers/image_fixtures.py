"""Tiny image bundles shared by the image tests (32x32 digits canvases, a few dozen images)."""
from __future__ import annotations

from pathlib import Path


def tiny_digits(cache_dir, **kw):
    from spmlkit.data.digits import make_digits

    params = dict(n_train=24, n_val=8, n_test=12, canvas=32, scale=2, seed=0)
    params.update(kw)
    return make_digits(cache_dir=cache_dir, **params)


def tiny_digits_bundle(tmp: Path, name: str = "digits", **kw):
    from spmlkit.data import prepare_bundle

    return prepare_bundle(tiny_digits(tmp / "cache", **kw), tmp / name, log=lambda m: None)
