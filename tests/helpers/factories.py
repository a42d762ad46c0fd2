"""Factories shared by the tests (instead of a hand-built copy in each test file):

* small learnable datasets (the ``toy_bundle`` and ``presence_bundle`` fixtures of
  ``tests/conftest.py`` prepare them into bundles);
* observations ``Z`` with one observed positive per row (Cole et al.'s single-positive
  regime), the ``TrainContext`` a trainer gives a method, a set-up method and a batch;
* :class:`ToyLearner`, the smallest learner :func:`spmlkit.training.loop.fit` drives."""
from __future__ import annotations

import numpy as np


def make_toy_dataset(n=120, d=6, L=5, seed=0, with_test=True):
    """A small learnable multi-label problem: labels are thresholded linear functions."""
    from spmlkit.data import MultiLabelDataset, Split

    rng = np.random.default_rng(seed)
    W = rng.normal(size=(d, L))

    def make(m):
        X = rng.normal(size=(m, d)).astype(np.float32)
        Y = (X @ W + rng.normal(scale=0.3, size=(m, L))) > 0.8
        Y[~Y.any(1), 0] = True
        return Split(X=X, Y=Y)

    splits = {"train": make(n)}
    if with_test:
        splits["test"] = make(n // 2)
    return MultiLabelDataset("toy", [f"l{i}" for i in range(L)], splits, source="toy")


def make_presence_only_dataset(n=120, n_background=80, d=6, L=5, seed=0):
    """The toy problem as presence-only data (issue 24): one observed positive per training
    example, ``n_background`` background rows (no observed label), a test split whose
    last label is surveyed on half of the examples only (a label mask)."""
    from spmlkit.data import MultiLabelDataset, Split

    toy = make_toy_dataset(n=n, d=d, L=L, seed=seed)
    rng = np.random.default_rng(seed + 1)
    tr, te = toy.splits["train"], toy.splits["test"]
    Z = np.zeros((n + n_background, L), np.int8)
    Z[np.arange(n), [rng.choice(np.flatnonzero(y)) for y in tr.Y]] = 1
    X = np.concatenate([tr.X, rng.normal(size=(n_background, d)).astype(np.float32)])
    mask = np.ones_like(te.Y)
    mask[: len(te.Y) // 2, -1] = False
    return MultiLabelDataset("toy-po", list(toy.label_names), {"train": Split(X=X, Z=Z),
                                                                "test": Split(X=te.X, Y=te.Y, mask=mask)},
                             source="toy-po", background=True)


# ------------------------------------------------------------------ observations and method parts
# torch and spmlkit are imported inside the factories: conftest imports this module before
# it sets OMP_WAIT_POLICY, which must happen before torch loads libgomp.
def single_positive(n: int, n_labels: int, rng):
    """Observations ``Z`` (``n × n_labels``, int8): one observed positive per row at a label
    drawn uniformly by ``rng``, every other entry unobserved (0), Cole et al.'s
    single-positive regime.  ``rng`` is a ``numpy.random.Generator`` (returns an array) or
    a ``torch.Generator`` (returns a tensor); the caller may go on drawing from it."""
    import torch

    if isinstance(rng, torch.Generator):
        Z = torch.zeros(n, n_labels, dtype=torch.int8)
        Z[torch.arange(n), torch.randint(0, n_labels, (n,), generator=rng)] = 1
        return Z
    Z = np.zeros((n, n_labels), dtype=np.int8)
    Z[np.arange(n), rng.integers(0, n_labels, n)] = 1
    return Z


def train_context(observed, *, G: int = 1, **fields):
    """The :class:`~spmlkit.methods.base.TrainContext` a trainer gives a method training on
    ``observed`` (``N × L``, +1/−1/0, an array or a tensor) with ``G`` stacked members;
    ``fields`` sets the others (``epochs``, ``expected_positives``, ``device``, ...)."""
    import torch

    from spmlkit.methods.base import TrainContext

    from spmlkit.sparse_labels import SparseLabels

    Z = observed if isinstance(observed, SparseLabels) else torch.as_tensor(observed, dtype=torch.int8)
    return TrainContext(n_train=Z.shape[0], n_labels=Z.shape[1], observed=Z, n_members=G, **fields)


def setup_method(name: str, observed, G: int = 1, *, epochs: int | None = None, **params):
    """``build_method(name, **params)`` set up on :func:`train_context` of ``observed``."""
    from spmlkit.methods import build_method

    method = build_method(name, **params)
    method.setup(train_context(observed, G=G, **({} if epochs is None else {"epochs": epochs})))
    return method


def batch_of(observed, rows=None, G: int = 1):
    """A :class:`~spmlkit.methods.base.Batch` without inputs: rows ``rows`` of ``observed``
    (default: every row, in order) for each of ``G`` members."""
    import torch

    from spmlkit.methods.base import Batch

    Z = torch.as_tensor(observed, dtype=torch.int8)
    rows = torch.arange(Z.shape[0]) if rows is None else torch.as_tensor(rows)
    idx = rows.view(1, -1).expand(G, -1)
    return Batch(inputs=None, index=idx, observed=Z[idx])


class ToyLearner:
    """The smallest learner :func:`spmlkit.training.loop.fit` drives (its ``Learner``
    protocol): ``G`` stacked linear heads on fixed features ``X`` with observations ``Z``,
    plain SGD, batches in a per-epoch seeded order (so a resumed run sees the same
    batches).  ``splits`` maps split names to features (``"val"``, ``"train"``)."""

    def __init__(self, X, Z, *, G: int = 2, lr: float = 0.5, batch_size: int = 4, seed: int = 0, splits=None):
        import torch

        from spmlkit.models.heads import build_head

        self.X = torch.as_tensor(X, dtype=torch.float32)
        self.Z = torch.as_tensor(Z, dtype=torch.int8)
        self.splits = {"train": self.X, **{k: torch.as_tensor(v, dtype=torch.float32) for k, v in (splits or {}).items()}}
        self.n_members, self.batch_size, self.seed = G, batch_size, seed
        self.model = build_head("linear", self.X.shape[1], self.Z.shape[1],
                                [torch.Generator().manual_seed(seed + g) for g in range(G)])
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)

    def batches(self, epoch: int):
        import torch

        from spmlkit.methods.base import Batch

        order = torch.randperm(len(self.X), generator=torch.Generator().manual_seed(1000 * self.seed + epoch))
        for rows in order.split(self.batch_size):
            idx = rows.view(1, -1).expand(self.n_members, -1)
            yield Batch(inputs=self.X[idx], index=idx, observed=self.Z[idx], distinct=True)

    def zero_grad(self) -> None:
        self.optimizer.zero_grad()

    def step(self) -> None:
        self.optimizer.step()

    def scores(self, split: str):
        return self.model(self.splits[split])

    def member_state(self, g: int) -> dict:
        return {k: v[g].detach().clone() for k, v in self.model.state_dict().items()}

    def load_member_state(self, g: int, state: dict) -> None:
        import torch

        with torch.no_grad():
            for k, v in self.model.state_dict().items():
                v[g] = state[k]

    def state_dict(self) -> dict:
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])


