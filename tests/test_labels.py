import math

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


# --------------------------------------------------------------- issue 39: every output
def test_conversions_accept_exactly_the_encodings_and_name_the_first_bad_entry():
    Y = as_full_labels([[0, 1], [1, 0]])
    assert Y.dtype == bool and Y.tolist() == [[False, True], [True, False]]
    assert as_full_labels(np.array([[0.0, 1.0]])).dtype == bool and as_full_labels(np.zeros((0, 3), int)).shape == (0, 3)
    assert as_full_labels(np.array([[1, 0]], np.uint8)).tolist() == [[True, False]]
    b = np.array([[True, False]])
    assert as_full_labels(b) is b  # already bool: not copied
    for bad, msg in (([[0, 1], [1, 2]], "label value 2 at row 2, label column 2; expected 0 or 1"),
                     ([[0, -1]], "label value -1 at row 1, label column 2; expected 0 or 1"),
                     ([[0.5, 1.0]], "label value 0.5 at row 1, label column 1; expected 0 or 1"),
                     ([[1.0, float("nan")]], "label value nan at row 1, label column 2; expected 0 or 1")):
        with pytest.raises(DataFormatError) as e:
            as_full_labels(np.array(bad), source="y.csv")
        assert str(e.value) == f"y.csv: {msg}"
    with pytest.raises(DataFormatError) as e:
        as_full_labels(np.array([0, 1]))
    assert str(e.value) == "<input>: labels must be a 2-D (examples x labels) array, got shape (2,)"
    Z = as_observations([[1, 0, -1]])
    assert Z.dtype == np.int8 and Z.tolist() == [[1, 0, -1]]
    assert as_observations(np.array([[True, False]])).tolist() == [[1, 0]]
    assert as_observations(np.array([[-1.0, 1.0]])).tolist() == [[-1, 1]]
    assert as_observations(np.zeros((0, 2), np.int64)).dtype == np.int8
    for bad, msg in (([[0, 2]], "observation value 2 at row 1, label column 2"),
                     ([[0, 0], [-2, 0]], "observation value -2 at row 2, label column 1"),
                     ([[0.5]], "observation value 0.5 at row 1, label column 1")):
        with pytest.raises(DataFormatError) as e:
            as_observations(np.array(bad), source="z.npy")
        assert str(e.value) == (f"z.npy: {msg}; expected +1 (observed positive), -1 (observed negative) or 0 "
                                "(unobserved)")
    with pytest.raises(DataFormatError) as e:
        as_observations(np.zeros((2, 2, 2)))
    assert str(e.value) == "<input>: observations must be a 2-D array, got shape (2, 2, 2)"


