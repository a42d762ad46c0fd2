"""Expected positive regularisation, ``epr`` (Cole et al. 2021, §5.3): registration and k
taken from the data at set-up, or from the config."""
import torch

from spmlkit.config import TrainConfig
from spmlkit.methods import METHODS, build_method, get_method_spec
from spmlkit.training import train_linear
from tests.helpers.factories import train_context


def test_registered_with_regime_and_defaults():
    get_method_spec("an")
    assert METHODS["epr"].regime == "single_positive" and METHODS["epr"].family == "cole2021"
    assert METHODS["epr"].hyperparameters == {"k": None, "lam": 1.0}


def test_data_dependent_parameters_resolved_at_setup():
    Z = torch.zeros(10, 5, dtype=torch.int8)
    Z[:, 0] = 1
    ctx = train_context(Z, expected_positives=1.4)
    epr = build_method("epr")
    epr.setup(ctx)
    assert epr.loss_params["k"] == 1.4
    epr.setup(train_context(Z, expected_positives=2.0))  # re-setup on other data
    assert epr.loss_params["k"] == 2.0


def test_k_from_config_overrides_the_labels(toy_bundle):
    (r,) = train_linear(toy_bundle, TrainConfig(method="epr", epochs=1, expected_positives=1.25))
    assert r.params["k"] == 1.25