#: label names of single_positive_data
RULE_NAMES = [f"l{i}" for i in range(12)]


def single_positive_data(n, seed=0, L=12, D=8):
    """Features with a learnable multi-label structure, 1-3 true labels per row, one
    uniformly chosen observed positive per row."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(D, L))
    X = rng.normal(size=(n, D))
    S = X @ W + rng.normal(scale=0.5, size=(n, L))
    sizes = rng.integers(1, 4, n)
    Y = np.zeros((n, L), dtype=bool)
    order = np.argsort(-S, axis=1)
    for i in range(n):
        Y[i, order[i, :sizes[i]]] = True
    obs = np.array([rng.choice(np.flatnonzero(r)) for r in Y])
    return X, Y, obs


class OneSplitBundle:
    """What :func:`spmlkit.practitioner.evaluation.evaluate_model` reads of a bundle: one split
    (``test``) of features ``X`` with full labels ``Y``, observations ``Z`` and a label mask."""

    kind, path, meta = "features", "bundle", {}

    def __init__(self, X, label_names, *, Y=None, Z=None, mask=None):
        self.X, self.label_names, self.Y, self.Z, self.mask = X, label_names, Y, Z, mask

    def _check_split(self, split):
        assert split == "test"

    def size(self, split):
        return len(self.X)

    def features(self, split, feature_set=None):
        return self.X

    def labels(self, split):
        return self.Y

    def observations(self, split):
        return self.Z

    def label_mask(self, split):
        return self.mask


def one_species_bundle(path, *, n: int, d: int, n_records: int, shift: float, column: int = 0, seed: int = 0):
    """A prepared presence-only bundle of one species ("Aus alpha") at ``path``: ``n`` rows of
    ``d`` standard-normal covariates, the first ``n_records`` of them the species' records,
    whose covariate ``column`` is moved by ``shift`` (the rest background)."""
    from spmlkit.data import MultiLabelDataset, Split, prepare_bundle

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:n_records, column] += shift
    Z = np.zeros((n, 1), np.int8)
    Z[:n_records, 0] = 1
    ds = MultiLabelDataset("one", ["Aus alpha"], {"train": Split(X=X, Z=Z)}, source="one", background=True)
    return prepare_bundle(ds, path, log=lambda m: None)
