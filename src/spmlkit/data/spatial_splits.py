"""Spatial validation and test splits of presence-only rows (records and background), as
species-distribution modellers make them (Roberts et al. 2017, *Ecography* 40:913–929;
Valavi et al. 2019, *Methods in Ecology and Evolution* 10:225–232, blockCV).

Every row has a place ``(x, y)`` and a species index (−1 for a background row).  The
bounding box of the places is cut into ``G`` × ``G`` blocks; rows are split by block,
so that validation (or test) rows are in places the model did not train on.

* **blocks** (:func:`block_folds`): the occupied blocks dealt into ``k`` folds, seeded;
  each block goes, in a seeded order from the largest down, to the fold where it raises
  the sum of squared loads least (a load: the fold's share of one species' records, or of
  the background rows), so each species' records and the background spread over the
  folds as evenly as whole blocks allow.  A fold then holds about
  1/k of every species' records — unlike a random draw of blocks, which on clumped
  records can hold most of a species (the dismo sloth: 81 of 116 records in 5 of 25 blocks).
* **checkerboard** (:func:`checkerboard_folds`): two folds, the blocks' colours on a
  chessboard (ENMeval's ``checkerboard1``, Muscarella et al. 2014).
* **buffer** (:func:`buffer_drop`): training rows closer than ``distance`` (in the places'
  units) to any held-out row are left out of training, so that a held-out record has no
  training neighbour just across a block edge (buffered blocks; Valavi et al. 2019).

:func:`species_counts` counts each species' records per split, and
:func:`check_training_records` refuses, in one line naming the species and its counts,
a split that leaves a species with fewer than ``min_records`` training records.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError

KINDS = ("blocks", "checkerboard")


def block_cells(xy: np.ndarray, blocks: int, bounds: tuple | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(col, row)`` block of every place: the bounding box (or ``bounds``) cut into
    ``blocks`` × ``blocks`` equal cells."""
    xy = np.asarray(xy, dtype=np.float64)
    lo, hi = bounds if bounds is not None else (xy.min(0), xy.max(0))
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    span = np.where(hi > lo, hi - lo, 1.0)
    cell = np.clip(((xy - lo) / span * blocks).astype(int), 0, blocks - 1)
    return cell[:, 0], cell[:, 1]


def block_folds(xy: np.ndarray, species: np.ndarray, k: int, blocks: int, seed: int = 0,
                bounds: tuple | None = None) -> np.ndarray:
    """``(N,)`` fold 0..k−1 of every row: whole blocks dealt to folds (module docstring)."""
    if k < 2:
        raise ConfigError(f"spatial folds: need at least 2 folds, got {k}")
    cx, cy = block_cells(xy, blocks, bounds)
    ids = cx * blocks + cy
    cells, at = np.unique(ids, return_inverse=True)
    species = np.asarray(species, dtype=np.int64)
    L = int(species.max()) + 1 if species.size and species.max() >= 0 else 0
    rec = species >= 0
    per = np.zeros((len(cells), max(L, 1)))
    if L:
        np.add.at(per, (at[rec], species[rec]), 1.0)
    bg = np.bincount(at[~rec], minlength=len(cells)).astype(np.float64)
    # each block's share of each species' records, and of the background rows (one more column)
    share = np.concatenate([per, bg[:, None]], axis=1)
    share = share / np.maximum(share.sum(0), 1.0)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(cells))
    order = order[np.argsort(-share[order].max(1), kind="stable")]  # largest first, ties in a seeded order
    load = np.zeros((k, share.shape[1]))
    fold_of = np.empty(len(cells), dtype=np.int64)
    prefer = rng.permutation(k)  # ties between folds go to the first in this seeded order
    for c in order:
        # the fold where adding the block raises the sum of squared loads least (balances every column)
        cost = load[prefer] @ share[c]
        pick = int(prefer[np.argmin(cost)])
        fold_of[c] = pick
        load[pick] += share[c]
    return fold_of[at]