def test_counts_and_stats():
    from spmlkit.labels import expected_positives, full_observations, has_positive, label_stats, observation_stats

    Y = np.array([[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    assert has_positive(Y).tolist() == [True, True, False]
    assert label_frequencies(Y).tolist() == [1, 2, 0, 0] and label_frequencies(Y).dtype == np.int64
    F = full_observations(Y)
    assert F.dtype == np.int8 and F.tolist() == [[1, 1, -1, -1], [-1, 1, -1, -1], [-1, -1, -1, -1]]
    assert label_stats(Y) == {"examples": 3, "labels": 4, "cardinality": 1.0, "min_positives": 0, "max_positives": 2,
                              "without_positive": 1, "labels_without_positive": 2}
    empty = label_stats(np.zeros((0, 2)))
    assert math.isnan(empty.pop("cardinality"))
    assert empty == {"examples": 0, "labels": 2, "min_positives": 0, "max_positives": 0, "without_positive": 0,
                     "labels_without_positive": 2}
    Z = np.array([[1, 0, -1], [0, 0, 0], [1, 1, -1]])
    assert observation_stats(Z) == {"examples": 3, "observed_positives": 3, "observed_negatives": 2, "unobserved": 4,
                                    "examples_without_observed_positive": 1}
    assert expected_positives(Y) == pytest.approx(1.0) and expected_positives([[1, 1, 1]]) == 3.0
    assert expected_positives(None) is None and expected_positives(np.zeros((0, 3))) is None


def test_regimes_sort_as_in_the_tables():
    from spmlkit.labels import REGIMES, regime_sort_key

    names = ["zzz", "single_positive", "partial", "full", "single_positive_one_negative",
             "single_positive_all_negatives", "single_positive_largest", "aaa"]
    assert sorted(names, key=regime_sort_key) == [
        "full", "single_positive_all_negatives", "single_positive_one_negative", "single_positive", "partial",
        "single_positive_largest", "aaa", "zzz"]  # then registration order, then unknown names by name
    assert list(REGIMES).index("partial") < list(REGIMES).index("single_positive_largest")


def test_observe_defaults_seed_sequences_and_regime_options():
    Y = np.random.default_rng(1).random((40, 6)) < 0.4
    assert np.array_equal(observe(Y), observe(Y, "single_positive", seed=0))  # the defaults
    assert np.array_equal(observe(Y, seed=np.random.SeedSequence(7)), observe(Y, seed=7))
    Z = observe(Y, "partial", seed=2, hide_prob=0.0)
    assert np.array_equal(Z, np.where(Y, 1, -1))  # nothing hidden
    assert (observe(Y, "partial", seed=2, hide_prob=1.0) == 0).all()  # everything hidden
    assert np.array_equal(observe(Y, "partial", seed=2), observe(Y, "partial", seed=2, hide_prob=0.5))
    for p in (-0.01, 1.01):
        with pytest.raises(ConfigError) as e:
            observe(Y, "partial", hide_prob=p)
        assert str(e.value) == f"hide_prob must be in [0, 1], got {p}"
    with pytest.raises(ConfigError) as e:
        observe(Y, "single_positive_largest")
    assert str(e.value) == ("the 'single_positive_largest' regime needs the area of each label's largest instance "
                            "(COCO-style instance annotations: prepare the bundle from a COCO annotations file)")
    with pytest.raises(ConfigError) as e:
        observe(Y, "single_positive_largest", areas=np.ones((3, 6)))
    assert str(e.value) == "areas have shape (3, 6); expected the labels' shape (40, 6)"
    A = np.where(Y, 1.0, 0.0)
    A[:, 2] = np.where(Y[:, 2], np.nan, 0.0)  # unknown areas count as 0
    A[:, 4] = np.where(Y[:, 4], 5.0, 0.0)
    Z = observe(Y, "single_positive_largest", areas=A, seed=3)
    assert ((Z == 1)[:, 4] == Y[:, 4]).all()  # the largest wherever present
    assert not ((Z == 1)[:, 2] & (Y[:, [0, 1, 3, 5]].any(1))).any()  # NaN area loses to any known one


def test_one_negative_and_extreme_regimes_on_rows_without_a_choice():
    Y = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 0]], bool)
    Zn = observe(Y, "single_positive_one_negative", seed=0)
    assert (Zn[0] != -1).all() and (Zn[1] == np.array([0, 0, 0])).sum() == 2 and (Zn[1] == -1).sum() == 1
    assert Zn[2].tolist().count(1) == 1 and Zn[2].tolist().count(-1) == 1
    for regime in ("single_positive_most_frequent", "single_positive_least_frequent"):
        Z = observe(Y, regime, seed=0)
        assert Z.dtype == np.int8 and Z[1].tolist() == [0, 0, 0] and Z[2].tolist() == [1, 0, 0]
    # frequencies 2, 1, 1: the most frequent label of row 0 is label 0; the least, label 1 or 2 (a tie, drawn)
    assert observe(Y, "single_positive_most_frequent", seed=0)[0].tolist() == [1, 0, 0]
    least = {tuple(observe(Y, "single_positive_least_frequent", seed=s)[0]) for s in range(20)}
    assert least == {(0, 1, 0), (0, 0, 1)}


