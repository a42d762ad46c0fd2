
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from spmlkit.errors import ConfigError, DataFormatError, UnknownNameError
from spmlkit.labels import as_full_labels, as_observations, get_regime, label_frequencies, observe


label_matrices = st.integers(1, 30).flatmap(
    lambda n: st.integers(1, 12).flatmap(lambda L: arrays(bool, (n, L))))


@settings(max_examples=60, deadline=None)
@given(Y=label_matrices, seed=st.integers(0, 2**31 - 1))
def test_single_positive_keeps_exactly_one_true_positive(Y, seed):
    Z = observe(Y, "single_positive", seed=seed)
    has = Y.any(1)
    assert ((Z == 1).sum(1) == has.astype(int)).all()          # one positive where possible
    assert ((Z == 1) <= Y).all()                                # always a true one
    assert not (Z == -1).any()                                  # no negatives observed


@settings(max_examples=40, deadline=None)
@given(Y=label_matrices, seed=st.integers(0, 2**31 - 1))
def test_regimes_share_the_positive_and_add_true_negatives(Y, seed):
    Z1 = observe(Y, "single_positive", seed=seed)
    Za = observe(Y, "single_positive_all_negatives", seed=seed)
    Zn = observe(Y, "single_positive_one_negative", seed=seed)
    assert ((Za == 1) == (Z1 == 1)).all() and ((Zn == 1) == (Z1 == 1)).all()
    assert ((Za == -1) == ~Y).all()                             # all true negatives
    assert ((Zn == -1) <= ~Y).all()                             # negatives are true ones
    assert ((Zn == -1).sum(1) == (~Y).any(1).astype(int)).all()  # exactly one where possible


def test_full_and_partial():
    rng = np.random.default_rng(0)
    Y = rng.random((2000, 10)) < 0.3
    assert (observe(Y, "full") == np.where(Y, 1, -1)).all()
    Z = observe(Y, "partial", seed=3, hide_prob=0.3)
    hidden = (Z == 0).mean()
    assert abs(hidden - 0.3) < 0.01
    vis = Z != 0
    assert ((Z == 1) == (Y & vis)).all() and ((Z == -1) == (~Y & vis)).all()


def test_positive_choice_is_uniform():
    Y = np.ones((30000, 3), dtype=bool)
    Z = observe(Y, "single_positive", seed=1)
    freq = (Z == 1).mean(0)
    assert np.allclose(freq, 1 / 3, atol=0.01)


def test_seeded_and_deterministic():
    Y = np.random.default_rng(0).random((50, 7)) < 0.4
    assert (observe(Y, seed=5) == observe(Y, seed=5)).all()
    assert (observe(Y, seed=5) != observe(Y, seed=6)).any()


def test_bad_values_are_reported_with_position():
    with pytest.raises(DataFormatError, match="row 2, label column 3"):
        as_full_labels(np.array([[0, 1, 0], [1, 0, 2]]))
    with pytest.raises(DataFormatError, match="expected \\+1"):
        as_observations(np.array([[0, 5]]))
    with pytest.raises(UnknownNameError, match="unknown observation regime 'nope'"):
        get_regime("nope")
    assert get_regime("1p").name == "single_positive"


# Biased ("realistic") single positives: the kept positive is the most frequent, the least
# frequent or the largest-object label of each example (spmlkit.labels), and COCO's
# largest-instance areas that feed the last one (data/formats/coco.py).


BIASED = ("single_positive_most_frequent", "single_positive_least_frequent", "single_positive_largest")

biased_label_matrices = st.integers(1, 30).flatmap(
    lambda n: st.integers(1, 8).flatmap(lambda L: arrays(np.bool_, (n, L))))


def areas_for(Y, seed):
    rng = np.random.default_rng(seed)
    A = rng.integers(1, 6, size=Y.shape).astype(float)  # small integers: ties happen
    return np.where(Y, A, 0.0)


def score_of(regime, Y, A):
    freq = label_frequencies(Y).astype(float)
    if regime == "single_positive_most_frequent":
        return np.broadcast_to(freq, Y.shape)
    if regime == "single_positive_least_frequent":
        return np.broadcast_to(-freq, Y.shape)
    return A


@settings(max_examples=60, deadline=None)
@given(Y=biased_label_matrices, seed=st.integers(0, 2 ** 16))
def test_one_true_positive_with_the_extreme_score(Y, seed):
    A = areas_for(Y, seed)
    for regime in BIASED:
        Z = observe(Y, regime, seed=seed, areas=A)
        has = Y.any(axis=1)
        assert ((Z == 1).sum(axis=1) == has.astype(int)).all()  # exactly one observed positive per row with one
        assert not (Z == -1).any()  # nothing else observed
        assert (Y[Z == 1]).all()  # always a true positive
        S = score_of(regime, Y, A)
        for n in np.flatnonzero(has):
            kept = int(np.flatnonzero(Z[n] == 1)[0])
            assert S[n, kept] == S[n][Y[n]].max()  # the most / least frequent, or the largest, of its positives
        assert np.array_equal(Z, observe(Y, regime, seed=seed, areas=A))  # seeded


def test_ties_are_broken_at_random_by_the_seed():
    Y = np.ones((200, 3), dtype=bool)  # every label equally frequent: every row is a three-way tie
    kept = {tuple(np.argmax(observe(Y, "single_positive_most_frequent", seed=s) == 1, axis=1)) for s in range(3)}
    assert len(kept) == 3
    cols = np.argmax(observe(Y, "single_positive_most_frequent", seed=0) == 1, axis=1)
    assert set(np.bincount(cols, minlength=3).tolist()) != {0} and np.bincount(cols).min() > 40  # roughly uniform


def test_biased_choices_differ_from_uniform_as_intended():
    Y = np.zeros((4, 3), dtype=bool)
    Y[:, 0] = True  # label 0 is on every example
    Y[0, 1] = Y[1, 1] = Y[2, 2] = True
    most = observe(Y, "single_positive_most_frequent", seed=0)
    least = observe(Y, "single_positive_least_frequent", seed=0)
    assert (most[:, 0] == 1).all()
    assert least[0, 1] == least[1, 1] == least[2, 2] == least[3, 0] == 1
    A = np.where(Y, [[1.0, 9.0, 0.0]] * 4, 0.0)
    assert observe(Y, "single_positive_largest", seed=0, areas=A)[:, 1].tolist() == [1, 1, 0, 0]


def test_largest_needs_areas_and_aliases():
    Y = np.array([[1, 1]], dtype=bool)
    with pytest.raises(ConfigError, match="instance"):
        observe(Y, "single_positive_largest", seed=0)
    with pytest.raises(ConfigError, match="shape"):
        observe(Y, "single_positive_largest", seed=0, areas=np.ones((2, 2)))
    assert get_regime("1p-frequent").name == "single_positive_most_frequent"
    assert get_regime("1p-rare").name == "single_positive_least_frequent"
    assert get_regime("1p-largest").name == "single_positive_largest"


def test_uniform_regime_unchanged_by_the_new_argument():
    rng = np.random.default_rng(0)
    Y = rng.random((50, 6)) < 0.4
    assert np.array_equal(observe(Y, "single_positive", seed=3), observe(Y, "single_positive", seed=3, areas=None))
