"""Background rows in the linear setting (presence-only data).

A **background row** is a training example with no observed label (its row of Z is all
0): an ecologist's random background site, an unlabelled image.  The data model keeps
such rows only when the dataset declares them (``MultiLabelDataset.background``; other
examples without an observation are dropped by ``spml prepare``), so a bundle's
training rows with no observed label are exactly its background rows.

A method whose loss consumes background (``Method.uses_background``: the loss takes
``background_logits``) is trained by epochs over the **labelled** rows; each step, every
member draws one background row per example, uniformly with replacement, from its own
generator, and the batch carries their inputs (``Batch.background``).  Every other
method is trained exactly as before: background rows, if any, are ordinary rows of the
epoch, whose observation row is all unobserved.
"""
from __future__ import annotations

import numpy as np
import torch

from ..errors import ConfigError
from ..methods.base import MemberStreams
from ..sparse_labels import as_sparse


class BackgroundSampler(MemberStreams):
    """The labelled and background rows of a training set and the per-step draws."""

    def __init__(self, observed: np.ndarray | torch.Tensor, seeds: list[int], *, method: str = ""):
        Z = as_sparse(observed.cpu().numpy() if torch.is_tensor(observed) else observed, dtype=np.int8)
        has = torch.from_numpy(Z.row_counts(0) < Z.n_labels)  # an observed label (on the CPU whatever the device)
        self.labelled = torch.nonzero(has).flatten()
        self.rows = torch.nonzero(~has).flatten()
        if len(self.rows) == 0:
            raise ConfigError(f"method {method!r} needs background rows (training examples with no observed label, "
                              "e.g. random background sites: 'spml prepare' keeps them for presence-only data); "
                              "this bundle has none")
        if len(self.labelled) == 0:
            raise ConfigError("the training set has no example with an observed label")
        # a stream of its own per member: the epoch permutations are not shifted by the draws
        self.generators = [torch.Generator(device="cpu").manual_seed(1_000_003 + int(s)) for s in seeds]

    @property
    def n_labelled(self) -> int:
        return len(self.labelled)

    def epoch_order(self, generators: list[torch.Generator]) -> torch.Tensor:
        """``(G, n_labelled)`` row numbers: a permutation of the labelled rows per member."""
        n = len(self.labelled)
        return torch.stack([self.labelled[torch.randperm(n, generator=g, device="cpu")] for g in generators])

    def draw(self, n: int) -> torch.Tensor:
        """``(G, n)`` background row numbers, uniformly with replacement, one stream per member."""
        k = len(self.rows)
        return torch.stack([self.rows[torch.randint(k, (n,), generator=g, device="cpu")] for g in self.generators])



def attach_background(learner, method, observed, seeds) -> None:
    """Give ``learner`` (a :class:`~spmlkit.training.linear.LinearLearner`) the background
    sampler of ``method``; distributed runs are not supported for it."""
    if learner.ctx.enabled:
        raise ConfigError(f"method {method.name!r} (background rows) does not support distributed training yet")
    learner.background = BackgroundSampler(observed, [int(s) for s in seeds], method=method.name)