# ----------------------------------------------- mutation survivors (issue 44): every output pinned
def test_golden_draws_of_every_regime_and_their_shared_positive_stream():
    """The seeded draws of every regime (golden values from 75e1ce7, shared with
    tests/test_sparse_labels.py), their dtype, and the one positive stream: where the
    biased regimes' scores tie everywhere, they keep the uniform regime's positive."""
    from tests.test_sparse_labels import GOLDEN, GOLDEN_AREAS, GOLDEN_Y

    Y = np.array(GOLDEN_Y, dtype=bool)
    for regime, want in GOLDEN.items():
        kw = {"areas": np.array(GOLDEN_AREAS, float)} if regime == "single_positive_largest" else {}
        Z = observe(Y, regime, seed=11, hide_prob=0.4, **kw)
        assert Z.dtype == np.int8 and Z.tolist() == want, regime
    rng = np.random.default_rng(4)
    Y = rng.random((30, 5)) < 0.5
    Y[:, :] = Y[:, :1]  # every label has the same frequency: the biased regimes' scores all tie
    uniform = observe(Y, "single_positive", seed=5)
    for regime in ("single_positive_most_frequent", "single_positive_least_frequent"):
        assert np.array_equal(observe(Y, regime, seed=5), uniform), regime
    assert np.array_equal(observe(Y, "single_positive_largest", seed=5, areas=np.where(Y, 2, 0)), uniform)


def test_public_helpers_take_any_numeric_labels():
    from spmlkit.labels import label_stats, observation_stats, sample_single_positive

    assert label_frequencies(np.array([[2, 0], [1, 3]])).tolist() == [2, 1]  # counts examples, not values
    Y = np.array([[0, 2, 0], [0, 0, 0]])
    idx = sample_single_positive(Y, np.random.default_rng(0))
    assert idx.tolist() == [1, -1]  # -1: a row without a positive
    assert label_stats(np.array([[2, 1, 0], [1, 0, 0], [1, 1, 1]])) == {  # a 2 counts as one positive
        "examples": 3, "labels": 3, "cardinality": 2.0, "min_positives": 1, "max_positives": 3,
        "without_positive": 0, "labels_without_positive": 0}
    assert observation_stats(np.array([[1, 0, -1, 0]]))["examples"] == 1
    assert as_observations(np.array([[True, False]])).dtype == np.int8
    assert as_observations(np.array([[-1.0, 1.0]])).dtype == np.int8
    with pytest.raises(DataFormatError) as e:
        as_full_labels(np.array([0, 1]), source="y.csv")
    assert str(e.value) == "y.csv: labels must be a 2-D (examples x labels) array, got shape (2,)"
    with pytest.raises(DataFormatError) as e:
        as_observations(np.array([0, 1]), source="z.csv")
    assert str(e.value) == "z.csv: observations must be a 2-D array, got shape (2,)"


def test_label_names_are_normalised_and_checked_with_one_exact_line():
    from spmlkit.labels import check_label_names, normalize_label

    assert normalize_label(" cafe\u0301 ") == "caf\u00e9" and normalize_label(7) == "7"
    check_label_names(["cat", "dog_label", 3, "id_x", "x2"], source="l.csv")  # nothing refused
    cases = (("a;b", "label 'a;b' contains ';', which separates the labels of a set in spmlkit's outputs "
                     "(--top-k, label-set files); rename the label"),
             ("probabilities", "a label is named 'probabilities', as a column predictions are written beside "
                               "(id, x, y, labels, probabilities); rename the label (e.g. 'probabilities_label')"),
             ("x", "a label is named 'x', as a column predictions are written beside (id, x, y, labels, "
                   "probabilities); rename the label (e.g. 'x_label')"),
             ("NA", "a label is named 'NA', a missing-value marker; leave the cell empty for no label, or rename "
                    "the label"))
    for name, msg in cases:
        with pytest.raises(DataFormatError) as e:
            check_label_names(["ok", name, "a;b;c"], source="l.csv")
        assert str(e.value) == f"l.csv: {msg}"


