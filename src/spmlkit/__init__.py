"""spmlkit — single-positive multi-label learning.

Label encoding (used everywhere, see :mod:`spmlkit.labels`): full labels ``Y`` are an
``(N, L)`` bool array; observations ``Z`` an ``(N, L)`` int8 array with +1 observed
positive, -1 observed negative, 0 unobserved.

``spmlkit.load(path)`` loads a saved model (:mod:`spmlkit.practitioner.saved`);
``spmlkit.SPMLClassifier`` is the scikit-learn estimator (:mod:`spmlkit.practitioner.estimator`).
Both are imported on first use, so ``import spmlkit`` stays light.
"""
from ._version import __version__
from .errors import SpmlError

__all__ = ["__version__", "SpmlError", "load", "SPMLClassifier", "LabelSetWarning"]


def load(path):
    """Load a saved model folder (a run folder or its ``model/``); returns an object with
    ``predict_proba``, ``predict`` (label sets) and ``predict_label_sets``."""
    from .practitioner.saved import load_model  # lazy: `import spmlkit` stays light (no torch)

    return load_model(path)


def __getattr__(name):
    if name == "SPMLClassifier":
        from .practitioner.estimator import SPMLClassifier  # lazy: `import spmlkit` stays light (no torch)

        return SPMLClassifier
    if name == "LabelSetWarning":
        from .practitioner.labelsets import LabelSetWarning  # lazy: `import spmlkit` stays light (no torch)

        return LabelSetWarning
    raise AttributeError(f"module 'spmlkit' has no attribute {name!r}")


def __dir__():
    """The module's names, with those imported on first use (``SPMLClassifier``,
    ``LabelSetWarning``): tab completion and ``dir(spmlkit)`` show them."""
    return sorted(set(globals()) | set(__all__))
