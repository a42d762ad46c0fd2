"""Drawn inputs for the twin tests: small label matrices and scores that reach the edges
(empty rows, rows with every label, labels without a positive, ties within and across
labels, one row, one label), and the hypothesis settings every twin test runs under
(derandomised: the default suite draws the same examples every run)."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: the settings of every twin property test: seeded draws, no example database, few examples
TWIN = settings(max_examples=40, deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=list(HealthCheck))
#: the same for tests whose example costs a file or a model (a few milliseconds each)
TWIN_FEW = settings(TWIN, max_examples=15)


@st.composite
def label_matrix(draw, *, max_rows: int = 30, max_labels: int = 5, min_rows: int = 1):
    """A bool ``(N, L)`` matrix; its rows are drawn from patterns that reach the edges."""
    n = draw(st.integers(min_rows, max_rows))
    L = draw(st.integers(1, max_labels))
    density = draw(st.sampled_from([0.0, 0.15, 0.5, 0.9, 1.0]))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    Y = rng.random((n, L)) < density
    kind = draw(st.sampled_from(["as drawn", "empty rows", "full rows", "empty label", "both"]))
    if kind in ("empty rows", "both") and n > 1:
        Y[rng.random(n) < 0.3] = False
    if kind in ("full rows", "both"):
        Y[rng.random(n) < 0.3] = True
    if kind == "empty label":
        Y[:, rng.integers(0, L)] = False
    return Y


@st.composite
def scores_for(draw, shape, *, members: int = 1):
    """``(G, N, L)`` float32 scores with ties: a few distinct values (ties within and across
    labels), or continuous values, or every score equal."""
    G = members
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["few values", "few values", "continuous", "all equal", "row constant"]))
    n, L = shape
    if kind == "few values":
        s = rng.integers(-2, 3, size=(G, n, L)).astype(np.float32) / 2
    elif kind == "continuous":
        s = rng.normal(size=(G, n, L)).astype(np.float32) * 4
    elif kind == "all equal":
        s = np.full((G, n, L), 0.25, dtype=np.float32)
    else:  # each row one score for every label: ties across every label boundary
        s = np.repeat(rng.integers(0, 3, size=(G, n, 1)), L, axis=2).astype(np.float32)
    return s


def chunked(S: np.ndarray, rows: int):
    """``chunks()`` as the streamed metrics take it: ``(start, block)`` of ``rows`` rows
    (``S`` ``(N, L)`` or ``(G, N, L)``), recomputed on every call."""
    n = S.shape[-2]

    def chunks():
        for s in range(0, n, rows):
            yield s, S[..., s:s + rows, :]
    return chunks