def test_every_helper_on_sparse_labels_equals_the_dense_answer():
    from spmlkit.labels import (expected_positives, full_observations, has_positive, label_stats,
                                observation_stats, positives_per_row)
    from spmlkit.sparse_labels import SparseLabels

    Y = np.array([[1, 0, 1], [0, 0, 0], [0, 1, 0], [1, 1, 1]], bool)
    S = SparseLabels.from_dense(Y)
    assert has_positive(S).tolist() == has_positive(Y).tolist() == [True, False, True, True]
    assert positives_per_row(S).tolist() == positives_per_row(Y).tolist() == [2, 0, 1, 3]
    assert positives_per_row(np.array([[1, -1, 1]])).tolist() == [2]
    assert label_frequencies(S).tolist() == label_frequencies(Y).tolist() == [2, 2, 2]
    assert label_stats(S) == label_stats(Y) and expected_positives(S) == expected_positives(Y) == 1.5
    F = full_observations(S)
    assert isinstance(F, SparseLabels) and F.dtype == np.int8 and F.fill == -1 and F.values is None
    assert F.dense().tolist() == full_observations(Y).tolist()
    Z = np.array([[1, 0, -1], [0, 0, 0], [-1, -1, -1], [0, 1, 0]], np.int8)
    for form in (SparseLabels.from_dense(Z), SparseLabels.from_dense(Z, fill=0), SparseLabels.from_dense(Z, fill=-1)):
        assert observation_stats(form) == observation_stats(Z) == {
            "examples": 4, "observed_positives": 2, "observed_negatives": 4, "unobserved": 6,
            "examples_without_observed_positive": 2}
    # conversions keep a sparse matrix sparse: as it is when it is already of the kind asked
    Zs = SparseLabels.from_dense(Z)
    assert as_observations(Zs) is Zs and as_full_labels(S) is S
    O = as_observations(S)
    assert O.dtype == np.int8 and O.fill == 0 and O.dense().tolist() == Y.astype(np.int8).tolist()
    B = as_full_labels(SparseLabels.from_dense(Y.astype(np.int8)))
    assert B.dtype == bool and B.values is None and B.dense().tolist() == Y.tolist()
    assert as_full_labels(SparseLabels(np.array([0, 1]), np.array([2]), np.array([1], np.int8), n_labels=3)) \
        .dense().tolist() == [[False, False, True]]
    for bad in (SparseLabels.from_dense(Z, fill=0), SparseLabels.from_dense(np.array([[-1, -1, 1]], np.int8))):
        with pytest.raises(DataFormatError) as e:
            as_full_labels(bad, source="y.npz")
        assert str(e.value) == "y.npz: full labels must be 0 or 1; these hold -1 (observations?)"


def test_observe_of_no_rows_keeps_the_form_and_the_fill_and_dense_stays_dense():
    from spmlkit.labels import REGIMES, observation_stats
    from spmlkit.sparse_labels import SparseLabels

    for regime in ("full", "single_positive", "partial"):
        Z = observe(np.zeros((0, 3), bool), regime)
        assert isinstance(Z, np.ndarray) and Z.dtype == np.int8 and Z.shape == (0, 3)
        S = observe(SparseLabels.empty(0, 3, dtype=bool), regime)
        assert isinstance(S, SparseLabels) and S.shape == (0, 3) and S.fill == REGIMES[regime].fill
    Y = np.random.default_rng(0).random((7, 4)) < 0.5
    for rows in (None, 3):
        assert isinstance(observe(Y, "single_positive", rows_per_block=rows), np.ndarray)
    Z2 = SparseLabels.from_dense(np.array([[1, 1, 0], [0, 0, 0], [0, 0, 0]], np.int8))
    assert observation_stats(Z2)["examples_without_observed_positive"] == 2


def test_text_labels_are_refused_with_their_position():
    with pytest.raises(DataFormatError) as e:
        as_full_labels(np.array([["1", "a"]]), source="y.csv")
    assert str(e.value) == "y.csv: label value '1' at row 1, label column 1; expected 0 or 1"
    with pytest.raises(DataFormatError) as e:
        as_observations(np.array([["b"]]), source="z.csv")
    assert str(e.value).startswith("z.csv: observation value 'b' at row 1, label column 1;")
