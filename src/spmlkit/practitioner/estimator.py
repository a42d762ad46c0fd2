"""A scikit-learn estimator for single-positive multi-label data.

>>> import numpy as np
>>> from spmlkit import SPMLClassifier
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(60, 4))
>>> y = np.array(["cat", "dog", "sofa"])[rng.integers(0, 3, 60)]   # one known label per row
>>> clf = SPMLClassifier("an", epochs=2).fit(X, y)
>>> clf.classes_.tolist(), clf.predict(X[:2]).shape, clf.predict_proba(X[:2]).shape
(['cat', 'dog', 'sofa'], (2, 3), (2, 3))

Targets (``y`` of :meth:`SPMLClassifier.fit` and :meth:`~SPMLClassifier.score`)
----------------------------------------------------------------------------------
* an ``(N, L)`` observation matrix ``Z`` in the package's encoding (+1 observed
  positive, −1 observed negative, 0 unobserved) — ``classes_`` is ``0..L-1``;
* an ``(N, L)`` bool or 0/1 matrix of observed positives (the same thing without
  negatives; this is also what scikit-learn calls a multilabel indicator matrix);
* a pandas DataFrame of either (``classes_`` = its columns);
* a 1-D array of labels, one per row: each row's single observed positive (the
  practitioner's "one label per image" CSV); ``classes_`` = the sorted distinct labels.

Whatever the input, :meth:`predict` returns **label sets** as an ``(N, L)`` 0/1 int
indicator matrix over ``classes_`` and :meth:`predict_proba` an ``(N, L)`` float matrix
of per-label probabilities: an SPML model is trained with one label per example and
asked for all of them.

Training reuses :func:`spmlkit.training.train` unchanged on an in-memory
bundle (:class:`spmlkit.data.memory.ArrayBundle`): the same loop, methods
(``build_method(name, **method_params)`` — any registered method), stacked Adam,
best-epoch selection and seeds as ``spml train``; nothing is written to disk.

Validation and model selection
------------------------------
``validation_fraction`` of the rows (seeded) is held out to choose the best epoch with
``selection`` (``auto``: observed-positive mAP, see :mod:`spmlkit.config`).  When
``fit(X, y, validation_data=(X_val, Y_val))`` gets a small **fully labelled** set, it
is used instead (selection by mAP, per-label thresholds tunable, k estimated by Cole
et al. Eq. A1).  With ``validation_fraction=0`` (or too few rows to hold any out) the
final epoch is kept.

scikit-learn compatibility
--------------------------
Tags (``__sklearn_tags__``): multi-label and multi-output classifier that also
accepts 1-D targets.  :func:`sklearn.utils.estimator_checks.check_estimator` passes
except the checks listed in :data:`EXPECTED_FAILED_CHECKS`, each with the reason
(they assume that 1-D class labels in means 1-D class labels out).  :meth:`score` is
the observed-positive mAP in [0, 1] (needs no full labels), so ``GridSearchCV`` works
without a ``scoring`` argument; :func:`observed_map_scorer` and
:func:`observed_recall_scorer` can be passed as ``scoring=``.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted

from ..config import TrainConfig
from ..data.encoding import CovariateEncoding
from ..data.memory import ArrayBundle
from ..errors import ConfigError
from ..labels import normalize_label
from ..metrics import mean_average_precision, observed_positive_recall_at_k
from ..training.callbacks import PrintEpochs
from ..training.run import train
from .labelsets import (RULES, LabelSetWarning, estimate_k, label_set_warning, model_label_rule, rule_k_estimate,
                        tune_label_thresholds)
from .saved import SavedModel, load_model, save_model

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover - older scikit-learn
    def _validate_data(est, X, *, reset=True, **kw):
        return est._validate_data(X, reset=reset, **kw)

#: check_estimator checks that do not apply, with the reason (pass to
#: ``check_estimator(..., expected_failed_checks=EXPECTED_FAILED_CHECKS)``).
EXPECTED_FAILED_CHECKS = {
    "check_classifiers_train": "1-D y is read as one observed positive per row; predict returns label sets "
                               "(N, n_classes), not one class per row",
    "check_classifiers_classes": "1-D y in, label sets (N, n_classes) out: predictions are not class labels",
    "check_decision_proba_consistency": "binary y is two labels: decision_function has one column per label "
                                        "(N, 2), the check ranks it as the 1-D score of a binary classifier",
    "check_supervised_y_2d": "a 2-D y is an observation matrix (+1/-1/0), not a column of class labels, so "
                             "y[:, None] of class ids 0..2 is rejected instead of raveled with a warning",
    "check_classifier_multioutput": "predict applies the model's label-set rule (expected-k by default: "
                                    "single-positive probabilities are not calibrated), not "
                                    "predict_proba > 0.5 (threshold_rule='threshold' gives that)",
}


#: the fewest training rows :meth:`SPMLClassifier.fit` accepts
MIN_ROWS = 3


def _check_classes(classes) -> np.ndarray:
    """The ``classes=`` vocabulary as a 1-D array of distinct labels (its order is kept;
    text labels normalised as the CLI keeps them)."""
    classes = _normalized(np.asarray(classes))
    if classes.ndim != 1 or len(classes) == 0:
        raise ValueError(f"classes must be a non-empty 1-D list of labels, got shape {classes.shape}")
    if len(np.unique(classes)) != len(classes):
        raise ValueError("classes must not repeat a label")
    return classes


def _normalized(a: np.ndarray) -> np.ndarray:
    """``a`` with every text label normalised (:func:`spmlkit.labels.normalize_label`)."""
    if a.dtype.kind not in "OU":
        return a
    vals = [normalize_label(v) if isinstance(v, str) else v for v in a.tolist()]
    return np.array(vals, dtype=object) if a.dtype == object else np.array(vals)


def _to_observations(y, classes=None, *, unknown: str = "raise"):
    """``(Z, classes)`` from any accepted target encoding (see module docstring).

    A 1-D ``y`` is mapped onto ``classes`` (any order).  A label outside ``classes``
    raises ``ValueError`` (``unknown="raise"``), or (``unknown="return"``, for scoring)
    ``(Z, classes, U)`` is returned with ``U`` ``(N, n_unknown)`` int8: one column per
    label not in ``classes``, +1 on the rows observing it (2-D targets: no columns)."""
    columns = getattr(y, "columns", None)
    if columns is not None and getattr(y, "ndim", 2) == 2:  # pandas DataFrame
        y, found = np.asarray(y), np.asarray(list(columns))
    else:
        y = np.asarray(y)
        found = None
    if y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1 and y.dtype.kind in "OUS"):
        y = y.reshape(-1)
        missing = [r for r, v in enumerate(y.tolist()) if v is None or (isinstance(v, float) and v != v)
                   or (isinstance(v, str) and not v.strip())]
        if missing:
            raise ValueError(f"y has no label in row {missing[0] + 1} ({y[missing[0]]!r}; {len(missing)} row(s) in "
                             "all): a 1-D y holds each row's observed positive — drop the unlabelled rows, or give an "
                             "(N, L) matrix of +1/-1/0 observations where such rows are all 0")
        y = _normalized(y)  # label names as the CLI keeps them: NFC, surrounding space stripped
        kinds = {type(v).__name__ for v in y.tolist()}
        if y.dtype == object and len(kinds) > 1:
            raise ValueError(f"y mixes label types ({', '.join(sorted(kinds))}); give every label as text or every "
                             "label as a number")
        kind = type_of_target(y)
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"Unknown label type: {kind!r}. A 1-D y must hold one label per row (its observed "
                             "positive); for several labels give an (N, L) matrix of +1/-1/0 observations or 0/1")
        if classes is None:
            classes = np.unique(y)
        classes = _normalized(np.asarray(classes))
        order = np.argsort(classes, kind="stable")
        pos = np.clip(np.searchsorted(classes[order], y), 0, len(classes) - 1)
        idx = order[pos]
        bad = classes[idx] != y
        if bad.any() and unknown == "raise":
            r = int(np.flatnonzero(bad)[0])
            raise ValueError(f"label {y[r]!r} in row {r + 1} is not one of the classes seen in fit (pass "
                             "classes=[...], the full label vocabulary, so that every fit knows every label)")
        Z = np.zeros((len(y), len(classes)), dtype=np.int8)
        Z[np.flatnonzero(~bad), idx[~bad]] = 1
        if unknown == "raise":
            return Z, classes
        new, col = np.unique(y[bad], return_inverse=True) if bad.any() else (np.array([]), np.array([], int))
        U = np.zeros((len(y), len(new)), dtype=np.int8)
        U[np.flatnonzero(bad), col.reshape(-1)] = 1
        return Z, classes, U
    if y.ndim != 2:
        raise ValueError(f"y must be 1-D (one label per row) or 2-D (examples x labels), got shape {y.shape}")
    if y.dtype == bool:
        Z = y.astype(np.int8)
    else:
        if y.dtype.kind not in "iuf" or not np.isin(y, (-1, 0, 1)).all():
            raise ValueError("Unknown label type: a 2-D y must hold observations +1 (observed positive), "
                             "-1 (observed negative), 0 (unobserved), or 0/1 / bool positives")
        Z = y.astype(np.int8)
    if classes is None:
        classes = found if found is not None else np.arange(Z.shape[1])
    elif Z.shape[1] != len(classes):
        raise ValueError(f"y has {Z.shape[1]} label columns; the estimator was fitted with {len(classes)}")
    if unknown == "raise":
        return Z, np.asarray(classes)
    return Z, np.asarray(classes), np.zeros((len(Z), 0), dtype=np.int8)


class SPMLClassifier(ClassifierMixin, BaseEstimator):
    """Single-positive multi-label classifier on feature vectors (linear or MLP head).

    Parameters
    ----------
    method : str
        Any registered method (``spml methods``; ``an``, ``bce``, ``iu``, ``iun`` in the
        spine; Cole/ROLE, Zhou EM/APL, OPML/LL from the method modules).  Default
        ``auto``, the recipe the measurements recommend (docs/recipe.md): it needs held-out
        rows (``validation_fraction`` > 0 or ``validation_data``) and ignores ``lr`` (it
        tries its own learning rates); name a single method (e.g. ``"an"``) for a faster
        fit or without validation rows.
    lr, batch_size, epochs, seed, head, hidden, standardize, patience, selection
        As in :class:`spmlkit.config.TrainConfig` (defaults: Cole et al.'s linear setting).
    method_params : dict, optional
        The method's hyper-parameters (``build_method(method, **method_params)``).
    expected_positives : float, optional
        k, the expected number of labels per example: given to methods that use it
        (EPR/ROLE) and to the ``expected_k`` rule.  Default: estimated with Cole Eq. A1
        from ``validation_data`` full labels or fully observed rows of ``y``, if any.
    threshold_rule : {"auto", "threshold", "top_k", "expected_k", "per_label"}
        How :meth:`predict` turns probabilities into label sets (:mod:`spmlkit.practitioner.labelsets`).
        ``per_label`` needs ``validation_data`` (thresholds maximising each label's F1).
        ``auto`` (default): with ``validation_data``, the rule with the best validation
        example-F1 (:func:`spmlkit.practitioner.labelsets.choose_rule`, as ``spml train`` does);
        without, ``expected_k`` with k given, from Eq. A1, or estimated from the
        held-out observations (``1 / observed recall@1``,
        :func:`spmlkit.practitioner.labelsets.default_rule`; single-positive probabilities are not
        calibrated, so a fixed 0.5 gives near-empty or near-full sets).
        :meth:`predict` warns (:class:`spmlkit.practitioner.labelsets.LabelSetWarning`) when the
        sets' mean size is more than 2x away from that k or most sets are empty.
    threshold : float
        The ``threshold`` rule's cut (0.5; ``threshold_rule="threshold"`` to use it).
    top_k : int
        Labels per example of the ``top_k`` rule.
    min_labels : int
        Always keep at least this many top labels (0: sets may be empty).
    validation_fraction : float
        Share of the rows held out (seeded) to choose the best epoch; 0 keeps the last.
    classes : array-like, optional
        The full label vocabulary (any order; ``classes_`` keeps it).  With a 1-D ``y``,
        fit maps the labels onto it, so every fit — every cross-validation fold — has
        the same columns even when a rare label is absent from its rows.  Default: the
        distinct labels of ``y``.  A label outside it is an error in :meth:`fit`; in
        :meth:`score` a label unseen in fit counts as a miss (see :meth:`score`).
    categorical : list, optional
        Columns of ``X`` (names of a DataFrame's columns, or indices) that are
        categorical: each is one-hot encoded with the levels (numbers) seen in fit, and
        the encoding is stored with the model, so :meth:`predict_proba`,
        ``spml predict`` and ``spmlkit.load(...).predict_proba`` take the table in the
        training layout; a level unseen in fit is an error naming the column and the
        level.  Default: every column is a number used as it is.
    verbose : bool
        Print one line per epoch (training loss, validation score) to stderr.
    device : str
        Where training computes: ``auto`` (default: CUDA when available, else the CPU),
        ``cpu``, ``cuda``, ``cuda:N``, ``mps`` (:mod:`spmlkit.device`); the fitted model
        holds CPU tensors and predicts on the CPU.
    """

    def __init__(self, method: str = "auto", *, lr: float = 1e-3, batch_size: int = 8, epochs: int = 25,
                 seed: int = 0, method_params: dict | None = None, head: str = "linear", hidden: int = 512,
                 standardize: bool = True, patience: int | None = None, selection: str = "auto",
                 expected_positives: float | None = None, threshold_rule: str = "auto",
                 threshold: float = 0.5, top_k: int = 1, min_labels: int = 0, validation_fraction: float = 0.2,
                 device: str = "auto", classes=None, categorical=None, verbose: bool = False):
        self.method = method
        self.lr = lr
        self.batch_size = batch_size
        self.epochs = epochs
        self.seed = seed
        self.method_params = method_params
        self.head = head
        self.hidden = hidden
        self.standardize = standardize
        self.patience = patience
        self.selection = selection
        self.expected_positives = expected_positives
        self.threshold_rule = threshold_rule
        self.threshold = threshold
        self.top_k = top_k
        self.min_labels = min_labels
        self.validation_fraction = validation_fraction
        self.device = device
        self.classes = classes
        self.categorical = categorical
        self.verbose = verbose

    # ------------------------------------------------------------------ sklearn API
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True  # a 1-D y (one label per row) is accepted too
        return tags

    def _config(self):
        return TrainConfig(method=self.method, params=dict(self.method_params or {}), lr=self.lr,
                           batch_size=self.batch_size, epochs=self.epochs, patience=self.patience, seed=self.seed,
                           head=self.head, hidden=self.hidden, standardize=self.standardize,
                           selection=self.selection, expected_positives=self.expected_positives,
                           device=self.device)

    def fit(self, X, y, *, validation_data=None):
        """Train on features ``X`` and observations ``y`` (the module docstring lists the forms of ``y``).

        Args:
            X: ``(N, D)`` features (an array or a DataFrame; with ``categorical`` set, the
                named columns are one-hot encoded and the encoding goes with the model).
            y: the observations: one label per row (a 1-D array of class names or indices:
                single positives), or an ``(N, L)`` matrix of +1 / -1 / 0 (observed
                positive, observed negative, unobserved).
            validation_data: ``(X_val, Y_val)``, a fully labelled validation set (``Y_val``
                ``(M, L)`` 0/1 over the same classes), used instead of a held-out part of ``y``.

        Returns:
            ``self``, fitted: ``classes_``, the trained model, and the label-set rule
            (``threshold_rule``) worked out on the validation data.

        Example:
            >>> import numpy as np
            >>> from spmlkit import SPMLClassifier
            >>> rng = np.random.default_rng(0)
            >>> X, y = rng.normal(size=(80, 4)), rng.choice(["ant", "bee", "fly"], size=80)
            >>> clf = SPMLClassifier(method="an", epochs=2).fit(X, y)
            >>> clf.classes_.tolist(), clf.predict_proba(X[:2]).shape
            (['ant', 'bee', 'fly'], (2, 3))
        """
        if self.threshold_rule not in (*RULES, "auto"):
            raise ConfigError(f"threshold_rule must be auto or one of {', '.join(RULES)}, got {self.threshold_rule!r}")
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        enc = None
        if self.categorical:  # one-hot encode the categorical columns; the encoding goes with the model
            enc, X = self._fit_encoding(X)
        X = _validate_data(self, X, dtype=[np.float64, np.float32], reset=True)
        if enc is not None:
            self.n_features_in_ = len(enc.covariates)
            if self._raw_names is not None:
                self.feature_names_in_ = np.asarray(self._raw_names, dtype=object)
        Z, classes = _to_observations(y, None if self.classes is None else _check_classes(self.classes))
        if len(Z) != len(X):
            raise ValueError(f"X has {len(X)} rows but y has {len(Z)}")
        if len(classes) < 2:  # one label: every example has it, nothing to learn (it predicted [0] everywhere)
            raise ValueError(f"y holds only one class ({classes.tolist()!r}); single-positive multi-label learning "
                             "needs at least 2 labels (pass classes=[...] with the full label vocabulary)")
        if len(X) < MIN_ROWS:  # as 'spml prepare' (a training and a validation row at the least)
            raise ValueError(f"{len(X)} sample(s): n_samples = {len(X)} is too few to fit; at least {MIN_ROWS} "
                             "rows are needed")
        config = self._config()
        X_tr, Z_tr, val, Y_val = self._validation_split(X, Z, classes, validation_data)
        k, k_source = self._expected_positives(Y_val, Z)
        if self.threshold_rule == "per_label" and Y_val is None:
            raise ConfigError("threshold_rule='per_label' needs validation_data=(X_val, Y_val) with full labels")
        if config.expected_positives is None and k is not None:
            config = config.replace(expected_positives=k)
        data = ArrayBundle(X_tr, Z_tr, label_names=[str(c) for c in classes], name="SPMLClassifier", **val)
        selection = config.selection if config.selection != "auto" else (
            "map" if Y_val is not None else "observed_map" if val else "(none)")
        verbose = [PrintEpochs(f"{type(self).__name__} {config.method}", config.epochs, selection)] if self.verbose else []
        (res,) = train(data, config, keep_state=True, callbacks=verbose)
        st = res.state
        names = getattr(self, "feature_names_in_", None)  # a DataFrame's columns: 'spml predict' matches by name
        if enc is not None:
            described = {"kind": "features", "feature_names": enc.feature_names, "encoding": enc.to_dict()}
        else:
            described = {"kind": "features", **({"feature_names": [str(n) for n in names]}
                                                if names is not None else {})}
        model = SavedModel.from_training_state(
            st, label_names=[str(c) for c in classes], config=config.to_dict(), method=config.method,
            params=res.params, input=described)
        # the default rule (labelsets.model_label_rule): chosen on full validation labels; else expected-k with k
        # known, else estimated from held-out observations (or, with nothing held out, from the training rows)
        auto = self.threshold_rule == "auto"
        P_val = expit(st["val_logits"].astype(np.float64)) if Y_val is not None else None
        rows = ({} if k is not None else
                {"Z": val["Z_val"], "P": expit(st["val_logits"].astype(np.float64))} if "Z_val" in val else
                {"Z": Z_tr, "P": model.predict_proba(X_tr),
                 "where": "training (nothing held out: the ranking is optimistic)"})
        chosen = model_label_rule(k=k, k_source=k_source, **rows, Y_val=Y_val if auto else None, P_val=P_val,
                                  seed=self.seed, fallback=float(self.threshold))
        spec = chosen if auto and Y_val is not None else self._user_rule(chosen, Y_val, P_val)
        params = self.get_params(deep=False)
        if params.get("classes") is not None:  # JSON-friendly in model.json
            params["classes"] = np.asarray(params["classes"]).tolist()
        model.label_sets = spec
        if params.get("categorical") is not None:
            params["categorical"] = [c if isinstance(c, str) else int(c) for c in params["categorical"]]
        model.info = {"estimator": "SPMLClassifier", "estimator_params": params,
                      **({"raw_names": self._raw_names} if enc is not None and self._raw_names else {}),
                      "classes": classes.tolist(), "best_epoch": res.best_epoch, "val_score": res.val_score,
                      "selection": res.selection}
        self.model_ = model
        self.classes_ = classes
        self.best_epoch_ = res.best_epoch
        self.best_score_ = res.val_score
        self.selection_ = res.selection
        self.validation_history_ = list(res.val_history)
        self.expected_positives_ = k
        return self

    def _validation_split(self, X, Z, classes, validation_data) -> tuple:
        """``(X_tr, Z_tr, val, Y_val)``: the rows trained on, the validation arrays the
        training reads (``X_val`` with full labels ``Y_val`` from ``validation_data``, or a
        seeded ``validation_fraction`` of the rows with their observations ``Z_val``), and
        the full validation labels (None without ``validation_data``)."""
        if validation_data is not None:
            X_val, Y_val = validation_data
            X_val = _validate_data(self, X_val, dtype=[np.float64, np.float32], reset=False)
            Y_val = np.asarray(Y_val)
            if Y_val.shape != (len(X_val), len(classes)) or not np.isin(Y_val, (0, 1)).all():
                raise ValueError(f"validation_data labels must be a 0/1 matrix of shape ({len(X_val)}, "
                                 f"{len(classes)}) with full labels")
            return X, Z, {"X_val": X_val, "Y_val": Y_val}, Y_val
        if self.validation_fraction:
            if not 0 < self.validation_fraction < 1:
                raise ConfigError(f"validation_fraction must be in [0, 1), got {self.validation_fraction}")
            n_val = int(round(len(X) * self.validation_fraction))
            if 1 <= n_val < len(X):
                perm = np.random.default_rng(self.seed).permutation(len(X))
                tr, va = np.sort(perm[n_val:]), np.sort(perm[:n_val])
                return X[tr], Z[tr], {"X_val": X[va], "Z_val": Z[va]}, None
        return X, Z, {}, None

    def _expected_positives(self, Y_val, Z) -> tuple:
        """``(k, how it was found)``: ``expected_positives`` when given, else Eq. A1 on the
        full validation labels or on the fully observed rows of ``y`` (None when neither
        has any)."""
        if self.expected_positives is not None:
            return self.expected_positives, "given (expected_positives)"
        k_source = ("Eq. A1 on the full labels of validation_data" if Y_val is not None
                    else "Eq. A1 on the fully observed rows of y")
        try:
            return (estimate_k(Y_val) if Y_val is not None else estimate_k(Z=Z)), k_source
        except ConfigError:
            return None, k_source

    def _user_rule(self, base: dict, Y_val, P_val) -> dict:
        """The label-set rule of the estimator's options (``threshold_rule``, ``threshold``,
        ``top_k``, ``min_labels``) around the default ``base`` (its k); per-label thresholds
        tuned on full validation labels when there are some."""
        rule = base["rule"] if self.threshold_rule == "auto" else self.threshold_rule
        if rule == "expected_k" and base.get("k_estimate") is None:
            raise ConfigError("threshold_rule='expected_k' needs expected_positives, validation_data with full "
                              "labels, or observed positives in y to estimate k from")
        spec = {"rule": rule, "threshold": float(self.threshold), "min_labels": int(self.min_labels)}
        if rule == "top_k":
            spec["k"] = int(self.top_k) if self.threshold_rule != "auto" else int(base["k"])
        elif base.get("k_estimate") is not None:
            spec["k"] = float(base["k_estimate"])
        spec.update({key: base[key] for key in ("k_estimate", "k_source") if base.get(key) is not None})
        if Y_val is not None:
            tuning = tune_label_thresholds(Y_val, P_val, fallback=float(self.threshold))
            spec["thresholds"] = tuning.thresholds.tolist()
            spec["tuning"] = {k_: v for k_, v in tuning.to_dict().items() if k_ != "thresholds"}
        return spec

    def _fit_encoding(self, X):
        """``(encoding, encoded X)`` of the raw table ``X`` with the ``categorical`` columns."""
        columns = getattr(X, "columns", None)
        self._raw_names = [str(c) for c in columns] if columns is not None else None
        raw = np.asarray(X, dtype=np.float64) if columns is None else np.column_stack(
            [np.asarray(X[c], dtype=np.float64) for c in columns])
        if raw.ndim != 2:
            raise ValueError(f"X must be 2-D (examples x columns), got shape {raw.shape}")
        names = self._raw_names or [str(j) for j in range(raw.shape[1])]
        cat = []
        for c in self.categorical:
            name = names[int(c)] if isinstance(c, (int, np.integer)) and self._raw_names is None else str(c)
            if name not in names:
                raise ValueError(f"categorical column {c!r} is not a column of X ({', '.join(names[:8])})")
            cat.append(name)
        enc = CovariateEncoding.fit(raw, names, categorical=cat)
        return enc, enc.transform(raw)

    def _features(self, X):
        """``X`` as the model's feature matrix: the raw table encoded by the model's covariate
        encoding (columns by name for a DataFrame), or features checked as in fit (a
        DataFrame's columns matched by name)."""
        check_is_fitted(self)
        enc = self.model_.encoding
        if enc is not None:
            if hasattr(X, "columns"):
                return self.model_.features_from_table(X)
            raw = np.asarray(X, dtype=np.float64)
            if raw.ndim != 2 or raw.shape[1] != len(enc.covariates):
                raise ValueError(f"X has {raw.shape[-1] if raw.ndim else 0} columns; the estimator was fitted with "
                                 f"{len(enc.covariates)} ({', '.join(enc.covariates)})")
            return enc.transform(raw)
        names = getattr(self, "feature_names_in_", None)
        if names is not None and hasattr(X, "columns") and list(X.columns) != list(names):
            missing = [str(n) for n in names if n not in set(X.columns)]
            if missing:
                raise ValueError(f"X has no column {', '.join(map(repr, missing))} (the estimator was fitted with "
                                 f"the columns {', '.join(map(str, names))})")
            X = X[list(names)]  # matched by name, whatever their order
        return _validate_data(self, X, dtype=[np.float64, np.float32], reset=False)

    def decision_function(self, X) -> np.ndarray:
        """Per-label logits ``(N, L)``."""
        X = self._features(X)  # (checks that the estimator is fitted first)
        return self.model_.decision_function(X).astype(np.float64)

    def predict_proba(self, X) -> np.ndarray:
        """Per-label probabilities ``(N, L)``; each column is an independent sigmoid.  A
        DataFrame's columns are matched by name; with ``categorical``, the raw table of
        the training layout is encoded as in fit."""
        X = self._features(X)
        return self.model_.predict_proba(X)

    def predict(self, X) -> np.ndarray:
        """Label sets: an ``(N, L)`` 0/1 int indicator matrix over ``classes_``.

        Warns with :class:`spmlkit.practitioner.labelsets.LabelSetWarning` when the sets' mean size
        is more than 2x away from the model's k (known or estimated) or more than half
        of them are empty."""
        return self._label_sets(X, stacklevel=3)

    def _label_sets(self, X, *, stacklevel: int) -> np.ndarray:
        check_is_fitted(self)
        S = self.model_.label_sets_from_proba(self.predict_proba(X)).astype(np.int64)
        msg = label_set_warning(S, rule_k_estimate(self.model_.label_sets))
        if msg is not None:
            warnings.warn(msg, LabelSetWarning, stacklevel=stacklevel)
        return S

    def predict_label_sets(self, X) -> list[list]:
        """The classes in each example's set (a list per example); warns like :meth:`predict`."""
        S = self._label_sets(X, stacklevel=3).astype(bool)
        return [self.classes_[row].tolist() for row in S]

    def score(self, X, y, sample_weight=None) -> float:
        """Observed-positive mAP in [0, 1] of ``decision_function(X)`` against ``y`` (any
        accepted target encoding).  It needs no full labels; see
        :data:`spmlkit.config.SELECTION_CRITERIA` for what it measures and its bias.

        A label in a 1-D ``y`` that is not in ``classes_`` (a rare label missing from a
        cross-validation fold's training rows, when ``classes=`` was not given) is a
        label the model cannot rank: it counts as a miss — its AP is 0 — rather than an
        error, so a fold that lacks a label scores lower instead of NaN."""
        if sample_weight is not None:
            raise ValueError("score does not support sample_weight")
        return observed_map_scorer(self, X, y)

    # --------------------------------------------------------------- persistence
    def save(self, path) -> Path:
        """Save as a model folder (the ``spml`` format; ``spmlkit.load`` reads it too)."""
        check_is_fitted(self)
        return save_model(self.model_, path)

    @classmethod
    def load(cls, path) -> "SPMLClassifier":
        """A fitted estimator from a folder written by :meth:`save`."""
        model = load_model(path)
        params = model.info.get("estimator_params")
        if model.info.get("estimator") != "SPMLClassifier" or params is None:
            raise ConfigError(f"{path} was not saved from an SPMLClassifier; load it with spmlkit.load()")
        est = cls(**params)
        est.model_ = model
        est.classes_ = np.asarray(model.info.get("classes", model.label_names))
        enc = model.encoding
        est.n_features_in_ = model.n_features if enc is None else len(enc.covariates)
        if enc is not None and params.get("categorical") and isinstance(model.info.get("raw_names"), list):
            est.feature_names_in_ = np.asarray(model.info["raw_names"], dtype=object)
        elif enc is None and (model.input or {}).get("feature_names") is not None:  # fitted on a DataFrame:
            est.feature_names_in_ = np.asarray(model.input["feature_names"], dtype=object)  # its columns by name
        est.best_epoch_ = model.info.get("best_epoch")
        est.best_score_ = model.info.get("val_score")
        est.selection_ = model.info.get("selection")
        return est


# ----------------------------------------------------------------------- scorers
def _observed_targets(estimator, y) -> tuple[np.ndarray, np.ndarray]:
    """``(Z, U)``: observations over ``classes_`` and the positives of labels unseen in fit."""
    classes = getattr(estimator, "classes_", None)
    Z, _, U = _to_observations(y, classes=classes, unknown="return")
    return Z, U


def observed_map_scorer(estimator, X, y) -> float:
    """Scorer (``scoring=`` of ``GridSearchCV``): observed-positive mAP in [0, 1].

    Observed positives count as positives, every other entry as negative; labels with
    no observed positive in ``y`` are left out.  A label of ``y`` that the estimator
    did not see in fit counts with AP 0 (a miss).  Needs no full labels."""
    Z, U = _observed_targets(estimator, y)
    res = mean_average_precision(Z == 1, estimator.decision_function(X))
    n_known = int((Z == 1).any(axis=0).sum())
    n_unknown = U.shape[1]
    if n_unknown == 0:
        return res.map / 100.0
    return (res.map * n_known if n_known else 0.0) / (n_known + n_unknown) / 100.0


def observed_recall_scorer(k: int = 3):
    """A scorer: fraction of observed positives ranked in the top ``k`` labels of their example."""
    def scorer(estimator, X, y) -> float:  # a label unseen in fit is never in the top k: a miss
        Z, U = _observed_targets(estimator, y)
        n_pos, n_unknown = int((Z == 1).sum()), int(U.sum())
        r = observed_positive_recall_at_k(Z, estimator.decision_function(X), k) / 100 if n_pos else 0.0
        return r * n_pos / max(n_pos + n_unknown, 1)

    scorer.__name__ = f"observed_recall_at_{k}"
    return scorer
