"""Pairwise ranking, ``pr`` (Cole et al. 2021, appendix A): registration (the loss itself is
tested in tests/losses/test_ranking.py; that it learns in tests/integration/test_paper_rows.py)."""
from spmlkit.methods import METHODS, build_method, get_method_spec


def test_registered_with_regime_and_defaults():
    get_method_spec("an")
    assert METHODS["pr"].regime == "single_positive" and METHODS["pr"].family == "cole2021"
    assert METHODS["pr"].hyperparameters == {}
    m = build_method("pr")
    assert m.loss.name == "pr" and not m.components