def spatial_split(xy: np.ndarray, species: np.ndarray, names: list[str], *, kind: str = "blocks", blocks: int = 5,
                  folds: int = 5, seed: int = 0, spatial_test: bool = False, buffer: float = 0.0,
                  min_records: int = 10) -> tuple[dict, list[str]]:
    """``({"train", "val"[, "test"]: bool masks}, lines)``: validation = fold 0 of ``kind``
    (``blocks``: :func:`block_folds` with ``folds`` folds; ``checkerboard``: one colour),
    test = fold 1 when ``spatial_test``; training rows within ``buffer`` of a held-out row
    left out.  The lines say what was done and count each species per split; a species
    left with fewer than ``min_records`` training records is refused (one line)."""
    if kind not in KINDS:
        raise ConfigError(f"unknown spatial split {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "checkerboard":
        if spatial_test:
            raise ConfigError("--spatial-test needs --split blocks (a checkerboard has two folds: training and "
                              "validation)")
        fold, what = checkerboard_folds(xy, blocks), f"a {blocks}x{blocks} checkerboard (one colour validates)"
    else:
        fold = block_folds(xy, species, folds, blocks, seed)
        what = (f"{folds} folds of whole blocks of a {blocks}x{blocks} grid (seed {seed}; fold 1 validates"
                + (", fold 2 tests" if spatial_test else "") + ")")
    val = fold == 0
    test = (fold == 1) if spatial_test else np.zeros(len(fold), dtype=bool)
    held = val | test
    dropped = buffer_drop(xy, held, buffer)
    parts = {"train": ~held & ~dropped, "val": val, **({"test": test} if spatial_test else {})}
    lines = [f"spatial split: {what}" + (f"; {int(dropped.sum())} training rows within {buffer:g} of a held-out row "
                                         "left out (buffer)" if buffer > 0 else "")]
    counts = species_counts(species, names, parts)
    lines += ["records per species and split" + ("" if spatial_test else " (the test split, if any, is then "
                                                 "held out of train)") + ":"] + count_lines(counts)
    lines += check_training_records(counts, min_records, f"the spatial split ({what})")
    return parts, lines


def checkerboard_folds(xy: np.ndarray, blocks: int, bounds: tuple | None = None) -> np.ndarray:
    """``(N,)`` 0 or 1: the colour of each row's block on a ``blocks`` × ``blocks`` chessboard."""
    cx, cy = block_cells(xy, blocks, bounds)
    return (cx + cy) % 2


def buffer_drop(xy: np.ndarray, held: np.ndarray, distance: float) -> np.ndarray:
    """``(N,)`` bool: the rows not in ``held`` within ``distance`` (Euclidean, in the
    places' units) of a row in ``held``."""
    from scipy.spatial import cKDTree  # lazy: torch-free CLI start-up

    held = np.asarray(held, dtype=bool)
    out = np.zeros(len(xy), dtype=bool)
    if distance <= 0 or not held.any() or held.all():
        return out
    tree = cKDTree(np.asarray(xy, dtype=np.float64)[held])
    d, _ = tree.query(np.asarray(xy, dtype=np.float64)[~held], k=1, distance_upper_bound=distance)
    out[np.flatnonzero(~held)[d < distance]] = True
    return out


def species_counts(species: np.ndarray, names: list[str], parts: dict) -> dict:
    """``{name: {split: records}}`` and ``{"background": {split: rows}}`` for the row masks
    ``parts`` (split name -> bool mask)."""
    species = np.asarray(species)
    out = {n: {s: int(((species == k) & m).sum()) for s, m in parts.items()} for k, n in enumerate(names)}
    out["background"] = {s: int(((species < 0) & m).sum()) for s, m in parts.items()}
    return out


def count_lines(counts: dict) -> list[str]:
    """The counts of :func:`species_counts` as lines (one per species, and the background)."""
    return [f"  {name}: " + ", ".join(f"{s} {n}" for s, n in per.items()) for name, per in counts.items()]


def check_training_records(counts: dict, min_records: int, what: str) -> list[str]:
    """Refuse (:class:`ConfigError`, one line) when a species keeps fewer than
    ``min_records`` training records; warnings (lines) for a species with more of its
    records held out than kept for training."""
    warn = []
    for name, per in counts.items():
        if name == "background":
            continue
        total = sum(per.values())
        train = per.get("train", 0)
        if train < min_records:
            shown = ", ".join(f"{s} {n}" for s, n in per.items())
            raise ConfigError(f"{what} leaves species {name!r} with {train} training records of {total} ({shown}); "
                              f"at least {min_records} are needed (--min-train-records): use another --seed, more "
                              "folds (--folds) or a finer grid (--val-blocks)")
        if train < total - train:
            warn.append(f"warning: species {name!r}: {train} of its {total} records train, "
                        f"{total - train} are held out")
    return warn
