"""Which validation rows a run scores every epoch: all of them, or above a size a
seeded, fixed subsample.

Every epoch of a linear run scores the validation split (the model's logits, then the
selection criterion; :func:`spmlkit.metrics.stream_rank_counts` when they are too large
to hold).  Its cost is linear in the scored entries (rows × labels): the forward pass
and one sort per label of each row chunk.  The rule:

* up to :data:`VAL_ENTRIES` scored entries (validation rows × labels, 2**27 ≈ 134
  million: 512 MiB of float32 logits per member) every row is scored, as before.  Every
  shared data set and every committed table is far below it (the largest, VOC 2007's
  2,508 × 20 validation rows, is 50,160 entries), so nothing they record changes;
* above it, ``max(VAL_ENTRIES // L, MIN_VAL_ROWS)`` rows (at most N_val), drawn without
  replacement by ``numpy.random.default_rng(config.seed)`` and kept in row order: the
  same rows every epoch, for every member of a stack, and after a resume (they depend
  on the configuration alone).  At L = 10,000 labels that is 13,421 rows: one
  validation then costs about as much as an epoch over 13,421 training rows' forward
  passes plus their sort, a small share of a training epoch over ~4× as many rows (the
  usual 80/20 split) with its backward pass; without the cap it would grow with the
  validation split, so that a 1M-row run spent more time validating than training.
  ``MIN_VAL_ROWS`` keeps enough rows that most labels keep a positive when L is large.

``TrainConfig.val_rows`` (``spml train --val-rows N|all``) overrides the rule: ``all``
scores every row whatever the size, ``N`` scores ``min(N, N_val)`` rows drawn the same
way.  The number is said once (:func:`validation_note`) and recorded in the run
(:meth:`ValidationRows.record`, in the results' ``notes["validation"]``).

Early stopping and the best epoch read the evaluator built on these rows
(:func:`spmlkit.training.prepare.prepare_run`); a recipe choosing between its members
should score the same rows (:meth:`ValidationRows.take` on its observations, and its
logits).  Fine-tuning scores every row (its validation is a forward pass of the
backbone, whose own cost is the epoch's).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sparse_labels import SparseLabels

#: validation rows × labels scored every epoch without subsampling (see the module docstring)
VAL_ENTRIES = 2 ** 27
#: the fewest rows a subsample keeps (when L is so large that VAL_ENTRIES // L is fewer)
MIN_VAL_ROWS = 10_000


@dataclass(frozen=True)
class ValidationRows:
    """The validation rows a run scores: ``rows`` (ascending indices into the split) or
    None for every row; ``rule``: ``auto`` (the size rule) or ``val_rows`` (the user's)."""

    n_val: int
    n_labels: int
    rows: np.ndarray | None
    rule: str
    seed: int

    @property
    def subsampled(self) -> bool:
        return self.rows is not None

    @property
    def n_scored(self) -> int:
        return self.n_val if self.rows is None else int(self.rows.size)

    def take(self, labels):
        """The scored rows of a split-sized array or :class:`SparseLabels` (None stays None)."""
        if labels is None or self.rows is None:
            return labels
        if isinstance(labels, SparseLabels):
            return labels.take(self.rows)
        return np.asarray(labels)[self.rows]

    def record(self) -> dict:
        """What the run records about its validation (``notes["validation"]``)."""
        return {"rows_scored": self.n_scored, "rows": self.n_val, "labels": self.n_labels, "rule": self.rule,
                "seed": self.seed, "subsampled": self.subsampled}

    def note(self) -> str | None:
        """One line for the user when a subsample is scored, else None."""
        if self.rows is None:
            return None
        why = (f"validation rows x labels over {VAL_ENTRIES:,}" if self.rule == "auto" else "--val-rows")
        return (f"validation scores a fixed subsample of {self.n_scored:,} of the {self.n_val:,} validation rows "
                f"every epoch ({why}; drawn with seed {self.seed}); --val-rows all scores every row")


def validation_rows(n_val: int, n_labels: int, config) -> ValidationRows:
    """The rows a run of ``config`` scores on a validation split of ``n_val`` rows and
    ``n_labels`` labels (the rule is the module docstring's).  Fine-tuning: every row."""
    n_val, n_labels = int(n_val), int(n_labels)
    want = getattr(config, "val_rows", "auto")
    seed = int(config.seed)
    if config.setting != "linear" or want == "all":
        return ValidationRows(n_val, n_labels, None, "all" if want == "all" else "auto", seed)
    if want == "auto":
        if n_val * n_labels <= VAL_ENTRIES:
            return ValidationRows(n_val, n_labels, None, "auto", seed)
        size = max(VAL_ENTRIES // max(n_labels, 1), MIN_VAL_ROWS)
    else:
        size = int(want)
    rule = "auto" if want == "auto" else "val_rows"
    if size >= n_val:
        return ValidationRows(n_val, n_labels, None, rule, seed)
    rows = np.sort(np.random.default_rng(seed).choice(n_val, size=size, replace=False)).astype(np.int64)
    return ValidationRows(n_val, n_labels, rows, rule, seed)


def validation_note(config, bundle) -> str | None:
    """The line said once when ``config`` on ``bundle`` scores a validation subsample."""
    n_val = bundle.size("val")
    return validation_rows(n_val, bundle.n_labels, config).note() if n_val else None
