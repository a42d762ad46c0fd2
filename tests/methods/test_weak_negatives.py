"""Weak assume negative, ``wan`` (Cole et al. 2021, §5.1): registration and γ = 1/(L−1)
resolved from the data at set-up."""
import torch

from spmlkit.methods import METHODS, build_method, get_method_spec
from tests.helpers.factories import train_context


def test_registered_with_regime_and_defaults():
    get_method_spec("an")
    assert METHODS["wan"].regime == "single_positive" and METHODS["wan"].family == "cole2021"
    assert METHODS["wan"].hyperparameters == {"gamma": None}


def test_data_dependent_parameters_resolved_at_setup():
    Z = torch.zeros(10, 5, dtype=torch.int8)
    Z[:, 0] = 1
    ctx = train_context(Z, expected_positives=1.4)
    wan = build_method("wan")
    wan.setup(ctx)
    assert wan.loss_params["gamma"] == 0.25 and wan.params["gamma"] == 0.25
    wan2 = build_method("wan", gamma=0.5)
    wan2.setup(ctx)
    assert wan2.loss_params["gamma"] == 0.5
