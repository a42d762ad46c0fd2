"""The data of a bench: its datasets as bundles (prepared once from names, or used as
they are), their content fingerprints, and training-set subsets (Cole et al. Fig. 1's
"m% of the training images")."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ...io import safe_filename, sha256_file
from .spec import BenchSpec


@dataclass
class BenchDataset:
    label: str  # column header
    bundle: object  # spmlkit.data.Bundle
    fingerprint: str
    #: with --vary-draw: prepare seed -> (bundle, fingerprint), one draw per seed
    draws: dict = field(default_factory=dict)

    def bundles(self) -> list:
        return [b for b, _ in self.draws.values()] if self.draws else [self.bundle]


def bundle_fingerprint(bundle) -> str:
    """A content hash of a bundle: its meta (minus creation time and version) and the
    row indices of its splits (which pin the split and the examples kept)."""
    meta = {k: v for k, v in bundle.meta.items() if k not in ("created", "spmlkit_version")}
    h = hashlib.sha256(json.dumps(meta, sort_keys=True, default=str).encode())
    for split in ("train", "val", "test"):
        p = Path(bundle.path) / split / "index.npy"
        h.update(sha256_file(p).encode() if p.exists() else b"-")
    return h.hexdigest()[:16]


def resolve_datasets(spec: BenchSpec, out: Path, log: Callable[[str], None] = lambda m: None) -> list[BenchDataset]:
    """Bundle paths are used as they are; names (and raw data files) are prepared once
    into ``out/bundles/<name>-s<prepare_seed>/`` with their official splits."""
    from ...data import Bundle, load_any, prepare_bundle  # (lazy: the data package imports torch)

    def prepared(entry: str, p: Path, seed: int):
        target = out / "bundles" / f"{safe_filename(p.stem if p.exists() else entry)}-s{seed}"
        if (target / "meta.json").exists():
            log(f"{entry}: reusing {target}")
            return Bundle(target)
        ds = load_any(entry, data_root=spec.data_root)
        log(f"{entry}: preparing {target}")
        return prepare_bundle(ds, target, seed=seed, overwrite=True, log=log)

    found: list[BenchDataset] = []
    for entry in spec.datasets:
        p = Path(entry)
        draws = {}
        if (p / "meta.json").exists():
            bundle = Bundle(p)
            label = bundle.name
        else:
            if getattr(spec, "vary_draw", False):  # one bundle per seed: seed s uses prepare seed s
                for s in spec.seeds:
                    b = prepared(entry, p, int(s))
                    draws[int(s)] = (b, bundle_fingerprint(b))
                bundle = draws[int(spec.seeds[0])][0]
            else:
                bundle = prepared(entry, p, spec.prepare_seed)
            label = entry if not p.exists() else bundle.name
        labels = [d.label for d in found]
        if label in labels:
            label = f"{label} ({p.name})" if p.name and f"{label} ({p.name})" not in labels else f"{label} #{len(found) + 1}"
        found.append(BenchDataset(label, bundle, bundle_fingerprint(bundle), draws))
    return found


class TrainSubset:
    """A bundle whose training split is restricted to ``rows`` (Cole Fig. 1's "m% of
    the training images").  Observations are the parent's rows, so every example keeps
    the single positive it has in the full set; validation and test are unchanged."""

    def __init__(self, bundle, rows: np.ndarray):
        self._bundle = bundle
        self.rows = np.asarray(rows, dtype=np.int64)
        self.meta = {**bundle.meta, "sizes": {**bundle.meta["sizes"], "train": int(len(self.rows))}}

    def __getattr__(self, name):
        return getattr(self._bundle, name)

    def size(self, split: str) -> int:
        return len(self.rows) if split == "train" else self._bundle.size(split)

    def features(self, split: str, feature_set: str | None = None, *, mmap: bool = True) -> np.ndarray:
        X = self._bundle.features(split, feature_set, mmap=mmap)
        return np.asarray(X[self.rows]) if split == "train" else X

    def labels(self, split: str):
        Y = self._bundle.labels(split)
        return Y[self.rows] if split == "train" and Y is not None else Y

    def observations(self, split: str = "train", regime: str | None = None, **kw) -> np.ndarray:
        Z = self._bundle.observations(split, regime, **kw)
        return Z[self.rows] if split == "train" else Z

    def paths(self, split: str) -> list[str]:
        p = self._bundle.paths(split)
        return [p[i] for i in self.rows] if split == "train" else p


def subsample_rows(n: int, fraction: float, seed: int) -> np.ndarray:
    """Sorted rows of a seeded subsample of ``round(fraction * n)`` (at least 1) rows,
    nested across fractions: the first rows of one fixed permutation."""
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[:max(1, int(round(fraction * n)))])
